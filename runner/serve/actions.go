package serve

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// Every change goes through the run's engine (ops.Engine), as the
// command line's do; the pages' handlers and the JSON API's share the
// functions here and differ only in how they read the request and
// answer.

// inputField is the prefix of the form fields that carry an approval's
// declared inputs: in.NAME.
const inputField = "in."

// decided is what a decision from a page did.
type decided struct {
	ops.Decision
	// RunnerLive is true when a runner holds the run and takes the
	// decision up; Resumed when none did and one was started.
	RunnerLive bool `json:"runner_live"`
	Resumed    bool `json:"resumed"`
}

// doDecide records a decision through the run's engine. When no runner
// holds the run, the decision waits for one: with ResumeOnDecision one
// is started.
func (s *Server) doDecide(ctx context.Context, t target, req ops.DecideRequest) (decided, error) {
	req.Repo, req.RunID, req.Step = t.dir(), t.runID, t.key
	d, err := t.src.eng.Decide(ctx, req)
	if err != nil {
		return decided{}, err
	}
	out := decided{Decision: d, RunnerLive: true}
	st, err := t.src.eng.Status(ctx, t.dir(), t.runID)
	if err != nil || st.State.Status.Terminal() || s.runnerLive(t, st) {
		return out, nil
	}
	out.RunnerLive = false
	if s.resumeOnDecision && s.launcher != nil && !d.Already {
		if err := s.doRelaunch(ctx, t, false, req.By); err == nil {
			out.Resumed = true
		}
	}
	return out, nil
}

// decide approves (approve true) or rejects a waiting step. An
// approval's inputs are the form's in.NAME fields, or, for a step that
// declares none, the key=value lines of its "inputs" field; the engine
// checks them against the step's declaration. A rejection needs a
// reason. Success redirects to the run's page (303), which says what
// comes next when no runner holds the run; a decision that lost to
// another is 409 with what was decided, by whom and when.
func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, ok := s.target(w, r)
		if !ok {
			return
		}
		req := ops.DecideRequest{Approve: approve, By: who(r), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
		if !approve && req.Reason == "" {
			s.fail(w, r, ops.Usage("A rejection needs a reason: write it in the Reason field."))
			return
		}
		if approve {
			in, err := formInputs(r)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			req.Input = in
		}
		d, err := s.doDecide(r.Context(), t, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		done := "reject"
		switch {
		case d.Already:
			done = "already"
		case d.Resumed:
			done = "resumed"
		case !d.RunnerLive:
			done = "decided"
		case approve:
			done = "approve"
		}
		http.Redirect(w, r, runURL(t.repo, t.runID)+"?done="+done, http.StatusSeeOther)
	}
}

