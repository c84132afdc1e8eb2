package serve

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// A run's timeline is a Gantt chart of its sessions: one row per step
// (a loop's instances under their loop), one bar per session — and per
// wait on a human — on a time axis shared by all, from the run's start
// to now (or its end). Loop-backs are dashed arcs from the step whose
// gate failed to the step the run went back to, at the time it did.
// Each session's bar links to its log.

// timeline is what a run's events say of its sessions, kept up to date
// by applying each new event.
type timeline struct {
	t0   time.Time
	last time.Time
	rows map[core.StepKey]*trow
	arcs []loopArc
	seq  int64
}

// trow is one step's bars.
type trow struct {
	bars []*bar
	// skipped is set when the step was skipped.
	skipped bool
}

// bar is one session of a step, or one wait on a human.
type bar struct {
	start, end time.Time
	// wait marks a wait on a human.
	wait bool
	// class is the bar's CSS class: its outcome.
	class     string
	attempt   int
	iteration int
	log       string
	exit      *int
	note      string
}

// loopArc is a loop-back: at, from's gate sent the run back to to.
type loopArc struct {
	from, to core.StepKey
	at       time.Time
}

// maxTimelineEvents bounds the events a timeline is read from: past it,
// a run's timeline is drawn from its state (one bar per step, its last
// session), not from an event log of megabytes.
const maxTimelineEvents = 50_000

// readTimeline returns the timeline of a local run, for reading only:
// the one read before while the run's event log has not changed since,
// else one read now (a 5,000-step run's events take about 100 ms to
// read).
func (s *Server) readTimeline(t target, state *core.State) *timeline {
	fi, err := s.svc.FS.Stat(filepath.Join(t.runDir(), record.EventsFile))
	if err != nil {
		return s.buildTimeline(t, state)
	}
	k := timelineKey{dir: t.runDir(), size: fi.Size(), mod: fi.ModTime()}
	c := &s.timelines
	c.mu.Lock()
	tl, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return tl
	}
	tl = s.buildTimeline(t, state)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTimelines {
		c.m = map[timelineKey]*timeline{}
	}
	c.m[k] = tl
	return tl
}

// timelineCache keeps the timelines runs' pages read, by the state of
// their event logs; a timeline kept is only read.
type timelineCache struct {
	mu sync.Mutex
	m  map[timelineKey]*timeline
}

// timelineKey names an event log as it was when its timeline was read.
type timelineKey struct {
	dir  string
	size int64
	mod  time.Time
}

// maxCachedTimelines bounds the timelines kept.
const maxCachedTimelines = 8

// buildTimeline reads the timeline of a local run from its events: a
// timeline of its own, which its caller may go on applying events to.
func (s *Server) buildTimeline(t target, state *core.State) *timeline {
	if state.Seq > maxTimelineEvents {
		return timelineOfState(state)
	}
	events, err := record.ReadEvents(s.svc.FS, t.runDir(), 0)
	if err != nil {
		return timelineOfState(state)
	}
	tl := &timeline{}
	for _, e := range events {
		tl.apply(e)
	}
	return tl
}

// timelineOfState draws what a state says: one bar per step that ran,
// from its start to its end, for a run whose events are not read here.
func timelineOfState(state *core.State) *timeline {
	tl := &timeline{rows: map[core.StepKey]*trow{}}
	if state.CreatedAt != nil {
		tl.t0 = state.CreatedAt.Time
	}
	for key, ss := range state.Steps {
		if ss.StartedAt == nil {
			continue
		}
		b := &bar{start: ss.StartedAt.Time, class: statusClass(string(ss.Status)), attempt: ss.Attempts,
			iteration: ss.IterationCount, exit: ss.ExitCode, wait: ss.Status == core.WaitingOnHuman}
		if ss.EndedAt != nil && ss.Status != core.Running && ss.Status != core.WaitingOnHuman {
			b.end = ss.EndedAt.Time
		}
		if ss.LogPath != "" {
			b.log = filepath.Base(ss.LogPath)
		}
		tl.rows[key] = &trow{bars: []*bar{b}}
		if tl.t0.IsZero() || b.start.Before(tl.t0) {
			tl.t0 = b.start
		}
		if b.end.After(tl.last) {
			tl.last = b.end
		}
	}
	if state.UpdatedAt != nil && state.UpdatedAt.After(tl.last) {
		tl.last = state.UpdatedAt.Time
	}
	return tl
}

