package temporal

import (
	"context"
	"errors"
	"testing"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// TestEngineRefusesWhatItCannotDo: operations the Temporal engine
// cannot do are refused before it talks to a server, as ErrUnsupported
// with exit 2.
func TestEngineRefusesWhatItCannotDo(t *testing.T) {
	e := &Engine{}
	ctx := context.Background()
	for name, err := range map[string]error{
		"restart --by": func() error { _, err := e.Restart(ctx, ops.RestartRequest{RunID: "r", By: "bob"}); return err }(),
		"logs --all":   e.Logs(ctx, ops.LogsRequest{RunID: "r", Step: core.Key("a"), All: true}, nil, nil),
	} {
		if !errors.Is(err, ops.ErrUnsupported) || ops.CodeOf(err) != ops.ExitUsage {
			t.Errorf("%s: %v (exit %d), want ErrUnsupported with exit 2", name, err, ops.CodeOf(err))
		}
	}
}
