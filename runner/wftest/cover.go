package wftest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
)

// Coverage is what the tests of a workflow exercised of it.
type Coverage struct {
	Workflow string `json:"workflow"`
	// Items are the things a test can exercise, in workflow order: each
	// step run; each gate's pass and fail (a gate is a step with gate:
	// or loop_back_to); each loop-back edge taken; each when true and
	// false; each human step approved and rejected.
	Items   []Item  `json:"items"`
	Covered int     `json:"covered"`
	Total   int     `json:"total"`
	Percent float64 `json:"percent"`
	// Retries counts the failed attempts that were retried, per step:
	// reported, not counted in Percent.
	Retries map[string]int `json:"retries,omitempty"`
}

// Item is one coverage item and whether a test exercised it.
type Item struct {
	Name    string `json:"name"`
	Covered bool   `json:"covered"`
}

// Missing returns the names of the items no test exercised.
func (c Coverage) Missing() []string {
	var out []string
	for _, it := range c.Items {
		if !it.Covered {
			out = append(out, it.Name)
		}
	}
	return out
}

// Cover computes the coverage of wf by the runs of results.
func Cover(wf *config.Workflow, results []Result) Coverage {
	seen := map[string]bool{}
	retries := map[string]int{}
	for _, r := range results {
		for _, e := range r.Events {
			// An instance covers its body step.
			step := e.Step.Step
			switch e.Type {
			case core.EvStepStarted, core.EvStepWaiting, core.EvLoopItems:
				seen["run "+step] = true
				seen["when "+step+" true"] = true
			case core.EvStepCompleted:
				seen["gate "+step+" pass"] = true
			case core.EvGateFailed:
				seen["gate "+step+" fail"] = true
				var gf core.GateFailure
				if json.Unmarshal(e.Data, &gf) == nil && !gf.Target.IsZero() && !gf.Budget {
					seen["loop "+step+" -> "+gf.Target.Step] = true
				}
			case core.EvStepSkipped:
				var sk core.Skip
				if json.Unmarshal(e.Data, &sk) == nil && strings.HasPrefix(sk.Reason, "when is false") {
					seen["when "+step+" false"] = true
				}
			case core.EvHumanInput:
				var in core.HumanInput
				if json.Unmarshal(e.Data, &in) == nil {
					seen[fmt.Sprintf("human %s %s", step, map[bool]string{true: "approved", false: "rejected"}[in.Approved])] = true
				}
			case core.EvAttemptFailed:
				retries[step]++
			}
		}
	}
	c := Coverage{Workflow: wf.File, Items: []Item{}}
	add := func(name string) {
		c.Items = append(c.Items, Item{Name: name, Covered: seen[name]})
	}
	var steps []*config.Step
	for _, s := range wf.Steps {
		steps = append(steps, s)
		if s.ForEach != nil {
			steps = append(steps, s.ForEach.Body...)
		}
	}
	for _, s := range steps {
		add("run " + s.ID)
		if s.When != nil {
			add("when " + s.ID + " true")
			add("when " + s.ID + " false")
		}
		if s.HasGate() {
			add("gate " + s.ID + " pass")
			add("gate " + s.ID + " fail")
			if t := s.LoopBack(); t != "" {
				add("loop " + s.ID + " -> " + t)
			}
		}
		if s.Kind == config.KindHuman {
			add("human " + s.ID + " approved")
			add("human " + s.ID + " rejected")
		}
	}
	for _, it := range c.Items {
		if it.Covered {
			c.Covered++
		}
	}
	c.Total = len(c.Items)
	c.Percent = 100
	if c.Total > 0 {
		c.Percent = float64(c.Covered) * 100 / float64(c.Total)
	}
	if len(retries) > 0 {
		c.Retries = retries
	}
	return c
}
