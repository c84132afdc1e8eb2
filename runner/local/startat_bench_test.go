package local

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// BenchmarkStartAtSkipped is what a new run started at its second step
// of a chain of N steps computes before it starts: which steps it
// skips. It took time in the square of N (270 ms at 20,000 steps, 2.5
// ms now):
//
//	go test -run '^$' -bench StartAtSkipped -benchmem ./runner
func BenchmarkStartAtSkipped(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var src strings.Builder
			src.WriteString("name: chain\nsteps:\n")
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&src, "  - id: s%d\n    run: \"true\"\n", i)
			}
			wf, err := config.Parse(afero.NewMemMapFs(), "/wf.yaml", "yaml", []byte(src.String()))
			if err != nil {
				b.Fatal(err)
			}
			steps := keytest.Keys(wf.TopSteps()...)
			for b.Loop() {
				if skipped := core.StartAtSkipped(wf, "s2", steps); len(skipped) != 1 {
					b.Fatalf("skipped %d steps, want 1", len(skipped))
				}
			}
		})
	}
}

// TestStartAtSkipped: a run started at a step skips what is neither the
// step nor downstream of it, in the workflow's order.
func TestStartAtSkipped(t *testing.T) {
	src := "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x, needs: []}\n  - {id: c, run: x, needs: [a]}\n  - {id: d, run: x, needs: [b]}\n"
	wf, err := config.Parse(afero.NewMemMapFs(), "/wf.yaml", "yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range map[string]string{"a": "[b d]", "b": "[a c]", "c": "[a b d]", "d": "[a b c]"} {
		if got := fmt.Sprint(core.StartAtSkipped(wf, step, keytest.Keys(wf.TopSteps()...))); got != want {
			t.Errorf("start at %s skips %s, want %s", step, got, want)
		}
	}
}
