package serve

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// A run's page is made of parts — its badge, facts, the question of a
// step that waits, the actions that apply, the timeline and the graph —
// each rendered by a template of its own from a runView. The page
// renders them all; a run's watcher renders them again whenever the run
// changes and sends the parts that differ, which the page puts in
// place: the page stays as the server renders it, live.

// fragments are the names of a run page's live parts, in the order
// they are sent.
var fragments = []string{"badge", "facts", "decide", "actions", "timeline", "graph"}

// runView is what a run's page shows.
type runView struct {
	page
	Base     string
	Source   string
	Engine   string
	Local    bool
	RunID    string
	Workflow string
	Status   string
	// Badge and BadgeClass show the run's state: its status, or dead,
	// stale or paused when that is what matters.
	Badge, BadgeClass string
	Live              string
	Hook              string
	Reason            string
	Fault             string
	Started           string
	Duration          string
	// Since, while the run goes on with a live runner, is when it
	// started (RFC 3339): the page counts its duration on.
	Since string
	Cost  string
	// Pending says what a person asked of the runner that it has not
	// done yet (a pause, a single session).
	Pending string
	Done    string
	// Steps are the rows of the table's page; Waiting, the steps that
	// wait on a human, on whatever page.
	Steps   []stepRow
	Waiting []waitView
	Pager   *pager
	Graph   template.HTML
	// GraphNote says why there is no graph.
	GraphNote    string
	Timeline     template.HTML
	TimelineNote string
	Events       []eventRow
	EventsURL    string
	// Actions are the actions that apply to the run as it is, the one
	// that helps most first and marked Primary.
	Actions []action
	// ActionsNote says why an action that might be expected is not
	// offered.
	ActionsNote string
	// Live runner: a runner holds the run and acts on control.
	RunnerLive bool
}

// action is a button of a run's page.
type action struct {
	Path    string
	Label   string
	Help    string
	Primary bool
	Danger  bool
}

// waitView is a step that waits on a human, and the question it asks.
type waitView struct {
	Key         string
	Description string
	// Message is the step's rendered human.message.
	Message string
	Form    *humanForm
	// Decided says the decision recorded on it that no runner has
	// acted on yet; CanResume offers Resume beside it.
	Decided   string
	CanResume bool
}

// runSubject is what a run's view is made from.
type runSubject struct {
	t  target
	st ops.Status
	wf *config.Workflow
	tl *timeline
	// rowsOnly leaves the graph and the timeline out: a watcher draws
	// them less often than it sends the table.
	rowsOnly bool
}

