package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// TailWorkflowName is the Temporal workflow type that reads a running
// session's output on its worker (ActivityTail) for a follower: flow
// logs --follow. Its history holds one read; the run's holds none.
const TailWorkflowName = "flow.tail"

// TailWorkflowRequest is the input of TailWorkflow: the read, the
// control queue of the session's worker, and how long to wait for that
// worker to take it.
type TailWorkflowRequest struct {
	Queue   string        `json:"queue"`
	Wait    time.Duration `json:"wait"`
	Request TailRequest   `json:"request"`
}

// TailWorkflow runs ActivityTail on the session's worker; it fails when
// no worker of that queue takes it within Wait.
func TailWorkflow(ctx workflow.Context, req TailWorkflowRequest) (TailReply, error) {
	return onWorker[TailReply](ctx, req.Queue, req.Wait, req.Request.Wait+time.Minute, ActivityTail, req.Request)
}
