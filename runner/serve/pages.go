package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// maxListed bounds the runs listed per repository.
const maxListed = 200

// maxEvents bounds the events shown on a run's page: the newest.
const maxEvents = 500

// A run's page shows its step table a page of pageSteps rows at a time,
// and draws its graph when the workflow has at most maxGraphSteps steps
// (loop bodies included): a run of thousands of steps would otherwise
// make a page of megabytes that the browser lays out on every visit.
const (
	pageSteps     = 500
	maxGraphSteps = 300
)

// runRow is one run in the list of runs.
type runRow struct {
	URL      string
	Source   string
	Engine   string
	ID       string
	Workflow string
	Status   string
	// Badge and BadgeClass show its state (runState).
	Badge, BadgeClass string
	// Note says what matters of it now: the step that failed and why,
	// the step that waits for a decision, what its runner does.
	Note       string
	NoteClass  string
	Started    string
	Duration   string
	Iterations int
	Cost       string
	Error      string
	// ForYou is set on a run with a step that waits for a decision no
	// one has made.
	ForYou bool
}

// runsData is the data of the list of runs.
type runsData struct {
	page
	Filter   string
	Statuses []string
	Runs     []runRow
	Errors   []string
	// Waiting counts the runs that wait for a decision.
	Waiting int
	// LiveURL is the stream that keeps the list up to date.
	LiveURL string
}

// runStatuses are the statuses a list can be filtered by.
var runStatuses = []string{"running", "waiting_on_human", "paused", "pending", "failed", "budget_exceeded", "interrupted", "completed"}

// listRuns shows the runs of every source, newest first; ?status=
// keeps the runs with that status.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	filter := listFilter(r)
	d := s.listData(r.Context(), filter)
	d.page = s.page(r, "Runs")
	s.render(w, r, http.StatusOK, "runs", d)
}

// listFilter is the status a list is filtered by: one of runStatuses,
// else none.
func listFilter(r *http.Request) string {
	f := r.URL.Query().Get("status")
	for _, st := range runStatuses {
		if f == st {
			return f
		}
	}
	return ""
}

// listData reads the list of runs of every source.
func (s *Server) listData(ctx context.Context, filter string) *runsData {
	d := &runsData{Filter: filter, Statuses: runStatuses, LiveURL: "/live"}
	if filter != "" {
		d.LiveURL += "?status=" + url.QueryEscape(filter)
	}
	var rows []runRow
	var created []time.Time
	// The rows of finished runs are kept from one listing to the next:
	// they do not change until the run does (its updated_at with it).
	seen := map[finishedKey]finishedRow{}
	mirrors := s.hasRemote()
	for i, src := range s.sources {
		list, err := src.eng.Runs(ctx, src.dir)
		if err != nil {
			d.Errors = append(d.Errors, src.name+": "+err.Error())
			continue
		}
		for n, sum := range list.Runs {
			if n == maxListed {
				break
			}
			if filter != "" && sum.Status != filter {
				continue
			}
			if mirrors && src.local && sum.Dir != "" && record.OnTemporal(s.svc.FS, sum.Dir) {
				// A Temporal worker's mirror of a run listed from the
				// server itself.
				continue
			}
			row := runRow{URL: runURL(i, sum.RunID), Source: src.name, Engine: src.eng.Name(), ID: sum.RunID, Workflow: sum.Workflow,
				Status: sum.Status, Badge: sum.Status, BadgeClass: statusClass(sum.Status), Error: sum.Error}
			var at time.Time
			if t, err := time.Parse(time.RFC3339Nano, sum.CreatedAt); err == nil {
				at = t
			}
			key := finishedKey{repo: i, runID: sum.RunID, status: sum.Status, updated: sum.UpdatedAt}
			if f, ok := s.finished.get(key); ok {
				row, at = f.row, f.created
				seen[key] = f
			} else if sum.Error == "" {
				if st, err := s.listStatus(src, sum.RunID); err == nil {
					row = s.runRowOf(row, st, src.local)
					row.ForYou = s.forYou(target{repo: i, src: src, runID: sum.RunID}, st)
					if st.State.CreatedAt != nil {
						at = st.State.CreatedAt.Time
					}
					if st.State.Status.Terminal() && st.Fault == "" && sum.UpdatedAt != "" {
						seen[key] = finishedRow{row: row, created: at}
					}
				} else {
					row.Error = err.Error()
				}
			}
			if row.ForYou {
				d.Waiting++
			}
			rows = append(rows, row)
			created = append(created, at)
		}
	}
	s.finished.keep(seen)
	// Newest first across sources: an insertion sort keeps each
	// source's own order for equal times.
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && created[j].After(created[j-1]); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
			created[j], created[j-1] = created[j-1], created[j]
		}
	}
	d.Runs = rows
	return d
}

