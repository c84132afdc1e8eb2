package gitwork

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The tests run the real git binary in scratch repositories, with a
// home of their own so that no user configuration takes part.

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// testEnv is the environment of every git command of a test.
func testEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + home}
}

// sh runs a git command for a test's own setup, failing the test when
// it fails.
func sh(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(env, "GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines is a file of n numbered lines.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line " + itoa(i) + "\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// replaceLine returns text with its line n (1-based) replaced.
func replaceLine(text string, n int, with string) string {
	ls := strings.Split(text, "\n")
	ls[n-1] = with
	return strings.Join(ls, "\n")
}

// fixture is a scratch repository on branch main with a file f of 30
// lines and a README, and a Git over it.
type fixture struct {
	env  []string
	repo string
	git  *Git
	base string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	needGit(t)
	env := testEnv(t)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, env, repo, "init", "-q")
	write(t, filepath.Join(repo, "f"), lines(30))
	write(t, filepath.Join(repo, "README.md"), "# r\n")
	sh(t, env, repo, "add", ".")
	sh(t, env, repo, "commit", "-q", "-m", "base")
	g := &Git{Run: Exec("", env, 0)}
	return &fixture{env: env, repo: repo, git: g, base: sh(t, env, repo, "rev-parse", "HEAD")}
}

// errKilled is what a killed runner answers.
var errKilled = errors.New("killed")

// killAfter returns a runner that runs the first n commands and fails
// every later one, as if the process had been killed before it; count,
// when not nil, counts the commands asked for.
func killAfter(run Runner, n int, count *atomic.Int32) Runner {
	var done atomic.Int32
	return func(ctx context.Context, c Cmd) Result {
		if count != nil {
			count.Add(1)
		}
		if done.Add(1) > int32(n) {
			return Result{Code: -1, Err: errKilled}
		}
		return run(ctx, c)
	}
}

// with returns a copy of the fixture's Git whose commands go through
// run.
func (f *fixture) with(run Runner) *Git {
	g := *f.git
	g.Run = run
	return &g
}

// steps counts the commands op runs when nothing stops it.
func (f *fixture) steps(t *testing.T, op func(g *Git) error) int {
	t.Helper()
	var n atomic.Int32
	if err := op(f.with(killAfter(f.git.Run, 1<<30, &n))); err != nil {
		t.Fatalf("operation: %v", err)
	}
	return int(n.Load())
}

func worktreesOf(t *testing.T, f *fixture) []Worktree {
	t.Helper()
	list, err := f.git.Worktrees(context.Background(), f.repo)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	path := filepath.Join(f.repo, ".agents", "worktrees", "r1", "_run")
	spec := Spec{Path: path, Branch: "flow/r1/_run", Base: f.base, LockReason: "flow run r1"}
	c, err := f.git.Create(ctx, f.repo, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !c.New || c.Head != f.base || c.Branch != "flow/r1/_run" {
		t.Fatalf("created %+v", c)
	}
	if got := read(t, filepath.Join(path, "f")); got != lines(30) {
		t.Fatalf("worktree file f: %q", got)
	}
	again, err := f.git.Create(ctx, f.repo, spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.New || again.Head != f.base {
		t.Fatalf("second create %+v: want the worktree found", again)
	}
	list := worktreesOf(t, f)
	if len(list) != 2 || !list[1].Locked || list[1].LockReason != "flow run r1" {
		t.Fatalf("worktrees %+v: want one locked worktree beside the main one", list)
	}

	t.Run("refusals", func(t *testing.T) {
		full := filepath.Join(t.TempDir(), "full")
		write(t, filepath.Join(full, "x"), "mine")
		for name, tc := range map[string]struct {
			spec Spec
			want string
		}{
			"bad branch":     {Spec{Path: filepath.Join(t.TempDir(), "a"), Branch: "flow/r1/a..b", Base: f.base}, "not a valid branch name"},
			"lock branch":    {Spec{Path: filepath.Join(t.TempDir(), "a"), Branch: "flow/x.lock", Base: f.base}, "not a valid branch name"},
			"relative":       {Spec{Path: "rel", Branch: "flow/r1/a", Base: f.base}, "must be absolute"},
			"files there":    {Spec{Path: full, Branch: "flow/r1/b", Base: f.base}, "not a worktree of this repository"},
			"other branch":   {Spec{Path: path, Branch: "flow/r1/other", Base: f.base}, "on branch flow/r1/_run"},
			"branch in use":  {Spec{Path: filepath.Join(t.TempDir(), "c"), Branch: "flow/r1/_run", Base: f.base}, "is checked out in"},
			"main work tree": {Spec{Path: f.repo, Branch: "main", Base: f.base}, "main working tree"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := f.git.Create(ctx, f.repo, tc.spec)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Create: %v, want an error saying %q", err, tc.want)
				}
			})
		}
	})
}

// TestCreateKilled stops Create before each of its commands in turn,
// then creates again: one worktree, on its branch at the base, locked,
// its files all there.
func TestCreateKilled(t *testing.T) {
	ctx := context.Background()
	probe := newFixture(t)
	spec := func(f *fixture) Spec {
		return Spec{Path: filepath.Join(f.repo, ".agents", "worktrees", "r", "loop.a"), Branch: "flow/r/loop.a", Base: f.base, LockReason: "flow run r"}
	}
	n := probe.steps(t, func(g *Git) error { _, err := g.Create(ctx, probe.repo, spec(probe)); return err })
	for k := 0; k < n; k++ {
		t.Run("killed before command "+itoa(k+1), func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.with(killAfter(f.git.Run, k, nil)).Create(ctx, f.repo, spec(f)); !errors.Is(err, errKilled) {
				t.Fatalf("killed create: %v", err)
			}
			c, err := f.git.Create(ctx, f.repo, spec(f))
			if err != nil {
				t.Fatalf("create after the kill: %v", err)
			}
			list := worktreesOf(t, f)
			if len(list) != 2 || list[1].Branch != "flow/r/loop.a" || !list[1].Locked || list[1].LockReason != "flow run r" {
				t.Fatalf("worktrees %+v", list)
			}
			if c.Head != f.base || read(t, filepath.Join(spec(f).Path, "f")) != lines(30) {
				t.Fatalf("worktree at %s, file f %q", c.Head, read(t, filepath.Join(spec(f).Path, "f")))
			}
		})
	}
	t.Run("checkout cut short", func(t *testing.T) {
		// git locks a worktree "initializing" until its checkout ends:
		// a worktree left so is made again.
		f := newFixture(t)
		s := spec(f)
		sh(t, f.env, f.repo, "worktree", "add", "-q", "-b", s.Branch, s.Path, f.base)
		if err := os.Remove(filepath.Join(s.Path, "f")); err != nil {
			t.Fatal(err)
		}
		admin := sh(t, f.env, s.Path, "rev-parse", "--absolute-git-dir")
		write(t, filepath.Join(admin, "locked"), "initializing")
		if _, err := f.git.Create(ctx, f.repo, s); err != nil {
			t.Fatal(err)
		}
		if read(t, filepath.Join(s.Path, "f")) != lines(30) {
			t.Fatal("the worktree cut short was reused")
		}
	})
	t.Run("directory removed by hand", func(t *testing.T) {
		f := newFixture(t)
		s := spec(f)
		if _, err := f.git.Create(ctx, f.repo, s); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(s.Path); err != nil {
			t.Fatal(err)
		}
		c, err := f.git.Create(ctx, f.repo, s)
		if err != nil {
			t.Fatal(err)
		}
		if !c.New || read(t, filepath.Join(s.Path, "f")) != lines(30) {
			t.Fatalf("recreated %+v", c)
		}
	})
}

