package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/termsafe"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// evaluate decides whether a step runs (its when) and, for a human
// step, whether it is approved without asking (auto_approve).
func (x *run) evaluate(id core.StepKey) core.Input {
	s := x.stepOf(id)
	res := core.WhenResult{Step: id, Run: true}
	env := x.env(&stepFacts{step: id, attempt: x.st.Steps[id].Attempts + 1, iteration: x.st.Steps[id].IterationCount})
	if s.When != nil {
		ok, err := s.When.Program().EvalBool(env)
		if err != nil {
			// An expression that cannot be evaluated fails the step: it
			// never skips it.
			return core.WhenResult{Step: id, Err: exprError("when", s.When, err)}
		}
		if !ok {
			return core.WhenResult{Step: id, Run: false, Reason: "when is false: " + s.When.Src}
		}
	}
	if s.Human != nil && s.Human.AutoApprove != nil && s.Kind == config.KindHuman {
		// A session step's auto_approve is evaluated once its session
		// has succeeded (session), where it can read the session's
		// output.
		ok, err := s.Human.AutoApprove.Program().EvalBool(env)
		if err != nil {
			// Nor does it approve one.
			return core.WhenResult{Step: id, Err: exprError("human.auto_approve", s.Human.AutoApprove, err)}
		}
		res.AutoApprove = ok
	}
	return res
}

// exprError says which expression of the workflow failed at run time,
// where it is written, and why: "wf.yaml:12:11: when: <error> (in
// `<source>`)".
func exprError(key string, e *config.Expr, err error) string {
	return fmt.Sprintf("%s: %s: %v (in `%s`)", posString(e.Pos), key, err, excerptSource(e.Src))
}

// templateError is exprError for a template.
func templateError(key string, t *config.Template, err error) string {
	return fmt.Sprintf("%s: %s: %v", posString(t.Pos), key, err)
}

// limitHint adds to a rendered text over its limit which defaults key
// raises it.
func limitHint(err error, key string) error {
	var tl *gates.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("%w (defaults.%s raises the limit)", err, key)
	}
	return err
}

func posString(p config.Pos) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// excerptSource keeps an expression's source short in messages.
func excerptSource(src string) string {
	if len(src) > 200 {
		return src[:200] + "..."
	}
	return src
}

// sessionRun is a session the core asked for, with the files the driver
// names for it.
type sessionRun struct {
	Step               core.StepKey
	Attempt, Iteration int
	LogPath            string
	// ReportPath is where the step's report is kept for readers
	// (reports/<run>__<step>.json); SessionDir the session's own
	// directory, the one place of the run directory it may write, and
	// SessionReport where it writes its report (FLOW_REPORT_PATH).
	ReportPath    string
	SessionDir    string
	SessionReport string
}

// withSession names the session's own directory and report.
func (e sessionRun) withSession(n record.Layout) sessionRun {
	e.SessionDir = n.SessionDir(e.Step, e.Iteration, e.Attempt)
	e.SessionReport = filepath.Join(e.SessionDir, record.SessionReportName)
	return e
}

// startSession starts the session of a step; its end comes back as a
// SessionDone input from the session's own goroutine.
func (x *run) startSession(ss core.StartSession) {
	e := sessionRun{Step: ss.Step, Attempt: ss.Attempt, Iteration: ss.Iteration,
		LogPath: x.names.Log(ss.Step, ss.Iteration, ss.Attempt), ReportPath: x.names.Report(ss.Step)}
	e = e.withSession(x.names)
	s := x.stepOf(e.Step)
	facts := &stepFacts{step: e.Step, attempt: e.Attempt, iteration: e.Iteration}
	env := x.env(facts)
	sp, pp, private, err := x.sessionSpec(s, e, env)
	done := func(in core.SessionDone) { x.send(in) }
	if err != nil {
		if private != "" {
			_ = x.r.FS.Remove(private)
		}
		in := core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Invalid: err.Error()}
		if x.r.Serial {
			x.queue = append(x.queue, in)
			return
		}
		x.sessions.Add(1)
		go func() {
			defer x.sessions.Done()
			done(in)
		}()
		return
	}
	if x.r.Serial {
		x.serialSession = true
		done(x.session(s, e, sp, pp, private, env, facts))
		x.serialSession = false
		return
	}
	// A command session is started here, on the loop's goroutine, and
	// its process is queued for the core at once; the session's own
	// goroutine waits for its end. Between one session's end and the
	// next one's start there is then no hand-off between goroutines.
	ls := x.prepareSession(s, e, sp, pp, private, env, facts)
	if pp == nil {
		x.startCommand(ls, x.queueOnLoop)
	}
	x.sessions.Add(1)
	go func() {
		defer x.sessions.Done()
		done(x.finishSession(ls))
	}()
}

