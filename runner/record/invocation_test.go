package record

import (
	"fmt"
	"testing"
)

func TestInvocationMerge(t *testing.T) {
	kept := Invocation{Format: "orchestrator", Wrapper: "/w.sh", WrapperArgs: []string{"--fast"}, GateStateFile: "/g.json", Env: []string{"A=1", "B=2"}}
	for _, tc := range []struct {
		name  string
		later Invocation
		want  Invocation
	}{
		{"nothing", Invocation{}, kept},
		{"format only keeps the wrapper", Invocation{Format: "orchestrator"}, kept},
		{"a command template replaces the wrapper", Invocation{CommandTemplate: "run {prompt}"},
			Invocation{Format: "orchestrator", CommandTemplate: "run {prompt}", WrapperArgs: []string{"--fast"}, GateStateFile: "/g.json", Env: []string{"A=1", "B=2"}}},
		{"env by name", Invocation{Env: []string{"B=3", "C=4"}},
			Invocation{Format: "orchestrator", Wrapper: "/w.sh", WrapperArgs: []string{"--fast"}, GateStateFile: "/g.json", Env: []string{"A=1", "B=3", "C=4"}}},
		{"pause added", Invocation{PauseForHumanInput: true},
			Invocation{Format: "orchestrator", Wrapper: "/w.sh", WrapperArgs: []string{"--fast"}, GateStateFile: "/g.json", PauseForHumanInput: true, Env: []string{"A=1", "B=2"}}},
		{"agent_orchestrator's run flags", Invocation{Python: "/py", Schema: "/s.json", Workdir: "/r/sub", LogsDir: "/logs", StateFile: "/st.json", PollInterval: 0.5, DailyCostLimit: 3},
			Invocation{Format: "orchestrator", Wrapper: "/w.sh", WrapperArgs: []string{"--fast"}, GateStateFile: "/g.json", Env: []string{"A=1", "B=2"},
				Python: "/py", Schema: "/s.json", Workdir: "/r/sub", LogsDir: "/logs", StateFile: "/st.json", PollInterval: 0.5, DailyCostLimit: 3}},
	} {
		got := kept.Merge(tc.later)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: Merge = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestInvocationIsZero(t *testing.T) {
	for _, v := range []Invocation{{Python: "p"}, {Schema: "s"}, {Workdir: "w"}, {LogsDir: "l"}, {StateFile: "f"}, {PollInterval: 1}, {DailyCostLimit: 1}} {
		if v.IsZero() {
			t.Errorf("%+v.IsZero() = true", v)
		}
	}
	if !(Invocation{}).IsZero() {
		t.Error("the zero Invocation is not zero")
	}
}

func TestInvocationGitWorktree(t *testing.T) {
	kept := Invocation{GitWorktree: &GitWorktree{Branch: "agents/a"}}
	if got := kept.Merge(Invocation{Wrapper: "/w"}); got.GitWorktree != kept.GitWorktree {
		t.Errorf("a resume without the flags lost the worktree: %+v", got.GitWorktree)
	}
	later := &GitWorktree{Ref: "main", Keep: true}
	if got := kept.Merge(Invocation{GitWorktree: later}); got.GitWorktree != later {
		t.Errorf("the flags given again did not replace the kept ones: %+v", got.GitWorktree)
	}
	if (Invocation{GitWorktree: &GitWorktree{}}).IsZero() {
		t.Error("an invocation with --git-worktree is zero")
	}
	for _, tc := range []struct {
		flags GitWorktree
		want  string
	}{
		{GitWorktree{}, "worktree base= branch= root= keep=on_failure"},
		{GitWorktree{Ref: "v1", Branch: "agents/x", Root: "../t", Keep: true}, "worktree base=v1 branch=agents/x root=../t keep=always"},
	} {
		o := Invocation{GitWorktree: &tc.flags}.LoadOptions("/repo")
		w := o.Workspace
		if w == nil {
			t.Fatalf("%+v: no workspace in the load options", tc.flags)
		}
		if got := fmt.Sprintf("%s base=%s branch=%s root=%s keep=%s", w.Mode, w.Base, w.Branch, w.Root, w.Keep); got != tc.want {
			t.Errorf("%+v: workspace %s, want %s", tc.flags, got, tc.want)
		}
	}
	if o := (Invocation{}).LoadOptions("/repo"); o.Workspace != nil {
		t.Errorf("no flags, yet a workspace: %+v", o.Workspace)
	}
}
