package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// These tests run workflows for real: sessions are shell commands that
// edit files, in worktrees that git makes, in a scratch repository.

// gitRepo is a scratch repository on main with a file f of 30 lines.
type gitRepo struct {
	dir string
	env []string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	g := &gitRepo{dir: filepath.Join(t.TempDir(), "repo"), env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH")}}
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g.git(t, "init", "-q", "-b", "main")
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	g.write(t, "f", b.String())
	g.git(t, "add", ".")
	g.git(t, "commit", "-q", "-m", "base")
	return g
}

func (g *gitRepo) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir, cmd.Env = g.dir, g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (g *gitRepo) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// show is a file as a branch holds it.
func (g *gitRepo) show(t *testing.T, rev, file string) string {
	t.Helper()
	return g.git(t, "show", rev+":"+file)
}

// runFor runs (or resumes) a workflow file's run in the repository
// with real sessions.
func (g *gitRepo) runFor(t *testing.T, wfPath string, opts spec.Options) (spec.Result, string) {
	t.Helper()
	wf, err := config.Load(afero.NewOsFs(), wfPath)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	r := &Runner{FS: afero.NewOsFs(), Clock: clock.Real(), Starter: proc.OS(), Stdout: &out, Environ: g.env, Host: "test", PID: os.Getpid(),
		Alive: func(runlock.Holder) bool { return false }, PollEvery: 20 * time.Millisecond}
	opts.Workflow, opts.Repo = wf, g.dir
	res, err := r.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return res, out.String()
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// workflowFile writes a workflow outside the repository.
func workflowFile(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// worktreeStories edits line n of f per item, in parallel items with
// worktrees of their own; an item sent back to resolve a conflict keeps
// both sides. runWorkspace is the run's workspace.
func worktreeStories(runWorkspace string, items string) string {
	return `name: stories
workspace: ` + runWorkspace + `
steps:
  - id: stories
    for_each: ` + items + `
    key: item.key
    max_parallel: 3
    workspace: worktree
    merge: {loop_back_to: edit, max_iterations: 3}
    steps:
      - id: edit
        run: |
          if [ "$FLOW_ITERATION" = 0 ]; then
            sed -i 's/^line {{ item.line }}$/{{ item.text }}/' f
          else
            grep -q '^<<<<<<<' f && sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' f
            echo "resolved: $(cat "$FLOW_FEEDBACK_FILE" | head -c 0)"
          fi
          test "$PWD" = "$FLOW_WORKSPACE"
  - id: after
    run: cat f > after.txt
`
}

func TestWorkspacesMergeInItemOrder(t *testing.T) {
	g := newGitRepo(t)
	before := g.git(t, "status", "--porcelain=v2", "--branch")
	wf := workflowFile(t, worktreeStories("worktree", `[{key: a, line: 2, text: A}, {key: b, line: 15, text: B}, {key: c, line: 28, text: C}]`))
	res, out := g.runFor(t, wf, spec.Options{RunID: "r1"})
	if res.ExitCode != 0 || res.Status != core.RunCompleted {
		t.Fatalf("run: %+v\n%s", res, out)
	}
	got := g.show(t, "flow/r1/_run", "f")
	for _, want := range []string{"\nA\n", "\nB\n", "\nC\n"} {
		if !strings.Contains("\n"+got+"\n", want) {
			t.Fatalf("the run's branch f lacks %q:\n%s", want, got)
		}
	}
	if after := g.show(t, "flow/r1/_run", "after.txt"); after != got {
		t.Fatalf("the step after the loop saw:\n%s", after)
	}
	if log := g.git(t, "log", "--first-parent", "--format=%s", "flow/r1/_run"); !strings.Contains(log, "flow: merge stories[c] of run r1\nflow: merge stories[b] of run r1\nflow: merge stories[a] of run r1") {
		t.Fatalf("the run's branch:\n%s", log)
	}
	if after := g.git(t, "status", "--porcelain=v2", "--branch"); after != before {
		t.Fatalf("the user's checkout changed:\n%s\nthen\n%s", before, after)
	}
	// The run completed: its worktrees are gone, the items' merged
	// branches with them; the run's branch stays.
	if wts := g.git(t, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", wts)
	}
	if br := g.git(t, "branch", "--list", "flow/*"); br != "flow/r1/_run" {
		t.Fatalf("branches left: %q", br)
	}
	if ign, err := os.ReadFile(filepath.Join(g.dir, ".agents", ".gitignore")); err != nil || !strings.Contains(string(ign), "worktrees/") {
		t.Fatalf(".agents/.gitignore: %q, %v", ign, err)
	}
}

func TestWorkspacesConflictLoopsBack(t *testing.T) {
	g := newGitRepo(t)
	wf := workflowFile(t, worktreeStories("worktree", `[{key: a, line: 10, text: from-a}, {key: b, line: 10, text: from-b}]`))
	res, out := g.runFor(t, wf, spec.Options{RunID: "r2"})
	if res.ExitCode != 0 {
		t.Fatalf("run: %+v\n%s", res, out)
	}
	got := g.show(t, "flow/r2/_run", "f")
	if !strings.Contains(got, "from-a") || !strings.Contains(got, "from-b") || strings.Contains(got, "<<<<<<<") || strings.Contains(got, "line 10\n") {
		t.Fatalf("the run's branch f:\n%s", got)
	}
	st := res.State
	if ws := st.Workspaces["stories.b"]; ws == nil || ws.Conflicts != 1 || ws.Merge != core.MergeMerged {
		t.Fatalf("workspace of b: %+v", ws)
	}
	if s := st.Steps[keytest.K("stories[b].edit")]; s.IterationCount != 1 {
		t.Fatalf("b's edit ran %d iterations", s.IterationCount+1)
	}
	if !strings.Contains(out, "stories[b]: merge conflict (f); looping back to stories[b].edit") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestWorkspacesSharedCheckoutWaits(t *testing.T) {
	g := newGitRepo(t)
	wf := workflowFile(t, worktreeStories("shared", `[{key: a, line: 5, text: A}]`))
	// The user changes the line the item changes, and does not commit.
	f := g.show(t, "HEAD", "f") + "\n"
	mine := strings.Replace(f, "line 5\n", "mine\n", 1)
	g.write(t, "f", mine)
	res, out := g.runFor(t, wf, spec.Options{RunID: "r3", NoWait: true})
	if res.ExitCode != core.ExitHuman || !strings.Contains(res.Reason, "waiting for the checkout to take the merge of stories.a") {
		t.Fatalf("run: %+v\n%s", res, out)
	}
	if ws := res.State.Workspaces["stories.a"]; ws.WaitingFor != "merge" || !strings.Contains(ws.Reason, "Your local changes to the following files would be overwritten") {
		t.Fatalf("workspace: %+v", ws)
	}
	if b, _ := os.ReadFile(filepath.Join(g.dir, "f")); string(b) != mine {
		t.Fatal("the user's change was touched")
	}
	// The user puts the file back: the resumed run merges.
	g.git(t, "checkout", "--", "f")
	res, out = g.runFor(t, wf, spec.Options{RunID: "r3", Resume: true})
	if res.ExitCode != 0 {
		t.Fatalf("resume: %+v\n%s", res, out)
	}
	if got := g.show(t, "main", "f"); !strings.Contains(got, "\nA\n") {
		t.Fatalf("main's f:\n%s", got)
	}
	if log := g.git(t, "log", "-1", "--format=%s", "main"); log != "flow: merge stories[a] of run r3" {
		t.Fatalf("main: %s", log)
	}
}

// TestWorkspacesStep: a step with a worktree of its own runs there, and
// its work is merged into the run's branch before the next step starts.
func TestWorkspacesStep(t *testing.T) {
	g := newGitRepo(t)
	wf := workflowFile(t, `name: step
workspace: worktree
steps:
  - id: change
    run: sed -i 's/^line 3$/changed/' f && test "$PWD" = "$FLOW_WORKSPACE" && test "$FLOW_REPO_DIR" != "$PWD"
    workspace: worktree
  - id: after
    run: grep -q '^changed$' f
`)
	res, out := g.runFor(t, wf, spec.Options{RunID: "s1"})
	if res.ExitCode != 0 {
		t.Fatalf("run: %+v\n%s", res, out)
	}
	if !strings.Contains(out, "change: merged into flow/s1/_run") {
		t.Fatalf("output:\n%s", out)
	}
	if got := g.show(t, "flow/s1/_run", "f"); !strings.Contains(got, "\nchanged\n") {
		t.Fatalf("the run's branch f:\n%s", got)
	}
	if ws := res.State.Workspaces["change"]; ws == nil || ws.Merge != core.MergeMerged || !ws.Removed || !ws.BranchDeleted {
		t.Fatalf("workspace %+v", ws)
	}
}

// TestWorkspacesKeepSetupCopy: a new worktree gets the copied ignored
// files and runs its setup before its first session; at the end of a
// failed run keep on_failure keeps the worktree (unlocked) and keep
// never removes it, the run's branch staying either way.
func TestWorkspacesKeepSetupCopy(t *testing.T) {
	for _, keep := range []string{"on_failure", "never"} {
		t.Run(keep, func(t *testing.T) {
			g := newGitRepo(t)
			g.write(t, ".gitignore", ".env\n")
			g.git(t, "add", ".gitignore")
			g.git(t, "commit", "-q", "-m", "ignore .env")
			g.write(t, ".env", "TOKEN=1\n")
			wf := workflowFile(t, `name: keep
workspace:
  keep: `+keep+`
  copy: [.env]
  setup: echo set up > setup.txt
steps:
  - id: work
    run: grep -q TOKEN=1 .env && grep -q 'set up' setup.txt && echo done > work.txt
  - id: fail
    run: exit 3
    max_attempts: 1
`)
			res, out := g.runFor(t, wf, spec.Options{RunID: "k"})
			if res.ExitCode != 1 || res.State.Steps[keytest.K("work")].Status != core.Completed {
				t.Fatalf("run: %+v\n%s", res, out)
			}
			wt := filepath.Join(g.dir, ".agents", "worktrees", "k", "_run")
			_, err := os.Stat(wt)
			switch keep {
			case "on_failure":
				if err != nil {
					t.Fatalf("the worktree of a failed run is gone: %v", err)
				}
				if list := g.git(t, "worktree", "list", "--porcelain"); strings.Contains(list, "locked") {
					t.Fatalf("the kept worktree is still locked:\n%s", list)
				}
			case "never":
				if !os.IsNotExist(err) {
					t.Fatalf("the worktree is still there: %v", err)
				}
			}
			if got := g.show(t, "flow/k/_run", "work.txt"); got != "done" {
				t.Fatalf("the run's branch work.txt: %q", got)
			}
			if log := g.git(t, "log", "-1", "--format=%s", "flow/k/_run"); log != "flow: run k failed" {
				t.Fatalf("the run's last commit: %s", log)
			}
		})
	}
}