// sessionSpec renders the command and environment of a session and
// writes its prompt file. A prompt that holds a secret is recorded in
// prompts/ with the secret hidden, and handed to the session in a
// private file outside the run directory, whose path it returns for
// removal when the session ends.
func (x *run) sessionSpec(s *config.Step, e sessionRun, env *gates.Env) (proc.Spec, *presetPlan, string, error) {
	sp, pp, private, err := x.sessionSpecOf(s, e, env)
	if err != nil && pp != nil && pp.freshPrivate != "" {
		_ = x.r.FS.Remove(pp.freshPrivate)
	}
	return sp, pp, private, err
}

func (x *run) sessionSpecOf(s *config.Step, e sessionRun, env *gates.Env) (proc.Spec, *presetPlan, string, error) {
	var command, prompt, sent, promptPath string
	var pp *presetPlan
	agentEnv := map[string]*config.Template{}
	switch s.Kind {
	case config.KindCommand:
		c, err := s.Run.Compiled().RenderLimit(env, int(x.limits.Command))
		if err != nil {
			return proc.Spec{}, nil, "", errors.New(templateError("run", s.Run, limitHint(err, "command_limit")))
		}
		command = c
	case config.KindAgent:
		if s.PromptPath != "" {
			found, text, err := x.findPrompt(s.PromptPath, x.limits.Prompt)
			if err != nil {
				return proc.Spec{}, nil, "", err
			}
			prompt, promptPath = string(text), found
		} else {
			p, err := s.Prompt.Compiled().RenderLimit(env, int(x.limits.Prompt))
			if err != nil {
				return proc.Spec{}, nil, "", errors.New(templateError("prompt", s.Prompt, limitHint(err, "prompt_limit")))
			}
			prompt = p
		}
		if ss := x.st.Steps[e.Step]; ss != nil && ss.Feedback != nil && s.Feedback != "none" {
			prompt += feedbackText(ss.Feedback)
		}
		agent := x.wf.Agents[s.Agent]
		if agent == nil {
			if x.orchestrated() {
				return proc.Spec{}, nil, "", fmt.Errorf("agent %q: in agent_orchestrator's format an agent is run by a wrapper; give flow run --wrapper or --command-template", s.Agent)
			}
			return proc.Spec{}, nil, "", fmt.Errorf("agent %q is not declared", s.Agent)
		}
		sent = prompt
		if agent.Preset != "" {
			c, resumeID, resumePrompt, err := x.presetCommand(agent, s.Model, e.Step, e.Attempt)
			if err != nil {
				return proc.Spec{}, nil, "", fmt.Errorf("agent %s: %w", s.Agent, err)
			}
			command, pp = c, &presetPlan{agent: agent, resumeID: resumeID}
			if resumeID != "" {
				sent = resumePrompt
			}
		} else {
			c, err := agent.Run.Compiled().RenderLimit(env, int(x.limits.Command))
			if err != nil {
				return proc.Spec{}, nil, "", errors.New(templateError("agents."+s.Agent+".run", agent.Run, limitHint(err, "command_limit")))
			}
			command = c
		}
		agentEnv = agent.Env
	}
	vars := []string{
		"FLOW_RUN_ID=" + x.st.RunID,
		"FLOW_STEP_ID=" + s.ID,
		"FLOW_STEP_KEY=" + e.Step.String(),
		"FLOW_ATTEMPT=" + strconv.Itoa(e.Attempt),
		"FLOW_ITERATION=" + strconv.Itoa(e.Iteration),
		"FLOW_REPORT_PATH=" + e.SessionReport,
		"FLOW_STATE_PATH=" + filepath.Join(x.dir, record.StateFile),
		"FLOW_RUN_DIR=" + x.dir,
	}

	dir, err := x.prepareWorkspace(e.Step)
	if err != nil {
		return proc.Spec{}, pp, "", err
	}
	if dir == x.opts.Repo {
		dir = x.sessionDir() // agent_orchestrator's --workdir, else the repository
	}
	vars = append(vars, x.workspaceEnv(e.Step)...)
	// A report left by an earlier attempt must not speak for this one.
	record.RemoveStale(x.rec, e.ReportPath)
	if err := x.rec.MkdirAll(e.SessionDir, 0o755); err != nil {
		return proc.Spec{}, pp, "", fmt.Errorf("make the session's directory: %w", err)
	}
	vars = append(vars, x.itemEnv(e.Step, e.SessionDir)...)
	private := ""
	if s.Kind == config.KindAgent {
		use, priv, err := x.writePrompt(x.names.Prompt(e.Step, e.Iteration, e.Attempt), sent)
		if err != nil {
			return proc.Spec{}, pp, "", err
		}
		private = priv
		pf := use
		// Linux caps one environment string at 128 KiB; a longer prompt
		// is read from the file.
		if len(sent) <= MaxEnvPrompt {
			vars = append(vars, "FLOW_PROMPT="+sent)
		}
		vars = append(vars, "FLOW_PROMPT_FILE="+pf)
		if promptPath == "" {
			promptPath = pf
		}
	}
	switch {
	case x.orchestrated():
		vars = append(vars, x.orchestratorEnv(s, e, promptPath)...)
	case s.Model != "":
		vars = append(vars, "STEP_MODEL="+s.Model)
	}
	if ss := x.st.Steps[e.Step]; ss != nil && ss.Feedback != nil {
		fb := ss.Feedback
		ff := x.names.Feedback(e.Step, e.Iteration, e.Attempt)
		b, _ := json.MarshalIndent(fb, "", "  ")
		b = append(b, '\n')
		if err := x.rec.MkdirAll(filepath.Dir(ff), 0o755); err == nil && record.WriteFile(x.rec, ff, b) == nil {
			vars = append(vars, "FLOW_FEEDBACK_FILE="+ff)
		}
	}
	for _, m := range []map[string]*config.Template{agentEnv, s.Env} {
		for k, t := range m {
			v, err := t.Compiled().RenderLimit(env, int(x.limits.Command))
			if err != nil {
				return proc.Spec{}, nil, "", errors.New(templateError("env."+k, t, limitHint(err, "command_limit")))
			}
			vars = append(vars, k+"="+v)
		}
	}
	sp := proc.Spec{
		Command:   command,
		Dir:       dir,
		Env:       slices.Concat(x.r.Environ, x.opts.Invocation.Env, vars),
		KillGrace: x.r.KillGrace,
	}
	if sp.Timeout, err = x.duration(x.wf.StepTimeout(s), env); err != nil {
		return proc.Spec{}, pp, private, fmt.Errorf("timeout: %w", err)
	}
	if sp.IdleTimeout, err = x.duration(x.wf.StepIdleTimeout(s), env); err != nil {
		return proc.Spec{}, pp, private, fmt.Errorf("idle_timeout: %w", err)
	}
	writable := []string{e.SessionDir}
	if dir != x.opts.Repo && dir != x.sessionDir() {
		// A session in a worktree under .agents/worktrees/ writes it (git's
		// own record of it, under the repository's .git/, is writable as
		// the rest of the repository is).
		writable = append(writable, dir)
	}
	if x.orchestrated() {
		// agent_orchestrator's sessions write their artifacts, and the
		// prompts of later steps under .agents/prompts/ (its prompt
		// lookup): those stay writable under the sandbox.
		prompts := filepath.Join(x.opts.Repo, ".agents", "prompts")
		if err := x.rec.MkdirAll(prompts, 0o755); err != nil {
			return proc.Spec{}, pp, private, fmt.Errorf("make .agents/prompts: %w", err)
		}
		writable = append(writable, filepath.Join(x.dir, ArtifactsDir), prompts)
	}
	var step *config.Step
	if e.Step != core.Key(record.CleanupSession) {
		step = s
	}
	if err := x.confine(&sp, step, writable...); err != nil {
		return proc.Spec{}, pp, private, err
	}
	if pp != nil && pp.resumeID != "" {
		if err := x.presetFresh(pp, sp, e, prompt); err != nil {
			return proc.Spec{}, pp, private, err
		}
	}
	return sp, pp, private, nil
}