func TestCommit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/s", Base: f.base}); err != nil {
		t.Fatal(err)
	}
	nothing, err := f.git.Commit(ctx, wt, "nothing")
	if err != nil || nothing.Made || nothing.Commit != f.base {
		t.Fatalf("commit of a clean tree: %+v, %v", nothing, err)
	}
	write(t, filepath.Join(wt, "f"), replaceLine(lines(30), 3, "changed"))
	write(t, filepath.Join(wt, "new.txt"), "new\n")
	write(t, filepath.Join(wt, "notes.md"), "Title\n=======\n")
	if err := os.Remove(filepath.Join(wt, "README.md")); err != nil {
		t.Fatal(err)
	}
	c, err := f.git.Commit(ctx, wt, "flow: run r, step s")
	if err != nil || !c.Made {
		t.Fatalf("commit: %+v, %v", c, err)
	}
	if got := sh(t, f.env, wt, "show", "--name-status", "--format=%an <%ae>%n%s", c.Commit); got != "flow <flow@localhost>\nflow: run r, step s\n\nD\tREADME.md\nM\tf\nA\tnew.txt\nA\tnotes.md" {
		t.Fatalf("commit:\n%s", got)
	}
	if again, err := f.git.Commit(ctx, wt, "again"); err != nil || again.Made || again.Commit != c.Commit {
		t.Fatalf("second commit: %+v, %v", again, err)
	}
	write(t, filepath.Join(wt, "f"), "a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> other\n")
	_, err = f.git.Commit(ctx, wt, "markers")
	var me *MarkersError
	if !errors.As(err, &me) || len(me.Where) != 2 || me.Where[0] != "f:2" {
		t.Fatalf("commit of markers: %v, want a MarkersError at f:2 and f:6", err)
	}
	if head := sh(t, f.env, wt, "rev-parse", "HEAD"); head != c.Commit {
		t.Fatal("a tree with markers was committed")
	}
}

