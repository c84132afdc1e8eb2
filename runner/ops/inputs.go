package ops

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// ResolveInputs checks what an approval of step gives against the
// inputs the step declares, and fills in the rest: a name the step does
// not declare is an ExitUsage error with a did-you-mean, a required
// input left out is an ExitUsage error naming it, and every other
// declared input left out takes its default ("" when it has none), so
// that later steps always find a value at steps.<id>.input.<name>. A
// step that declares no inputs takes whatever it is given.
func ResolveInputs(step string, declared []config.Input, given map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(given)+len(declared))
	for k, v := range given {
		out[k] = v
	}
	if len(declared) == 0 {
		return out, nil
	}
	names := make([]string, len(declared))
	for i, in := range declared {
		names[i] = in.Name
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(names, k) {
			continue
		}
		msg := fmt.Sprintf("--input %s: step %s has no input %q", k, step, k)
		if c, ok := suggest.Closest(k, names); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", c)
		}
		return nil, Usage("%s; its inputs: %s", msg, strings.Join(names, ", "))
	}
	var missing []string
	for _, in := range declared {
		if _, ok := given[in.Name]; ok {
			continue
		}
		if in.Required {
			missing = append(missing, in.Name)
			continue
		}
		out[in.Name] = in.Default
	}
	if len(missing) > 0 {
		var try strings.Builder
		for _, m := range missing {
			fmt.Fprintf(&try, " --input %s=...", m)
		}
		what := "input " + missing[0]
		if len(missing) > 1 {
			what = "inputs " + strings.Join(missing, ", ")
		}
		return nil, Usage("step %s needs the %s to be approved\ntry: flow approve RUN_ID %s%s", step, what, core.ShellArg(step), try.String())
	}
	return out, nil
}

// stepInputs returns the inputs a human step of a run declares, from
// the workflow the run's runner loaded (workflow.json in the run
// directory) or, when that cannot be read, from the run's workflow
// file. A step of neither declares none; an instance of a loop's body
// declares its body step's inputs.
func (s *Service) stepInputs(repo string, ref record.RunRef, k core.StepKey) []config.Input {
	step := k.Step
	b, err := confine.ReadFile(s.FS, filepath.Join(ref.Dir, record.LoadedWorkflowFile), maxLoadedWorkflow, ref.Dir)
	if err == nil {
		type specStep struct {
			ID    string `json:"id"`
			Human *struct {
				Inputs []config.Input `json:"inputs"`
			} `json:"human"`
			ForEach *struct {
				Steps []specStep `json:"steps"`
			} `json:"for_each"`
		}
		var doc struct {
			Workflow struct {
				Steps []specStep `json:"steps"`
			} `json:"workflow"`
		}
		if json.Unmarshal(b, &doc) == nil {
			for _, st := range doc.Workflow.Steps {
				body := []specStep{st}
				if st.ForEach != nil {
					body = append(body, st.ForEach.Steps...)
				}
				for _, b := range body {
					if b.ID == step && b.Human != nil {
						return b.Human.Inputs
					}
				}
			}
			return nil
		}
	}
	path, err := LocateWorkflow(s.FS, ref.State, repo)
	if err != nil {
		return nil
	}
	wf, err := config.Load(s.FS, path)
	if err != nil {
		return nil
	}
	return humanInputs(wf, step)
}

// humanInputs returns the inputs step (a step's id, or a body step's
// for its instances) of wf declares.
func humanInputs(wf *config.Workflow, step string) []config.Input {
	if wf == nil {
		return nil
	}
	if st := wf.Step(step); st != nil && st.Human != nil {
		return st.Human.Inputs
	}
	return nil
}

// maxLoadedWorkflow bounds the read of a run's workflow.json: the spec
// of a workflow no larger than config.MaxWorkflowSize.
const maxLoadedWorkflow = 4 * config.MaxWorkflowSize

// NewQuestion returns the question that asks a person to decide step
// (a step or an instance's key) of run runID of workflow wf, whose
// rendered human.message is message: what Attach.Ask is given.
func NewQuestion(wf *config.Workflow, runID string, step core.StepKey, message string) Question {
	return Question{RunID: runID, Step: step, Message: message, Inputs: humanInputs(wf, step.Step)}
}
