package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/safefs"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// Status is a run as flow status shows it: its exact state and the
// liveness of its runner.
//
// Its JSON is run_state.json's object (every field of core.State,
// agent_orchestrator's schema's and flow's) with two more keys: "liveness", the
// record.Liveness object {"state", "hook", "reason", "holder"}, and
// "fault", present only when the run's event log has a fault and the
// state is the one recorded before it.
type Status struct {
	// State is the run's state: run_state.json with every newer event
	// applied.
	State *core.State
	// Liveness is what the run's record says of its runner.
	Liveness record.Liveness
	// Fault is the fault in the run's event log up to which State was
	// read, or "".
	Fault string
	// RunDir is the run's directory (not in the JSON).
	RunDir string
	// At is when the status was read, for durations of running steps
	// (not in the JSON).
	At time.Time
}

// MarshalJSON writes the state's object with "liveness" (and "fault")
// added.
func (v Status) MarshalJSON() ([]byte, error) {
	return v.marshal("")
}

// WriteIndented writes the status to w as json.MarshalIndent(v, "",
// "  ") would, streaming the state's steps one at a time (see
// core.State.WriteIndented) rather than building and re-reading
// megabytes for a large run.
func (v Status) WriteIndented(w io.Writer) error {
	if v.State == nil {
		return fmt.Errorf("encode the status of a run without a state")
	}
	live, err := json.MarshalIndent(v.Liveness, "  ", "  ")
	if err != nil {
		return err
	}
	tail := append([]byte(",\n  \"liveness\": "), live...)
	if v.Fault != "" {
		f, _ := json.Marshal(v.Fault)
		tail = append(append(tail, ",\n  \"fault\": "...), f...)
	}
	tail = append(tail, "\n}"...)
	// The state's object ends in "\n}": the status's fields go before.
	cw := &closeWriter{w: w}
	if err := v.State.WriteIndented(cw); err != nil {
		return err
	}
	if !bytes.Equal(cw.held, []byte("\n}")) {
		return fmt.Errorf("encode the status: the state does not end its object as expected")
	}
	_, err = w.Write(tail)
	return err
}

// closeWriter passes what is written to w but for the last two bytes,
// which it holds: the end of the object being written.
type closeWriter struct {
	w    io.Writer
	held []byte
}

func (c *closeWriter) Write(p []byte) (int, error) {
	c.held = append(c.held, p...)
	if n := len(c.held) - 2; n > 0 {
		if _, err := c.w.Write(c.held[:n]); err != nil {
			return 0, err
		}
		c.held = append(c.held[:0], c.held[n:]...)
	}
	return len(p), nil
}

// marshal writes the status, with "type": typ first when typ is set.
func (v Status) marshal(typ string) ([]byte, error) {
	if v.State == nil {
		return nil, fmt.Errorf("encode the status of a run without a state")
	}
	// The state's own encoder, not json.Marshal, which would check and
	// compact its output again: a large run's state is megabytes.
	st, err := v.State.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if len(st) < 2 || st[0] != '{' {
		return nil, fmt.Errorf("encode the status of a run without a state")
	}
	live, err := json.Marshal(v.Liveness)
	if err != nil {
		return nil, err
	}
	var out []byte
	if typ != "" {
		t, _ := json.Marshal(typ)
		out = append(append(append(out, `{"type":`...), t...), ',')
		out = append(out, st[1:len(st)-1]...)
	} else {
		out = append(out, st[:len(st)-1]...)
	}
	out = append(append(out, `,"liveness":`...), live...)
	if v.Fault != "" {
		f, _ := json.Marshal(v.Fault)
		out = append(append(out, `,"fault":`...), f...)
	}
	return append(out, '}'), nil
}

// Status reads a run exactly (the newest run when runID is "") and
// derives the liveness of its runner; the run's workflow, found again
// under the repository for a copied run, tells when a quiet session is
// stuck. A run whose event log has a fault is shown as recorded before
// it, with Fault set. An unknown run or bad id is an ExitUsage error.
func (s *Service) Status(repo, runID string) (Status, error) {
	return s.StatusWith(repo, runID, nil)
}

// StatusWith is Status with the run's workflow given, for a caller that
// follows a run and loads its workflow once (a nil wf is loaded).
func (s *Service) StatusWith(repo, runID string, wf *config.Workflow) (Status, error) {
	dir, err := s.Repo(repo)
	if err != nil {
		return Status{}, err
	}
	ref, err := s.findRun(dir, runID)
	if err != nil {
		return Status{}, err
	}
	return s.statusOf(dir, ref, wf), nil
}

