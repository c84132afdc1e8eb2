package temporal

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// CheckArtifactsName is the Temporal workflow type that asks a run's
// worker for the missing artifacts of the steps a restart keeps
// (flow resume --start-at-step): a client reaches a worker's checkout
// only through an activity, and an activity only through a workflow.
const CheckArtifactsName = "flow.artifacts"

// CheckRequest is the input of CheckArtifacts: the request, the task
// queue of the run's worker, and how long to wait for that worker to
// take it.
type CheckRequest struct {
	Queue   string           `json:"queue"`
	Wait    time.Duration    `json:"wait"`
	Request ArtifactsRequest `json:"request"`
}

// CheckArtifacts runs ActivityArtifacts on the run's worker; it fails
// when no worker of that queue takes it within Wait (a lost host).
func CheckArtifacts(ctx workflow.Context, req CheckRequest) (ArtifactsReply, error) {
	return onWorker[ArtifactsReply](ctx, req.Queue, req.Wait, time.Minute, ActivityArtifacts, req.Request)
}

// onWorker runs activity with req once on the worker of queue, and
// fails when no worker of that queue takes it within wait (a lost
// host) or when it runs longer than run: the workflows that reach one
// worker for a client (CheckArtifacts, TailWorkflow).
func onWorker[Reply any](ctx workflow.Context, queue string, wait, run time.Duration, activity string, req any) (Reply, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToStartTimeout: wait,
		StartToCloseTimeout:    run,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var reply Reply
	err := workflow.ExecuteActivity(actx, activity, req).Get(ctx, &reply)
	return reply, err
}
