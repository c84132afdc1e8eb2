package ops

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/runner/agents"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// DryRun is the plan of a run that has not started (flow run --dry-run):
// what would run, in which order and with which budgets, and each
// command, prompt and message rendered with the vars and environment
// known now. Its JSON is flow run --dry-run --json's output.
type DryRun struct {
	// Workflow is the workflow's name, File its file as named.
	Workflow string `json:"workflow"`
	File     string `json:"file"`
	// Repo is the repository the sessions would work in.
	Repo string `json:"repo"`
	// Vars are the vars of the run: the workflow's, with the request's
	// overrides.
	Vars map[string]string `json:"vars"`
	// MaxParallel caps the steps in flight at once.
	MaxParallel int `json:"max_parallel"`
	// Budget is the run's cost, token and session budget, when it has
	// one (with --budget-* raises applied).
	Budget *core.Budget `json:"budget,omitempty"`
	// Groups are the steps level by level of the dependency graph: the
	// steps of a group need only steps of earlier groups, so they may
	// run at the same time (up to MaxParallel) once those are done. It is
	// a simple grouping: at run time a step starts as soon as its own
	// needs are done, and when, gates and loop-backs change what runs.
	Groups [][]string `json:"groups"`
	// Steps are the steps in workflow order.
	Steps []DryRunStep `json:"steps"`
	// Errors are the render errors, positioned in the workflow file
	// ("wf.yaml:12:9: run: ..."); a dry run with errors fails.
	Errors []string `json:"errors"`
}

// DryRunStep is one step of a DryRun. Rendered texts show each
// {{ expr }} that reads a value known only at run time (steps.*,
// feedback.*, output, check.*, run.*, ...) as <expr>, and secrets'
// values as ***.
type DryRunStep struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Needs are the steps it waits for; Group is the index in
	// DryRun.Groups of its group.
	Needs []string `json:"needs"`
	Group int      `json:"group"`
	// When is the source of its condition, "" when it always runs.
	When string `json:"when,omitempty"`
	// MaxAttempts and MaxIterations are its budgets as the run resolves
	// them (its own, else the request's, else the workflow's defaults).
	MaxAttempts   int `json:"max_attempts"`
	MaxIterations int `json:"max_iterations"`
	// Timeout and IdleTimeout are its session's limits ("30m0s", or an
	// expression's source), "" when it has none or is a human step.
	Timeout     string `json:"timeout,omitempty"`
	IdleTimeout string `json:"idle_timeout,omitempty"`
	// Agent is the agent of an agent step.
	Agent string `json:"agent,omitempty"`
	// Command is the command its session runs: a command step's run, or
	// the agent's run for an agent step.
	Command string `json:"command,omitempty"`
	// Prompt is an agent step's prompt, and PromptFile the file it was
	// read from, if any.
	Prompt     string `json:"prompt,omitempty"`
	PromptFile string `json:"prompt_file,omitempty"`
	// PromptPath is the prompt_path of an agent step, found when the
	// step starts.
	PromptPath string `json:"prompt_path,omitempty"`
	// Env is the environment its session gets from the agent and the
	// step, rendered.
	Env map[string]string `json:"env,omitempty"`
	// Artifacts are its declared artifacts, rendered.
	Artifacts []string `json:"artifacts,omitempty"`
	// Gate is its gate, or nil.
	Gate *DryRunGate `json:"gate,omitempty"`
	// Human is what a human step asks, or nil.
	Human *DryRunHuman `json:"human,omitempty"`
	// ForEach is set for a for_each step: its list and its body, whose
	// steps run once per item.
	ForEach *DryRunLoop `json:"for_each,omitempty"`
}

// DryRunGate is a step's gate: the sources of its expressions, its
// check command rendered, and where a failure loops back to.
// DryRunLoop is what a for_each step loops over, and its body.
type DryRunLoop struct {
	// Items is the for_each expression, or List the list the file
	// writes.
	Items           string       `json:"items,omitempty"`
	List            []any        `json:"list,omitempty"`
	As              string       `json:"as"`
	IndexAs         string       `json:"index_as"`
	Key             string       `json:"key,omitempty"`
	MaxParallel     int          `json:"max_parallel"`
	ContinueOnError bool         `json:"continue_on_error,omitempty"`
	Body            []DryRunStep `json:"body"`
}