// feedbackText renders, for the end of a re-entered agent step's
// prompt, why its last work was sent back: the gate step, the reason,
// and the evidence (the tail of the failing output).
func feedbackText(fb *core.Feedback) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n---\nYour previous work was sent back by %s: %s\n", fb.Step, fb.Reason)
	if out := strings.TrimSpace(fb.Output); out != "" {
		fmt.Fprintf(&b, "\nThe end of its output:\n\n```\n%s\n```\n", out)
	}
	if len(fb.Report) > 0 && string(fb.Report) != "null" {
		fmt.Fprintf(&b, "\nIts report: %s\n", fb.Report)
	}
	return b.String()
}

// MaxEnvPrompt is the longest prompt also passed in $FLOW_PROMPT;
// $FLOW_PROMPT_FILE always holds it.
const MaxEnvPrompt = 100 << 10

// duration resolves a configured duration.
func (x *run) duration(d *config.Duration, env *gates.Env) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if d.Expr == nil {
		return d.D, nil
	}
	v, err := d.Expr.Program().Eval(env)
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case string:
		return config.ParseDuration(v)
	case time.Duration:
		return v, nil
	}
	n, err := gates.Int(v)
	if err != nil {
		return 0, err
	}
	return time.Duration(n) * time.Second, nil
}

