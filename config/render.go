package config

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Graph rendering: needs edges are solid; loop-back edges are dashed and
// labelled with what sends the work back and its iteration budget; human
// steps have their own shape; a gated step shows its gate and a
// conditional step its when.

// Mermaid writes the workflow as a Mermaid flowchart. A for_each loop
// is a subgraph holding its body.
func (w *Workflow) Mermaid(out io.Writer) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "---\ntitle: %s\n---\nflowchart TD\n", w.Name)
	ids := w.graphIDs("s")
	label := func(s *Step) string {
		return strings.ReplaceAll(mermaidText(strings.Join(w.nodeLines(s), "\n")), "\n", "<br/>")
	}
	node := func(indent string, s *Step) {
		switch s.Kind {
		case KindHuman:
			fmt.Fprintf(bw, "%s%s{{\"%s\"}}\n", indent, ids[s.ID], label(s))
		case KindAgent:
			fmt.Fprintf(bw, "%s%s([\"%s\"])\n", indent, ids[s.ID], label(s))
		case KindConsensus:
			fmt.Fprintf(bw, "%s%s{\"%s\"}\n", indent, ids[s.ID], label(s))
		default:
			fmt.Fprintf(bw, "%s%s[\"%s\"]\n", indent, ids[s.ID], label(s))
		}
	}
	for _, s := range w.Steps {
		if s.ForEach == nil {
			node("  ", s)
			continue
		}
		fmt.Fprintf(bw, "  subgraph %s [\"%s\"]\n", ids[s.ID], label(s))
		for _, b := range s.ForEach.Body {
			node("    ", b)
		}
		bw.WriteString("  end\n")
	}
	all := w.AllSteps()
	for _, s := range all {
		for _, n := range s.Needs {
			if ids[n] != "" {
				fmt.Fprintf(bw, "  %s --> %s\n", ids[n], ids[s.ID])
			}
		}
	}
	for _, s := range all {
		if t := ids[s.LoopBack()]; t != "" {
			fmt.Fprintf(bw, "  %s -. \"%s\" .-> %s\n", ids[s.ID], mermaidText(w.loopLabel(s)), t)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write graph of %s: %w", w.Name, err)
	}
	return nil
}

// graphIDs names the nodes of a graph: prefix and the step's place at
// the top level ("s3"), and for a body step its loop's and its own
// ("s3_0").
func (w *Workflow) graphIDs(prefix string) map[string]string {
	ids := map[string]string{}
	for i, s := range w.Steps {
		ids[s.ID] = prefix + strconv.Itoa(i)
		if s.ForEach != nil {
			for j, b := range s.ForEach.Body {
				ids[b.ID] = prefix + strconv.Itoa(i) + "_" + strconv.Itoa(j)
			}
		}
	}
	return ids
}

// Dot writes the workflow as a Graphviz digraph. A for_each loop is a
// cluster holding its loop step and its body.
func (w *Workflow) Dot(out io.Writer) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintf(bw, "digraph %s {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n", dotQuote(w.Name))
	node := func(indent string, s *Step) {
		attrs := "label=" + dotQuote(strings.Join(w.nodeLines(s), "\n"))
		switch s.Kind {
		case KindHuman:
			attrs += ", shape=hexagon"
		case KindAgent:
			attrs += ", style=rounded"
		case KindLoop:
			attrs += ", shape=folder"
		case KindConsensus:
			attrs += ", shape=diamond"
		}
		if s.Gate != nil {
			attrs += ", peripheries=2"
		}
		fmt.Fprintf(bw, "%s%s [%s];\n", indent, dotQuote(s.ID), attrs)
	}
	for _, s := range w.Steps {
		if s.ForEach == nil {
			node("  ", s)
			continue
		}
		fmt.Fprintf(bw, "  subgraph %s {\n    style=dashed;\n", dotQuote("cluster_"+s.ID))
		node("    ", s)
		for _, b := range s.ForEach.Body {
			node("    ", b)
		}
		bw.WriteString("  }\n")
	}
	all := w.AllSteps()
	for _, s := range all {
		for _, n := range s.Needs {
			fmt.Fprintf(bw, "  %s -> %s;\n", dotQuote(n), dotQuote(s.ID))
		}
		if s.Loop != "" && !slices.ContainsFunc(s.Needs, func(n string) bool { return w.LoopOf(n) != nil }) {
			// A body step that needs no other starts with each item.
			fmt.Fprintf(bw, "  %s -> %s [style=dotted];\n", dotQuote(s.Loop), dotQuote(s.ID))
		}
	}
	for _, s := range all {
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
	case KindConsensus:
		lines = append(lines, "consensus: "+s.Gate.Consensus+" of "+strings.Join(s.Gate.Reviewers, ", "))
	case KindLoop:
		fe := s.ForEach
		over := "the list in the file"
		if fe.Items != nil {
			over = fe.Items.Src
		}
		lines = append(lines, "for each "+fe.As+" in "+over)
		if fe.Key != nil {
			lines = append(lines, "key: "+fe.Key.Src)
		}
		lines = append(lines, fmt.Sprintf("%d at a time", fe.MaxParallel))
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
		if g.Pass == nil && g.Fail == nil && g.Check == nil && s.Kind != KindConsensus {
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
