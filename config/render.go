package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Graph rendering: needs edges are solid; loop-back edges are dashed and
// labelled with what sends the work back and its iteration budget; human
// steps have their own shape; a gated step shows its gate and a
// conditional step its when.

// Mermaid writes the workflow as a Mermaid flowchart.
func (w *Workflow) Mermaid(out io.Writer) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "---\ntitle: %s\n---\nflowchart TD\n", w.Name)
	node := func(i int) string { return "s" + strconv.Itoa(i) }
	for i, s := range w.Steps {
		label := mermaidText(strings.Join(w.nodeLines(s), "\n"))
		label = strings.ReplaceAll(label, "\n", "<br/>")
		switch s.Kind {
		case KindHuman:
			fmt.Fprintf(bw, "  %s{{\"%s\"}}\n", node(i), label)
		case KindAgent:
			fmt.Fprintf(bw, "  %s([\"%s\"])\n", node(i), label)
		default:
			fmt.Fprintf(bw, "  %s[\"%s\"]\n", node(i), label)
		}
	}
	for i, s := range w.Steps {
		for _, n := range s.Needs {
			if j := w.stepIndex(n); j >= 0 {
				fmt.Fprintf(bw, "  %s --> %s\n", node(j), node(i))
			}
		}
	}
	for i, s := range w.Steps {
		if j := w.stepIndex(s.LoopBack()); j >= 0 {
			fmt.Fprintf(bw, "  %s -. \"%s\" .-> %s\n", node(i), mermaidText(w.loopLabel(s)), node(j))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write graph of %s: %w", w.Name, err)
	}
	return nil
}

// Dot writes the workflow as a Graphviz digraph.
func (w *Workflow) Dot(out io.Writer) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "digraph %s {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n", dotQuote(w.Name))
	for _, s := range w.Steps {
		attrs := "label=" + dotQuote(strings.Join(w.nodeLines(s), "\n"))
		switch s.Kind {
		case KindHuman:
			attrs += ", shape=hexagon"
		case KindAgent:
			attrs += ", style=rounded"
		}
		if s.Gate != nil {
			attrs += ", peripheries=2"
		}
		fmt.Fprintf(bw, "  %s [%s];\n", dotQuote(s.ID), attrs)
	}
	for _, s := range w.Steps {
		for _, n := range s.Needs {
			fmt.Fprintf(bw, "  %s -> %s;\n", dotQuote(n), dotQuote(s.ID))
		}
	}
	for _, s := range w.Steps {
		if t := s.LoopBack(); t != "" {
			fmt.Fprintf(bw, "  %s -> %s [style=dashed, constraint=false, label=%s];\n", dotQuote(s.ID), dotQuote(t), dotQuote(w.loopLabel(s)))
		}
	}
	bw.WriteString("}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write graph of %s: %w", w.Name, err)
	}
	return nil
}

// nodeLines are the lines of a step's label.
func (w *Workflow) nodeLines(s *Step) []string {
	lines := []string{s.ID}
	switch s.Kind {
	case KindAgent:
		lines = append(lines, "agent: "+s.Agent)
	case KindHuman:
		lines = append(lines, "human")
	}
	if s.When != nil {
		lines = append(lines, "when: "+s.When.Src)
	}
	if g := s.Gate; g != nil {
		if g.Check != nil {
			lines = append(lines, "check: "+g.Check.Src)
		}
		if g.Pass != nil {
			lines = append(lines, "pass: "+g.Pass.Src)
		}
		if g.Fail != nil {
			lines = append(lines, "fail: "+g.Fail.Src)
		}
		if g.Pass == nil && g.Fail == nil && g.Check == nil {
			lines = append(lines, "gate: verdict")
		}
	}
	return lines
}

// loopLabel says what sends a step's work back and its budget.
func (w *Workflow) loopLabel(s *Step) string {
	why := "FAIL"
	switch {
	case s.Kind == KindHuman:
		why = "rejected"
	case s.Gate == nil || s.Gate.LoopBackTo == "":
		why = "gate_failure"
	}
	budget := w.StepMaxIterations(s)
	if budget.Expr != nil {
		return fmt.Sprintf("%s, max %s iterations", why, budget.Expr.Src)
	}
	return fmt.Sprintf("%s, max %d iterations", why, budget.N)
}

// mermaidText escapes text for a quoted Mermaid label.
func mermaidText(s string) string {
	r := strings.NewReplacer("&", "#amp;", "\"", "#quot;", "<", "#lt;", ">", "#gt;", "|", "#124;", "{", "#123;", "}", "#125;")
	return r.Replace(s)
}

// dotQuote quotes a Graphviz ID or label.
func dotQuote(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n")
	return "\"" + r.Replace(s) + "\""
}