// formInputs reads an approval's inputs from its form: every non-empty
// in.NAME field, then the key=value lines of "inputs". A declared input
// left empty is left out, so that its default applies.
func formInputs(r *http.Request) (map[string]any, error) {
	in := map[string]any{}
	for k, vs := range r.PostForm {
		if name, ok := strings.CutPrefix(k, inputField); ok && len(vs) > 0 && vs[0] != "" {
			in[name] = vs[0]
		}
	}
	var lines []string
	for _, l := range strings.Split(r.PostFormValue("inputs"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 {
		more, err := ops.ParseInputs(lines)
		if err != nil {
			return nil, err
		}
		for k, v := range more {
			in[k] = v
		}
	}
	if len(in) == 0 {
		return nil, nil
	}
	return in, nil
}

// controlStates maps the verbs of the control route to desired states.
var controlStates = map[string]core.ControlState{
	"pause":    core.Pause,
	"continue": core.Continuous,
	"run-once": core.RunOnce,
	"cleanup":  core.RunCleanup,
}

// control writes a run's desired state (pause, continue, run-once,
// cleanup) through its engine, with the form's "note", and redirects
// to the run's page.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	state, ok := controlStates[r.PathValue("verb")]
	if !ok {
		s.message(w, r, http.StatusNotFound, "No such action", "Unknown action "+r.PathValue("verb")+": want pause, continue, run-once or cleanup.")
		return
	}
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	res, err := t.src.eng.Control(r.Context(), ops.ControlRequest{Repo: t.dir(), RunID: t.runID, State: state, By: who(r),
		Note: clip(strings.TrimSpace(r.PostFormValue("note")), 500)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	done := r.PathValue("verb")
	if !res.RunnerLive && state != core.Pause {
		done = "idle"
	}
	http.Redirect(w, r, runURL(t.repo, t.runID)+"?done="+done, http.StatusSeeOther)
}

// cancel stops a run through its engine (flow cancel): its runner
// stops its sessions and records it interrupted, resumable.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	if _, err := t.src.eng.Cancel(r.Context(), ops.CancelRequest{Repo: t.dir(), RunID: t.runID, By: who(r)}); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, runURL(t.repo, t.runID)+"?done=cancel", http.StatusSeeOther)
}

// doRelaunch starts flow resume (or, with retry, flow retry) on a run
// as a detached process, after its engine's Restart says that it would
// start: the run and its workflow are found, a retried run has failed.
// A run that a live runner holds, or that has ended (resume), is
// refused with what to do instead.
func (s *Server) doRelaunch(ctx context.Context, t target, retry bool, by string) error {
	verb := "resume"
	if retry {
		verb = "retry"
	}
	if s.launcher == nil {
		return ops.Refused("this server does not start runners: flow %s %s does", verb, t.runID)
	}
	st, err := t.src.eng.Status(ctx, t.dir(), t.runID)
	if err != nil {
		return err
	}
	switch {
	case !retry && st.State.Status == core.RunFailed:
		return ops.Refused("Run %s has failed: there is nothing to resume. Retry failed steps runs them again.", t.runID)
	case !retry && st.State.Status.Terminal():
		return ops.Refused("Run %s has %s: there is nothing to resume.", t.runID, st.State.Status)
	case s.runnerLive(t, st):
		return ops.Refused("Run %s is held by a live runner (%s): it needs no %s.", t.runID, st.Liveness.State, verb)
	}
	req := ops.RestartRequest{Repo: t.dir(), RunID: t.runID, Retry: retry}
	if t.src.local {
		req.By = by
	}
	if _, err := t.src.eng.Restart(ctx, req); err != nil {
		return err
	}
	args := []string{verb, t.runID, "--repo", t.dir(), "--engine", t.src.eng.Name()}
	if t.src.local {
		args = append(args, "--by", by)
	}
	return s.launcher.Launch(args)
}

// relaunch starts flow resume (or flow retry) on a run and redirects
// to its page, which shows what the new runner does.
func (s *Server) relaunch(retry bool) http.HandlerFunc {
	verb := "resume"
	if retry {
		verb = "retry"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		t, ok := s.target(w, r)
		if !ok {
			return
		}
		if err := s.doRelaunch(r.Context(), t, retry, who(r)); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, runURL(t.repo, t.runID)+"?done="+verb, http.StatusSeeOther)
	}
}

// frozen reports whether a local run's runner holds its lock, its
// process alive on this host, but has not beaten its heartbeat for
// three intervals: flow resume --takeover is what helps.
func (s *Server) frozen(st ops.Status) bool {
	l := st.Liveness
	if l.Holder == nil || l.Holder.Host != s.svc.Host || st.State.Status.Terminal() {
		return false
	}
	switch l.State {
	case record.LiveStale:
		return true
	case record.LiveDead:
		return s.alive()(*l.Holder)
	}
	return false
}

// alive is the Service's test of a runner's process.
func (s *Server) alive() func(runlock.Holder) bool {
	if s.svc.Alive != nil {
		return s.svc.Alive
	}
	return runlock.ProcessAlive
}

// doTakeover starts flow resume --takeover on a local run whose runner
// is frozen; the new runner checks the process against the lock again
// before it kills it.
func (s *Server) doTakeover(ctx context.Context, t target, by string) error {
	if s.launcher == nil {
		return ops.Refused("this server does not start runners: flow resume %s --takeover does", t.runID)
	}
	if !t.src.local {
		return ops.Refused("Run %s runs on %s: its server drives it, there is no runner to take over.", t.runID, t.src.name)
	}
	st, err := t.src.eng.Status(ctx, t.dir(), t.runID)
	if err != nil {
		return err
	}
	if !s.frozen(st) {
		return ops.Refused("Run %s has no frozen runner to take over (%s): %s", t.runID, st.Liveness.State, st.Liveness.Reason)
	}
	return s.launcher.Launch([]string{"resume", t.runID, "--repo", t.dir(), "--engine", t.src.eng.Name(), "--by", by, "--takeover"})
}

// takeover starts flow resume --takeover and redirects to the run's
// page.
func (s *Server) takeover(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	if err := s.doTakeover(r.Context(), t, who(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, runURL(t.repo, t.runID)+"?done=takeover", http.StatusSeeOther)
}

// heldByLiveRunner reports whether a live runner holds a local run.
func (s *Server) heldByLiveRunner(st ops.Status) bool {
	_, live := record.LiveRunner(s.svc.FS, st.RunDir, st.State, s.now(), s.alive())
	return live
}

// now is the Service's time.
func (s *Server) now() time.Time {
	if s.svc.Clock == nil {
		return time.Now()
	}
	return s.svc.Clock.Now()
}
