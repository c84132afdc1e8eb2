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
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              req.Queue,
		ScheduleToStartTimeout: req.Wait,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var reply ArtifactsReply
	err := workflow.ExecuteActivity(actx, ActivityArtifacts, req.Request).Get(ctx, &reply)
	return reply, err
}