// hasRemote reports whether a source is another engine's server.
func (s *Server) hasRemote() bool {
	for _, src := range s.sources {
		if !src.local {
			return true
		}
	}
	return false
}

// forYou reports whether a run has a step that waits for a decision
// that no one has made yet.
func (s *Server) forYou(t target, st ops.Status) bool {
	if st.State.Status != core.RunWaitingOnHuman {
		return false
	}
	for _, key := range st.State.StepOrder {
		ss := st.State.Steps[key]
		if ss == nil || ss.Status != core.WaitingOnHuman {
			continue
		}
		if !t.src.local || ss.ManualInputPath == nil {
			return true
		}
		in, err := record.ReadDecision(s.svc.FS, *ss.ManualInputPath, true)
		if err != nil || in == nil || record.DecidedBefore(in, ss) {
			return true
		}
	}
	return false
}

// finishedRows keeps the rows of the list of runs that show finished
// runs (completed or failed): a finished run's row is read in full once,
// not at every listing (reading a 5,000-step run takes about 20 ms), and
// read again when the run changes, as a run restarted at a step does.
// Rows of runs no longer listed are dropped.
type finishedRows struct {
	mu sync.Mutex
	m  map[finishedKey]finishedRow
}

// finishedKey names a run as its list says it was last updated: any
// event changes updated_at (microseconds).
type finishedKey struct {
	repo                   int
	runID, status, updated string
}

// finishedRow is a finished run's row and creation time.
type finishedRow struct {
	row     runRow
	created time.Time
}

func (f *finishedRows) get(k finishedKey) (finishedRow, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[k]
	return r, ok
}

// keep replaces the rows kept with m.
func (f *finishedRows) keep(m map[finishedKey]finishedRow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = m
}

// runRowOf fills a row of the list from a run's status (local: a
// repository's run, whose runner holds a lock).
func (s *Server) runRowOf(row runRow, st ops.Status, local bool) runRow {
	state := st.State
	row.Badge, row.BadgeClass = runState(st)
	row.Note, row.NoteClass = runNote(st, local)
	if local && s.frozen(st) {
		row.Note, row.NoteClass = "its runner is not heard from but holds the run: Take over (on the run's page) stops it and goes on", "error"
	}
	row.Started = timeText(state.CreatedAt)
	end := st.At
	switch {
	case state.Status.Terminal() && state.UpdatedAt != nil:
		end = state.UpdatedAt.Time
	case st.Liveness.State == record.LiveDead || st.Liveness.State == record.LiveStale:
		// Nothing goes on: the run's time stopped when it was last
		// heard from.
		if seen := lastSeen(state); !seen.IsZero() {
			end = seen
		}
	}
	if state.CreatedAt != nil {
		row.Duration = duration(end.Sub(state.CreatedAt.Time))
	}
	for _, ss := range state.Steps {
		row.Iterations = max(row.Iterations, ss.IterationCount)
	}
	row.Cost = cost(state.Usage)
	return row
}

// runNote says what matters of a run now, and its CSS class: the step
// that failed and why, the step that waits for a decision, whether a
// runner holds it (a local run's lock says) and what it does.
func runNote(st ops.Status, local bool) (string, string) {
	state := st.State
	switch state.Status {
	case core.RunCompleted:
		return "", ""
	case core.RunFailed, core.RunBudgetExceeded:
		for _, key := range tableOrder(state) {
			if ss := state.Steps[key]; ss != nil && ss.Status == core.Failed {
				why := "failed"
				if ss.LastError != nil && *ss.LastError != "" {
					why = clip(*ss.LastError, 160)
				}
				return key.String() + ": " + why, "error"
			}
		}
		if state.Status == core.RunBudgetExceeded {
			return "a budget ran out", "error"
		}
		return "", ""
	}
	l := st.Liveness
	switch l.State {
	case record.LiveDead:
		return "no live runner: Resume takes the run over", "error"
	case record.LiveStale:
		return l.Reason, "waits"
	}
	if state.Status == core.RunWaitingOnHuman {
		for _, key := range tableOrder(state) {
			if ss := state.Steps[key]; ss != nil && ss.Status == core.WaitingOnHuman {
				if local && l.Holder == nil {
					return key.String() + " waits for a decision (no runner: Resume after deciding)", "waits"
				}
				return key.String() + " waits for a decision", "waits"
			}
		}
	}
	switch l.State {
	case record.LiveWorking:
		return "working on " + l.Hook.String(), ""
	case record.LiveStuck:
		return "stuck: " + l.Reason, "error"
	}
	return l.Reason, ""
}

