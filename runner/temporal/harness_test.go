package temporal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

const repo = "/repo"

// call is one session started through the scripted starter.
type call struct {
	Step      string
	Attempt   int
	Iteration int
}

// reply is what a scripted session does.
type reply struct {
	Out    string
	Exit   int
	Report string
}

// scripted is a proc.Starter whose sessions follow a script.
type scripted struct {
	fs    afero.Fs
	fn    func(c call) reply
	mu    sync.Mutex
	calls []call
}

func (s *scripted) Start(ctx context.Context, ps proc.Spec) (proc.Session, error) {
	env := spec.EnvironMap(ps.Env)
	c := call{Step: env["FLOW_STEP_KEY"]}
	fmt.Sscan(env["FLOW_ATTEMPT"], &c.Attempt)
	fmt.Sscan(env["FLOW_ITERATION"], &c.Iteration)
	if env["FLOW_STEP_ID"] == "" {
		c.Step = "check"
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	r := s.fn(c)
	if r.Report != "" {
		if err := afero.WriteFile(s.fs, env["FLOW_REPORT_PATH"], []byte(r.Report), 0o644); err != nil {
			return nil, err
		}
	}
	if ps.Output != nil && r.Out != "" {
		io.WriteString(ps.Output, r.Out)
	}
	return proc.Ended{Result: proc.Result{ExitCode: r.Exit}, PID: 7}, nil
}

func (s *scripted) steps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, fmt.Sprintf("%s.%d.%d", c.Step, c.Iteration, c.Attempt))
	}
	return out
}

// harness is a workflow test environment (virtual time, no server) with
// a worker's activities over an in-memory repository.
type harness struct {
	t       *testing.T
	fs      afero.Fs
	starter *scripted
	env     *testsuite.TestWorkflowEnvironment
	acts    *Activities
	wf      *config.Workflow
	in      Input
}

var start = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

func newHarness(t *testing.T, src string, fn func(call) reply) *harness {
	t.Helper()
	return newHarnessWith(t, "workflow.yaml", src, nil, fn)
}

// newHarnessWith is newHarness with the workflow src in file (its
// extension says its format) and files (by their path in the
// repository) written next to it before it is loaded.
func newHarnessWith(t *testing.T, file, src string, files map[string]string, fn func(call) reply) *harness {
	t.Helper()
	fsys := repoFS(t, file, src, files)
	wf, err := config.Load(fsys, path.Join(repo, file))
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{fs: fsys, fn: fn}
	h := &harness{t: t, fs: fsys, starter: s, wf: wf}
	h.acts = &Activities{Runner: &local.Runner{FS: fsys, Clock: clock.NewFake(start), Starter: s, Host: "w1", PID: 1},
		Repo: repo, Host: "w1", Queue: "q"}
	t.Cleanup(func() { h.acts.Close() })
	h.newEnv()
	h.in, err = NewInput(fsys, spec.Options{Workflow: wf, Repo: repo, RunID: "r1"}, "q")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// repoFS returns a memory file system holding the repository: the
// workflow src as file and files, by their path in it.
func repoFS(t *testing.T, file, src string, files map[string]string) afero.Fs {
	t.Helper()
	fsys := afero.NewMemMapFs()
	files = maps.Clone(files)
	if files == nil {
		files = map[string]string{}
	}
	files[file] = src
	for name, content := range files {
		if err := afero.WriteFile(fsys, path.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fsys
}

// newEnv gives the harness a fresh test environment over the same
// worker: a workflow run after another (continue-as-new).
func (h *harness) newEnv() {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	now := start
	if h.env != nil {
		now = h.env.Now()
	}
	h.env = suite.NewTestWorkflowEnvironment()
	h.env.SetStartTime(now)
	h.env.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	h.acts.Register(h.env)
	h.acts.RegisterControl(h.env)
}

// run runs the workflow to its end and returns its result.
func (h *harness) run() Result {
	h.t.Helper()
	h.env.ExecuteWorkflow(WorkflowName, h.in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("workflow error: %v", err)
	}
	var res Result
	if err := h.env.GetWorkflowResult(&res); err != nil {
		h.t.Fatal(err)
	}
	return res
}

// state reads the state the worker mirrored.
func (h *harness) state() *core.State {
	h.t.Helper()
	st, _, err := record.LoadState(h.fs, record.RunDir(repo, "r1"), false, start)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// events returns the mirrored events as "type step" lines.
func (h *harness) events() []string {
	h.t.Helper()
	return eventLines(h.t, h.fs, record.RunDir(repo, "r1"))
}

func eventLines(t *testing.T, fsys afero.Fs, dir string) []string {
	t.Helper()
	b, err := afero.ReadFile(fsys, dir+"/"+record.EventsFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var typ, step string
		if i := strings.Index(line, `"type":"`); i >= 0 {
			typ = line[i+8:]
			typ = typ[:strings.IndexByte(typ, '"')]
		}
		if i := strings.Index(line, `"step":"`); i >= 0 {
			step = line[i+8:]
			step = step[:strings.IndexByte(step, '"')]
		}
		out = append(out, strings.TrimSpace(typ+" "+step))
	}
	return out
}

// query asks the running workflow for its status.
func (h *harness) query(name string) StatusReply {
	h.t.Helper()
	var r StatusReply
	v, err := h.env.QueryWorkflow(name)
	if err != nil {
		h.t.Error(err)
		return r
	}
	if err := v.Get(&r); err != nil {
		h.t.Error(err)
	}
	return r
}
