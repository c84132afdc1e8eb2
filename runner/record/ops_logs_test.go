package record

import (
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/spf13/afero"
)

func TestStepLogs(t *testing.T) {
	const dir = "/run"
	fsys := afero.NewMemMapFs()
	for _, name := range []string{
		"code.0.2.log", "code.1.1.log", "code.0.1.log", "code.0.10.log", "code.g1.0.1.log",
		"code.0.1.check.log", "code.x.1.log", "code.0.log", "codex.0.1.log", "cod.0.1.log",
		"@cleanup.2.log", "@cleanup.1.log", "plan.0.1.log", "cleanup.0.1.log",
		"stories.s1.code.0.1.log", "stories.s1.code.1.1.log", "stories.s2.code.0.1.log",
	} {
		if err := afero.WriteFile(fsys, dir+"/logs/"+name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		step string
		want []LogFile
	}{
		{"code", []LogFile{
			{Name: "code.0.1.log", Iteration: 0, Attempt: 1},
			{Name: "code.0.1.check.log", Iteration: 0, Attempt: 1, Check: true},
			{Name: "code.0.2.log", Iteration: 0, Attempt: 2},
			{Name: "code.0.10.log", Iteration: 0, Attempt: 10},
			{Name: "code.1.1.log", Iteration: 1, Attempt: 1},
			{Name: "code.g1.0.1.log", Generation: 1, Iteration: 0, Attempt: 1},
		}},
		{CleanupSession, []LogFile{{Name: "@cleanup.1.log", Attempt: 1}, {Name: "@cleanup.2.log", Attempt: 2}}},
		// A step named cleanup keeps its own logs.
		{"cleanup", []LogFile{{Name: "cleanup.0.1.log", Attempt: 1}}},
		{"stories[s1].code", []LogFile{{Name: "stories.s1.code.0.1.log", Attempt: 1}, {Name: "stories.s1.code.1.1.log", Iteration: 1, Attempt: 1}}},
		{"deploy", nil},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			got, err := StepLogs(fsys, dir, keytest.K(tt.step))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("StepLogs = %+v; want %+v", got, tt.want)
			}
			for i, w := range tt.want {
				w.Path = dir + "/logs/" + w.Name
				if got[i] != w {
					t.Errorf("log %d = %+v; want %+v", i, got[i], w)
				}
			}
		})
	}
	if logs, err := StepLogs(fsys, "/no-run", keytest.K("code")); err != nil || logs != nil {
		t.Errorf("StepLogs of a run without logs = %v, %v", logs, err)
	}
}
