package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// HostQueue is the task queue that reaches one worker's repository: a
// run's sessions after its first go there, so that they share its
// checkout.
func HostQueue(queue, host, repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return fmt.Sprintf("%s@%s/%s", queue, host, hex.EncodeToString(sum[:4]))
}

// Serve runs a worker of queue until ctx ends: it runs runs' workflow
// code and, with acts, their activities. Unless shared (the workers
// share one repository), the worker also serves its own host queue
// (HostQueue), where the activities of the runs it opened go.
func Serve(ctx context.Context, c client.Client, queue string, shared bool, acts *Activities) error {
	acts.Queue, acts.Shared = queue, shared
	if !shared {
		acts.Queue = HostQueue(queue, acts.Host, acts.Repo)
	}
	opts := worker.Options{MaxConcurrentActivityExecutionSize: acts.Slots}
	w := worker.New(c, queue, opts)
	w.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(CheckArtifacts, workflow.RegisterOptions{Name: CheckArtifactsName})
	acts.Register(w)
	workers := []worker.Worker{w}
	if acts.Queue != queue {
		hw := worker.New(c, acts.Queue, opts)
		acts.Register(hw)
		workers = append(workers, hw)
	}
	for i, wk := range workers {
		if err := wk.Start(); err != nil {
			for _, s := range workers[:i] {
				s.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	<-ctx.Done()
	for _, wk := range workers {
		wk.Stop()
	}
	return acts.Close()
}