// TestCommitKilled stops Commit before each of its commands, then
// commits again: exactly one commit, holding the change.
func TestCommitKilled(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*fixture, string) {
		f := newFixture(t)
		wt := filepath.Join(t.TempDir(), "wt")
		if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/s", Base: f.base}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "f"), replaceLine(lines(30), 3, "changed"))
		return f, wt
	}
	pf, pwt := setup(t)
	n := pf.steps(t, func(g *Git) error { _, err := g.Commit(ctx, pwt, "m"); return err })
	for k := 0; k < n; k++ {
		t.Run("killed before command "+itoa(k+1), func(t *testing.T) {
			f, wt := setup(t)
			if _, err := f.with(killAfter(f.git.Run, k, nil)).Commit(ctx, wt, "m"); !errors.Is(err, errKilled) {
				t.Fatalf("killed commit: %v", err)
			}
			c, err := f.git.Commit(ctx, wt, "m")
			if err != nil {
				t.Fatal(err)
			}
			if parent := sh(t, f.env, wt, "rev-parse", c.Commit+"^"); parent != f.base {
				t.Fatalf("the commit's parent is %s, not the base: a commit was made twice or lost", parent)
			}
			if got := sh(t, f.env, wt, "status", "--porcelain"); got != "" {
				t.Fatalf("left uncommitted: %s", got)
			}
		})
	}
}

