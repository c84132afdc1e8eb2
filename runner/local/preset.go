package local

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/agents"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// This file drives the agents flow knows (docs/agents.md): a preset agent's
// session runs the tool's headless command, its structured output is
// parsed for the final text (which signals and the verdict are read
// from), the tool's session id and its usage, and a step re-entered by
// a loop-back, or retried after a failed session, continues the same
// conversation with what went wrong as the new prompt.

// presetPlan is how a preset agent's session runs.
type presetPlan struct {
	agent *config.Agent
	// resumeID is the conversation the session continues, or "".
	resumeID string
	// fresh is the session that starts over with the whole prompt (and
	// the feedback), should the tool refuse to resume.
	fresh *proc.Spec
	// freshPrivate is fresh's private prompt file, removed at the end.
	freshPrivate string
}

// presetCommand returns the command of a preset agent's session and,
// when the session continues the step's earlier conversation, the
// prompt to send instead of the whole one: why the step is re-entered.
// model, when not "", is the step's own model, which wins over the
// agent's.
func (x *run) presetCommand(agent *config.Agent, model string, step core.StepKey, attempt int) (command, resumeID, resumePrompt string, err error) {
	ss := x.st.Steps[step]
	if agent.Resume && ss != nil && ss.AgentSession != "" && !strings.HasPrefix(ss.AgentSession, "-") {
		// A session id is an argument of the agent's command line: one
		// that looks like a flag is never passed (a fresh session runs).
		switch {
		case ss.Feedback != nil:
			// Re-entered by a loop-back: the feedback is the new prompt.
			resumeID, resumePrompt = ss.AgentSession, strings.TrimLeft(feedbackText(ss.Feedback), "\n-")
		case attempt > 1 && ss.LastError != nil:
			// Retried after a failed session: say how it failed.
			resumeID = ss.AgentSession
			resumePrompt = "Your previous attempt at this failed: " + *ss.LastError + "\nTry again."
			if out := strings.TrimSpace(x.outputs[step]); out != "" {
				resumePrompt += "\n\nThe end of its output:\n\n```\n" + evidenceTail(out) + "\n```\n"
			}
		}
	}
	if model == "" {
		model = agent.Model
	}
	command, err = agents.Command(agents.Invocation{Preset: agent.Preset, Model: model, Args: agent.Args, ResumeID: resumeID})
	return command, resumeID, resumePrompt, err
}

// evidenceTail keeps the last 4 KiB of an output for a prompt.
func evidenceTail(out string) string {
	if len(out) > 4<<10 {
		out = out[len(out)-4<<10:]
	}
	return out
}

// presetFresh prepares the fallback of a resumed session: the same
// session, starting a new conversation with the whole prompt.
func (x *run) presetFresh(pp *presetPlan, sp proc.Spec, e sessionRun, prompt string) error {
	command, err := agents.Command(agents.Invocation{Preset: pp.agent.Preset, Model: pp.agent.Model, Args: pp.agent.Args})
	if err != nil {
		return err
	}
	pf := strings.TrimSuffix(x.names.Prompt(e.Step, e.Iteration, e.Attempt), ".md") + ".fresh.md"
	use, private, err := x.writePrompt(pf, prompt)
	if err != nil {
		return err
	}
	fresh := sp
	fresh.Command = command
	// The last value of a variable wins.
	fresh.Env = append(append([]string{}, sp.Env...), "FLOW_PROMPT_FILE="+use)
	if len(prompt) <= MaxEnvPrompt {
		fresh.Env = append(fresh.Env, "FLOW_PROMPT="+prompt)
	}
	pp.fresh, pp.freshPrivate = &fresh, private
	return nil
}

// presetOutcome is what a preset agent's sessions said.
type presetOutcome struct {
	res   agents.Result
	usage agents.Usage
	notes []string
}

