package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flow-run/flow/runner/ops"
)

// dryRun prints the plan of a run request without running it: as JSON
// with asJSON, else as an indented list by dependency level. Render
// errors are printed on stderr after the plan, and exit 1.
func (a *app) dryRun(req ops.RunRequest, asJSON bool) error {
	d, err := a.svc.DryRun(req)
	if err != nil && len(d.Errors) == 0 {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(a.stdio.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		printDryRun(a.stdio.Out, d)
	}
	if len(d.Errors) > 0 {
		for _, e := range d.Errors {
			fmt.Fprintf(a.stdio.Err, "flow: %s\n", e)
		}
		return exitQuietly(1)
	}
	return nil
}

// printDryRun writes a dry run's plan for people.
func printDryRun(w io.Writer, d ops.DryRun) {
	fmt.Fprintf(w, "dry run of %s (%s): %d steps, at most %d at a time; nothing is started\n",
		d.Workflow, d.File, len(d.Steps), d.MaxParallel)
	if b := d.Budget; b != nil {
		var parts []string
		if b.CostUSD > 0 {
			parts = append(parts, fmt.Sprintf("$%g", b.CostUSD))
		}
		if b.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
		}
		if b.Sessions > 0 {
			parts = append(parts, fmt.Sprintf("%d sessions", b.Sessions))
		}
		fmt.Fprintf(w, "budget: %s (the run stops before its next session once one is reached)\n", strings.Join(parts, ", "))
	}
	if len(d.Vars) > 0 {
		keys := make([]string, 0, len(d.Vars))
		for k := range d.Vars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintln(w, "vars:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %s\n", k, d.Vars[k])
		}
	}
	byID := make(map[string][]int, len(d.Steps))
	for i, s := range d.Steps {
		byID[s.ID] = append(byID[s.ID], i)
	}
	for g, ids := range d.Groups {
		together := ""
		if len(ids) > 1 {
			together = " (may run together)"
		}
		fmt.Fprintf(w, "group %d%s\n", g+1, together)
		for _, id := range ids {
			for _, i := range byID[id] {
				printDryRunStep(w, d.Steps[i], "  ")
			}
		}
	}
}

// printDryRunStep writes one step, its fields one per line.
func printDryRunStep(w io.Writer, s ops.DryRunStep, indent string) {
	head := indent + s.ID + " (" + s.Kind
	if s.Agent != "" {
		head += " " + s.Agent
	}
	head += ")"
	if len(s.Needs) > 0 {
		head += " needs " + strings.Join(s.Needs, ", ")
	}
	fmt.Fprintln(w, head)
	field := func(name, val string) {
		if val == "" {
			return
		}
		lines := strings.Split(strings.TrimRight(val, "\n"), "\n")
		fmt.Fprintf(w, "%s  %-11s%s\n", indent, name+":", lines[0])
		for _, l := range lines[1:] {
			if l == "" {
				fmt.Fprintln(w)
				continue
			}
			fmt.Fprintf(w, "%s%13s%s\n", indent, "", l)
		}
	}
	field("when", s.When)
	budgets := fmt.Sprintf("max_attempts %d, max_iterations %d", s.MaxAttempts, s.MaxIterations)
	if s.ForEach != nil {
		// A loop runs no session: only loop-backs into it count.
		budgets = fmt.Sprintf("max_iterations %d", s.MaxIterations)
	}
	if s.Timeout != "" {
		budgets += ", timeout " + s.Timeout
	}
	if s.IdleTimeout != "" {
		budgets += ", idle " + s.IdleTimeout
	}
	field("budgets", budgets)
	field("command", s.Command)
	switch {
	case s.PromptPath != "":
		field("prompt", s.PromptPath+" (a file found when the step starts)")
	case s.PromptFile != "":
		field("prompt", "("+s.PromptFile+")\n"+s.Prompt)
	default:
		field("prompt", s.Prompt)
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field("env", k+"="+s.Env[k])
	}
	field("artifacts", strings.Join(s.Artifacts, ", "))
	if g := s.Gate; g != nil {
		field("gate pass", g.Pass)
		field("gate fail", g.Fail)
		field("gate check", g.Check)
		if g.LoopBackTo != "" {
			field("loop-back", "to "+g.LoopBackTo+" when the gate fails")
		}
	}
	if h := s.Human; h != nil {
		field("message", h.Message)
		field("timeout", h.Timeout)
		field("auto", h.AutoApprove)
		field("inputs", strings.Join(h.Inputs, ", "))
	}
	if l := s.ForEach; l != nil {
		over := l.Items
		if over == "" {
			b, _ := json.Marshal(l.List)
			over = string(b)
		}
		how := fmt.Sprintf("%s as %s, %s as %s", over, l.As, "its position", l.IndexAs)
		if l.Key != "" {
			how += ", keyed by " + l.Key
		}
		field("for each", how)
		par := fmt.Sprintf("%d at a time", l.MaxParallel)
		if l.ContinueOnError {
			par += ", every item runs even when one fails"
		}
		field("items", par)
		for _, b := range l.Body {
			printDryRunStep(w, b, indent+"    ")
		}
	}
}
