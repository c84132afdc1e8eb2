package ops

import (
	"testing"

	"github.com/spf13/afero"
)

// TestFindRepo: the repository of a directory is the first of it and
// its parents that holds .agents/runs/ or .git; a worktree flow made
// under .agents/worktrees/ stands for its main checkout, a worktree of
// the user's own and a submodule for themselves.
func TestFindRepo(t *testing.T) {
	fsys := afero.NewMemMapFs()
	files := map[string]string{
		"/src/app/.agents/worktrees/r1/stories.a/.git":        "gitdir: /src/app/.git/worktrees/stories.a\n",
		"/src/app/.agents/worktrees/r1/stories.a/src/main.go": "",
		"/src/mine/.git":               "gitdir: /src/app/.git/worktrees/mine\n",
		"/src/mine/pkg/x.go":           "",
		"/src/app/sub/.git":            "gitdir: /src/app/.git/modules/sub\n",
		"/src/app/sub/deep/x.go":       "",
		"/src/app/.git/HEAD":           "ref: refs/heads/main\n",
		"/src/app/cmd/tool/main.go":    "",
		"/src/app/.agents/runs/r1/x":   "",
		"/notes/.agents/runs/r2/x":     "",
		"/notes/drafts/today.md":       "",
		"/notes/.agents/prompts/a.md":  "",
		"/plain/dir/file":              "",
		"/only/.agents/prompts/p.md":   "",
		"/only/.agents/prompts/sub/ok": "",
	}
	for p, c := range files {
		if err := afero.WriteFile(fsys, p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{"/src/app", "/src/app"},
		{"/src/app/cmd/tool", "/src/app"},
		{"/src/app/.agents/worktrees/r1/stories.a", "/src/app"},
		{"/src/app/.agents/worktrees/r1/stories.a/src", "/src/app"},
		{"/src/mine/pkg", "/src/mine"},        // a worktree of the user's own
		{"/src/app/sub/deep", "/src/app/sub"}, // a submodule
		{"/notes/drafts", "/notes"},           // .agents/runs/ without git
		{"/plain/dir", ""},
		{"/only/.agents/prompts/sub", ""}, // .agents/ without runs/
	} {
		t.Run(tc.dir, func(t *testing.T) {
			got, ok := findRepo(fsys, tc.dir)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("findRepo(%s) = %q, %v; want %q", tc.dir, got, ok, tc.want)
			}
		})
	}
}