// runPreset runs a preset agent's session, and its fresh fallback when
// the tool refuses to resume the conversation. The log keeps the tool's
// raw output; the live view shows its text.
func (x *run) runPreset(pp *presetPlan, sp proc.Spec, e sessionRun, log io.Writer, live io.Writer, started func(proc.Session)) (proc.Result, presetOutcome, error) {
	var out presetOutcome
	display := func(text string) {
		if live != nil {
			_, _ = io.WriteString(live, strings.TrimRight(text, "\n")+"\n")
		}
	}
	run := func(spec proc.Spec) (proc.Result, agents.Result, error) {
		parser := agents.NewParser(pp.agent.Preset, display)
		spec.Output = &lockedWriter{ws: []io.Writer{log, parser}}
		sess, err := x.r.Starter.Start(x.sessCtx, spec)
		if err != nil {
			return proc.Result{}, agents.Result{}, err
		}
		started(sess)
		r := sess.Wait()
		return r, parser.Close(), nil
	}
	res, parsed, err := run(sp)
	if err != nil {
		return res, out, err
	}
	if pp.resumeID != "" && parsed.ResumeRefused && pp.fresh != nil && !res.Interrupted {
		out.notes = append(out.notes, fmt.Sprintf("%s refused to resume conversation %s (%s); a new one gets the whole prompt", pp.agent.Preset, pp.resumeID, firstLine(parsed.Error)))
		out.usage.Add(parsed.Usage)
		_, _ = fmt.Fprintf(log, "\n[flow] resume refused; starting a new conversation with the whole prompt\n")
		res, parsed, err = run(*pp.fresh)
		if err != nil {
			return res, out, err
		}
	} else if parsed.UsageCumulative && pp.resumeID != "" {
		// codex reports the thread's running total: what this session
		// used is the total less what the step's sessions used before.
		// Turns are counted per session; only tokens are running totals.
		if ss := x.st.Steps[e.Step]; ss != nil && ss.ConversationUsage != nil && ss.AgentSession == pp.resumeID {
			u := ss.ConversationUsage
			turns := parsed.Usage.Turns
			parsed.Usage = parsed.Usage.Sub(agents.Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, TokensCached: u.TokensCached})
			parsed.Usage.Turns = turns
		}
	}
	u := parsed.Usage
	if p := pp.agent.Price; p != nil {
		u = agents.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, CachedPerMTok: p.CachedPerMTok}.Apply(u)
	}
	out.usage.Add(u)
	out.res = parsed
	return res, out, nil
}

// agentUsage converts a preset's usage for the record.
func agentUsage(u agents.Usage) *core.AgentUsage {
	if u == (agents.Usage{}) {
		return nil
	}
	return &core.AgentUsage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, TokensCached: u.TokensCached, CostUSD: u.CostUSD,
		CostEstimated: u.CostEstimated, Turns: u.Turns, Sessions: u.Sessions}
}

// presetFailure says why a preset session failed though its process may
// have exited 0: the tool reported an error, or printed nothing flow
// could read.
func presetFailure(preset string, r agents.Result, exit int) string {
	switch {
	case r.Failed:
		msg := firstLine(r.Error)
		if msg == "" {
			msg = "no message"
		}
		return preset + " reported an error: " + msg
	case !r.Structured && exit == 0:
		return preset + " printed no result flow can read (is it a version with JSON output? see docs/agents.md)"
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// writePrompt writes a prompt to path with secrets hidden, and returns
// the file the session reads it from: path itself, or — when the prompt
// holds a secret — a private (0600) file outside the run directory,
// whose name it also returns for removal when the session ends.
func (x *run) writePrompt(path, prompt string) (use, private string, err error) {
	fsys := x.r.FS
	if err := x.rec.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", fmt.Errorf("write prompt file: %w", err)
	}
	recorded := x.redact.String(prompt)
	if err := record.WriteFile(x.rec, path, []byte(recorded)); err != nil {
		return "", "", fmt.Errorf("write prompt file: %w", err)
	}
	if recorded == prompt {
		return path, "", nil
	}
	f, err := afero.TempFile(fsys, x.r.TempDir, "flow-prompt-*.md")
	if err != nil {
		return "", "", fmt.Errorf("write private prompt file: %w", err)
	}
	private = f.Name()
	_, err = f.Write([]byte(prompt))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Chmod(private, 0o600)
	}
	if err != nil {
		_ = fsys.Remove(private)
		return "", "", fmt.Errorf("write private prompt file: %w", err)
	}
	return private, private, nil
}