// DryRunGate is a step's gate in a dry run.
type DryRunGate struct {
	Pass       string `json:"pass,omitempty"`
	Fail       string `json:"fail,omitempty"`
	Check      string `json:"check,omitempty"`
	LoopBackTo string `json:"loop_back_to,omitempty"`
}

// DryRunHuman is what a human step asks.
type DryRunHuman struct {
	// Message is the message, rendered.
	Message     string   `json:"message"`
	Timeout     string   `json:"timeout,omitempty"`
	AutoApprove string   `json:"auto_approve,omitempty"`
	Inputs      []string `json:"inputs,omitempty"`
}

// DryRun loads a run request's workflow and checks its vars as
// PrepareRun does, and returns the plan of the run without running it:
// nothing is written and no session is started. The request's StartAt,
// RunID, Force and NoWait are not used. Budget expressions are
// evaluated against the vars, the environment and the repository's
// files; templates are rendered with gates.Template.RenderKnown. Errors
// are PrepareRun's, a budget that cannot be resolved, and render errors:
// those come with the plan, listed in its Errors, and the error says
// them all.
func (s *Service) DryRun(req RunRequest) (DryRun, error) {
	repo, err := s.Repo(req.Repo)
	if err != nil {
		return DryRun{}, err
	}
	wf, err := s.loadInvoked(req.Workflow, repo, s.absInvocation(req.Invocation))
	if err != nil {
		return DryRun{}, err
	}
	over, err := ParseVars(wf, req.Vars)
	if err != nil {
		return DryRun{}, err
	}
	vars := maps.Clone(wf.Vars)
	if vars == nil {
		vars = map[string]string{}
	}
	maps.Copy(vars, over)
	d := &dryRun{wf: wf, limits: wf.Limits(), secrets: spec.Secrets(wf, s.Environ),
		env: &gates.Env{Vars: vars, Env: spec.EnvironMap(s.Environ), FS: s.FS, Dir: repo, Now: s.clock().Now()}}
	plan, err := spec.NewPlan(wf, orchestratorBudgets(wf, req.Budgets, req.Invocation), func(l *config.Limit) (int, error) {
		v, err := l.Expr.Program().Eval(d.env)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", posString(l.Expr.Pos), err)
		}
		return gates.Int(v)
	})
	if err != nil {
		return DryRun{}, fmt.Errorf("resolve budgets: %w", err)
	}
	shown := make(map[string]string, len(vars))
	for k, v := range vars {
		shown[k] = d.secrets.String(v)
	}
	out := DryRun{Workflow: wf.Name, File: wf.File, Repo: repo, Vars: shown, MaxParallel: plan.MaxParallel,
		Groups: [][]string{}, Steps: []DryRunStep{}}
	if plan.Budget.Set() {
		b := plan.Budget
		out.Budget = &b
	}
	level := map[string]int{}
	for _, s := range wf.Steps {
		ps := plan.Step(s.ID)
		g := 0
		for _, n := range s.Needs {
			g = max(g, level[n]+1)
		}
		level[s.ID] = g
		if g == len(out.Groups) {
			out.Groups = append(out.Groups, []string{})
		}
		out.Groups[g] = append(out.Groups[g], s.ID)
		step := d.step(s, g, ps.MaxAttempts, ps.MaxIterations)
		if fe := s.ForEach; fe != nil {
			l := &DryRunLoop{List: fe.List, As: fe.As, IndexAs: fe.IndexAs, Key: exprSrc(fe.Key), MaxParallel: fe.MaxParallel,
				ContinueOnError: fe.ContinueOnError, Body: []DryRunStep{}}
			if fe.Items != nil {
				l.Items = fe.Items.Src
			}
			for _, b := range fe.Body {
				bp := plan.Step(b.ID)
				l.Body = append(l.Body, d.step(b, g, bp.MaxAttempts, bp.MaxIterations))
			}
			step.ForEach = l
		}
		out.Steps = append(out.Steps, step)
	}
	out.Errors = nonNil(d.errs)
	if len(d.errs) > 0 {
		return out, errors.New(strings.Join(d.errs, "\n"))
	}
	return out, nil
}

