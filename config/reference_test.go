package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// TestReferenceStepKinds checks that the steps the step table says a
// key belongs on are the steps build accepts it on: a key of a for_each
// loop is refused on another step, a key of a step with a session is
// refused on a loop, and any other key is taken by both.
func TestReferenceStepKinds(t *testing.T) {
	samples := map[string]string{
		"description": "x", "feedback": "none", "run": "x", "prompt": "hi", "prompt_file": "p.md",
		"prompt_path": "p.md", "agent": "a", "model": "m", "metadata": "{k: 1}", "external_gates": "[ci]",
		"human": "{message: ok}", "needs": "[a0]", "when": "true", "loop_back_to": "a0",
		"max_attempts": "2", "max_iterations": "2", "retry": "{backoff: 1s}", "retry_if": "true",
		"timeout": "1m", "idle_timeout": "1m", "sandbox": "off", "artifacts": "[x]", "env": "{A: b}",
		"as": "it", "index_as": "i", "key": "string(index)", "max_parallel": "2", "max_items": "5",
		"continue_on_error": "true", "budget": "{sessions: 3}", "workspace": "shared",
		"steps": "[{id: b2, run: x}]", "merge": "{mode: none}",
	}
	load := func(src string) error {
		fs := afero.NewMemMapFs()
		_ = afero.WriteFile(fs, "/r/p.md", []byte("hi"), 0o644)
		_, err := Parse(fs, "/r/wf.yaml", "yaml", []byte(src))
		return err
	}
	const head = "name: w\nagents: {a: {run: x}}\ndefaults: {agent: a}\nsteps:\n  - id: a0\n    run: x\n"
	// Build does not refuse these on a loop yet: the loop ignores them.
	takenByLoop := map[string]bool{"prompt_path": true, "model": true}
	for _, k := range stepTable.keyDocs() {
		switch k.name {
		case "id", "for_each", "gate":
			continue // what makes the step; a loop's gate is a pair review's
		}
		v, ok := samples[k.name]
		if !ok {
			t.Errorf("no sample value of %s", k.name)
			continue
		}
		onLoop := head + "  - id: l\n    for_each: [1, 2]\n    " + k.name + ": " + v + "\n"
		if k.name != "steps" {
			onLoop += "    steps:\n      - {id: b, run: x}\n"
		}
		onPlain := head + "  - id: s\n    " + k.name + ": " + v + "\n"
		switch k.name {
		case "run", "prompt", "prompt_file", "prompt_path", "human":
		case "agent", "model", "feedback":
			onPlain += "    prompt: hi\n"
		default:
			onPlain += "    run: x\n"
		}
		refused := func(err error) bool {
			var ds Diagnostics
			return errors.As(err, &ds) && strings.Contains(err.Error(), k.name)
		}
		switch k.on {
		case loopStep:
			if err := load(onPlain); !refused(err) {
				t.Errorf("%s is a key of a for_each loop, but a plain step takes it: %v", k.name, err)
			}
			if k.name != "merge" {
				if err := load(onLoop); err != nil {
					t.Errorf("%s is a key of a for_each loop, which refuses it: %v", k.name, err)
				}
			}
		case sessionStep:
			if err := load(onLoop); !refused(err) && !takenByLoop[k.name] {
				t.Errorf("%s is not a key of a for_each loop, but one takes it: %v", k.name, err)
			}
			if err := load(onPlain); err != nil {
				t.Errorf("%s: a plain step refuses it: %v", k.name, err)
			}
		default:
			for _, src := range []string{onLoop, onPlain} {
				if err := load(src); err != nil {
					t.Errorf("%s is a key of any step, but:\n%s\n%v", k.name, src, err)
				}
			}
		}
	}
}