func (s *Service) statusOf(repo string, ref record.RunRef, wf *config.Workflow) Status {
	now := s.clock().Now()
	st := Status{State: ref.State, RunDir: ref.Dir, At: now}
	if ref.Err != nil {
		st.Fault = ref.Err.Error()
	}
	st.Liveness = record.Live(s.FS, ref.Dir, ref.State, wf, now, s.alive())
	if wf == nil && s.needsWorkflow(ref.State, st.Liveness) {
		// Loading a large workflow costs more than reading its run, so
		// it is loaded only when it can change what is shown: a
		// working session may be stuck past its idle_timeout, and a
		// dead run's notifiers are told.
		if path, err := LocateWorkflow(s.FS, ref.State, repo); err == nil {
			wf, _ = config.Load(s.FS, path)
		}
		if wf != nil && st.Liveness.State == record.LiveWorking {
			st.Liveness = record.Live(s.FS, ref.Dir, ref.State, wf, now, s.alive())
		}
	}
	if s.NotifyDead {
		s.tellDead(repo, st, wf)
	}
	return st
}

// needsWorkflow reports whether the liveness l, derived without the
// run's workflow, could be different with it, or the workflow is
// needed to act on it: record.Live reads the workflow only for the
// idle_timeout of the session it finds working, and tellDead only for a
// dead run.
func (s *Service) needsWorkflow(st *core.State, l record.Liveness) bool {
	switch l.State {
	case record.LiveDead:
		return s.NotifyDead
	case record.LiveWorking:
		s := st.Steps[l.Hook]
		return s != nil && s.LogPath != ""
	}
	return false
}

// Over reports whether the run's runner will not change it any more by
// itself: it is done, stopped or dead.
func (v Status) Over() bool {
	switch v.Liveness.State {
	case record.LiveDone, record.LiveDead, record.LiveStopped:
		return true
	}
	return false
}

// RunSummary is one run in ListRuns.
type RunSummary struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// Workflow is the name of the run's workflow.
	Workflow string `json:"workflow_name"`
	// Status is the run's status.
	Status string `json:"status"`
	// ExitCode is the run's exit code, 0 while it goes on.
	ExitCode int `json:"exit_code"`
	// CreatedAt and UpdatedAt are when the run was created and last
	// changed, as in run_state.json ("" when unknown).
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	// Dir is the run's directory.
	Dir string `json:"dir"`
	// Error is why the run cannot be read; the other fields but RunID
	// and Dir are then empty.
	Error string `json:"error,omitempty"`
	// Usage is what the run's agents consumed, when they reported it.
	Usage *core.AgentUsage `json:"usage,omitempty"`
	// Pruned is set on a run known only from the history
	// (.agents/history.jsonl): its record was removed (flow prune). Its
	// Dir is then "", and UpdatedAt is when it ended.
	Pruned bool `json:"pruned,omitempty"`
}

// RunList is the result of ListRuns.
type RunList struct {
	// RunsDir is the directory the runs are kept in.
	RunsDir string `json:"runs_dir"`
	// Runs are the runs, newest first.
	Runs []RunSummary `json:"runs"`
}

// ListRuns lists the runs of a repository, newest first; runs that
// cannot be read are listed with Error set. A repository that is not a
// directory is an ExitUsage error. The runs that have not changed since
// the last list are taken from the runs index (record.ListRunEntries),
// which it keeps up to date.
func (s *Service) ListRuns(repo string) (RunList, error) {
	dir, err := s.Repo(repo)
	if err != nil {
		return RunList{}, err
	}
	runs, err := record.ListRunEntries(s.FS, dir, s.recordFS(dir))
	if err != nil {
		return RunList{}, err
	}
	out := RunList{RunsDir: record.RunsDir(dir), Runs: make([]RunSummary, 0, len(runs))}
	for _, r := range runs {
		out.Runs = append(out.Runs, summaryOfEntry(r))
	}
	return out, nil
}