// items makes a run worktree on flow/r/_run and an item worktree per
// edit, each committing its edit of file f.
func items(t *testing.T, f *fixture, edits map[string]func(string) string) (run string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	run = filepath.Join(dir, "_run")
	if _, err := f.git.Create(ctx, f.repo, Spec{Path: run, Branch: "flow/r/_run", Base: f.base}); err != nil {
		t.Fatal(err)
	}
	for key, edit := range edits {
		wt := filepath.Join(dir, key)
		if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/loop." + key, Base: f.base}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "f"), edit(read(t, filepath.Join(wt, "f"))))
		if _, err := f.git.Commit(ctx, wt, "item "+key); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func TestMergeBranch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	run := items(t, f, map[string]func(string) string{
		"a": func(s string) string { return replaceLine(s, 2, "A") },
		"b": func(s string) string { return replaceLine(s, 15, "B") },
		"c": func(s string) string { return replaceLine(s, 28, "C") },
	})
	var prev string
	for _, key := range []string{"a", "b", "c"} {
		m, err := f.git.MergeBranch(ctx, f.repo, MergeSpec{Into: "flow/r/_run", From: "flow/r/loop." + key, Message: "merge " + key, Checkout: run})
		if err != nil || m.Status != Merged || m.Already {
			t.Fatalf("merge %s: %+v, %v", key, m, err)
		}
		if prev != "" && m.Old != prev {
			t.Fatalf("merge %s started from %s, not the last merge %s", key, m.Old, prev)
		}
		prev = m.New
	}
	want := replaceLine(replaceLine(replaceLine(lines(30), 2, "A"), 15, "B"), 28, "C")
	if got := read(t, filepath.Join(run, "f")); got != want {
		t.Fatalf("the run's worktree holds:\n%s", got)
	}
	if st := sh(t, f.env, run, "status", "--porcelain"); st != "" {
		t.Fatalf("the run's worktree is not clean after the merges: %s", st)
	}
	if log := sh(t, f.env, f.repo, "log", "--first-parent", "--format=%s", "flow/r/_run"); log != "merge c\nmerge b\nmerge a\nbase" {
		t.Fatalf("the run's branch:\n%s", log)
	}
	again, err := f.git.MergeBranch(ctx, f.repo, MergeSpec{Into: "flow/r/_run", From: "flow/r/loop.a", Message: "again", Checkout: run})
	if err != nil || !again.Already || again.New != prev {
		t.Fatalf("merging a merged branch again: %+v, %v", again, err)
	}
}

func TestMergeBranchConflict(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	run := items(t, f, map[string]func(string) string{
		"a": func(s string) string { return replaceLine(s, 10, "from a") },
		"b": func(s string) string { return replaceLine(s, 10, "from b") },
	})
	spec := func(key string) MergeSpec {
		return MergeSpec{Into: "flow/r/_run", From: "flow/r/loop." + key, Message: "merge " + key, Checkout: run}
	}
	if m, err := f.git.MergeBranch(ctx, f.repo, spec("a")); err != nil || m.Status != Merged {
		t.Fatalf("merge a: %+v, %v", m, err)
	}
	before := sh(t, f.env, f.repo, "rev-parse", "flow/r/_run")
	m, err := f.git.MergeBranch(ctx, f.repo, spec("b"))
	if err != nil || m.Status != Conflict {
		t.Fatalf("merge b: %+v, %v", m, err)
	}
	if after := sh(t, f.env, f.repo, "rev-parse", "flow/r/_run"); after != before {
		t.Fatal("a conflicting merge moved the branch")
	}
	c := m.Conflicts
	if !slices.Equal(c.Files, []string{"f"}) || !strings.Contains(c.Messages, "Merge conflict in f") ||
		!strings.Contains(c.Hunks, "<<<<<<< flow/r/_run\nfrom a\n=======\nfrom b\n>>>>>>> flow/r/loop.b") || !strings.Contains(c.Hunks, "--- f, lines 7-17") {
		t.Fatalf("conflicts:\n%s", c)
	}

	// The item takes the run's work in, resolves, commits: then it
	// merges.
	wt := filepath.Join(filepath.Dir(run), "b")
	mi, err := f.git.MergeInto(ctx, wt, MergeSpec{From: "flow/r/_run", Message: "take the run's work"})
	if err != nil || mi.Status != Conflict || !slices.Equal(mi.Conflicts.Files, []string{"f"}) || !strings.Contains(mi.Conflicts.Hunks, "from a") {
		t.Fatalf("merge into the item: %+v, %v", mi, err)
	}
	if again, err := f.git.MergeInto(ctx, wt, MergeSpec{From: "flow/r/_run", Message: "again"}); err != nil || again.Status != Conflict {
		t.Fatalf("merge into the item again: %+v, %v", again, err)
	}
	var me *MarkersError
	if _, err := f.git.Commit(ctx, wt, "unresolved"); !errors.As(err, &me) {
		t.Fatalf("commit of an unresolved merge: %v", err)
	}
	write(t, filepath.Join(wt, "f"), replaceLine(lines(30), 10, "from a and b"))
	if c, err := f.git.Commit(ctx, wt, "resolved"); err != nil || !c.Made {
		t.Fatalf("commit of the resolution: %+v, %v", c, err)
	}
	if m, err := f.git.MergeBranch(ctx, f.repo, spec("b")); err != nil || m.Status != Merged {
		t.Fatalf("merge b after the resolution: %+v, %v", m, err)
	}
	if got := read(t, filepath.Join(run, "f")); got != replaceLine(lines(30), 10, "from a and b") {
		t.Fatalf("the run's worktree holds:\n%s", got)
	}
}

// TestMergeBranchKilled stops MergeBranch before each of its commands,
// then merges again: the branch holds one merge commit of the item,
// the run's worktree its files, and no half merge is left.
func TestMergeBranchKilled(t *testing.T) {
	ctx := context.Background()
	edits := map[string]func(string) string{"a": func(s string) string { return replaceLine(s, 2, "A") }}
	spec := func(run string) MergeSpec {
		return MergeSpec{Into: "flow/r/_run", From: "flow/r/loop.a", Message: "merge a", Checkout: run}
	}
	pf := newFixture(t)
	prun := items(t, pf, edits)
	n := pf.steps(t, func(g *Git) error { _, err := g.MergeBranch(ctx, pf.repo, spec(prun)); return err })
	for k := 0; k < n; k++ {
		t.Run("killed before command "+itoa(k+1), func(t *testing.T) {
			f := newFixture(t)
			run := items(t, f, edits)
			if _, err := f.with(killAfter(f.git.Run, k, nil)).MergeBranch(ctx, f.repo, spec(run)); !errors.Is(err, errKilled) {
				t.Fatalf("killed merge: %v", err)
			}
			m, err := f.git.MergeBranch(ctx, f.repo, spec(run))
			if err != nil || m.Status != Merged {
				t.Fatalf("merge after the kill: %+v, %v", m, err)
			}
			if log := sh(t, f.env, f.repo, "log", "--first-parent", "--format=%s", "flow/r/_run"); log != "merge a\nbase" {
				t.Fatalf("the run's branch:\n%s", log)
			}
			if got := read(t, filepath.Join(run, "f")); got != replaceLine(lines(30), 2, "A") {
				t.Fatalf("the run's worktree holds:\n%s", got)
			}
			if st := sh(t, f.env, run, "status", "--porcelain"); st != "" {
				t.Fatalf("the run's worktree: %s", st)
			}
		})
	}
}

func TestMergeCheckout(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		wt := filepath.Join(filepath.Dir(f.repo), "a")
		if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/loop.a", Base: f.base}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "f"), replaceLine(lines(30), 5, "A"))
		if _, err := f.git.Commit(ctx, wt, "item a"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	spec := MergeSpec{Into: "main", From: "flow/r/loop.a", Message: "merge a"}
	t.Run("clean", func(t *testing.T) {
		f := setup(t)
		write(t, filepath.Join(f.repo, "README.md"), "# mine, not committed\n")
		m, err := f.git.MergeCheckout(ctx, f.repo, spec)
		if err != nil || m.Status != Merged || m.Old != f.base {
			t.Fatalf("merge: %+v, %v", m, err)
		}
		if read(t, filepath.Join(f.repo, "f")) != replaceLine(lines(30), 5, "A") || read(t, filepath.Join(f.repo, "README.md")) != "# mine, not committed\n" {
			t.Fatal("the checkout does not hold the merge and the user's change")
		}
		if again, err := f.git.MergeCheckout(ctx, f.repo, spec); err != nil || !again.Already {
			t.Fatalf("again: %+v, %v", again, err)
		}
	})
	for name, tc := range map[string]struct {
		prepare func(t *testing.T, f *fixture)
		want    string
	}{
		"local change in the way": {func(t *testing.T, f *fixture) {
			write(t, filepath.Join(f.repo, "f"), replaceLine(lines(30), 20, "mine"))
		}, "f"},
		"untracked file in the way": {func(t *testing.T, f *fixture) {
			wt := filepath.Join(filepath.Dir(f.repo), "a")
			write(t, filepath.Join(wt, "added.txt"), "theirs\n")
			if _, err := f.git.Commit(ctx, wt, "add a file"); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(f.repo, "added.txt"), "mine\n")
		}, "untracked working tree files would be overwritten"},
		"another branch": {func(t *testing.T, f *fixture) {
			sh(t, f.env, f.repo, "checkout", "-q", "-b", "elsewhere")
		}, "on branch elsewhere"},
		"the user's merge": {func(t *testing.T, f *fixture) {
			sh(t, f.env, f.repo, "checkout", "-q", "-b", "side")
			write(t, filepath.Join(f.repo, "f"), replaceLine(lines(30), 1, "side"))
			sh(t, f.env, f.repo, "commit", "-q", "-am", "side")
			sh(t, f.env, f.repo, "checkout", "-q", "main")
			sh(t, f.env, f.repo, "merge", "-q", "--no-commit", "--no-ff", "side")
		}, "a merge is in progress"},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			tc.prepare(t, f)
			before := sh(t, f.env, f.repo, "status", "--porcelain=v2", "--branch")
			m, err := f.git.MergeCheckout(ctx, f.repo, spec)
			if err != nil || m.Status != Refused || !strings.Contains(m.Reason, tc.want) {
				t.Fatalf("merge: %+v, %v; want refused saying %q", m, err, tc.want)
			}
			if after := sh(t, f.env, f.repo, "status", "--porcelain=v2", "--branch"); after != before {
				t.Fatalf("a refused merge changed the checkout:\n%s\nthen\n%s", before, after)
			}
		})
	}
	t.Run("conflict", func(t *testing.T) {
		f := setup(t)
		write(t, filepath.Join(f.repo, "f"), replaceLine(lines(30), 5, "mine"))
		sh(t, f.env, f.repo, "commit", "-q", "-am", "mine")
		before := sh(t, f.env, f.repo, "status", "--porcelain=v2", "--branch")
		m, err := f.git.MergeCheckout(ctx, f.repo, spec)
		if err != nil || m.Status != Conflict || !strings.Contains(m.Conflicts.Hunks, "<<<<<<< main\nmine\n=======\nA\n>>>>>>> flow/r/loop.a") {
			t.Fatalf("merge: %+v, %v", m, err)
		}
		if after := sh(t, f.env, f.repo, "status", "--porcelain=v2", "--branch"); after != before {
			t.Fatal("a conflicting merge changed the checkout")
		}
	})
	t.Run("a merge cut short is made again", func(t *testing.T) {
		f := setup(t)
		sh(t, f.env, f.repo, "merge", "-q", "--no-commit", "--no-ff", "flow/r/loop.a")
		m, err := f.git.MergeCheckout(ctx, f.repo, spec)
		if err != nil || m.Status != Merged || m.Already {
			t.Fatalf("merge: %+v, %v", m, err)
		}
		if log := sh(t, f.env, f.repo, "log", "--first-parent", "--format=%s", "main"); log != "merge a\nbase" {
			t.Fatalf("main:\n%s", log)
		}
	})
}

