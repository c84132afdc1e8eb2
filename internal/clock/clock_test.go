package clock

import (
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFakeAfter(t *testing.T) {
	tests := []struct {
		name    string
		after   time.Duration
		advance []time.Duration
		want    bool
	}{
		{"not yet", time.Second, []time.Duration{999 * time.Millisecond}, false},
		{"exactly at deadline", time.Second, []time.Duration{time.Second}, true},
		{"past deadline in steps", time.Second, []time.Duration{600 * time.Millisecond, 600 * time.Millisecond}, true},
		{"zero fires at once", 0, nil, true},
		{"negative fires at once", -time.Second, nil, true},
		{"negative advance ignored", time.Second, []time.Duration{-time.Hour}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake(epoch)
			ch := f.After(tt.after)
			for _, d := range tt.advance {
				f.Advance(d)
			}
			if got := fired(ch); got != tt.want {
				t.Errorf("fired = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFakeNowAndWaiters(t *testing.T) {
	f := NewFake(epoch)
	if !f.Now().Equal(epoch) {
		t.Fatalf("Now = %v, want %v", f.Now(), epoch)
	}
	a := f.After(2 * time.Second)
	b := f.After(time.Second)
	if got := f.Waiters(); got != 2 {
		t.Fatalf("Waiters = %d, want 2", got)
	}
	f.Advance(time.Second)
	if fired(a) || !fired(b) {
		t.Fatal("only the 1s timer should have fired")
	}
	if got := f.Waiters(); got != 1 {
		t.Fatalf("Waiters = %d, want 1", got)
	}
	f.Set(epoch) // backwards: ignored
	if want := epoch.Add(time.Second); !f.Now().Equal(want) {
		t.Fatalf("Now = %v, want %v", f.Now(), want)
	}
	f.Set(epoch.Add(5 * time.Second))
	if !fired(a) || f.Waiters() != 0 {
		t.Fatal("Set past the deadline should fire the 2s timer")
	}
}

func TestFakeConcurrent(t *testing.T) {
	f := NewFake(epoch)
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-f.After(time.Minute)
		}()
	}
	if !f.BlockUntil(n, 5*time.Second) {
		t.Fatalf("only %d of %d waiters registered", f.Waiters(), n)
	}
	f.Advance(time.Minute)
	wg.Wait()
}

func TestReal(t *testing.T) {
	c := Real()
	before := time.Now()
	if c.Now().Before(before) {
		t.Fatal("Real().Now() went backwards")
	}
	select {
	case <-c.After(time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("Real().After did not fire")
	}
}
