package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/internal/clock"
)

// HostQueue is the task queue that reaches one worker's repository: a
// run's sessions after its first go there, so that they share its
// checkout.
func HostQueue(queue, host, repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return fmt.Sprintf("%s@%s/%s", queue, host, hex.EncodeToString(sum[:4]))
}

// DefaultDrainTimeout is how long a worker asked to stop lets its
// running sessions go on before it hands them back.
const DefaultDrainTimeout = 5 * time.Minute

// ServeOptions say what a worker serves and how it stops.
type ServeOptions struct {
	// Queue is the task queue of flow's workers.
	Queue string
	// Shared says that the workers share the repository: any of them
	// may perform any run's effects.
	Shared bool
	// DrainTimeout is how long, once asked to stop, the worker lets its
	// running sessions go on before it hands them back to their runs
	// (which run them again on another worker); 0 means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Clock times the drain; nil means the real clock.
	Clock clock.Clock
}

// Serve runs a worker of opts.Queue until ctx ends: it runs runs'
// workflow code and, with acts, their activities. Unless shared (the
// workers share one repository), the worker also serves its own host
// queue (HostQueue), where the activities of the runs it opened go; it
// always serves the control queue of its sessions' queue
// (ControlQueue).
//
// When ctx ends the worker drains: it takes no more work, lets the
// sessions that run finish for up to opts.DrainTimeout, then hands the
// rest back (their runs record it and run them again elsewhere), and
// returns once each has said so to the server. It says what it does on
// acts.Log.
func Serve(ctx context.Context, c client.Client, opts ServeOptions, acts *Activities) error {
	queue := opts.Queue
	acts.Queue, acts.Shared = queue, opts.Shared
	if !opts.Shared {
		acts.Queue = HostQueue(queue, acts.Host, acts.Repo)
	}
	drain := opts.DrainTimeout
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real()
	}
	logf := func(format string, args ...any) {
		if acts.Log != nil {
			fmt.Fprintf(acts.Log, "flow worker: "+format+"\n", args...)
		}
	}
	// The SDK ends the activities still running once its own stop
	// timeout passes; the drain hands them back first, and waits for
	// their replies.
	grace := acts.Runner.KillGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	wopts := worker.Options{MaxConcurrentActivityExecutionSize: acts.Slots, WorkerStopTimeout: drain + grace + time.Minute}
	w := worker.New(c, queue, wopts)
	w.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(CheckArtifacts, workflow.RegisterOptions{Name: CheckArtifactsName})
	w.RegisterWorkflowWithOptions(TailWorkflow, workflow.RegisterOptions{Name: TailWorkflowName})
	acts.Register(w)
	sessions := []worker.Worker{w}
	if acts.Queue != queue {
		hw := worker.New(c, acts.Queue, wopts)
		acts.Register(hw)
		sessions = append(sessions, hw)
	}
	// The control queue has no limit of slots: a kill or a tail never
	// waits for a session to end.
	cw := worker.New(c, ControlQueue(acts.Queue), worker.Options{WorkerStopTimeout: time.Minute})
	acts.RegisterControl(cw)
	all := append([]worker.Worker{cw}, sessions...)
	for i, wk := range all {
		if err := wk.Start(); err != nil {
			for _, s := range all[:i] {
				s.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	<-ctx.Done()
	logf("stopping: taking no more work; %d session(s) running may finish within %s (--drain-timeout)", acts.Running(), drain)
	stopped := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, wk := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wk.Stop()
			}()
		}
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-clk.After(drain):
		reason := fmt.Sprintf("worker %s stopped and its sessions did not end within %s (--drain-timeout)", acts.Host, drain)
		acts.mu.Lock()
		acts.drained = reason
		acts.mu.Unlock()
		ids := acts.handBack()
		var names []string
		for _, id := range ids {
			names = append(names, fmt.Sprintf("%s %s", id.RunID, id.Step))
		}
		logf("drain timeout: handing back %d session(s) to their runs, which run them again elsewhere: %s", len(ids), strings.Join(names, ", "))
		<-stopped
	}
	cw.Stop()
	logf("stopped")
	return acts.Close()
}

// DialWaiting connects to the Temporal server opts name, waiting for
// it with backoff while it cannot be reached (a worker started beside
// its server): it tries every 0.5 s at first, doubling up to 30 s, and
// says each failed attempt on log. It returns ctx's error when ctx
// ends first.
func DialWaiting(ctx context.Context, opts client.Options, log io.Writer, clk clock.Clock) (client.Client, error) {
	if clk == nil {
		clk = clock.Real()
	}
	wait := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			if attempt > 1 && log != nil {
				fmt.Fprintf(log, "flow worker: connected to Temporal at %s (attempt %d)\n", opts.HostPort, attempt)
			}
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if log != nil {
			fmt.Fprintf(log, "flow worker: Temporal at %s is not reachable (attempt %d: %v); trying again in %s\n", opts.HostPort, attempt, oneLine(err), wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-clk.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// oneLine keeps an error's message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
