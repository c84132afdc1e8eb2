package record

import (
	"testing"

	"github.com/flow-run/flow/runner/core"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// TestReadDecisionAnyFile: a step whose human takes any file reads
// whatever a person wrote in its manual-input file as a decision; other
// steps read only flow's decision files.
func TestReadDecisionAnyFile(t *testing.T) {
	const path = "/run/manual_inputs/r__s.json"
	tests := []struct {
		name, content string
		want          *core.HumanInput
		// strict is what ReadManualInput makes of it: "" for the same
		// as want, "error" for an error.
		strict string
	}{
		{"no decision written", "", nil, ""},
		{"still being written", `{"approved": tr`, nil, ""},
		{"flow's own rejection", `{"approved": false, "reason": "no", "by": "bob"}`, &core.HumanInput{Approved: false, Reason: "no", By: "bob"}, ""},
		{"an object without approved", `{"summary": "looks fine"}`,
			&core.HumanInput{Approved: true, Input: map[string]any{"summary": "looks fine"}, By: "manual input file"}, "error"},
		{"approved not a boolean", `{"approved": "yes"}`,
			&core.HumanInput{Approved: true, Input: map[string]any{"approved": "yes"}, By: "manual input file"}, "error"},
		{"plain text", "LGTM, ship it\n",
			&core.HumanInput{Approved: true, Input: map[string]any{"content": "LGTM, ship it"}, By: "manual input file"}, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			if tt.content != "" {
				if err := afero.WriteFile(fsys, path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadDecision(fsys, path, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("any file (-want +got):\n%s", diff)
			}
			strict, err := ReadDecision(fsys, path, false)
			switch {
			case tt.strict == "error" && err == nil:
				t.Errorf("without AnyFile: got %+v, want an error", strict)
			case tt.strict == "" && err != nil:
				t.Errorf("without AnyFile: %v", err)
			case tt.strict == "":
				if diff := cmp.Diff(tt.want, strict); diff != "" {
					t.Errorf("without AnyFile (-want +got):\n%s", diff)
				}
			}
		})
	}
}