// view builds the view of a run. Its page is left empty: the caller
// sets it (the watcher's parts are the same for everyone; the page
// fills in each form's CSRF token).
func (s *Server) view(sub runSubject) *runView {
	t, st := sub.t, sub.st
	state := st.State
	base := runURL(t.repo, t.runID)
	row := s.runRowOf(runRow{}, st, t.src.local)
	v := &runView{Base: base, Source: t.src.name, Engine: t.src.eng.Name(), Local: t.src.local, RunID: t.runID,
		Workflow: state.WorkflowName, Status: string(state.Status), Live: runnerWords(st, t.src.local), Hook: st.Liveness.Hook.String(),
		Reason: pageWords(st.Liveness.Reason), Fault: st.Fault, Started: row.Started, Duration: row.Duration, Cost: row.Cost}
	v.page.ReadOnly = s.readOnly
	v.Badge, v.BadgeClass = runState(st)
	v.RunnerLive = s.runnerLive(t, st)
	if v.RunnerLive && !state.Status.Terminal() && state.CreatedAt != nil {
		v.Since = state.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if t.src.local && !state.Status.Terminal() {
		v.Pending = pendingControl(s, t, state)
	}
	rows := stepRows(base, st, sub.wf)
	if !v.RunnerLive {
		freeze(rows, lastSeen(state))
	}
	for _, r := range rows {
		if r.Waiting != nil {
			v.Waiting = append(v.Waiting, s.waitViewOf(sub, r, v.RunnerLive))
		}
	}
	v.Steps = rows
	s.actions(v, t, st)
	if sub.rowsOnly {
		return v
	}
	if n := graphSteps(sub.wf, state); n <= s.maxGraphSteps {
		v.Graph = graphSVG(sub.wf, state, v.RunnerLive || state.Status.Terminal())
	} else {
		v.GraphNote = fmt.Sprintf("The graph is drawn for workflows of up to %d steps; this one has %d. flow graph draws it: flow graph %s", s.maxGraphSteps, n, state.WorkflowFile)
	}
	tl := sub.tl
	if tl == nil {
		tl = timelineOfState(state)
	}
	end := st.At
	if state.Status.Terminal() && state.UpdatedAt != nil {
		end = state.UpdatedAt.Time
	}
	v.Timeline, v.TimelineNote = tl.svg(state, base, end, s.maxGraphSteps, v.RunnerLive)
	return v
}

// runState is how a run's state is shown: its words and CSS class. A
// run that goes on is shown dead or stale when its runner is, paused
// when it is.
func runState(st ops.Status) (text, class string) {
	status := string(st.State.Status)
	if !st.State.Status.Terminal() {
		switch st.Liveness.State {
		case record.LiveDead:
			return "dead", "s-dead"
		case record.LiveStale:
			return "stale", "s-stale"
		}
		if st.State.Status == core.RunPaused {
			return "paused", "s-paused"
		}
	}
	return status, statusClass(status)
}

// runnerWords says what a run's runner does, for people (local: a
// repository's run, whose runner holds a lock).
func runnerWords(st ops.Status, local bool) string {
	l := st.Liveness
	switch l.State {
	case record.LiveWorking:
		return "working"
	case record.LiveSpawning:
		return "between sessions"
	case record.LiveStuck:
		if ss := st.State.Steps[l.Hook]; ss != nil && ss.Status == core.WaitingOnHuman {
			if local && l.Holder == nil {
				return "no runner; waiting for a decision"
			}
			return "waiting for a decision"
		}
		return "stuck"
	case record.LiveDead:
		return "dead: no runner goes on with it"
	case record.LiveStale:
		return "stale: its runner has not been heard from"
	}
	return l.State
}

// runnerLive reports whether a runner holds a run and acts on it: a
// local run's live runner, a Temporal run's workflow.
func (s *Server) runnerLive(t target, st ops.Status) bool {
	if st.State.Status.Terminal() {
		return false
	}
	if t.src.local {
		return s.heldByLiveRunner(st)
	}
	switch st.Liveness.State {
	case record.LiveDead, record.LiveStopped, record.LiveDone:
		return false
	}
	return true
}

// freeze stops the durations of the running steps of a run no runner
// holds from being counted on: they do not run. Their durations end
// when the run was last heard from.
func freeze(rows []stepRow, seen time.Time) {
	for i := range rows {
		if rows[i].Since == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, rows[i].Since); err == nil && !seen.IsZero() {
			rows[i].Duration = duration(seen.Sub(t))
		}
		rows[i].Since = ""
		rows[i].Class = "s-dead"
	}
}

// lastSeen is when a run was last heard from: its runner's last
// heartbeat, or its last change.
func lastSeen(state *core.State) time.Time {
	var t time.Time
	if state.UpdatedAt != nil {
		t = state.UpdatedAt.Time
	}
	if state.Runner != nil && state.Runner.HeartbeatAt != nil && state.Runner.HeartbeatAt.After(t) {
		t = state.Runner.HeartbeatAt.Time
	}
	return t
}

// pendingControl says what control.json asks that the runner has not
// done yet, or "".
func pendingControl(s *Server, t target, state *core.State) string {
	c, err := record.ReadControl(s.svc.FS, t.runDir())
	if err != nil || c == nil || c.DesiredState == "" || c.DesiredState == c.CurrentState {
		return ""
	}
	what := map[core.ControlState]string{core.Pause: "A pause", core.Continuous: "Going on", core.RunOnce: "One more session, then a pause",
		core.RunCleanup: "The cleanup session, then a pause"}[c.DesiredState]
	if what == "" || c.DesiredState == core.Continuous && state.Status != core.RunPaused {
		return ""
	}
	if c.DesiredState == core.Pause && state.Status == core.RunPaused {
		return ""
	}
	out := what + " was asked"
	if c.SetBy != "" {
		out += " by " + c.SetBy
	}
	if c.Timestamp != "" {
		out += " at " + shortTime(c.Timestamp)
	}
	if c.Note != "" {
		out += " (" + c.Note + ")"
	}
	return out + "; the runner does it between sessions."
}

