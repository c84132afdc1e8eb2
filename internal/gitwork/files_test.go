package gitwork

import (
	"testing"

	"github.com/spf13/afero"
)

func TestEnsureIgnore(t *testing.T) {
	for name, tc := range map[string]struct{ before, want string }{
		"none":     {"", "# flow's state: run records, worktrees, cost ledger, history (written by flow)\nruns/\nworktrees/\ncost-ledger.json\ncost-ledger.lock\nhistory.jsonl\n.gitignore\n"},
		"partial":  {"runs/\nprompts-draft/", "runs/\nprompts-draft/\nworktrees/\ncost-ledger.json\ncost-ledger.lock\nhistory.jsonl\n.gitignore\n"},
		"complete": {"/runs/\nworktrees/\ncost-ledger.json\ncost-ledger.lock\nhistory.jsonl\n.gitignore\n", "/runs/\nworktrees/\ncost-ledger.json\ncost-ledger.lock\nhistory.jsonl\n.gitignore\n"},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			if tc.before != "" {
				if err := afero.WriteFile(fsys, "/repo/.agents/.gitignore", []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := EnsureIgnore(fsys, "/repo"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := afero.ReadFile(fsys, "/repo/.agents/.gitignore")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf(".gitignore:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCopyIn(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for path, text := range map[string]string{"/repo/.env": "KEY=1\n", "/repo/conf/a.json": "{}", "/repo/conf/sub/b": "b"} {
		if err := afero.WriteFile(fsys, path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := CopyIn(fsys, "/repo", "/wt", []string{".env", "conf", "missing"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/wt/.env": "KEY=1\n", "/wt/conf/a.json": "{}", "/wt/conf/sub/b": "b"} {
		if got, err := afero.ReadFile(fsys, path); err != nil || string(got) != want {
			t.Fatalf("%s: %q, %v", path, got, err)
		}
	}
	for _, bad := range []string{"../x", "/etc/passwd"} {
		if err := CopyIn(fsys, "/repo", "/wt", []string{bad}); err == nil {
			t.Fatalf("copy %s: no error", bad)
		}
	}
}
