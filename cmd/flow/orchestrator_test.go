package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExpandEnvArgs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"run wf.yaml --env A=1", "run wf.yaml --env A=1"},
		{"run --env A=1 B=2 C= wf.yaml", "run --env A=1 --env B=2 --env C= wf.yaml"},
		{"run --env A=1 --env B=2 x", "run --env A=1 --env B=2 x"},
		{"run --env A=1 b=2 _c=3 9d=4", "run --env A=1 --env b=2 --env _c=3 9d=4"},
		{"run --env A=1 --var x=1", "run --env A=1 --var x=1"},
		{"run --env=A=1 B=2", "run --env=A=1 B=2"},
		{"run --env", "run --env"},
		{"run -- --env A=1 B=2", "run -- --env A=1 B=2"},
		{"run --env A=1 -- B=2", "run --env A=1 -- B=2"},
	}
	for _, tt := range tests {
		if got := strings.Join(expandEnvArgs(strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("expandEnvArgs(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestWorkflowArg(t *testing.T) {
	tests := []struct {
		args       []string
		flag, want string
		err        string
	}{
		{[]string{"w.yaml"}, "", "w.yaml", ""},
		{nil, "w.yaml", "w.yaml", ""},
		{[]string{"w.yaml"}, "w.yaml", "w.yaml", ""},
		{[]string{"a.yaml"}, "b.yaml", "", "given twice"},
		{nil, "", "", "give the workflow file"},
	}
	for _, tt := range tests {
		got, err := workflowArg(tt.args, tt.flag)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("workflowArg(%v, %q): err = %v, want %q", tt.args, tt.flag, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("workflowArg(%v, %q) = %q, %v", tt.args, tt.flag, got, err)
		}
	}
}

func TestFlagHint(t *testing.T) {
	cmd := &cobra.Command{Use: "run"}
	for _, name := range []string{"workflow", "wrapper", "daily-cost-limit", "secret"} {
		cmd.Flags().String(name, "", "")
	}
	_ = cmd.Flags().MarkHidden("secret")
	tests := map[string]string{
		"unknown flag: --wrkflow":           " (did you mean --workflow?)",
		"unknown flag: --daily-cost-limt=3": " (did you mean --daily-cost-limit?)",
		"unknown flag: --secrt":             "",
		"unknown flag: --zzzzzzzzzzz":       "",
		"unknown shorthand flag: 'x'":       "",
	}
	for msg, want := range tests {
		if got := flagHint(cmd, errors.New(msg)); got != want {
			t.Errorf("flagHint(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestCheckAs(t *testing.T) {
	for _, ok := range []string{"", "flow", "orchestrator"} {
		if err := checkAs(ok); err != nil {
			t.Errorf("checkAs(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"yaml", "Flow", "agent_orchestrator"} {
		if err := checkAs(bad); err == nil || !slices.ContainsFunc([]string{"want flow or orchestrator"}, func(s string) bool { return strings.Contains(err.Error(), s) }) {
			t.Errorf("checkAs(%q) = %v", bad, err)
		}
	}
}
