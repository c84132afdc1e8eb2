package ops

import (
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// mainOfWorktree returns the repository whose worktree under
// .agents/worktrees/ holds dir — where flow runs the sessions of a
// scope with a worktree of its own — so that flow started there (a
// session's flow status) finds the run's record; ok is false for any
// other directory. A worktree's .git file reads
// "gitdir: <main>/.git/worktrees/<name>".
func mainOfWorktree(fsys afero.Fs, dir string) (string, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := fsys.Stat(filepath.Join(d, ".git"))
		if err == nil {
			if fi.IsDir() || fi.Size() > 4096 {
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
		if parent := filepath.Dir(d); parent == d {
			return "", false
		}
	}
}
