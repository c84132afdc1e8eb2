package serve

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// The graph is laid out as flow graph's Mermaid and Graphviz output
// is: top to bottom, a step one row below the deepest of its needs, a
// for_each loop a box holding its body laid out the same way. Edges
// never cross a box: an edge leaves its step's bottom, turns only in
// the free space between two rows, and an edge that skips rows, or a
// loop-back (dashed), goes round the boxes in a lane of its own at the
// right of its group, entering its target from above.

// The graph's measures, in SVG units.
const (
	boxW    = 170
	boxH    = 46
	bodyW   = 150
	bodyH   = 42
	loopTop = 44 // a loop box's title, above its body
	gapX    = 28
	gapY    = 44
	laneW   = 12
	margin  = 16
)

// gnode is a box of the graph.
type gnode struct {
	id     string
	label  string
	status string
	x, y   int
	w, h   int
	needs  []string
	// backs are the steps a failed gate sends the run back to: its own
	// gate's, and a loop's body steps' outside the body.
	backs []string
	// body is a loop's body, laid out inside it.
	body *group
	// row is the node's row in its group.
	row int
}

// group is a set of boxes laid out together: the workflow's top level,
// or a loop's body. Its coordinates are relative until placed.
type group struct {
	nodes []*gnode
	byID  map[string]*gnode
	// rowY and rowH are each row's top and height.
	rowY, rowH []int
	// contentW is the width of the boxes; w and h the group's with its
	// lanes.
	contentW, w, h int
	lanes          int
	// ox, oy are where the group is placed.
	ox, oy int
}

// edge is a drawn edge.
type edge struct {
	from, to *gnode
	back     bool
	// lane is the edge's lane at the right of its group, -1 for none.
	lane int
	g    *group
}

