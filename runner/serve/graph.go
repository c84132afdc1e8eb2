package serve

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// The graph's measures, in SVG units.
const (
	boxW    = 170
	boxH    = 46
	bodyW   = 140
	bodyH   = 40
	loopH   = boxH + bodyH + 20
	gapX    = 30
	rowH    = loopH + 44
	margin  = 20
	backArc = 50
)

// gnode is a box of the graph.
type gnode struct {
	id       string
	label    string
	status   string
	x, y     int
	w, h     int
	needs    []string
	loopBack string
	body     []*gnode
}

// graphSVG draws a run's workflow as an SVG: one box per step, coloured
// and labelled by its status, in rows by the depth of its needs; needs
// edges are solid, loop-back edges dashed, and a loop is a labelled
// group holding its body's steps. Without the workflow (wf nil) it draws
// the run's steps in a row, without edges. Every text is escaped; the
// SVG uses classes and presentation attributes, no inline style.
func graphSVG(wf *config.Workflow, st *core.State) template.HTML {
	var nodes []*gnode
	if wf != nil {
		for _, step := range wf.Steps {
			n := &gnode{id: step.ID, needs: step.Needs, loopBack: step.LoopBack()}
			if step.ForEach != nil {
				for _, b := range step.ForEach.Body {
					n.body = append(n.body, &gnode{id: b.ID, status: "", loopBack: b.LoopBack()})
				}
			}
			nodes = append(nodes, n)
		}
	} else {
		for _, key := range st.StepOrder {
			if !core.IsInstance(key) {
				nodes = append(nodes, &gnode{id: key})
			}
		}
	}
	byID := map[string]*gnode{}
	for _, n := range nodes {
		byID[n.id] = n
		n.status = "PENDING"
		if ss := st.Steps[n.id]; ss != nil {
			n.status = string(ss.Status)
		}
		n.label = n.status
		if p, ok := ops.Progress(st, n.id); ok {
			n.label = fmt.Sprintf("%s · %d/%d", n.status, p.Completed+p.Failed, p.Items)
		}
	}
	rows := layers(nodes, byID)
	width, height := 0, margin
	for r, row := range rows {
		x := margin
		for _, n := range row {
			n.x, n.y, n.w, n.h = x, margin+r*rowH, boxW, boxH
			if len(n.body) > 0 {
				n.w, n.h = max(boxW, len(n.body)*(bodyW+10)+10), loopH
				for i, b := range n.body {
					b.x, b.y, b.w, b.h = n.x+10+i*(bodyW+10), n.y+boxH, bodyW, bodyH
					b.status, b.label = n.status, "for each item"
				}
			}
			x += n.w + gapX
		}
		width = max(width, x)
		height = margin + (r+1)*rowH
	}
	width += backArc

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="workflow graph">`, width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker></defs>`)
	for _, n := range nodes {
		for _, need := range n.needs {
			if from := byID[need]; from != nil {
				fmt.Fprintf(&b, `<line class="edge" x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#arrow)"/>`,
					from.x+from.w/2, from.y+from.h, n.x+n.w/2, n.y)
			}
		}
	}
	all := map[string]*gnode{}
	var order []*gnode
	for _, n := range nodes {
		all[n.id] = n
		order = append(order, n)
		for _, c := range n.body {
			all[c.id] = c
			order = append(order, c)
		}
	}
	for _, n := range order {
		if to := all[n.loopBack]; to != nil {
			x := max(n.x+n.w, to.x+to.w) + backArc
			fmt.Fprintf(&b, `<path class="edge loopback" stroke-dasharray="6 4" fill="none" d="M %d %d C %d %d, %d %d, %d %d" marker-end="url(#arrow)"><title>%s loops back to %s</title></path>`,
				n.x+n.w, n.y+n.h/2, x, n.y+n.h/2, x, to.y+to.h/2, to.x+to.w, to.y+to.h/2, esc(n.id), esc(to.id))
		}
	}
	for _, n := range nodes {
		if len(n.body) > 0 {
			fmt.Fprintf(&b, `<g class="node loop %s" data-key="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="8" stroke-dasharray="4 3"/>`,
				statusClass(n.status), esc(n.id), n.x, n.y, n.w, n.h)
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="name">for_each %s</text><text x="%d" y="%d" class="state">%s</text></g>`,
				n.x+10, n.y+18, esc(n.id), n.x+10, n.y+35, esc(n.label))
			for _, c := range n.body {
				box(&b, c)
			}
			continue
		}
		box(&b, n)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// box draws one step's box, with its id and status.
func box(b *strings.Builder, n *gnode) {
	fmt.Fprintf(b, `<g class="node %s" data-key="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`,
		statusClass(n.status), esc(n.id), n.x, n.y, n.w, n.h)
	fmt.Fprintf(b, `<text x="%d" y="%d" class="name">%s</text><text x="%d" y="%d" class="state">%s</text></g>`,
		n.x+10, n.y+18, esc(clip(n.id, 24)), n.x+10, n.y+35, esc(n.label))
}

// layers puts each node in the row of its depth: 0 without needs, else
// one more than its deepest need's. Needs that form a cycle or name no
// node are ignored.
func layers(nodes []*gnode, byID map[string]*gnode) [][]*gnode {
	depth := map[string]int{}
	var visit func(n *gnode, seen map[string]bool) int
	visit = func(n *gnode, seen map[string]bool) int {
		if d, ok := depth[n.id]; ok {
			return d
		}
		seen[n.id] = true
		d := 0
		for _, need := range n.needs {
			if m := byID[need]; m != nil && !seen[need] {
				d = max(d, visit(m, seen)+1)
			}
		}
		delete(seen, n.id)
		depth[n.id] = d
		return d
	}
	var rows [][]*gnode
	for _, n := range nodes {
		d := visit(n, map[string]bool{})
		for len(rows) <= d {
			rows = append(rows, nil)
		}
		rows[d] = append(rows[d], n)
	}
	return rows
}

// esc escapes text for the SVG.
func esc(s string) string { return template.HTMLEscapeString(s) }