// apply adds what an event says to the timeline.
func (tl *timeline) apply(e core.Event) {
	if e.Seq != 0 && e.Seq <= tl.seq {
		return
	}
	tl.seq = max(tl.seq, e.Seq)
	if tl.rows == nil {
		tl.rows = map[core.StepKey]*trow{}
	}
	at := e.At.Time
	if tl.t0.IsZero() || at.Before(tl.t0) {
		tl.t0 = at
	}
	if at.After(tl.last) {
		tl.last = at
	}
	if e.Step.IsZero() && e.Type != core.EvCleanupStarted && e.Type != core.EvCleanupFinished {
		return
	}
	row := func(key core.StepKey) *trow {
		r := tl.rows[key]
		if r == nil {
			r = &trow{}
			tl.rows[key] = r
		}
		return r
	}
	switch e.Type {
	case core.EvStepStarted:
		var d core.StepStarted
		_ = json.Unmarshal(e.Data, &d)
		r := row(e.Step)
		r.close(at, "s-interrupted", nil, "")
		b := &bar{start: at, class: "s-running", attempt: d.Attempt, iteration: d.Iteration}
		if d.LogPath != "" {
			b.log = filepath.Base(d.LogPath)
		}
		r.bars = append(r.bars, b)
	case core.EvSessionStarted:
		var d core.SessionStarted
		_ = json.Unmarshal(e.Data, &d)
		if b := row(e.Step).open(); b != nil && d.LogPath != "" {
			b.log = filepath.Base(d.LogPath)
		}
	case core.EvStepWaiting:
		var d core.StepWaiting
		_ = json.Unmarshal(e.Data, &d)
		r := row(e.Step)
		if d.Session != nil {
			r.close(at, "s-completed", d.Session.ExitCode, "")
		}
		r.bars = append(r.bars, &bar{start: at, wait: true, class: "s-waiting_on_human", attempt: d.Attempt})
	case core.EvHumanInput:
		var d core.HumanInput
		_ = json.Unmarshal(e.Data, &d)
		class := "s-completed"
		if !d.Approved {
			class = "s-failed"
		}
		row(e.Step).close(at, class, nil, describeDecision(d))
	case core.EvStepCompleted:
		var d core.Outcome
		_ = json.Unmarshal(e.Data, &d)
		row(e.Step).close(at, "s-completed", d.ExitCode, d.Error)
	case core.EvAttemptFailed, core.EvStepFailed:
		var d core.Outcome
		_ = json.Unmarshal(e.Data, &d)
		row(e.Step).close(at, "s-failed", d.ExitCode, d.Error)
	case core.EvGateFailed:
		var d core.GateFailure
		_ = json.Unmarshal(e.Data, &d)
		row(e.Step).close(at, "s-gate", d.ExitCode, "gate failed: "+d.Reason)
		if !d.Target.IsZero() {
			tl.arcs = append(tl.arcs, loopArc{from: e.Step, to: d.Target, at: at})
		}
	case core.EvStepInterrupted:
		row(e.Step).close(at, "s-interrupted", nil, "interrupted")
	case core.EvStepSkipped:
		row(e.Step).skipped = true
	case core.EvCleanupStarted:
		r := row(cleanupKey())
		r.close(at, "s-interrupted", nil, "")
		r.bars = append(r.bars, &bar{start: at, class: "s-running"})
	case core.EvCleanupFinished:
		var d core.CleanupFinished
		_ = json.Unmarshal(e.Data, &d)
		class := "s-completed"
		if d.Failed {
			class = "s-failed"
		}
		row(cleanupKey()).close(at, class, nil, d.Error)
	}
}

// open returns the row's open bar, or nil.
func (r *trow) open() *bar {
	if n := len(r.bars); n > 0 && r.bars[n-1].end.IsZero() {
		return r.bars[n-1]
	}
	return nil
}

// close ends the row's open bar at at, with its outcome.
func (r *trow) close(at time.Time, class string, exit *int, note string) {
	if b := r.open(); b != nil {
		b.end, b.class, b.exit, b.note = at, class, exit, note
	}
}

// The timeline's measures, in SVG units.
const (
	tlLabelW = 210
	tlTrackW = 760
	tlRowH   = 22
	tlBarH   = 14
	tlAxisH  = 26
	tlWidth  = tlLabelW + tlTrackW + 20
)