// stepRow is one row of a run's step table; the live stream sends the
// same rows as JSON.
type stepRow struct {
	// key is the row's step key; Key its String form.
	key       core.StepKey
	Key       string `json:"key"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	Iteration int    `json:"iteration"`
	Duration  string `json:"duration"`
	Error     string `json:"error"`
	Verdict   string `json:"verdict"`
	Progress  string `json:"progress"`
	// Waits says what a pending step waits for: the target of a
	// loop-back to its side, or closed gates of the gate-state file.
	Waits    string `json:"waits"`
	Instance bool   `json:"instance"`
	Log      string `json:"log"`
	// Class is the row's CSS class: its status's, or s-dead for a
	// running step of a run that no runner holds.
	Class string `json:"class"`
	// Since is when a running step started (RFC 3339): the page counts
	// its duration on.
	Since string `json:"since,omitempty"`
	// Waiting is set on a step that waits on a human, with the inputs
	// its approval takes.
	Waiting *humanForm `json:"-"`
}

// humanForm is what an approval form asks for.
type humanForm struct {
	// Inputs are the step's declared inputs; with none, Free lets the
	// approver give any as key=value lines.
	Inputs []config.Input
	Free   bool
}

// stepRows returns a run's step table: its steps in workflow order, each
// loop followed by its instances. wf may be nil.
func stepRows(base string, st ops.Status, wf *config.Workflow) []stepRow {
	state := st.State
	var rows []stepRow
	add := func(key core.StepKey) {
		ss := state.Steps[key]
		if ss == nil {
			return
		}
		row := stepRow{key: key, Key: key.String(), Status: string(ss.Status), Attempts: ss.Attempts, Iteration: ss.IterationCount,
			Verdict: ss.Verdict, Instance: key.IsInstance(), Class: statusClass(string(ss.Status))}
		if ss.Human != nil && row.Verdict == "" {
			row.Verdict = describeDecision(*ss.Human)
		}
		if ss.StartedAt != nil && ss.Status == core.Running && ss.LoopIndex == nil {
			row.Since = ss.StartedAt.UTC().Format(time.RFC3339Nano)
		}
		if ss.StartedAt != nil {
			end := st.At
			if ss.EndedAt != nil {
				end = ss.EndedAt.Time
			}
			row.Duration = duration(end.Sub(ss.StartedAt.Time))
			row.Log = base + "/logs/" + url.PathEscape(key.String())
		}
		if ss.LastError != nil {
			row.Error = *ss.LastError
		} else if ss.Status == core.Skipped {
			row.Error = ss.SkipReason
		}
		if p, ok := ops.Progress(state, key.Step); ok && !key.IsInstance() {
			row.Progress = p.String()
		}
		if ss.Status == core.Pending {
			switch {
			case ss.WaitingFor != nil:
				row.Waits = ss.WaitingFor.String()
			case len(ss.WaitingGates) > 0:
				row.Waits = "gates: " + strings.Join(ss.WaitingGates, ", ")
			}
		}
		if ss.Status == core.WaitingOnHuman {
			row.Waiting = &humanForm{Free: true}
			if in := declaredInputs(wf, key); in != nil {
				row.Waiting = &humanForm{Inputs: in}
			}
		}
		rows = append(rows, row)
	}
	for _, key := range tableOrder(state) {
		add(key)
	}
	return rows
}

// declaredInputs returns the inputs the human step of a key declares
// (a loop instance's body step's), or nil.
func declaredInputs(wf *config.Workflow, k core.StepKey) []config.Input {
	if wf == nil {
		return nil
	}
	if step := wf.Step(k.Step); step != nil && step.Human != nil && len(step.Human.Inputs) > 0 {
		return step.Human.Inputs
	}
	return nil
}

// eventRow is one event of a run's timeline.
type eventRow struct {
	Seq  int64  `json:"seq"`
	At   string `json:"at"`
	Type string `json:"type"`
	Step string `json:"step"`
	Data string `json:"data"`
}

// eventRowOf shortens an event for the timeline.
func eventRowOf(e core.Event) eventRow {
	return eventRow{Seq: e.Seq, At: e.At.String(), Type: e.Type, Step: e.Step.String(), Data: clip(string(e.Data), 300)}
}

// doneTexts are the messages a run's page shows after an action
// redirected to it (?done=).
var doneTexts = map[string]string{
	"approve":  "Approved.",
	"reject":   "Rejected.",
	"decided":  "Recorded. No runner holds this run: it goes on once resumed — Resume is below the question.",
	"resumed":  "Recorded, and a runner was started to go on with the run.",
	"already":  "That decision had already been made; nothing changed.",
	"pause":    "Asked the run to pause after its current session.",
	"continue": "Asked the run to go on.",
	"run-once": "Asked the run to start one more session, then pause.",
	"cleanup":  "Asked the run to run its cleanup session, then pause.",
	"idle":     "Recorded; no live runner holds this run, so it takes effect when the run is resumed.",
	"cancel":   "Asked the runner to stop the run's sessions; the run stays resumable.",
	"resume":   "Started a runner; this page shows what it does.",
	"retry":    "Started a runner on the failed steps; this page shows what it does.",
	"takeover": "Started a runner that stops the frozen one (once it has checked it is this run's) and goes on; this page shows what it does.",
	"started":  "Started the run; this page shows what it does.",
}

// runPage shows a run: the question of a step that waits, its facts,
// actions, step table, timeline, graph and newest events.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	sub, err := s.subject(r.Context(), t)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := s.view(sub)
	v.page = s.page(r, "Run "+t.runID)
	v.Done = doneTexts[r.URL.Query().Get("done")]
	v.Steps, v.Pager = pageOf(v.Steps, s.pageSteps, r.URL.Query().Get("page"), v.Base)
	state := sub.st.State
	after := state.Seq
	if t.src.local {
		// The newest events are those after the snapshot's seq less
		// maxEvents (and any the snapshot does not hold yet); the log's
		// lines before them are skipped undecoded.
		events, _ := record.ReadEvents(s.svc.FS, t.runDir(), max(0, state.Seq-maxEvents))
		if len(events) > maxEvents {
			events = events[len(events)-maxEvents:]
		}
		for _, e := range events {
			v.Events = append(v.Events, eventRowOf(e))
			after = max(after, e.Seq)
		}
	}
	v.EventsURL = fmt.Sprintf("%s/events?after=%d", v.Base, after)
	s.render(w, r, http.StatusOK, "run", v)
}

// pager links the pages of a run's step table.
type pager struct {
	// First and Last are the 1-based numbers of the rows shown, of Total.
	First, Last, Total int
	// Prev and Next link the neighbouring pages, "" at either end; Pages
	// link every page, by number, with the current one's URL "".
	Prev, Next string
	Pages      []pageLink
}

// pageLink is one page of the step table.
type pageLink struct {
	N   int
	URL string
}

// pageOf returns the page of rows that query (?page=N, from 1) asks
// for, size rows long, and its pager (nil when all rows fit one page).
// Without a valid page it shows where the run is: the page of its
// first running or waiting step, else of its first failed one, else
// the first.
func pageOf(rows []stepRow, size int, query, base string) ([]stepRow, *pager) {
	if len(rows) <= size {
		return rows, nil
	}
	pages := (len(rows) + size - 1) / size
	n, err := strconv.Atoi(query)
	if err != nil || n < 1 || n > pages {
		n = 1
		if i := slices.IndexFunc(rows, active); i >= 0 {
			n = i/size + 1
		} else if i := slices.IndexFunc(rows, func(r stepRow) bool { return r.Status == string(core.Failed) }); i >= 0 {
			n = i/size + 1
		}
	}
	link := func(k int) string { return base + "?page=" + strconv.Itoa(k) }
	p := &pager{First: (n-1)*size + 1, Last: min(n*size, len(rows)), Total: len(rows)}
	if n > 1 {
		p.Prev = link(n - 1)
	}
	if n < pages {
		p.Next = link(n + 1)
	}
	for k := 1; k <= pages; k++ {
		u := link(k)
		if k == n {
			u = ""
		}
		p.Pages = append(p.Pages, pageLink{N: k, URL: u})
	}
	return rows[p.First-1 : p.Last], p
}

// active reports whether a row's step runs or waits on a human.
func active(r stepRow) bool {
	return r.Status == string(core.Running) || r.Status == string(core.WaitingOnHuman)
}

// graphSteps counts the boxes graphSVG would draw: the workflow's steps
// and its loops' bodies, or the run's top-level steps without it.
func graphSteps(wf *config.Workflow, st *core.State) int {
	n := 0
	if wf == nil {
		for _, key := range st.StepOrder {
			if !key.IsInstance() {
				n++
			}
		}
		return n
	}
	for _, step := range wf.Steps {
		n++
		if step.ForEach != nil {
			n += len(step.ForEach.Body)
		}
	}
	return n
}

// tailWriter keeps the last max bytes written to it, and counts them
// all.
type tailWriter struct {
	buf []byte
	max int
	n   int64
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// timeText writes a time for people, or "" for none.
func timeText(t *core.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// duration writes a duration rounded to the second.
func duration(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return d.Round(time.Second).String()
}

// cost writes what a run's agents cost, or "" when they reported
// nothing; "~" marks a cost partly computed from prices.
func cost(u *core.AgentUsage) string {
	if u == nil {
		return ""
	}
	c := fmt.Sprintf("$%.2f", u.CostUSD)
	if u.CostEstimated {
		c = "~" + c
	}
	return c
}

// clip shortens s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// statusClass is the CSS class of a status: "s-" and the status in
// lower case.
func statusClass(status string) string {
	return "s-" + strings.ToLower(status)
}
