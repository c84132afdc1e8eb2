package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live, headroom uint64
		floor          int
		want           int
	}{
		{live: 0, headroom: 8 * mib, floor: 25, want: 100},
		{live: 2 * mib, headroom: 8 * mib, floor: 25, want: 100},   // small heaps: Go's default
		{live: 8 * mib, headroom: 8 * mib, floor: 25, want: 100},   // headroom equals the default's
		{live: 16 * mib, headroom: 8 * mib, floor: 25, want: 50},   // half
		{live: 27 * mib, headroom: 8 * mib, floor: 25, want: 29},   // 8/27
		{live: 64 * mib, headroom: 8 * mib, floor: 25, want: 25},   // at the floor
		{live: 1 << 40, headroom: 8 * mib, floor: 0, want: 1},      // a floor below 1 is 1
		{live: 16 * mib, headroom: 8 * mib, floor: 400, want: 100}, // a floor above the default is the default
	} {
		if got := Percent(tt.live, tt.headroom, tt.floor); got != tt.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tt.live, tt.headroom, tt.floor, got, tt.want)
		}
	}
}

// TestPacerFollowsTheLiveHeap holds a large live heap and checks that
// the collections that follow lower the percentage to the headroom's
// share of it, and that Stop restores the percentage from before.
func TestPacerFollowsTheLiveHeap(t *testing.T) {
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)

	const headroom = 1 << 20
	p := Start(headroom, 2)
	live := make([]*[1 << 16]byte, 512) // 32 MiB in 64 KiB objects
	for i := range live {
		live[i] = new([1 << 16]byte)
	}
	// The live heap is at least 32 MiB, so the percentage is at most
	// 1 MiB / 32 MiB = 3%, and at least the floor.
	deadline := time.Now().Add(10 * time.Second)
	for p.Last() > 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := p.Last(); got < 2 || got > 3 {
		t.Fatalf("percentage with 32 MiB live and 1 MiB of headroom = %d, want 2 or 3", got)
	}
	runtime.KeepAlive(live)
	p.Stop()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("percentage after Stop = %d, want the 77 from before Start", got)
	}
	// Collections after Stop change nothing.
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("percentage after Stop and two collections = %d, want 77", got)
	}
}

func TestTaper(t *testing.T) {
	const mib = 1 << 20
	p := &Pacer{headroom: 4 * mib, floor: 10}
	if got := p.headroomFor(64 * mib); got != 4*mib {
		t.Errorf("untapered: %d", got)
	}
	p.Taper(12*mib, 2*mib)
	for _, tt := range []struct{ live, want uint64 }{{0, 4 * mib}, {11 * mib, 4 * mib}, {12 * mib, 2 * mib}, {40 * mib, 2 * mib}} {
		if got := p.headroomFor(tt.live); got != tt.want {
			t.Errorf("live %d: headroom %d, want %d", tt.live, got, tt.want)
		}
	}
	// 2 MiB over 20 MiB is 10%, the floor; over 40 MiB it is less.
	if got := Percent(40*mib, p.headroomFor(40*mib), p.floor); got != 10 {
		t.Errorf("percent at 40 MiB: %d", got)
	}
}