// session runs one session and decides its outcome and its gate.
func (x *run) session(s *config.Step, e sessionRun, sp proc.Spec, pp *presetPlan, private string, env *gates.Env, facts *stepFacts) core.SessionDone {
	ls := x.prepareSession(s, e, sp, pp, private, env, facts)
	if pp == nil {
		x.startCommand(ls, x.send)
	}
	return x.finishSession(ls)
}

// liveSession is a session from its preparation to its end: what the
// first half of a session (prepareSession and startCommand, which for
// a command session run on the loop's goroutine) hands the second
// (finishSession, in the session's own goroutine).
type liveSession struct {
	s       *config.Step
	e       sessionRun
	sp      proc.Spec
	pp      *presetPlan
	private string
	env     *gates.Env
	facts   *stepFacts

	logf    *lazyFile
	capped  *cappedLog
	shown   []io.Writer
	live    *prefixWriter
	tail    *tailBuffer
	scan    *gates.SignalScanner
	markers *reportMarkers
	started time.Time

	// A command session, once startCommand has run: its writer of
	// what flow shows, and the session or why it did not start.
	hidden   io.WriteCloser
	sess     proc.Session
	startErr error
}

// prepareSession sets up where a session's output goes.
func (x *run) prepareSession(s *config.Step, e sessionRun, sp proc.Spec, pp *presetPlan, private string, env *gates.Env, facts *stepFacts) *liveSession {
	ls := &liveSession{s: s, e: e, sp: sp, pp: pp, private: private, env: env, facts: facts}
	// What flow writes of the output — the log, capped at log_limit,
	// and the live view — has secrets hidden; the tail and the signal
	// scanner, which stay in memory, read it as it is.
	ls.logf = &lazyFile{fs: x.rec, path: e.LogPath}
	ls.capped = newCappedLog(ls.logf, x.limits.Log)
	ls.shown = []io.Writer{ls.capped}
	if x.r.Live {
		ls.live = &prefixWriter{mu: &x.live, w: termsafe.NewWriter(x.r.Stdout), prefix: []byte(fmt.Sprintf("[%s] ", e.Step))}
		ls.shown = append(ls.shown, ls.live)
	}
	ls.tail = &tailBuffer{max: outputTail}
	ls.scan = gates.NewSignalScanner(x.signalWords())
	ls.started = x.r.Clock.Now()
	if x.orchestrated() {
		ls.markers = &reportMarkers{max: int(x.limits.Report)}
	}
	return ls
}