// svg draws the timeline of a run: its steps in the order of the
// run's step table, at most maxRows of them (the others are said to be
// left out), on an axis from the run's start to end. Open bars end at
// end while a runner works on them (live), else at the last event.
func (tl *timeline) svg(state *core.State, base string, end time.Time, maxRows int, live bool) (template.HTML, string) {
	keys := tableOrder(state)
	if _, ok := tl.rows[cleanupKey()]; ok {
		keys = append(keys, cleanupKey())
	}
	var shown []core.StepKey
	for _, k := range keys {
		if r := tl.rows[k]; r != nil && len(r.bars) > 0 || !k.IsInstance() && state.Steps[k] != nil && state.Steps[k].LoopIndex != nil {
			shown = append(shown, k)
		}
	}
	if len(shown) == 0 {
		return "", "No session has started yet."
	}
	note := ""
	if len(shown) > maxRows {
		note = fmt.Sprintf("The timeline shows the first %d of %d steps that ran.", maxRows, len(shown))
		shown = shown[:maxRows]
	}
	t0 := tl.t0
	if state.CreatedAt != nil && (t0.IsZero() || state.CreatedAt.Before(t0)) {
		t0 = state.CreatedAt.Time
	}
	openEnd := end
	if !live {
		openEnd = tl.last
		if seen := lastSeen(state); seen.After(openEnd) && seen.Before(end) {
			openEnd = seen
		}
	}
	if end.Before(tl.last) {
		end = tl.last
	}
	span := end.Sub(t0)
	if span < time.Second {
		span = time.Second
	}
	x := func(t time.Time) float64 {
		d := t.Sub(t0)
		if d < 0 {
			d = 0
		}
		return tlLabelW + float64(tlTrackW)*float64(d)/float64(span)
	}
	height := tlAxisH + len(shown)*tlRowH + 6
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="gantt" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="timeline of the run's sessions" data-span="%s">`,
		tlWidth, height, tlWidth, height, esc(span.Round(time.Second).String()))
	b.WriteString(`<defs><marker id="tl-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker></defs>`)
	// The axis: a tick every step, labelled from the run's start.
	stepD := tickStep(span)
	for d := time.Duration(0); d <= span; d += stepD {
		tx := tlLabelW + float64(tlTrackW)*float64(d)/float64(span)
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text class="tick" x="%.1f" y="14">%s</text>`,
			tx, tlAxisH-6, tx, height, tx+2, esc(shortDuration(d)))
	}
	at := map[core.StepKey]int{}
	for i, k := range shown {
		at[k] = i
		y := tlAxisH + i*tlRowH
		name := k.String()
		indent := 0
		if k.IsInstance() {
			indent = 14
		}
		if k == cleanupKey() {
			name = "cleanup"
		}
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect class="band" x="0" y="%d" width="%d" height="%d"/>`, y, tlWidth, tlRowH)
		}
		logURL := base + "/logs/" + url.PathEscape(k.String())
		fmt.Fprintf(&b, `<a href="%s"><text class="label" x="%d" y="%d">%s<title>%s</title></text></a>`,
			esc(logURL), 6+indent, y+15, esc(clip(name, 30-indent/7)), esc(name))
		r := tl.rows[k]
		if r == nil || len(r.bars) == 0 {
			r = tl.loopRow(state, k)
		}
		if r == nil {
			continue
		}
		for _, br := range r.bars {
			e, open := br.end, br.end.IsZero()
			if open {
				// A wait on a human goes on whether or not a runner
				// holds the run; a session does not.
				e = openEnd
				if br.wait && !state.Status.Terminal() {
					e = end
				}
			}
			x1, x2 := x(br.start), x(e)
			w := max(x2-x1, 2)
			class := "bar " + br.class
			if br.wait {
				class += " wait"
			}
			if open && live {
				class += " open"
			}
			title := barTitle(k.String(), br, e.Sub(br.start), open)
			rect := fmt.Sprintf(`<rect class="%s" data-key="%s" x="%.1f" y="%d" width="%.1f" height="%d" rx="2"><title>%s</title></rect>`,
				class, esc(k.String()), x1, y+(tlRowH-tlBarH)/2, w, tlBarH, esc(title))
			if br.log != "" {
				fmt.Fprintf(&b, `<a href="%s?log=%s">%s</a>`, esc(logURL), url.QueryEscape(br.log), rect)
			} else {
				b.WriteString(rect)
			}
		}
	}
	for _, a := range tl.arcs {
		i, ok1 := at[a.from]
		j, ok2 := at[a.to]
		if !ok1 || !ok2 {
			continue
		}
		ax := x(a.at)
		y1, y2 := tlAxisH+i*tlRowH+tlRowH/2, tlAxisH+j*tlRowH+tlRowH/2
		fmt.Fprintf(&b, `<path class="loopback" d="M %.1f %d C %.1f %d, %.1f %d, %.1f %d" marker-end="url(#tl-arrow)"><title>%s</title></path>`,
			ax, y1, ax+28, y1, ax+28, y2, ax+3, y2, esc(fmt.Sprintf("%s looped back to %s at %s", a.from, a.to, shortDuration(a.at.Sub(t0)))))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), note
}

