package wftest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/wftest"
)

const storiesWorkflow = `name: stories
workspace: worktree
steps:
  - id: stories
    for_each: [a, b, c]
    key: item
    max_parallel: 3
    workspace: worktree
    merge: {loop_back_to: code, max_iterations: 3}
    steps:
      - id: code
        run: "code {{ item }}"
  - id: ship
    run: ship
`

// TestScriptedMerges: merges: scripts the outcomes of items' merges, so
// that the conflict path of a workflow is tested without git.
func TestScriptedMerges(t *testing.T) {
	tests := []struct {
		name, src string
		failures  []string
	}{
		{"a conflict loops back, then merges", `
  - name: t
    merges:
      stories[b]: [{status: conflict, files: [app.go]}, {status: merged}]
    expect:
      exit_code: 0
      path: [stories, "stories[a].code", "stories[b].code", "stories[c].code", "stories[b].code", ship]
      steps:
        stories[b].code: {iteration: 1}
        stories[c].code: {iteration: 0}
`, nil},
		{"the feedback names the conflict", `
  - name: t
    merges:
      stories[a]: {status: conflict, files: [app.go]}
    expect:
      exit_code: 5
      steps:
        stories[a].code: {iteration: 2}
        stories: {status: FAILED, last_error: "1 of 3 items failed: a"}
`, nil},
		{"a checkout that refuses, then takes it", `
  - name: t
    merges:
      stories[a]: [{status: waiting, reason: "your local changes to app.go"}, {status: merged}]
    expect: {exit_code: 0, status: completed}
`, nil},
		{"git fails", `
  - name: t
    merges:
      stories[c]: {status: failed, reason: disk full}
    expect: {exit_code: 1, steps: {stories: {last_error: "c"}}}
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(storiesWorkflow), 0o644)
			_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte("workflow: wf.yaml\ntests:\n"+tt.src), 0o644)
			tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			res := wftest.Run(context.Background(), tf, wftest.Options{})
			if len(res) != 1 {
				t.Fatalf("%d results", len(res))
			}
			if !res[0].Passed {
				t.Fatalf("failures:\n%s", strings.Join(res[0].Failures, "\n"))
			}
		})
	}
}

func TestScriptedMergesRefs(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(storiesWorkflow), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte(`workflow: wf.yaml
tests:
  - name: t
    merges:
      storis[a]: {status: merged}
      ship: {status: merged}
      stories[b]: {status: conflicted}
`), 0o644)
	_, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`unknown loop "storis" (did you mean "stories"?)`, `merges: "ship" is not an item of a loop (loop[key])`, `unknown merge outcome "conflicted" (did you mean "conflict"?)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
