package local

import (
	"encoding/json"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// env builds the expression environment of the run, with cur (the step
// being decided) filled in when it is not nil.
func (x *run) env(cur *stepFacts) *gates.Env {
	st := x.st
	e := &gates.Env{
		Vars:  st.Vars,
		Env:   x.environ,
		Steps: map[string]gates.StepInfo{},
		FS:    x.r.FS,
		Dir:   x.opts.Repo,
		Now:   x.r.Clock.Now(),
	}
	if cur != nil {
		// read_file and glob read the workspace the step works in.
		e.Dir = x.workDir(cur.step)
	}
	e.Run = gates.RunInfo{ID: st.RunID, Workflow: st.WorkflowName, Usage: usageInfo(st.Usage)}
	if st.CreatedAt != nil {
		e.Run.StartedAt = st.CreatedAt.Time
	}
	wide := cur == nil
	if cur != nil {
		wide = x.runWide[cur.step.Step]
	}
	if wide {
		x.cacheMu.Lock()
		for id, s := range st.Steps {
			e.Run.Iteration = max(e.Run.Iteration, s.IterationCount)
			if id.IsInstance() {
				continue // steps.<body step> is an item's own, below
			}
			info := x.stepInfo(id, s)
			if s.LoopIndex != nil {
				if loop := x.wf.Step(id.Step); loop != nil && loop.ForEach != nil {
					info.Items = x.loopItemsInfo(loop, s)
				}
			}
			e.Steps[id.Step] = info
		}
		if cur != nil {
			x.fillItem(e, cur.step, true)
		}
		x.cacheMu.Unlock()
	} else if cur != nil {
		x.fillItem(e, cur.step, false)
	}
	if cur != nil {
		cur.fill(e)
		e.Attempt, e.Iteration = cur.attempt, cur.iteration
		if s := st.Steps[cur.step]; s != nil && s.Feedback != nil {
			fb := s.Feedback
			e.Feedback = gates.Feedback{Step: fb.Step, Reason: fb.Reason, Report: rawMap(fb.Report), Output: fb.Output}
		}
	}
	return e
}

// fill copies what is known of the session into e.
func (f *stepFacts) fill(e *gates.Env) {
	e.ExitCode, e.Output, e.Signals, e.Verdict = f.exitCode, f.output, f.signals, f.verdict
	e.Metrics, e.Report, e.Error, e.Check = f.metrics, f.report, f.err, f.check
}

// stepFacts is what is known of the session being decided.
type stepFacts struct {
	step      core.StepKey
	exitCode  int
	output    string
	signals   map[string]bool
	verdict   string
	metrics   map[string]string
	report    map[string]any
	attempt   int
	iteration int
	err       string
	check     gates.CheckInfo
}

func (x *run) stepInfo(id core.StepKey, s *core.StepState) gates.StepInfo {
	info := gates.StepInfo{
		Status:    string(s.Status),
		Attempts:  s.Attempts,
		Iteration: s.IterationCount,
		Output:    x.outputs[id],
		Signals:   s.Signals,
		Verdict:   s.Verdict,
		Metrics:   s.Metrics,
		Artifacts: x.exprArtifacts(s.Artifacts),
		Report:    x.reports[id],
		Error:     deref(s.LastError),
	}
	if s.ExitCode != nil {
		info.ExitCode = *s.ExitCode
	}
	info.Usage = usageInfo(s.Usage)
	if st := x.stepOf(id); st != nil {
		info.Metadata = st.Metadata()
	}
	if h := s.Human; h != nil {
		info.Input = h.Input
	}
	if s.StartedAt != nil && s.EndedAt != nil {
		info.Duration = s.EndedAt.Sub(s.StartedAt.Time)
	}
	return info
}

// loadCaches reads the reports (and, where expressions use them, the
// output of) steps that finished before this runner took the run.
func (x *run) loadCaches() {
	for id, s := range x.st.Steps {
		if s.Status != core.Completed && s.Status != core.Failed {
			continue
		}
		if s.ReportPath != nil {
			if rep, err := record.ReadReport(x.r.FS, *s.ReportPath, x.dir, x.limits.Report); err == nil && rep != nil {
				x.reports[id] = rep.Raw
			}
		}
		if !id.IsInstance() && x.keepOut[id.Step] && s.LogPath != "" {
			x.outputs[id] = record.ReadTail(x.r.FS, s.LogPath, outputTail)
		}
	}
}

// sourceRefs reads, once, when a runner takes a run, what the compiled
// expressions and templates of wf read of the run (gates.Refs). It
// returns the steps whose output some source reads (only theirs is kept
// in memory after they end; every step's when one reads an output
// through a computed step), and the steps whose own sources (with their
// agent's) read steps.* or run.* (only theirs get the per-step part of
// the environment, which costs time in proportion to the size of the
// run).
func sourceRefs(wf *config.Workflow) (outputs, runWide map[string]bool) {
	outputs, runWide = map[string]bool{}, map[string]bool{}
	anyOutput := false
	for _, s := range wf.AllSteps() {
		for _, r := range stepRefs(wf, s) {
			for _, id := range r.Outputs {
				outputs[id] = true
			}
			anyOutput = anyOutput || r.AnyOutput
			if r.RunWide {
				runWide[s.ID] = true
			}
		}
	}
	if anyOutput {
		for _, s := range wf.AllSteps() {
			outputs[s.ID] = true
		}
	}
	return outputs, runWide
}

// stepRefs lists what every expression and template a step's session,
// gate and decisions evaluate reads of the run.
func stepRefs(wf *config.Workflow, s *config.Step) []gates.Refs {
	var out []gates.Refs
	addT := func(t *config.Template) {
		if t != nil && t.Compiled() != nil {
			out = append(out, t.Compiled().Refs())
		}
	}
	addE := func(e *config.Expr) {
		if e != nil && e.Program() != nil {
			out = append(out, e.Program().Refs())
		}
	}
	if fe := s.ForEach; fe != nil {
		addE(fe.Items)
		addE(fe.Key)
	}
	addT(s.Run)
	addT(s.Prompt)
	addE(s.When)
	addE(s.RetryIf)
	for _, a := range s.Artifacts {
		addT(a)
	}
	for _, v := range s.Env {
		addT(v)
	}
	for _, d := range []*config.Duration{wf.StepTimeout(s), wf.StepIdleTimeout(s)} {
		if d != nil {
			addE(d.Expr)
		}
	}
	if g := s.Gate; g != nil {
		addE(g.Pass)
		addE(g.Fail)
		addT(g.Check)
	}
	if h := s.Human; h != nil {
		addT(h.Message)
		addE(h.AutoApprove)
		if h.Timeout != nil {
			addE(h.Timeout.Expr)
		}
	}
	if a := wf.Agents[s.Agent]; a != nil && s.Kind == config.KindAgent {
		addT(a.Run)
		for _, v := range a.Env {
			addT(v)
		}
	}
	return out
}

func rawMap(b json.RawMessage) map[string]any {
	if len(b) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// usageInfo is a record's usage as expressions read it.
func usageInfo(u *core.AgentUsage) gates.Usage {
	if u == nil {
		return gates.Usage{}
	}
	return gates.Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, TokensCached: u.TokensCached, CostUSD: u.CostUSD, Turns: u.Turns, Sessions: u.Sessions}
}
