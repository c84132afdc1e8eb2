package temporal

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// pausedFixture is a run left half done on a dev server by an earlier
// version of the code: the server's database (temporal.db) and the
// repository of the worker that ran it (repo/), with the run's record
// under .agents/runs/paused1/. testdata/temporal/README.md says how it
// was recorded; paused-human.history.json is the same run's history.
const pausedFixture = "../../testdata/temporal/paused-human.tar.gz"

// TestEndToEndPausedRunFinishes: a run recorded on a dev server by an
// earlier version of the code — steps a and b done, the human step
// approve waiting, the run paused — is taken over by a worker of this
// code on a dev server started on a copy of that server's database. The
// same workflow execution goes on: the worker replays its history to
// answer for it, the approval and flow continue reach it through the
// operations layer, and it completes with c and d run once each and a
// and b not run again.
func TestEndToEndPausedRunFinishes(t *testing.T) {
	bin := os.Getenv("TEMPORAL_CLI")
	if bin == "" {
		t.Skip("end-to-end test against a real Temporal server: set TEMPORAL_CLI to a temporal binary " +
			"(GOBIN=DIR go install github.com/temporalio/cli/cmd/temporal@v1.5.1), or run .ci/run")
	}
	dir := t.TempDir()
	if err := untarGz(pausedFixture, dir); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	c := devServerOn(t, bin, filepath.Join(dir, "temporal.db"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The execution the earlier code left open.
	before, err := c.DescribeWorkflowExecution(ctx, "paused1", "")
	if err != nil {
		t.Fatal(err)
	}
	exec := before.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	if s := before.GetWorkflowExecutionInfo().GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the recorded run's execution is %v, want running", s)
	}
	recorded := before.GetWorkflowExecutionInfo().GetHistoryLength()

	// The run's worker recorded it with --shared-repo: a worker of
	// this code with a copy of that repository takes it over.
	fsys := afero.NewOsFs()
	acts := e2eActivities(fsys, repo)
	serveE2E(t, ctx, c, "paused", true, acts)
	eng := &Engine{Client: c, TaskQueue: "paused", FS: fsys, PollEvery: 50 * time.Millisecond}

	// A query: the new worker, whose cache is empty, replays the whole
	// recorded history to answer it, and fails here if its code no
	// longer makes the same decisions.
	st, err := eng.Status(ctx, repo, "paused1")
	if err != nil {
		t.Fatalf("the new worker answers for the recorded run: %v", err)
	}
	for step, want := range map[string]core.Status{"a": core.Completed, "b": core.Completed, "approve": core.WaitingOnHuman, "c": core.Pending, "d": core.Pending} {
		if got := st.State.Steps[keytest.K(step)].Status; got != want {
			t.Errorf("recorded run: step %s is %s, want %s", step, got, want)
		}
	}

	d, err := eng.Decide(ctx, ops.DecideRequest{RunID: "paused1", Step: core.Key("approve"), Approve: true, By: "ann"})
	if err != nil || !d.Approved || d.By != "ann" {
		t.Fatalf("approve: %+v %v", d, err)
	}
	// Paused, the run starts nothing after the approval.
	st, err = eng.Status(ctx, repo, "paused1")
	if err != nil {
		t.Fatal(err)
	}
	if a, c := st.State.Steps[keytest.K("approve")].Status, st.State.Steps[keytest.K("c")].Status; a != core.Completed || c != core.Pending {
		t.Fatalf("approved while paused: approve is %s and c %s, want completed and pending", a, c)
	}
	if _, err := eng.Control(ctx, ops.ControlRequest{RunID: "paused1", State: core.Continuous}); err != nil {
		t.Fatalf("flow continue: %v", err)
	}
	var res Result
	if err := c.GetWorkflow(ctx, "paused1", exec).Get(ctx, &res); err != nil {
		t.Fatalf("the run's end: %v", err)
	}
	if res.Status != core.RunCompleted || res.ExitCode != 0 {
		t.Errorf("result %+v, want completed", res)
	}

	// The same execution, longer than recorded, completed.
	after, err := c.DescribeWorkflowExecution(ctx, "paused1", "")
	if err != nil {
		t.Fatal(err)
	}
	info := after.GetWorkflowExecutionInfo()
	if info.GetExecution().GetRunId() != exec || info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || info.GetHistoryLength() <= recorded {
		t.Errorf("execution %s (%v, %d events), want %s completed, longer than its %d recorded events",
			info.GetExecution().GetRunId(), info.GetStatus(), info.GetHistoryLength(), exec, recorded)
	}
	// Each step's session ran once: a and b on the earlier worker, c
	// and d on this one, in the repository's file they append to.
	b, err := os.ReadFile(filepath.Join(repo, "ran"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("sessions run: %v, want %v", got, want)
	}
	st2, _, err := record.LoadState(fsys, record.RunDir(repo, "paused1"), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st2.Status != core.RunCompleted || st2.Steps[keytest.K("approve")].Human == nil || st2.Steps[keytest.K("approve")].Human.By != "ann" {
		t.Errorf("the worker's record: %+v", st2)
	}
	for _, step := range []string{"a", "b", "c", "d"} {
		if s := st2.Steps[keytest.K(step)]; s.Status != core.Completed || s.Attempts != 1 || s.Sessions != 1 {
			t.Errorf("step %s: %s, %d attempt(s), %d session(s); want completed by one session", step, s.Status, s.Attempts, s.Sessions)
		}
	}
}

// devServerOn starts the dev server bin on the database file db.
func devServerOn(t *testing.T, bin, db string) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin, LogLevel: "error", DBFilename: db,
		ClientOptions: &client.Options{Logger: logger}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatalf("start the dev server %s on %s: %v", bin, db, err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s.Client()
}

// untarGz extracts the gzipped tar file name into dir: its regular
// files and directories, each beneath dir.
func untarGz(name, dir string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("%s: %s is not beneath the directory", name, h.Name)
		}
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFrom(path, tr)
		default:
			err = fmt.Errorf("%s: %s is neither a file nor a directory", name, h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func writeFrom(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