// sessionPID is the input that tells the core a session's process.
func sessionPID(e sessionRun, sess proc.Session) core.SessionPID {
	return core.SessionPID{Step: e.Step, PID: sess.Pid(), Marker: proc.Marker(sess), LogPath: e.LogPath, ReportPath: e.ReportPath}
}

// startCommand starts a command session (not a preset's), and gives
// tell the input that names its process.
func (x *run) startCommand(ls *liveSession, tell func(core.Input)) {
	ls.hidden = x.redact.Writer(io.MultiWriter(ls.shown...))
	out := &lockedWriter{ws: []io.Writer{ls.hidden, ls.tail, ls.scan}}
	if ls.markers != nil {
		out.ws = append(out.ws, ls.markers)
	}
	ls.sp.Output = out
	ls.sess, ls.startErr = x.r.Starter.Start(x.sessCtx, ls.sp)
	if ls.startErr == nil {
		tell(sessionPID(ls.e, ls.sess))
	}
}

// finishSession waits for a session to end (a preset's runs here from
// its start) and decides its outcome and its gate.
func (x *run) finishSession(ls *liveSession) core.SessionDone {
	s, e, sp, pp, env, facts := ls.s, ls.e, ls.sp, ls.pp, ls.env, ls.facts
	fsys := x.r.FS
	if ls.private != "" {
		defer fsys.Remove(ls.private)
	}
	if pp != nil && pp.freshPrivate != "" {
		defer fsys.Remove(pp.freshPrivate)
	}
	logf, capped, live, tail, scan, markers, started := ls.logf, ls.capped, ls.live, ls.tail, ls.scan, ls.markers, ls.started
	defer capped.Close()
	done := core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Facts: core.SessionFacts{ExitCode: -1}}
	fail := func(msg string) core.SessionDone {
		done.Facts.Err = msg
		return done
	}
	pid := func(sess proc.Session) { x.send(sessionPID(e, sess)) }
	var res proc.Result
	presetWhy := ""
	if pp != nil {
		// A preset's log keeps the tool's raw output; the live view, the
		// tail and the signals read the text it parses out of it.
		logW := x.redact.Writer(capped)
		var liveW io.WriteCloser
		if live != nil {
			liveW = x.redact.Writer(live)
		}
		var po presetOutcome
		var err error
		res, po, err = x.runPreset(pp, sp, e, logW, liveW, pid)
		_ = logW.Close()
		if liveW != nil {
			_ = liveW.Close()
		}
		if err != nil {
			return fail(fmt.Sprintf("start session: %v", err))
		}
		if po.res.Text != "" {
			_, _ = io.WriteString(tail, po.res.Text+"\n")
			_, _ = io.WriteString(scan, po.res.Text+"\n")
		}
		done.Notes = po.notes
		u, bad := po.usage.Sane()
		if bad != "" {
			x.warn(e.Step, "the agent reported "+bad+": counted as zero")
		}
		done.Outcome.Usage = agentUsage(u)
		done.Outcome.AgentSession = po.res.SessionID
		presetWhy = presetFailure(pp.agent.Preset, po.res, res.ExitCode)
	} else {
		if ls.startErr != nil {
			_ = ls.hidden.Close()
			return fail(fmt.Sprintf("start session: %v", ls.startErr))
		}
		res = ls.sess.Wait()
		_ = ls.hidden.Close()
	}
	if err := capped.Close(); err != nil && logf.err == nil {
		logf.err = err
	}
	if live != nil {
		live.Flush()
	}
	if logf.err != nil {
		return fail(fmt.Sprintf("write session log: %v", logf.err))
	}
	o := &done.Outcome
	o.ExitCode, o.Duration = &res.ExitCode, x.r.Clock.Now().Sub(started).Round(time.Millisecond).String()
	facts.exitCode = res.ExitCode
	facts.output = tail.String()
	facts.signals, facts.verdict = scan.Result()
	o.Signals, o.Verdict = facts.signals, facts.verdict
	x.keepOutput(e.Step, facts.output)
	if res.Interrupted {
		done.Interrupted = true
		return done
	}
	f := &done.Facts
	f.ExitCode, f.Verdict, f.VerdictWhy = res.ExitCode, facts.verdict, scan.Why()
	f.Output = x.redact.String(facts.output)
	if res.Err != nil {
		f.Err = res.Err.Error()
	}
	if presetWhy != "" && f.Err == "" {
		f.Err = presetWhy
	}
	if res.TimedOut {
		f.Timeout = sp.Timeout
	}
	if res.Idle {
		f.IdleTimeout = sp.IdleTimeout
	}
	report, rerr := record.ReadReportIn(x.root, e.SessionReport, x.limits.Report)
	if report == nil && rerr == nil && markers != nil && markers.report() != nil {
		// No report file, but one printed between the markers: it is
		// the report, kept where the file would be.
		if err := record.WriteFile(x.rec, e.SessionReport, markers.report()); err != nil {
			rerr = fmt.Errorf("keep the run report printed on stdout: %w", err)
		} else {
			report, rerr = record.ReadReportIn(x.root, e.SessionReport, x.limits.Report)
		}
	}
	if report != nil {
		// Readers find a step's report where agent_orchestrator's
		// contract keeps it.
		if err := record.WriteFile(x.rec, e.ReportPath, x.redact.Bytes(report.JSON)); err != nil {
			rerr = fmt.Errorf("keep the report: %w", err)
		}
	}
	if rerr != nil {
		f.ReportErr = rerr.Error()
	}
	if x.orchestrated() && rerr == nil {
		switch {
		case report == nil && f.Err == "" && !res.TimedOut && !res.Idle:
			f.Err = fmt.Sprintf("exited with code %d without writing a run report", res.ExitCode)
		case report != nil:
			if miss := missingReportFields(report.Raw); len(miss) > 0 {
				f.ReportErr = fmt.Sprintf("lacks %s (agent_orchestrator's format requires %s)", strings.Join(miss, ", "), strings.Join(requiredReportFields, ", "))
			}
		}
	}
	x.orchestratorFacts(f, o, report)
	if report != nil {
		// Every session's report is kept: the next session of the step
		// replaces reports/<run>__<step>.json, where agent_orchestrator's
		// contract keeps a step's report.
		if err := x.archiveReport(e, x.redact.Bytes(report.JSON)); err != nil {
			f.Err = err.Error()
		}
		f.Report = &core.ReportFacts{Status: report.Status, GateFailure: report.GateFailure, GateFailureGiven: report.GateFailureGiven, Error: report.Error}
		o.ReportPath = e.ReportPath
		o.Metrics = report.Metrics
		o.Logs = report.Logs
		o.Report = report.JSON
		facts.metrics = report.Metrics
		facts.report = report.Raw
		x.keepReport(e.Step, report.Raw)
	}
	declared, aerr := x.artifacts(s, env)
	if aerr != nil {
		done.Invalid = aerr.Error()
		return done
	}
	if report != nil {
		o.Artifacts = record.MergeArtifacts(report.Artifacts, declared)
	} else {
		o.Artifacts = declared
	}
	// What the session means is the core's to decide (core.Failure,
	// core.GateVerdict); the driver evaluates only the expressions that
	// decision needs.
	hasGate := s.HasGate()
	if why := core.Failure(x.plan.Step(s.ID), *f); why != "" {
		if s.RetryIf != nil {
			facts.err = why
			ok, err := s.RetryIf.Program().EvalBool(x.envWith(env, facts))
			if err != nil {
				done.Invalid = why + "; and " + exprError("retry_if", s.RetryIf, err)
				return done
			}
			done.RetryIf = &ok
		}
		return done
	}
	if hasGate {
		g, err := x.gate(s, e, x.envWith(env, facts), facts)
		if err != nil {
			// A gate that cannot be decided fails the step; another
			// session would not make the expression evaluate.
			done.Invalid = err.Error()
			return done
		}
		done.Gate = g
	}
	if h := s.Human; h != nil && h.AutoApprove != nil {
		ok, err := h.AutoApprove.Program().EvalBool(x.envWith(env, facts))
		if err != nil {
			// Nor does it approve one.
			done.Invalid = exprError("human.auto_approve", h.AutoApprove, err)
			return done
		}
		done.AutoApprove = &ok
	}
	return done
}