// graphSVG draws a run's workflow as an SVG: one box per step, coloured
// and labelled by its status, in rows by the depth of its needs; needs
// edges are solid, loop-back edges dashed, and a loop is a labelled
// box holding its body's steps and their edges, each body step
// labelled with its instances' progress. Without the workflow (wf nil)
// it draws the run's steps in a row, without edges. Every text is
// escaped; the SVG uses classes and presentation attributes, no inline
// style. Without a live runner (live false), a running step is drawn
// as dead: it does not run.
func graphSVG(wf *config.Workflow, st *core.State, live bool) template.HTML {
	top := &group{byID: map[string]*gnode{}}
	if wf != nil {
		for _, step := range wf.Steps {
			n := &gnode{id: step.ID, needs: step.Needs}
			if lb := step.LoopBack(); lb != "" {
				n.backs = append(n.backs, lb)
			}
			if step.ForEach != nil {
				n.body = &group{byID: map[string]*gnode{}}
				for _, b := range step.ForEach.Body {
					c := &gnode{id: b.ID, needs: b.Needs}
					if lb := b.LoopBack(); lb != "" {
						c.backs = append(c.backs, lb)
					}
					n.body.nodes = append(n.body.nodes, c)
					n.body.byID[c.id] = c
				}
				// A body step's loop-back out of the body leaves from
				// the loop's box.
				for _, c := range n.body.nodes {
					for _, lb := range c.backs {
						if n.body.byID[lb] == nil {
							n.backs = append(n.backs, lb)
						}
					}
				}
			}
			top.nodes = append(top.nodes, n)
			top.byID[n.id] = n
		}
	} else {
		for _, key := range st.StepOrder {
			if !key.IsInstance() {
				n := &gnode{id: key.Step}
				top.nodes = append(top.nodes, n)
				top.byID[key.Step] = n
			}
		}
	}
	for _, n := range top.nodes {
		n.status = "PENDING"
		if ss := st.Steps[core.Key(n.id)]; ss != nil {
			n.status = string(ss.Status)
		}
		n.label = n.status
		if p, ok := ops.Progress(st, n.id); ok {
			n.label = fmt.Sprintf("%s · %d/%d", n.status, p.Completed+p.Failed, p.Items)
		}
		if n.body != nil {
			for _, c := range n.body.nodes {
				c.status, c.label = bodyStatus(st, n.id, c.id)
			}
		}
	}
	if !live {
		for _, n := range top.nodes {
			deadNode(n)
			if n.body != nil {
				for _, c := range n.body.nodes {
					deadNode(c)
				}
			}
		}
	}
	// Bodies first: a loop's box is as large as its body.
	var edges []*edge
	for _, n := range top.nodes {
		if n.body != nil {
			edges = append(edges, n.body.layout(bodyW, bodyH)...)
			n.w = max(boxW, n.body.w+20)
			n.h = loopTop + n.body.h + 10
		}
	}
	edges = append(edges, top.layout(boxW, boxH)...)
	top.place(margin, margin)
	for _, n := range top.nodes {
		if n.body != nil {
			n.body.place(n.x+10, n.y+loopTop)
		}
	}
	width, height := top.w+2*margin, top.h+2*margin

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="workflow graph">`, width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker>` +
		`<marker id="arrow-back" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead back"/></marker></defs>`)
	for _, n := range top.nodes {
		if n.body != nil {
			fmt.Fprintf(&b, `<g class="node loop %s" data-key="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="8" stroke-dasharray="4 3"/>`,
				statusClass(n.status), esc(n.id), n.x, n.y, n.w, n.h)
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="name">for_each %s</text><text x="%d" y="%d" class="state">%s</text></g>`,
				n.x+10, n.y+18, esc(clip(n.id, 22)), n.x+10, n.y+35, esc(n.label))
		}
	}
	for _, e := range edges {
		b.WriteString(e.path())
	}
	for _, n := range top.nodes {
		if n.body != nil {
			for _, c := range n.body.nodes {
				box(&b, c, n.id)
			}
			continue
		}
		box(&b, n, "")
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// deadNode marks a running step of a run no runner holds.
func deadNode(n *gnode) {
	if n.status == string(core.Running) {
		n.status, n.label = "dead", strings.Replace(n.label, string(core.Running), "RUNNING · no runner", 1)
	}
}

// bodyStatus sums up the instances of a loop's body step: the status
// that matters most among them, and how many are done.
func bodyStatus(st *core.State, loop, step string) (status, label string) {
	n, done, running, failed, waiting := 0, 0, 0, 0, 0
	for _, key := range st.StepOrder {
		if !key.IsInstance() || key.Loop != loop || key.Step != step {
			continue
		}
		n++
		switch ss := st.Steps[key]; {
		case ss == nil:
		case ss.Status.Done():
			done++
		case ss.Status == core.Running:
			running++
		case ss.Status == core.Failed:
			failed++
		case ss.Status == core.WaitingOnHuman:
			waiting++
		}
	}
	switch {
	case n == 0:
		return "PENDING", "for each item"
	case failed > 0:
		status = string(core.Failed)
	case waiting > 0:
		status = string(core.WaitingOnHuman)
	case running > 0:
		status = string(core.Running)
	case done == n:
		status = string(core.Completed)
	default:
		status = string(core.Pending)
	}
	label = fmt.Sprintf("%d/%d done", done, n)
	if running > 0 {
		label += fmt.Sprintf(" · %d running", running)
	}
	if failed > 0 {
		label += fmt.Sprintf(" · %d failed", failed)
	}
	return status, label
}

// layout places a group's boxes (w by h, or a loop's own size) in rows
// by depth, top-aligned, and routes its edges: its needs and its
// loop-backs within it. Coordinates are relative to the group until
// place.
func (g *group) layout(w, h int) []*edge {
	rows := layers(g.nodes, g.byID)
	y := gapY / 2
	for r, row := range rows {
		x, rh := 0, 0
		for _, n := range row {
			if n.body == nil {
				n.w, n.h = w, h
			}
			n.x, n.y, n.row = x, y, r
			x += n.w + gapX
			rh = max(rh, n.h)
		}
		g.contentW = max(g.contentW, x-gapX)
		g.rowY, g.rowH = append(g.rowY, y), append(g.rowH, rh)
		y += rh + gapY
	}
	g.h = y - gapY/2
	var edges []*edge
	for _, n := range g.nodes {
		for _, need := range n.needs {
			if from := g.byID[need]; from != nil {
				edges = append(edges, g.route(from, n, false))
			}
		}
	}
	for _, n := range g.nodes {
		for _, lb := range n.backs {
			if to := g.byID[lb]; to != nil {
				edges = append(edges, g.route(n, to, true))
			}
		}
	}
	g.w = g.contentW
	if g.lanes > 0 {
		g.w += 14 + g.lanes*laneW
	}
	return edges
}

// route makes the edge from from to to; one that does not go to the
// next row gets a lane.
func (g *group) route(from, to *gnode, back bool) *edge {
	e := &edge{from: from, to: to, back: back, lane: -1, g: g}
	if back || to.row != from.row+1 {
		e.lane = g.lanes
		g.lanes++
	}
	return e
}

// place moves a group's boxes to where the group is placed.
func (g *group) place(ox, oy int) {
	g.ox, g.oy = ox, oy
	for _, n := range g.nodes {
		n.x += ox
		n.y += oy
	}
	for i := range g.rowY {
		g.rowY[i] += oy
	}
}

// path draws an edge: from the bottom of its source, through the space
// below the source's row, to the top of its target from the space
// above the target's row; through its lane when it has one.
func (e *edge) path() string {
	g := e.g
	fx, fy := e.from.x+e.from.w/2, e.from.y+e.from.h
	below := g.rowY[e.from.row] + g.rowH[e.from.row]
	tx, ty := e.to.x+e.to.w/2, e.to.y
	if e.back {
		// Beside the target's needs edges, which end at its middle.
		fx, tx = e.from.x+e.from.w*3/4, e.to.x+e.to.w*3/4
	}
	above := e.to.y - gapY/2
	mid := below + gapY/2
	var d string
	if e.lane < 0 {
		d = fmt.Sprintf("M %d %d L %d %d C %d %d, %d %d, %d %d", fx, fy, fx, below, fx, mid, tx, mid, tx, ty)
	} else {
		lx := g.ox + g.contentW + 14 + e.lane*laneW
		out := below + gapY/4 + e.lane%3*4
		in := above - e.lane%3*4
		d = fmt.Sprintf("M %d %d L %d %d L %d %d L %d %d L %d %d L %d %d", fx, fy, fx, out, lx, out, lx, in, tx, in, tx, ty)
	}
	if e.back {
		return fmt.Sprintf(`<path class="edge loopback" stroke-dasharray="6 4" fill="none" d="%s" marker-end="url(#arrow-back)"><title>%s loops back to %s</title></path>`,
			d, esc(e.from.id), esc(e.to.id))
	}
	return fmt.Sprintf(`<path class="edge" fill="none" d="%s" marker-end="url(#arrow)"><title>%s, then %s</title></path>`, d, esc(e.from.id), esc(e.to.id))
}

// box draws one step's box, with its id and status; a body step's key
// is its loop's and its own.
func box(b *strings.Builder, n *gnode, loop string) {
	key := n.id
	if loop != "" {
		key = loop + "." + n.id
	}
	fmt.Fprintf(b, `<g class="node %s" data-key="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`,
		statusClass(n.status), esc(key), n.x, n.y, n.w, n.h)
	fmt.Fprintf(b, `<text x="%d" y="%d" class="name">%s<title>%s</title></text><text x="%d" y="%d" class="state">%s</text></g>`,
		n.x+10, n.y+18, esc(clip(n.id, n.w/8-2)), esc(n.id), n.x+10, n.y+35, esc(n.label))
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