// dryRun renders the steps of a dry run and collects its errors.
type dryRun struct {
	wf      *config.Workflow
	env     *gates.Env
	limits  config.Limits
	secrets *redact.Redactor
	errs    []string
}

// step describes one step; g is its group.
func (d *dryRun) step(s *config.Step, g, attempts, iterations int) DryRunStep {
	out := DryRunStep{ID: s.ID, Kind: string(s.Kind), Needs: nonNil(s.Needs), Group: g,
		MaxAttempts: attempts, MaxIterations: iterations}
	if s.Kind != config.KindHuman && s.Kind != config.KindLoop {
		out.Timeout, out.IdleTimeout = d.wf.StepTimeout(s).Text(), d.wf.StepIdleTimeout(s).Text()
	}
	if s.When != nil {
		out.When = s.When.Src
	}
	cmdLimit, promptLimit := int(d.limits.Command), int(d.limits.Prompt)
	var env []map[string]*config.Template
	switch s.Kind {
	case config.KindCommand:
		out.Command = d.render("run", s.Run, cmdLimit)
	case config.KindAgent:
		out.Agent, out.PromptFile = s.Agent, s.PromptFile()
		if s.PromptPath != "" {
			// Found, and read, only when the step starts.
			out.PromptPath = s.PromptPath
		} else {
			out.Prompt = d.render("prompt", s.Prompt, promptLimit)
		}
		if a := d.wf.Agents[s.Agent]; a != nil && a.Preset != "" {
			// The command of a fresh session; a re-entered step's resumes.
			model := a.Model
			if s.Model != "" {
				model = s.Model // the step's own model wins, as in a run
			}
			c, err := agents.Command(agents.Invocation{Preset: a.Preset, Model: model, Args: a.Args})
			if err != nil {
				d.errs = append(d.errs, fmt.Sprintf("agents.%s: %v", s.Agent, err))
			}
			out.Command = c
			env = append(env, a.Env)
		} else if a != nil {
			out.Command = d.render("agents."+s.Agent+".run", a.Run, cmdLimit)
			env = append(env, a.Env)
		}
	}
	env = append(env, s.Env)
	for _, m := range env {
		for k, t := range m {
			if out.Env == nil {
				out.Env = map[string]string{}
			}
			out.Env[k] = d.render("env."+k, t, cmdLimit)
		}
	}
	for _, a := range s.Artifacts {
		out.Artifacts = append(out.Artifacts, d.render("artifacts", a, 0))
	}
	if s.HasGate() {
		gt := &DryRunGate{LoopBackTo: s.LoopBack()}
		if g := s.Gate; g != nil {
			gt.Pass, gt.Fail = exprSrc(g.Pass), exprSrc(g.Fail)
			gt.Check = d.render("gate.check", g.Check, cmdLimit)
		}
		out.Gate = gt
	}
	if h := s.Human; h != nil {
		hu := &DryRunHuman{Message: d.render("human.message", h.Message, promptLimit), Timeout: h.Timeout.Text(),
			AutoApprove: exprSrc(h.AutoApprove)}
		for _, in := range h.Inputs {
			hu.Inputs = append(hu.Inputs, in.Name)
		}
		out.Human = hu
	}
	return out
}

// render renders t with what is known now, secrets hidden; a render
// error is recorded, positioned as the runner positions it, and the
// template's source stands in for the text.
func (d *dryRun) render(key string, t *config.Template, limit int) string {
	if t == nil {
		return ""
	}
	text, err := t.Compiled().RenderKnown(d.env, limit)
	if err != nil {
		d.errs = append(d.errs, d.secrets.String(fmt.Sprintf("%s: %s: %v", posString(t.Pos), key, err)))
		return t.Src
	}
	return d.secrets.String(text)
}

// exprSrc is an expression's source, or "".
func exprSrc(e *config.Expr) string {
	if e == nil {
		return ""
	}
	return e.Src
}

// posString writes a position as file:line:col.
func posString(p config.Pos) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// toInt reads a budget expression's value as a whole number.