// archiveReport keeps a copy of a session's report under
// reports/archive, named after the session.
func (x *run) archiveReport(e sessionRun, b []byte) error {
	path := x.names.ArchivedReport(e.Step, e.Iteration, e.Attempt)
	if err := x.rec.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("keep report: %w", err)
	}
	if err := record.WriteFile(x.rec, path, b); err != nil {
		return fmt.Errorf("keep report: %w", err)
	}
	return nil
}

// envWith returns env with the current step's facts filled in.
func (x *run) envWith(env *gates.Env, f *stepFacts) *gates.Env {
	e := *env
	f.fill(&e)
	e.Now = x.r.Clock.Now()
	return &e
}

// gate evaluates what a step's gate needs after its session succeeded:
// it runs gate.check and evaluates gate.pass and gate.fail. The core
// decides from these facts (core.GateVerdict). An error is a gate that
// could not be evaluated.
func (x *run) gate(s *config.Step, e sessionRun, env *gates.Env, facts *stepFacts) (*core.GateFacts, error) {
	g := s.Gate
	if g == nil {
		g = &config.Gate{}
	}
	out := &core.GateFacts{}
	if g.Check != nil {
		cmd, err := g.Check.Compiled().RenderLimit(env, int(x.limits.Command))
		if err != nil {
			err = limitHint(err, "command_limit")
			return nil, errors.New(templateError("gate.check", g.Check, err))
		}
		check, err := x.runCheck(s, e, cmd)
		if err != nil {
			return nil, err
		}
		facts.check = check
		env.Check = check
		out.Check, out.CheckOutput = &check.ExitCode, x.redact.String(check.Output)
	}
	if g.Pass != nil {
		ok, err := g.Pass.Program().EvalBool(env)
		if err != nil {
			return nil, errors.New(exprError("gate.pass", g.Pass, err))
		}
		out.Pass = &core.ExprValue{Value: ok, Src: g.Pass.Src}
	}
	if g.Fail != nil {
		bad, err := g.Fail.Program().EvalBool(env)
		if err != nil {
			return nil, errors.New(exprError("gate.fail", g.Fail, err))
		}
		out.Fail = &core.ExprValue{Value: bad, Src: g.Fail.Src}
	}
	return out, nil
}

