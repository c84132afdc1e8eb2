package ops

import (
	"testing"

	"github.com/spf13/afero"
)

func TestMainOfWorktree(t *testing.T) {
	fsys := afero.NewMemMapFs()
	files := map[string]string{
		"/src/app/.agents/worktrees/r1/stories.a/.git": "gitdir: /src/app/.git/worktrees/stories.a\n",
		"/src/mine/.git":             "gitdir: /src/app/.git/worktrees/mine\n",
		"/src/sub/.git":              "gitdir: /src/app/.git/modules/sub\n",
		"/src/app/.git/HEAD":         "ref: refs/heads/main\n",
		"/src/app/.agents/runs/r1/x": "",
		"/src/app/.agents/worktrees/r1/stories.a/src/main.go": "",
	}
	for p, c := range files {
		if err := afero.WriteFile(fsys, p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string]string{
		"/src/app/.agents/worktrees/r1/stories.a":     "/src/app",
		"/src/app/.agents/worktrees/r1/stories.a/src": "/src/app",
		"/src/mine": "", // a worktree of the user's own
		"/src/sub":  "", // a submodule
		"/src/app":  "",
	} {
		got, ok := mainOfWorktree(fsys, dir)
		if got != want || ok != (want != "") {
			t.Errorf("mainOfWorktree(%s) = %q, %v; want %q", dir, got, ok, want)
		}
	}
}