// ListAllRuns lists the runs of a repository as ListRuns does, and the
// runs whose record was removed that its history tells of
// (.agents/history.jsonl), with Pruned set; newest first (by creation,
// then id). A run that has both a record and a history line is listed
// from its record.
func (s *Service) ListAllRuns(repo string) (RunList, error) {
	list, err := s.ListRuns(repo)
	if err != nil {
		return list, err
	}
	dir, err := s.Repo(repo)
	if err != nil {
		return list, err
	}
	history, err := record.ReadHistory(s.FS, dir)
	if err != nil {
		return list, err
	}
	have := make(map[string]bool, len(list.Runs))
	for _, r := range list.Runs {
		have[r.RunID] = true
	}
	n := len(list.Runs)
	for _, h := range history {
		if have[h.RunID] {
			continue
		}
		x := RunSummary{RunID: h.RunID, Workflow: h.Workflow, Status: string(h.Status), ExitCode: h.ExitCode, Usage: h.Usage, Pruned: true}
		if h.CreatedAt != nil {
			x.CreatedAt = h.CreatedAt.String()
		}
		if h.EndedAt != nil {
			x.UpdatedAt = h.EndedAt.String()
		}
		list.Runs = append(list.Runs, x)
	}
	if len(list.Runs) > n {
		// The times are written in one layout (UTC, microseconds), in
		// which their text sorts as they do; "" (unknown) sorts last.
		slices.SortStableFunc(list.Runs, func(a, b RunSummary) int {
			if c := strings.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.RunID, a.RunID)
		})
	}
	return list, nil
}

// summaryOfEntry is the summary of a run as the record lists it.
func summaryOfEntry(r record.RunEntry) RunSummary {
	x := RunSummary{RunID: r.ID, Dir: r.Dir}
	if r.Err != nil {
		x.Error = r.Err.Error()
		return x
	}
	x.Workflow, x.Status, x.ExitCode, x.Usage = r.Workflow, string(r.Status), r.ExitCode, r.Usage
	x.CreatedAt, x.UpdatedAt = r.CreatedAt, r.UpdatedAt
	return x
}

// recordFS is the file system flow writes the files of repo's record
// through: on the operating system's, one that opens beneath the
// repository following no link (internal/safefs), since a session may
// have planted one; any other (a test's) as it is.
func (s *Service) recordFS(repo string) afero.Fs {
	if _, ok := s.FS.(*afero.OsFs); ok {
		return safefs.New(repo)
	}
	return s.FS
}

// WatchOptions says what Watch reports and how often it looks.
type WatchOptions struct {
	// Interval is how often the run is read; 0 means one second.
	Interval time.Duration
	// Every reports the status at every look, changed or not (to redraw
	// a screen); otherwise only when it changed.
	Every bool
	// Tails, when above 0, adds that many last lines of each running
	// session's output to each status update.
	Tails int
	// Events reports each event appended to the run's log with a seq
	// greater than After, in order, before the status that follows it.
	Events bool
	After  int64
}

// Update is one report of Watch: a status or an event.
//
// Its JSON is one object. A status update is the Status object with
// "type": "status" added; an event is the event's line of the run's
// log ({"seq", "at", "type", "step", "data"}, "type" being the event's
// type).
type Update struct {
	// Status is set on a status update.
	Status *Status
	// Event is set on an event update.
	Event *core.Event
	// First is true on the first status update.
	First bool
	// Changed is true when the status differs from the last one
	// reported (always on the first).
	Changed bool
	// Changes are the parts of the status that changed since the last
	// status update, sorted by key (every part on the first).
	Changes []Change
	// Tails are the last lines of the running sessions' output, when
	// WatchOptions.Tails asks for them.
	Tails []Tail
}

// MarshalJSON writes the update as its one JSON object.
func (u Update) MarshalJSON() ([]byte, error) {
	if u.Event != nil {
		return json.Marshal(u.Event)
	}
	if u.Status == nil {
		return nil, fmt.Errorf("encode an empty watch update")
	}
	return u.Status.marshal("status")
}

// Change is one part of a run's status that changed.
type Change struct {
	// Key names the part: "run" (the run's status), "runner" (its
	// liveness and hook) or "step <id>".
	Key string `json:"key"`
	// Value is the part's new value, for people: e.g. "COMPLETED
	// (attempt 1, iteration 0)".
	Value string `json:"value"`
}

// Tail is the end of a running session's output.
type Tail struct {
	// Step is the step whose session runs.
	Step string `json:"step"`
	// Log is the name of the session's log.
	Log string `json:"log"`
	// Lines are its last lines, oldest first.
	Lines []string `json:"lines"`
}