// TestMergeCheckoutKilled stops MergeCheckout before each command, then
// merges again: one merge, and nothing left in progress.
func TestMergeCheckoutKilled(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		wt := filepath.Join(t.TempDir(), "a")
		if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/loop.a", Base: f.base}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "f"), replaceLine(lines(30), 5, "A"))
		if _, err := f.git.Commit(ctx, wt, "item a"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	spec := MergeSpec{Into: "main", From: "flow/r/loop.a", Message: "merge a"}
	pf := setup(t)
	n := pf.steps(t, func(g *Git) error { _, err := g.MergeCheckout(ctx, pf.repo, spec); return err })
	for k := 0; k < n; k++ {
		t.Run("killed before command "+itoa(k+1), func(t *testing.T) {
			f := setup(t)
			if _, err := f.with(killAfter(f.git.Run, k, nil)).MergeCheckout(ctx, f.repo, spec); !errors.Is(err, errKilled) {
				t.Fatalf("killed merge: %v", err)
			}
			if m, err := f.git.MergeCheckout(ctx, f.repo, spec); err != nil || m.Status != Merged {
				t.Fatalf("merge after the kill: %+v, %v", m, err)
			}
			if log := sh(t, f.env, f.repo, "log", "--first-parent", "--format=%s", "main"); log != "merge a\nbase" {
				t.Fatalf("main:\n%s", log)
			}
			if st := sh(t, f.env, f.repo, "status", "--porcelain"); st != "" {
				t.Fatalf("checkout: %s", st)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/s", Base: f.base, LockReason: "flow run r"}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "left.txt"), "uncommitted\n")
	if err := f.git.Remove(ctx, f.repo, wt, "flow/r/s", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if b := sh(t, f.env, f.repo, "branch", "--list", "flow/r/s"); b == "" {
		t.Fatal("the branch was deleted though it was to be kept")
	}
	if err := f.git.Remove(ctx, f.repo, wt, "flow/r/s", true); err != nil {
		t.Fatal(err)
	}
	if b := sh(t, f.env, f.repo, "branch", "--list", "flow/r/s"); b != "" {
		t.Fatalf("the branch is still there: %s", b)
	}
	if err := f.git.Remove(ctx, f.repo, wt, "flow/r/s", true); err != nil {
		t.Fatalf("removing what is gone: %v", err)
	}
	if len(worktreesOf(t, f)) != 1 {
		t.Fatal("a worktree is left")
	}
}

// TestNoHooks checks that every command runs with hooks off: a hook
// that would leave a file leaves none.
func TestNoHooks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	mark := filepath.Join(t.TempDir(), "hook-ran")
	hooks := filepath.Join(f.repo, ".git", "hooks")
	for _, h := range []string{"post-checkout", "pre-commit", "commit-msg", "post-commit", "post-merge", "pre-merge-commit", "reference-transaction"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\necho "+h+" >> "+mark+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var seen [][]string
	g := f.with(func(ctx context.Context, c Cmd) Result {
		seen = append(seen, c.Args)
		return f.git.Run(ctx, c)
	})
	run := filepath.Join(t.TempDir(), "run")
	if _, err := g.Create(ctx, f.repo, Spec{Path: run, Branch: "flow/r/_run", Base: f.base}); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "a")
	if _, err := g.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/l.a", Base: f.base}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "f"), "changed\n")
	if _, err := g.Commit(ctx, wt, "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeBranch(ctx, f.repo, MergeSpec{Into: "flow/r/_run", From: "flow/r/l.a", Message: "m", Checkout: run}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeCheckout(ctx, f.repo, MergeSpec{Into: "main", From: "flow/r/l.a", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Fatalf("hooks ran: %s", b)
	}
	for _, args := range seen {
		if !slices.Contains(args, "core.hooksPath=/dev/null") || !slices.Contains(args, "core.fsmonitor=false") {
			t.Fatalf("git %v ran without hooks and fsmonitor off", args)
		}
	}
}

func TestTopLevel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wt := filepath.Join(f.repo, ".agents", "worktrees", "r", "_run")
	if _, err := f.git.Create(ctx, f.repo, Spec{Path: wt, Branch: "flow/r/_run", Base: f.base}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	top, main, err := f.git.TopLevel(ctx, filepath.Join(wt, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if !samePath(top, wt) || !samePath(main, f.repo) {
		t.Fatalf("TopLevel = %s, %s; want %s, %s", top, main, wt, f.repo)
	}
}

func TestOutputBounded(t *testing.T) {
	f := newFixture(t)
	run := Exec("", f.env, 100)
	r := run(context.Background(), Cmd{Dir: f.repo, Args: []string{"cat-file", "-p", "HEAD:f"}})
	if r.Err != nil || len(r.Stdout) != 100 || !r.Truncated {
		t.Fatalf("output of %d bytes (truncated %v, %v); want 100", len(r.Stdout), r.Truncated, r.Err)
	}
}

// TestBranches lists the branches under a prefix, and deletes them.
func TestBranches(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, b := range []string{"flow/r1/_run", "flow/r1/stories.a", "flow/r10/_run", "flowx", "other"} {
		sh(t, f.env, f.repo, "branch", b)
	}
	names := func(prefix string) string {
		t.Helper()
		list, err := f.git.Branches(ctx, f.repo, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range list {
			if b.Commit != f.base {
				t.Errorf("branch %s at %s, want %s", b.Name, b.Commit, f.base)
			}
			out = append(out, b.Name)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct{ prefix, want string }{
		{"flow", "flow/r1/_run flow/r1/stories.a flow/r10/_run"},
		{"flow/r1", "flow/r1/_run flow/r1/stories.a"},
		{"flow/r1/", "flow/r1/_run flow/r1/stories.a"},
		{"flow/none", ""},
	} {
		if got := names(c.prefix); got != c.want {
			t.Errorf("branches under %s: %q, want %q", c.prefix, got, c.want)
		}
	}
	if _, err := f.git.Branches(ctx, f.repo, "/"); err == nil {
		t.Error("an empty prefix lists branches")
	}
	if err := f.git.DeleteBranch(ctx, f.repo, "flow/r1/_run"); err != nil {
		t.Fatal(err)
	}
	if err := f.git.DeleteBranch(ctx, f.repo, "flow/r1/_run"); err != nil {
		t.Errorf("deleting a branch that is gone: %v", err)
	}
	if got := names("flow/r1"); got != "flow/r1/stories.a" {
		t.Errorf("after the delete: %q", got)
	}
	// The branch checked out in the main working tree is not deleted.
	if err := f.git.DeleteBranch(ctx, f.repo, "main"); err == nil {
		t.Error("the checked-out branch was deleted")
	}
}