// waitViewOf is the question of a waiting step: its description, its
// rendered message, and the form, or the decision recorded that no
// runner has acted on yet.
func (s *Server) waitViewOf(sub runSubject, r stepRow, live bool) waitView {
	w := waitView{Key: r.Key, Form: r.Waiting}
	step := stepOf(sub.wf, r.key)
	if step != nil {
		w.Description = step.Description()
	}
	w.Message = s.humanMessage(sub, r.key, step)
	if !sub.t.src.local {
		return w
	}
	ss := sub.st.State.Steps[r.key]
	if ss == nil || ss.ManualInputPath == nil {
		return w
	}
	anyFile := step != nil && step.Human != nil && step.Human.AnyFile
	in, err := record.ReadDecision(s.svc.FS, *ss.ManualInputPath, anyFile)
	if err != nil || in == nil || record.DecidedBefore(in, ss) {
		return w
	}
	w.Decided = describeDecision(*in)
	if !live {
		w.Decided += ". No runner holds this run: it goes on once resumed."
		w.CanResume = s.launcher != nil
	} else {
		w.Decided += "; the runner takes it up."
	}
	return w
}

// stepOf returns the workflow's step of a step key (an instance's body
// step), or nil.
func stepOf(wf *config.Workflow, key core.StepKey) *config.Step {
	if wf == nil {
		return nil
	}
	return wf.Step(key.Step)
}

// describeDecision says a decision for people: "approved by alice at
// 14:30:05 with ticket=OPS-1", "rejected by bob at … (not today)".
func describeDecision(in core.HumanInput) string {
	out := record.Verb(in.Approved)
	if in.By != "" {
		out += " by " + in.By
	}
	if in.At != "" {
		out += " at " + shortTime(in.At)
	}
	if len(in.Input) > 0 {
		keys := slices.Sorted(maps.Keys(in.Input))
		var kv []string
		for _, k := range keys {
			kv = append(kv, fmt.Sprintf("%s=%v", k, in.Input[k]))
		}
		out += " with " + strings.Join(kv, ", ")
	}
	if in.Reason != "" {
		out += " (" + in.Reason + ")"
	}
	return strings.ToUpper(out[:1]) + out[1:]
}

// shortTime writes a recorded time (RFC 3339) to the second, in UTC.
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// actions sets the actions that apply to a run as it is. A run whose
// runner is frozen is taken over (highlighted) or cancelled; one that a
// live runner holds can be paused (or go on, once paused), run once,
// cleaned up and cancelled; one that no runner holds is resumed (its
// first action: it does nothing until then); a failed run is retried;
// a completed run has none.
func (s *Server) actions(v *runView, t target, st ops.Status) {
	state := st.State
	launch := s.launcher != nil
	switch {
	case state.Status == core.RunCompleted:
		return
	case state.Status == core.RunFailed:
		if launch {
			v.Actions = append(v.Actions, action{Path: "retry", Label: "Retry failed steps", Primary: true,
				Help: "run the failed steps, and what depends on them, again"})
		} else {
			v.ActionsNote = "This server does not start runners: flow retry " + t.runID + " does."
		}
		return
	}
	if t.src.local && s.frozen(st) {
		// Its runner holds the lock but is not heard from: the control
		// file's requests would wait on it for ever.
		if launch {
			v.Actions = append(v.Actions, action{Path: "takeover", Label: "Take over", Primary: true,
				Help: "its runner has not been heard from: stop it (checked to be this run's runner first), then start one that goes on"})
		} else {
			v.ActionsNote = "Its runner is not heard from, and this server does not start runners: flow resume " + t.runID + " --takeover stops it and goes on."
		}
		v.Actions = append(v.Actions, action{Path: "cancel", Label: "Cancel", Danger: true, Help: "stop the run's sessions now; the run stays resumable"})
		return
	}
	if v.RunnerLive {
		if state.Status == core.RunPaused || v.Pending != "" && strings.HasPrefix(v.Pending, "A pause") {
			v.Actions = append(v.Actions, action{Path: "control/continue", Label: "Continue", Primary: state.Status == core.RunPaused, Help: "let the runner go on"})
		} else {
			v.Actions = append(v.Actions, action{Path: "control/pause", Label: "Pause", Help: "pause after the current session"})
		}
		v.Actions = append(v.Actions,
			action{Path: "control/run-once", Label: "Run once", Help: "run one more session, then pause"},
			action{Path: "control/cleanup", Label: "Clean up", Help: "run the cleanup session, then pause"},
			action{Path: "cancel", Label: "Cancel", Danger: true, Help: "stop the run's sessions now; the run stays resumable"})
		return
	}
	if state.Status == core.RunPaused && t.src.local {
		v.Actions = append(v.Actions, action{Path: "control/continue", Label: "Continue", Help: "clear the pause, so that a resumed runner goes on"})
	}
	if launch {
		v.Actions = append([]action{{Path: "resume", Label: "Resume", Primary: true,
			Help: "start a runner that takes the run over and goes on"}}, v.Actions...)
	} else {
		v.ActionsNote = "No runner holds this run, and this server does not start runners: flow resume " + t.runID + " does."
	}
}

