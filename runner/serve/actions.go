package serve

import (
	"net/http"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// inputField is the prefix of the form fields that carry an approval's
// declared inputs: in.NAME.
const inputField = "in."

// decide approves (approve true) or rejects a waiting step. An
// approval's inputs are the form's in.NAME fields, or, for a step that
// declares none, the key=value lines of its "inputs" field; ops checks
// them against the step's declaration. A rejection needs a reason.
// Success redirects to the run's page (303); a decision that lost to
// another is 409 with what was decided, by whom and when.
func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, ok := s.target(w, r)
		if !ok {
			return
		}
		req := ops.DecideRequest{Repo: t.repoDir, RunID: t.runID, Step: t.step, Approve: approve, By: who(r),
			Reason: strings.TrimSpace(r.PostFormValue("reason"))}
		if approve {
			in, err := formInputs(r)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			req.Input = in
		}
		d, err := s.svc.Decide(req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		done := "reject"
		switch {
		case d.Already:
			done = "already"
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
// cleanup) through ops.Control, with the form's "note", and redirects
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
	res, err := s.svc.Control(ops.ControlRequest{Repo: t.repoDir, RunID: t.runID, State: state, By: who(r),
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

// relaunch starts flow resume (or, with retry, flow retry) on a run as
// a detached process, after checking through ops that it would start:
// the run and its workflow are found, a retried run has failed, and no
// live runner holds it. It redirects to the run's page, which shows
// what the new runner does.
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
		if s.launcher == nil {
			s.message(w, r, http.StatusForbidden, "Not available", "This server does not start runners.")
			return
		}
		st, err := s.svc.Status(t.repoDir, t.runID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch {
		case !retry && st.State.Status.Terminal():
			s.fail(w, r, core.Refused("run %s has already %s; to run its failed steps again, retry it", t.runID, st.State.Status))
			return
		case s.heldByLiveRunner(st):
			s.fail(w, r, core.Refused("run %s is held by a live runner (%s); it needs no %s", t.runID, st.Liveness.State, verb))
			return
		}
		if _, err := s.svc.PrepareResume(ops.ResumeRequest{Repo: t.repoDir, RunID: t.runID, Retry: retry}); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.launcher.Launch([]string{verb, t.runID, "--repo", t.repoDir, "--by", who(r)}); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, runURL(t.repo, t.runID)+"?done="+verb, http.StatusSeeOther)
	}
}

// heldByLiveRunner reports whether a live runner holds a run.
func (s *Server) heldByLiveRunner(st ops.Status) bool {
	alive := s.svc.Alive
	if alive == nil {
		alive = runlock.ProcessAlive
	}
	_, live := record.LiveRunner(s.svc.FS, st.RunDir, st.State, s.now(), alive)
	return live
}

// now is the Service's time.
func (s *Server) now() time.Time {
	if s.svc.Clock == nil {
		return time.Now()
	}
	return s.svc.Clock.Now()
}
