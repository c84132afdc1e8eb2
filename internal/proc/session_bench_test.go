package proc

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkSessionTrue measures a whole session of "true" started and
// waited for through OS, next to the same command started and waited
// for with os/exec alone: the difference is what a session costs
// beyond the process itself.
func BenchmarkSessionTrue(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		st := OS()
		for b.Loop() {
			s, err := st.Start(context.Background(), Spec{Command: "true"})
			if err != nil {
				b.Fatal(err)
			}
			if res := s.Wait(); res.ExitCode != 0 || res.Err != nil {
				b.Fatalf("result %+v", res)
			}
		}
	})
}