// runCheck runs a gate's verification command.
func (x *run) runCheck(s *config.Step, e sessionRun, cmd string) (gates.CheckInfo, error) {
	path := x.names.CheckLog(e.Step, e.Iteration, e.Attempt)
	f, err := createFile(x.rec, path)
	if err != nil {
		return gates.CheckInfo{}, fmt.Errorf("create check log: %w", err)
	}
	capped := newCappedLog(f, x.limits.Log)
	defer capped.Close()
	hidden := x.redact.Writer(capped)
	defer hidden.Close()
	tail := &tailBuffer{max: outputTail}
	sp := proc.Spec{Command: cmd, Dir: x.workDir(e.Step), Env: append(slices.Clone(x.r.Environ), x.itemEnv(e.Step, "")...), KillGrace: x.r.KillGrace,
		Output: &lockedWriter{ws: []io.Writer{hidden, tail}}}
	sp.Timeout, _ = x.duration(x.wf.StepTimeout(s), nil)
	if err := x.confine(&sp, s, e.SessionDir); err != nil {
		return gates.CheckInfo{}, fmt.Errorf("start gate.check: %w", err)
	}
	sess, err := x.r.Starter.Start(x.sessCtx, sp)
	if err != nil {
		return gates.CheckInfo{}, fmt.Errorf("start gate.check: %w", err)
	}
	res := sess.Wait()
	if res.Err != nil {
		return gates.CheckInfo{}, fmt.Errorf("gate.check: %w", res.Err)
	}
	return gates.CheckInfo{ExitCode: res.ExitCode, Output: tail.String()}, nil
}

