package wftest

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/agents"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// never is longer than any test runs in fake time: the runner's
// heartbeat and poll timers are set to it, so that every shorter timer
// the runner asks for is a retry backoff, which elapses at once.
const never = 100 * 365 * 24 * time.Hour

// virtualClock is a fake clock on which time passes only when a session
// takes its scripted duration or the runner waits out a retry backoff:
// After moves the fake time forward by d and fires at once, except for
// timers of at least never, which never fire.
type virtualClock struct{ fake *clock.Fake }

func (c virtualClock) Now() time.Time { return c.fake.Now() }

func (c virtualClock) After(d time.Duration) <-chan time.Time {
	if d >= never {
		return nil
	}
	c.fake.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.fake.Now()
	return ch
}

// starter is a proc.Starter whose sessions follow a test's script: a
// step's sessions take its outcomes in order, the last one repeating;
// an unscripted session succeeds with no output. gate.check commands —
// started without FLOW_STEP_ID — take the outcomes of the step whose
// check log the runner has just created.
type starter struct {
	fs     afero.Fs
	runDir string
	// def is what an unscripted session does.
	def    config.Outcome
	clock  *clock.Fake
	repo   string
	logs   string
	wf     *config.Workflow
	test   *config.WorkflowTest
	mu     sync.Mutex
	counts map[string]int
	// checked holds the check logs already answered.
	checked map[string]bool
	// prompts holds every prompt each step's sessions were given.
	prompts map[string][]string
	errs    []string
}

func newStarter(fs afero.Fs, clk *clock.Fake, repo, runDir string, wf *config.Workflow, t *config.WorkflowTest) *starter {
	return &starter{fs: fs, runDir: runDir, clock: clk, repo: repo, logs: filepath.Join(runDir, "logs"), wf: wf, test: t,
		counts: map[string]int{}, checked: map[string]bool{}, prompts: map[string][]string{}}
}

// next returns the n-th outcome of a script (the last one repeating),
// or def for a session the script does not cover.
func next(list []config.Outcome, n int, def config.Outcome) config.Outcome {
	if len(list) == 0 {
		return def
	}
	return list[min(n, len(list)-1)]
}

// Start answers a session from the script, performing its effects on
// the memory file system and the fake clock.
func (s *starter) Start(_ context.Context, spec proc.Spec) (proc.Session, error) {
	env := map[string]string{}
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	s.mu.Lock()
	step := env["FLOW_STEP_ID"]
	var o config.Outcome
	if step == "" {
		step = s.checkedStep(spec.Command)
		o = next(s.test.Checks[step], s.counts["check:"+step], config.Outcome{})
		s.counts["check:"+step]++
	} else {
		// An instance of a loop's body follows its own script when the
		// test has one (sessions: {"stories[a].review": ...}), else its
		// body step's; each counts its own sessions.
		if key := env["FLOW_STEP_KEY"]; key != step && len(s.test.Sessions[key]) > 0 {
			step = key
		}
		o = next(s.test.Sessions[step], s.counts[step], s.def)
		s.counts[step]++
		if cs := s.test.Control[step]; len(cs) > 0 && s.counts[step] == 1 {
			// A person sets control.json while the step's first session
			// runs; the runner acts on it once the session ends.
			if err := record.SetDesired(s.fs, s.runDir, controlState(cs[0].State), "flow test", "", s.clock.Now(), false); err != nil {
				s.errs = append(s.errs, fmt.Sprintf("set control: %v", err))
			}
		}
		if p := env["FLOW_PROMPT_FILE"]; p != "" {
			if b, err := afero.ReadFile(s.fs, p); err == nil {
				// An instance's prompts count for it and for its body step.
				for _, k := range uniq(env["FLOW_STEP_ID"], env["FLOW_STEP_KEY"]) {
					s.prompts[k] = append(s.prompts[k], string(b))
				}
			}
		}
	}
	s.mu.Unlock()
	res := proc.Result{ExitCode: o.ExitCode}
	d := o.Duration
	if spec.Timeout > 0 && d > spec.Timeout {
		d, res = spec.Timeout, proc.Result{ExitCode: -1, TimedOut: true}
	}
	res.Started = s.clock.Now()
	s.clock.Advance(d)
	res.Ended = s.clock.Now()
	for _, w := range o.Writes {
		if err := writeFile(s.fs, filepath.Join(s.repo, filepath.FromSlash(w.Path)), w.Content); err != nil {
			return nil, fmt.Errorf("write %s: %w", w.Path, err)
		}
	}
	if o.Report != nil && env["FLOW_REPORT_PATH"] != "" {
		if err := writeFile(s.fs, env["FLOW_REPORT_PATH"], string(o.Report)); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
	}
	out := o.Output
	if preset := s.preset(env["FLOW_STEP_ID"]); preset != "" {
		// A preset agent's session prints its tool's JSON, which the
		// runner parses as it parses a real one's: the scripted output
		// is its final text. A session continues its step's
		// conversation, or starts conversation "flow-test-<step>-<n>".
		session := fmt.Sprintf("flow-test-%s-%d", env["FLOW_STEP_KEY"], s.counts[step])
		if id := resumeID(spec.Command); id != "" {
			session = id
		}
		var u agents.Usage
		if ou := o.Usage; ou != nil {
			u = agents.Usage{TokensIn: ou.TokensIn, TokensOut: ou.TokensOut, TokensCached: ou.TokensCached, CostUSD: ou.CostUSD, Turns: ou.Turns}
		}
		out = agents.Simulate(preset, strings.TrimRight(o.Output, "\n"), session, u)
	}
	if spec.Output != nil && out != "" {
		if _, err := io.WriteString(spec.Output, out); err != nil {
			return nil, fmt.Errorf("write output: %w", err)
		}
	}
	return proc.Ended{Result: res}, nil
}