// humanMessage returns the rendered human.message of a waiting step:
// for a local run, the run's events replayed into the state the runner
// rendered it with (kept while the step waits); else, when it does not
// render, or when it reads a step's output (which the runner keeps in
// memory, not in the record), the message as the workflow writes it.
func (s *Server) humanMessage(sub runSubject, key core.StepKey, step *config.Step) string {
	if step == nil || step.Human == nil || step.Human.Message == nil {
		return ""
	}
	src := step.Human.Message.Src
	ss := sub.st.State.Steps[key]
	if !sub.t.src.local || ss == nil || ss.StartedAt == nil || readsOutput.MatchString(src) {
		return src
	}
	k := messageKey{dir: sub.t.runDir(), step: key.String(), since: ss.StartedAt.String()}
	if m, ok := s.messages.get(k); ok {
		return m
	}
	a := local.NewAnnouncer(sub.wf, spec.Options{Workflow: sub.wf, Repo: sub.t.dir()}, io.Discard)
	events, err := record.ReadEvents(s.svc.FS, k.dir, 0)
	if err != nil {
		return src
	}
	for _, e := range events {
		if a.Event(e) != nil {
			return src
		}
	}
	m := a.HumanMessage(key)
	if m == "" {
		m = src
	}
	s.messages.put(k, m)
	return m
}

// readsOutput finds a template's use of a step's output: an
// expression that names output.
var readsOutput = regexp.MustCompile(`\{\{[^}]*\boutput\b[^}]*\}\}`)

// messageCache keeps the rendered messages of waiting steps: the run's
// events are replayed once per wait, not at every view.
type messageCache struct {
	mu sync.Mutex
	m  map[messageKey]string
}

// messageKey names one wait of a step.
type messageKey struct{ dir, step, since string }

// maxMessages bounds the messages kept.
const maxMessages = 64

func (c *messageCache) get(k messageKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[k]
	return m, ok
}

func (c *messageCache) put(k messageKey, m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxMessages {
		c.m = map[messageKey]string{}
	}
	c.m[k] = m
}

// renderParts renders a view's live parts, by name.
func (s *Server) renderParts(v *runView) (map[string]string, error) {
	out := make(map[string]string, len(fragments))
	var buf bytes.Buffer
	for _, name := range fragments {
		buf.Reset()
		if err := s.pages["run"].ExecuteTemplate(&buf, name, v); err != nil {
			return nil, fmt.Errorf("render the %s of run %s: %w", name, v.RunID, err)
		}
		out[name] = buf.String()
	}
	return out, nil
}

// subject reads what a run's view is made from: its status through its
// engine, its workflow and, for a local run, its timeline from its
// events.
func (s *Server) subject(ctx context.Context, t target) (runSubject, error) {
	st, err := t.src.eng.Status(ctx, t.dir(), t.runID)
	if err != nil {
		return runSubject{}, err
	}
	sub := runSubject{t: t, st: st}
	if t.src.local {
		sub.wf = s.workflow(t.dir(), st.State)
		sub.tl = s.readTimeline(t, st.State)
	} else {
		sub.wf = s.remoteWorkflow(st.State)
	}
	return sub, nil
}

// remoteWorkflow loads the workflow of a run of another engine when
// its file is found on this machine, or returns nil.
func (s *Server) remoteWorkflow(state *core.State) *config.Workflow {
	if state == nil || state.WorkflowFile == "" {
		return nil
	}
	dir := state.RepoDir
	if dir == "" {
		dir = s.sources[0].dir
	}
	return s.workflow(dir, state)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