// Watch reads a run (the newest when runID is "") every
// opts.Interval and calls fn with its status — at every look with
// opts.Every, else when it changed — and with each new event when
// opts.Events asks for them. It returns nil when the run is over (done,
// stopped or dead: Status.Over; a paused run whose runner waits in it
// is not, since flow continue lets it go on) after reporting it, or
// when ctx is cancelled; an error of fn ends it with that error. Errors
// reading the run are returned as Status returns them.
func (s *Service) Watch(ctx context.Context, repo, runID string, opts WatchOptions, fn func(Update) error) error {
	dir, err := s.Repo(repo)
	if err != nil {
		return err
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	after := opts.After
	var w StatusWatch
	for {
		ref, err := s.findRun(dir, runID)
		if err != nil {
			return err
		}
		// The run found first is the one watched, even when a newer
		// run starts meanwhile.
		runID = ref.ID
		if opts.Events {
			events, _ := record.ReadEvents(s.FS, ref.Dir, after)
			for i := range events {
				if err := fn(Update{Event: &events[i]}); err != nil {
					return err
				}
				after = events[i].Seq
			}
		}
		st := s.statusOf(dir, ref, nil)
		if u, report := w.Next(st, opts.Every); report {
			if opts.Tails > 0 {
				u.Tails = s.tails(st.State, opts.Tails)
			}
			if err := fn(u); err != nil {
				return err
			}
		}
		if st.Over() && !s.runnerWaits(st) || !s.sleep(ctx, opts.Interval) {
			return nil
		}
	}
}

// runnerWaits reports whether a paused run's runner is alive and waits
// in it: flow continue lets it go on, so a watch of it goes on too.
func (s *Service) runnerWaits(st Status) bool {
	if st.State == nil || st.State.Status != core.RunPaused {
		return false
	}
	_, live := record.LiveRunner(s.FS, st.RunDir, st.State, st.At, s.alive())
	return live
}

// StatusWatch compares each status a watch looks at with the last
// one: Watch's, and that of a watch of a run ops does not read (a run
// on Temporal).
type StatusWatch struct {
	prev map[string]string
}

// Next returns the update for st and whether to report it: when it
// changed, or at every look with every.
func (w *StatusWatch) Next(st Status, every bool) (Update, bool) {
	cur := statusKeys(st)
	changed := w.prev == nil || !maps.Equal(w.prev, cur)
	u := Update{Status: &st, First: w.prev == nil, Changed: changed, Changes: changes(w.prev, cur)}
	w.prev = cur
	return u, changed || every
}

// statusKeys is what a watch compares: each step's status, attempt and
// iteration, the run's status and the runner's liveness.
func statusKeys(st Status) map[string]string {
	m := map[string]string{"run": string(st.State.Status), "runner": st.Liveness.State + " " + st.Liveness.Hook.String()}
	for id, ss := range st.State.Steps {
		m["step "+id.String()] = fmt.Sprintf("%s (attempt %d, iteration %d)", ss.Status, ss.Attempts, ss.IterationCount)
	}
	return m
}

// changes lists the keys of cur whose value is not the one in prev.
func changes(prev, cur map[string]string) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		if v, ok := prev[k]; !ok || v != cur[k] {
			out = append(out, Change{Key: k, Value: cur[k]})
		}
	}
	return out
}

// tails returns the last n lines of the output of each running session.
func (s *Service) tails(st *core.State, n int) []Tail {
	var out []Tail
	for _, id := range st.StepOrder {
		ss := st.Steps[id]
		if ss == nil || ss.Status != core.Running || ss.LogPath == "" {
			continue
		}
		tail := record.ReadTail(s.FS, ss.LogPath, 8<<10)
		if tail == "" {
			continue
		}
		lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		out = append(out, Tail{Step: id.String(), Log: filepath.Base(ss.LogPath), Lines: lines})
	}
	return out
}

// LoopProgress is how far a for_each step has got with its items.
type LoopProgress = record.LoopProgress

// Progress returns the progress of loop step id's items in st; ok is
// false for a step that is not a loop, or a loop whose items are not
// known yet.
func Progress(st *core.State, id string) (p LoopProgress, ok bool) {
	if p, ok = record.ItemsProgress(st.Steps[core.Key(id)]); !ok {
		return p, false
	}
	for _, key := range st.StepOrder {
		if is := st.Steps[key]; is != nil && is.Status == core.WaitingOnHuman && key.Loop == id {
			p.Waiting++
		}
	}
	return p, true
}
