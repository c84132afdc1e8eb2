package ops

import (
	"fmt"
	"path/filepath"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/record"
)

// ConvertRequest asks for a workflow file in flow's own format.
type ConvertRequest struct {
	// Workflow is the path of the file to convert.
	Workflow string
	// To is "yaml" (the default) or "hcl".
	To string
	// Invocation says how the file is read and, for agent_orchestrator's
	// format, how its agents run: the agents become commands running
	// the wrapper or the command template.
	Invocation record.Invocation
	// MaxIterations is agent_orchestrator's --max-iterations (N
	// loop-backs): written as the default budget, N+1 in flow's terms.
	MaxIterations int
}

// Convert prints a workflow in flow's own format (docs/agent-orchestrator.md, "Its keys"): a file in
// agent_orchestrator's format with comments saying what each key
// became, or a flow file in the other of YAML and HCL. The output loads
// to the same workflow. Paths in it (prompt files, prompt paths, the
// wrapper) are as in the original, relative to its directory and to
// the repository: the converted file belongs beside it.
func (s *Service) Convert(req ConvertRequest) ([]byte, error) {
	to := req.To
	switch to {
	case "":
		to = "yaml"
	case "yaml", "hcl":
	default:
		return nil, Usage("--to %s: want yaml or hcl", req.To)
	}
	wf, err := s.loadInvoked(req.Workflow, "", req.Invocation)
	if err != nil {
		return nil, err
	}
	notes := map[string][]string{}
	for id, n := range wf.Notes {
		notes[id] = n
	}
	header := []string{fmt.Sprintf("Converted by flow convert from %s.", filepath.Base(req.Workflow))}
	if wf.Dialect == config.DialectOrchestrator {
		header = append(header, "It was written in agent_orchestrator's format; the notes say what each key became.",
			"Prompt paths are found when a step starts, as they were: keep this file beside the original.")
		if req.MaxIterations > 0 {
			wf.Defaults.MaxIterations = &config.Limit{N: req.MaxIterations + 1, Pos: wf.Pos}
			notes[""] = append(notes[""], fmt.Sprintf("max_iterations %d: --max-iterations %d, agent_orchestrator's count of loop-backs", req.MaxIterations+1, req.MaxIterations))
		}
		for _, d := range wf.Warnings {
			notes[""] = append(notes[""], fmt.Sprintf("line %d: %s", d.Pos.Line, d.Message))
		}
	}
	out, err := config.Emit(wf, to, config.EmitOptions{Header: header, StepNotes: notes})
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", req.Workflow, err)
	}
	return out, nil
}