// artifacts renders a step's declared artifacts.
func (x *run) artifacts(s *config.Step, env *gates.Env) ([]string, error) {
	var out []string
	for _, a := range s.Artifacts {
		v, err := a.Compiled().Render(env)
		if err != nil {
			return nil, errors.New(templateError("artifacts", a, err))
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out, nil
}

// keepOutput and keepReport remember what later expressions may read.
// They are called from session goroutines.
func (x *run) keepOutput(id core.StepKey, out string) {
	if !x.keepOut[id.Step] {
		return
	}
	x.cacheMu.Lock()
	x.outputs[id] = out
	x.cacheMu.Unlock()
}

func (x *run) keepReport(id core.StepKey, rep map[string]any) {
	x.cacheMu.Lock()
	x.reports[id] = rep
	x.cacheMu.Unlock()
}

func (x *run) signalWords() gates.SignalWords {
	w := x.wf.Signals
	return gates.SignalWords{Done: w.Done, Pass: w.Pass, Fail: w.Fail}
}

// startCleanup runs the workflow's cleanup session.
func (x *run) startCleanup() {
	c := x.wf.Cleanup
	if c == nil {
		x.printf("cleanup: the workflow declares no cleanup session\n")
		x.queue = append(x.queue, core.CleanupDone{Failed: true})
		return
	}
	x.cleanupN++
	step := &config.Step{ID: "cleanup", Run: c.Run, Kind: config.KindCommand, StepOptions: &config.StepOptions{Prompt: c.Prompt, Agent: c.Agent}}
	if c.Run == nil {
		step.Kind = config.KindAgent // c.Agent has defaults.agent filled in at load
	}
	e := sessionRun{Step: core.Key(record.CleanupSession), Attempt: x.cleanupN, LogPath: x.names.CleanupLog(x.cleanupN), ReportPath: x.names.Report(core.Key(record.CleanupSession))}
	e = e.withSession(x.names)
	env := x.env(nil)
	sp, pp, private, err := x.sessionSpec(step, e, env)
	if err != nil {
		if private != "" {
			_ = x.r.FS.Remove(private)
		}
		x.printf("cleanup: %v\n", err)
		x.queue = append(x.queue, core.CleanupDone{Failed: true})
		return
	}
	x.printf("cleanup: started\n")
	x.sessions.Add(1)
	go func() {
		defer x.sessions.Done()
		d := x.session(step, e, sp, pp, private, env, &stepFacts{step: core.Key("cleanup")})
		failed := d.Invalid != "" || (!d.Interrupted && core.Failure(&core.PlanStep{Kind: core.Kind(step.Kind)}, d.Facts) != "")
		x.printf("cleanup: finished (failed: %v)\n", failed)
		x.send(core.CleanupDone{Failed: failed})
	}()
}
