package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
)

// bigWorkflow generates a YAML workflow of n steps, each with a templated
// command and a gate whose expression names the step before it and loops
// back to it.
func bigWorkflow(n int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nvars:\n  target: all\nsteps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    run: make {{ vars.target }} STEP=%d\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "    gate:\n      pass: steps.s%d.exit_code == 0 && exit_code == 0 && !(output contains \"FAIL\")\n      loop_back_to: s%d\n      max_iterations: 3\n", i-1, i-1)
		}
	}
	return []byte(b.String())
}

func BenchmarkLoad5000(b *testing.B) {
	mem := afero.NewMemMapFs()
	if err := afero.WriteFile(mem, "big.yaml", bigWorkflow(5000), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		w, err := config.Load(mem, "big.yaml")
		if err != nil {
			b.Fatal(err)
		}
		if len(w.Steps) != 5000 {
			b.Fatalf("%d steps", len(w.Steps))
		}
	}
}