// checkedStep finds the step of a gate.check: the runner creates the
// check's log, <step>.[g<N>.]<iteration>.<attempt>.check.log, just
// before it starts the command. Should two checks start at once, the
// one whose step's gate.check reads as command wins.
func (s *starter) checkedStep(command string) string {
	names, _ := afero.Glob(s.fs, filepath.Join(s.logs, "*.check.log"))
	var fresh []string
	for _, n := range names {
		if !s.checked[n] {
			fresh = append(fresh, n)
		}
	}
	pick := ""
	for _, n := range fresh {
		step := s.logStep(n)
		if pick == "" {
			pick = n
		}
		if st := s.wf.Step(step); st != nil && st.Gate != nil && st.Gate.Check != nil && st.Gate.Check.Src == command {
			pick = n
			break
		}
	}
	if pick == "" {
		return ""
	}
	s.checked[pick] = true
	return s.logStep(pick)
}

// logStep returns the step of a log file's name: "<step>.…", or
// "<loop>.<item>.<step>.…" for an instance of a loop's body.
func (s *starter) logStep(name string) string {
	parts := strings.SplitN(path.Base(filepath.ToSlash(name)), ".", 4)
	if l := s.wf.Step(parts[0]); l != nil && l.ForEach != nil && len(parts) > 2 {
		return parts[2]
	}
	return parts[0]
}

func writeFile(fs afero.Fs, p, content string) error {
	if err := fs.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return afero.WriteFile(fs, p, []byte(content), 0o644)
}

// session is a scripted session that has already ended.
// controlState maps a scripted state, named as its command is, to the
// state control.json holds.
func controlState(s string) core.ControlState {
	switch s {
	case "pause":
		return core.Pause
	case "run_once":
		return core.RunOnce
	case "cleanup":
		return core.RunCleanup
	}
	return core.Continuous
}

// uniq returns a and b, or a alone when they are equal or b is empty.
func uniq(a, b string) []string {
	if b == "" || a == b {
		return []string{a}
	}
	return []string{a, b}
}

// preset returns the preset of step's agent, or "" when the step does
// not run a preset agent.
func (s *starter) preset(step string) string {
	st := s.wf.Step(step)
	if st == nil || st.Kind != config.KindAgent {
		if step == "cleanup" && s.wf.Cleanup != nil {
			if a := s.wf.Agents[s.wf.Cleanup.Agent]; a != nil {
				return a.Preset
			}
		}
		return ""
	}
	if a := s.wf.Agents[st.Agent]; a != nil {
		return a.Preset
	}
	return ""
}

// resumeID finds the conversation a preset's command continues: the
// argument after --resume, or after codex's resume.
func resumeID(command string) string {
	for _, flag := range []string{"--resume '", " resume '"} {
		if _, rest, ok := strings.Cut(command, flag); ok {
			id, _, _ := strings.Cut(rest, "'")
			return id
		}
	}
	return ""
}
