package ops

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/notify"
	"github.com/flow-run/flow/runner/record"
)

// fakeNotifier records what it is told, and whether the command it
// was given would be started through a sandbox (Config.Wrap).
type fakeNotifier struct {
	mu      sync.Mutex
	told    []notify.Notification
	wrapped []bool
}

func (f *fakeNotifier) Send(_ context.Context, n notify.Notification, cfg notify.Config) []notify.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.told = append(f.told, n)
	f.wrapped = append(f.wrapped, cfg.Wrap != nil)
	return []notify.Result{{Via: "command"}}
}

// makeDead appends to the record of the run in dir what a runner that
// took the run and died leaves: the record says running, and no lock is
// held.
func makeDead(t *testing.T, s *Service, dir string) {
	t.Helper()
	events, err := record.ReadEvents(s.FS, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	seq := events[len(events)-1].Seq
	line := ""
	for _, e := range []string{
		`"type":"human_input","step":"ok","data":{"approved":true}`,
		`"type":"step_completed","step":"ok","data":{"attempt":1}`,
		`"type":"runner_started","data":{"pid":99,"host":"test"}`,
		`"type":"step_started","step":"b","data":{"attempt":1,"iteration":0}`,
	} {
		seq++
		line += fmt.Sprintf(`{"seq":%d,"at":"2025-01-15T14:31:00.000000Z",%s}`+"\n", seq, e)
	}
	f, err := s.FS.OpenFile(filepath.Join(dir, record.EventsFile), 1|64|1024, 0o644) // O_WRONLY|O_CREATE|O_APPEND
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

// TestDeadRunNotified: a reader that finds a run dead (its runner gone
// before it finished) tells the workflow's notifiers once; later reads
// of the same death tell nobody.
func TestDeadRunNotified(t *testing.T) {
	s, _ := newService(t, `name: w
notify: {on: [dead], command: "cat > told.json"}
steps:
  - {id: a, run: x}
  - {id: ok, human: {message: go}}
  - {id: b, run: x}
`, nil)
	res := run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	if res.ExitCode != 3 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	fake := &fakeNotifier{}
	s.DeadNotifier = fake
	s.Environ = append(s.Environ, "FLOW_PUBLIC_URL=https://flow.example.com")
	if _, err := s.Status(repo, "r1"); err != nil || len(fake.told) != 0 {
		t.Fatalf("a waiting run was told of: %v %v", fake.told, err)
	}
	dir := record.RunDir(repo, "r1")
	makeDead(t, s, dir)
	// Reading a run never runs anything: without NotifyDead nobody is
	// told.
	if st, err := s.Status(repo, "r1"); err != nil || st.Liveness.State != record.LiveDead || len(fake.told) != 0 {
		t.Fatalf("liveness %s (%v); told %v", st.Liveness.State, err, fake.told)
	}
	s.NotifyDead = true
	for i := 0; i < 3; i++ {
		st, err := s.Status(repo, "r1")
		if err != nil || st.Liveness.State != record.LiveDead {
			t.Fatalf("liveness %s (%v)", st.Liveness.State, err)
		}
	}
	if len(fake.told) != 1 {
		t.Fatalf("told %d times, want once: %+v", len(fake.told), fake.told)
	}
	n := fake.told[0]
	if n.Event != "dead" || n.RunID != "r1" || n.URL != "https://flow.example.com/r/r1" || !strings.Contains(n.Reason, "2025-01-15T14:31:00Z") {
		t.Errorf("notification %+v", n)
	}
	marks, _ := afero.ReadDir(s.FS, filepath.Join(dir, "notified"))
	if len(marks) != 1 {
		t.Errorf("markers %v", marks)
	} else if b, _ := afero.ReadFile(s.FS, filepath.Join(dir, "notified", marks[0].Name())); string(b) != "command: told\n" {
		t.Errorf("marker says %q", b)
	}
}

// TestDeadNoticeSandbox: a dead notice's command runs under the run's
// sandbox mode: the workflow's, unless the run was given --sandbox,
// which wins as it does for the run's own sessions and notices.
func TestDeadNoticeSandbox(t *testing.T) {
	for _, tc := range []struct {
		name, mode, flag string
		wrapped          bool
	}{
		{"workflow required", "required", "", true},
		{"workflow required, run --sandbox off", "required", "off", false},
		{"workflow off", "off", "", false},
		{"workflow off, run --sandbox required", "off", "required", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newService(t, "name: w\ndefaults: {sandbox: "+tc.mode+"}\nnotify: {on: [dead], command: \"cat > told.json\"}\nsteps:\n  - {id: ok, human: {message: go}}\n  - {id: b, run: x}\n", nil)
			res := run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true, Invocation: record.Invocation{Sandbox: tc.flag}})
			if res.ExitCode != 3 {
				t.Fatalf("exit %d", res.ExitCode)
			}
			makeDead(t, s, record.RunDir(repo, "r1"))
			fake := &fakeNotifier{}
			s.DeadNotifier, s.NotifyDead = fake, true
			if _, err := s.Status(repo, "r1"); err != nil {
				t.Fatal(err)
			}
			if len(fake.wrapped) != 1 || fake.wrapped[0] != tc.wrapped {
				t.Errorf("notices %v wrapped %v, want one wrapped %v", fake.told, fake.wrapped, tc.wrapped)
			}
		})
	}
}
