package ops

import (
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// findRepo returns the repository dir lies in, as a command started in
// dir without --repo takes it: the first of dir and its parents that
// holds .agents/runs/ (a directory) or .git (a directory, or a file as
// in a worktree or a submodule). A worktree flow made under
// <main>/.agents/worktrees/ — where it runs the sessions of a scope with
// a worktree of its own — stands for <main>, whose .git/worktrees/ its
// .git file points into ("gitdir: <main>/.git/worktrees/<name>"), so
// that flow started there (a session's flow status) finds the run's
// record. A worktree of the user's own is a repository of its own. ok
// is false when neither dir nor any parent holds either.
func findRepo(fsys afero.Fs, dir string) (string, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		git, gerr := fsys.Stat(filepath.Join(d, ".git"))
		if gerr == nil && !git.IsDir() {
			if main, ok := flowWorktree(fsys, d); ok {
				return main, true
			}
		}
		if fi, err := fsys.Stat(filepath.Join(d, ".agents", "runs")); err == nil && fi.IsDir() {
			return d, true
		}
		if gerr == nil {
			return d, true
		}
		if parent := filepath.Dir(d); parent == d {
			return "", false
		}
	}
}

// flowWorktree returns the repository <main> whose worktree under
// <main>/.agents/worktrees/ d is, read from d's .git file; ok is false
// for any other directory.
func flowWorktree(fsys afero.Fs, d string) (string, bool) {
	fi, err := fsys.Stat(filepath.Join(d, ".git"))
	if err != nil || fi.IsDir() || fi.Size() > 4096 {
		return "", false
	}
	b, err := afero.ReadFile(fsys, filepath.Join(d, ".git"))
	if err != nil {
		return "", false
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", false
	}
	admin, _, ok := strings.Cut(filepath.ToSlash(gitdir), "/.git/worktrees/")
	if !ok {
		return "", false
	}
	main := filepath.FromSlash(admin)
	if !strings.HasPrefix(d, filepath.Join(main, ".agents", "worktrees")+string(filepath.Separator)) {
		return "", false
	}
	return main, true
}