// loopRow is a loop's row: one bar from its first instance's start to
// its last one's end (open while any runs), of the loop's status; nil
// for a step that is not a loop or whose instances have not started.
func (tl *timeline) loopRow(state *core.State, loop core.StepKey) *trow {
	ss := state.Steps[loop]
	if ss == nil || ss.LoopIndex == nil || loop.IsInstance() {
		return nil
	}
	var b *bar
	open := false
	for k, r := range tl.rows {
		if !k.IsInstance() || k.Loop != loop.Step {
			continue
		}
		for _, x := range r.bars {
			if b == nil {
				b = &bar{start: x.start, end: x.end}
			}
			if x.start.Before(b.start) {
				b.start = x.start
			}
			if x.end.IsZero() {
				open = true
			} else if x.end.After(b.end) {
				b.end = x.end
			}
		}
	}
	if b == nil {
		return nil
	}
	if open || ss.Status == core.Running {
		b.end = time.Time{}
	}
	b.class = statusClass(string(ss.Status))
	b.note = "the loop's items"
	return &trow{bars: []*bar{b}}
}

// barTitle says what a bar is, for its tooltip.
func barTitle(key string, b *bar, d time.Duration, open bool) string {
	var parts []string
	switch {
	case b.wait:
		parts = append(parts, key+": waits on a human")
	case b.note == "the loop's items":
		parts = append(parts, key+": its items")
		b = &bar{start: b.start, end: b.end}
	default:
		parts = append(parts, fmt.Sprintf("%s: iteration %d, attempt %d", key, b.iteration, b.attempt))
	}
	if open {
		parts = append(parts, "for "+shortDuration(d)+" so far")
	} else {
		parts = append(parts, shortDuration(d))
	}
	if b.exit != nil {
		parts = append(parts, fmt.Sprintf("exit %d", *b.exit))
	}
	if b.note != "" {
		parts = append(parts, clip(b.note, 200))
	}
	return strings.Join(parts, " · ")
}

// tickStep is the time between two ticks of an axis of span: the
// first of a few round steps that makes at most eight ticks.
func tickStep(span time.Duration) time.Duration {
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour} {
		if span/d <= 8 {
			return d
		}
	}
	return 24 * time.Hour * (span/(24*time.Hour)/8 + 1)
}

// shortDuration writes a duration for an axis: 45s, 2m30s, 1h5m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		if s := int(d.Seconds()) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", int(d.Minutes()), s)
		}
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	if m := int(d.Minutes()) % 60; m != 0 {
		return fmt.Sprintf("%dh%dm", int(d.Hours()), m)
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

// tableOrder is the order of a run's step table: its steps in workflow
// order, each loop followed by its instances.
func tableOrder(state *core.State) []core.StepKey {
	instances := map[string][]core.StepKey{}
	var top []core.StepKey
	for _, key := range state.StepOrder {
		if key.IsInstance() {
			instances[key.Loop] = append(instances[key.Loop], key)
			continue
		}
		top = append(top, key)
	}
	out := make([]core.StepKey, 0, len(state.StepOrder))
	for _, key := range top {
		out = append(out, key)
		out = append(out, instances[key.Step]...)
	}
	return out
}

// cleanupKey() is the key of the cleanup session's row.
func cleanupKey() core.StepKey { return core.Key(record.CleanupSession) }
