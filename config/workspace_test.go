package config_test

import (
	"slices"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestWorkspaceForms loads workspace and merge written every way, in
// both formats: the same model.
func TestWorkspaceForms(t *testing.T) {
	yamlSrc := `name: w
workspace: worktree
steps:
  - id: plan
    run: plan
    workspace: {keep: never, copy: [.env]}
  - id: stories
    for_each: [a, b]
    max_parallel: 3
    workspace:
      mode: worktree
      base: main
      root: /tmp/wt
      keep: always
      setup: make deps
    merge: {loop_back_to: code, max_iterations: 3}
    steps:
      - {id: code, run: "echo {{ item }}"}
  - id: later
    for_each: [x]
    workspace: worktree
    merge: {mode: none}
    steps:
      - {id: do, run: do}
  - id: shared
    run: s
    workspace: shared
`
	hclSrc := `name      = "w"
workspace = "worktree"
step "plan" {
  run = "plan"
  workspace {
    keep = "never"
    copy = [".env"]
  }
}
step "stories" {
  for_each     = ["a", "b"]
  max_parallel = 3
  workspace {
    mode  = "worktree"
    base  = "main"
    root  = "/tmp/wt"
    keep  = "always"
    setup = "make deps"
  }
  merge {
    loop_back_to   = "code"
    max_iterations = 3
  }
  step "code" {
    run = "echo {{ item }}"
  }
}
step "later" {
  for_each  = ["x"]
  workspace = "worktree"
  merge {
    mode = "none"
  }
  step "do" {
    run = "do"
  }
}
step "shared" {
  run       = "s"
  workspace = "shared"
}
`
	var models []*config.Workflow
	for format, src := range map[string]string{"yaml": yamlSrc, "hcl": hclSrc} {
		w, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		models = append(models, w)
		if !w.Workspace.Worktree() || w.Workspace.Keep != config.KeepOnFailure || !w.UsesWorktrees() {
			t.Errorf("%s: run workspace %+v", format, w.Workspace)
		}
		if p := w.Step("plan").Workspace; !p.Worktree() || p.Keep != config.KeepNever || !slices.Equal(p.Copy, []string{".env"}) {
			t.Errorf("%s: plan workspace %+v", format, p)
		}
		st := w.Step("stories")
		if ws := st.Workspace; !ws.Worktree() || ws.Base != "main" || ws.Root != "/tmp/wt" || ws.Keep != config.KeepAlways || ws.Setup == nil || ws.Setup.Src != "make deps" {
			t.Errorf("%s: stories workspace %+v", format, ws)
		}
		if m := st.ItemMerge(); m == nil || m.Mode != config.MergeAuto || m.LoopBackTo != "code" || m.MaxIterations.N != 3 {
			t.Errorf("%s: stories merge %+v", format, m)
		}
		if m := w.Step("later").ItemMerge(); m == nil || m.Mode != config.MergeNone {
			t.Errorf("%s: later merge %+v", format, m)
		}
		if w.Step("shared").Workspace != nil || w.Step("code").Workspace != nil {
			t.Errorf("%s: a shared step has a workspace", format)
		}
	}
	if models[0].Digest() != models[1].Digest() {
		a, _ := models[0].Spec()
		b, _ := models[1].Spec()
		t.Errorf("digests differ:\n%s\n%s", a, b)
	}
}

func TestWorkspaceRules(t *testing.T) {
	const head = "name: x\nsteps:\n"
	tests := []struct {
		name string
		src  string // after head: line 3 on
		want []loopDiag
	}{
		{"unknown mode", `  - id: a
    run: a
    workspace: worktee
`, []loopDiag{{5, 16, `unknown workspace "worktee" (did you mean "worktree"?)`}}},
		{"unknown key", `  - id: a
    run: a
    workspace: {kep: never}
`, []loopDiag{{5, 17, `unknown key "kep" (did you mean "keep"?)`}}},
		{"bad keep and copy", `  - id: a
    run: a
    workspace: {keep: sometimes, copy: [../secrets, /etc/passwd, ok]}
`, []loopDiag{
			{5, 23, `unknown keep policy "sometimes"`},
			{5, 41, `workspace.copy: "../secrets": want a path inside the repository, relative to it`},
			{5, 53, `workspace.copy: "/etc/passwd": want a path inside the repository, relative to it`},
		}},
		{"shared with worktree keys", `  - id: a
    run: a
    workspace: {mode: shared, keep: never}
`, []loopDiag{{5, 37, `workspace.keep: a shared workspace is the repository's checkout; only a worktree has keep`}}},
		{"body step", `  - id: l
    for_each: [a]
    steps:
      - {id: b, run: b, workspace: worktree}
`, []loopDiag{{6, 25, `workspace: step "b" is in the body of loop "l", whose items each have one workspace; give workspace on the loop`}}},
		{"human step", `  - id: h
    human: {message: "ok"}
    workspace: worktree
`, []loopDiag{{5, 5, `workspace: step "h" is a human step, which runs no session`}}},
		{"merge without worktrees", `  - id: l
    for_each: [a]
    merge: {mode: auto}
    steps:
      - {id: b, run: b}
`, []loopDiag{{5, 5, `merge: the items of loop "l" work in the run's workspace; give the loop workspace: worktree for each item to have a branch to merge`}}},
		{"merge on a step", `  - id: a
    run: a
    merge: {mode: auto}
`, []loopDiag{{5, 5, `merge: step "a" has no for_each; only a for_each loop whose items have worktrees merges them`}}},
		{"merge loop back outside the body", `  - id: l
    for_each: [a]
    workspace: worktree
    merge: {loop_back_to: cod, mode: automatic}
    steps:
      - {id: code, run: b}
`, []loopDiag{
			{6, 27, `merge.loop_back_to: unknown step "cod" (did you mean "code"?): a step of the body of l`},
			{6, 38, `unknown merge mode "automatic"`},
		}},
		{"max iterations without loop back", `  - id: l
    for_each: [a]
    workspace: worktree
    merge: {max_iterations: 2}
    steps:
      - {id: code, run: b}
`, []loopDiag{{6, 29, `merge.max_iterations: without merge.loop_back_to a conflict fails the item at once`}}},
		{"loop back with mode none", `  - id: l
    for_each: [a]
    workspace: worktree
    merge: {mode: none, loop_back_to: code}
    steps:
      - {id: code, run: b}
`, []loopDiag{{6, 39, `merge.loop_back_to: with mode none the items are not merged, and no merge conflicts`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDiags(t, "yaml", head+tt.src, tt.want) })
	}
}

func TestWorkspaceRulesHCL(t *testing.T) {
	checkDiags(t, "hcl", `name = "x"
workspace {
  kep = "never"
}
step "a" {
  run       = "a"
  workspace = "worktre"
}
step "b" {
  run = "b"
  workspace {
    mode = "shared"
    base = "main"
  }
}
`, []loopDiag{
		{3, 3, `unknown key "kep" (did you mean "keep"?)`},
		{7, 15, `unknown workspace "worktre" (did you mean "worktree"?)`},
		{13, 12, `workspace.base: a shared workspace is the repository's checkout; only a worktree has base`},
	})
}
