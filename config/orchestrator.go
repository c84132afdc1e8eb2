package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/flow-run/flow/internal/suggest"
)

// agent_orchestrator's format (docs/agent-orchestrator.md, "Its keys"). A file in it is a name, a
// description and steps, each an agent named for a wrapper script with
// the path of a prompt file, and keys of its own: next_on_success,
// human_in_the_loop, gates, model, metadata, loop. It is decoded with
// tables of its own into the same raw model as flow's format, mapped
// key by key onto flow's (loop onto a for_each over the one step, the
// agents onto commands that run the wrapper), and built by the same
// rules into the same Workflow. Notes say what was mapped, for `flow
// convert`.

// OrchestratorOptions are the flags of agent_orchestrator's CLI that
// decide how a workflow in its format runs: how an agent's session is
// started, and whether a human_in_the_loop step waits.
type OrchestratorOptions struct {
	// Wrapper is the script every agent's session runs: WRAPPER
	// --run-id … --step-id … --agent … --prompt … --repo … --report …,
	// then WrapperArgs; a .py script runs with Python.
	Wrapper     string
	WrapperArgs []string
	// Python is the interpreter of a .py wrapper: python3 when empty.
	Python string
	// CommandTemplate, instead of Wrapper, is a shell command with
	// {run_id} {step_id} {agent} {prompt} {repo} {report} {attempt}
	// {manual_input} placeholders, then WrapperArgs.
	CommandTemplate string
	// PauseForHumanInput makes a human_in_the_loop step wait, once its
	// agent is done, for its manual-input file.
	PauseForHumanInput bool
}

// The formats Options.Format forces; "" detects it.
const (
	FormatFlow         = "flow"
	FormatOrchestrator = "orchestrator"
)

// rawOrchestrator is what build needs to know of a file read in
// agent_orchestrator's format.
type rawOrchestrator struct {
	opts OrchestratorOptions
	// agents lists the agents the steps name, in order of first use.
	agents []str
	// notes are the notes of each step, by id ("" is the workflow's).
	notes map[string][]string
	// next are the next_on_success lists, checked once the steps are
	// known.
	next []str
}

// rawOrchStep holds the keys of a step of agent_orchestrator's format
// that flow's has not.
type rawOrchStep struct {
	next         []str
	humanInLoop  str
	timeout      str
	loop         *rawOrchLoop
	loopPos      Pos
	promptGiven  bool
	agentDefined bool
}

// rawOrchLoop is a step's loop: block.
type rawOrchLoop struct {
	pos               Pos
	items             []any
	itemsSet          bool
	itemsPos          Pos
	itemsFromStep     str
	itemsFromArtifact str
	itemVar           str
	indexVar          str
	maxIterations     str
}

// orchLoopTable, orchStepTable and orchWorkflowTable are the keys of
// agent_orchestrator's format.
var orchLoopTable = newTable("loop", "", "",
	field[rawOrchLoop]{name: "items", kind: kindForEach,
		set: func(l *rawOrchLoop, v value) {
			l.itemsSet, l.itemsPos = true, v.pos()
			if !v.isList() {
				v.errorf("loop.items: want a list")
				return
			}
			l.items = v.literalList("loop.items")
		}},
	scalar("items_from_step", kindStepID, "", func(l *rawOrchLoop) *str { return &l.itemsFromStep }),
	scalar("items_from_artifact", kindString, "", func(l *rawOrchLoop) *str { return &l.itemsFromArtifact }),
	scalar("item_var", kindString, "", func(l *rawOrchLoop) *str { return &l.itemVar }),
	scalar("index_var", kindString, "", func(l *rawOrchLoop) *str { return &l.indexVar }),
	scalar("max_iterations", kindCount, "", func(l *rawOrchLoop) *str { return &l.maxIterations }),
)

var orchStepTable = newTable("step", "", "",
	field[rawStep]{name: "id", kind: kindStepID, required: true,
		set: func(s *rawStep, v value) {
			if s.id = v.str("id"); s.id.set {
				s.pos = s.id.pos()
			}
		}},
	scalar("description", kindString, "", func(s *rawStep) *str { return &s.description }),
	scalar("agent", kindString, "", func(s *rawStep) *str { return &s.agent }),
	field[rawStep]{name: "prompt", kind: kindString,
		set: func(s *rawStep, v value) { s.promptPath, s.orch.promptGiven = v.str("prompt"), true }},
	field[rawStep]{name: "needs", kind: kindOneOrList, elem: kindStepID,
		set: func(s *rawStep, v value) {
			s.needsSet, s.needsPos = true, v.keyPos()
			s.needs = v.list("needs", true)
		}},
	field[rawStep]{name: "next_on_success", kind: kindOneOrList, elem: kindStepID,
		set: func(s *rawStep, v value) { s.orch.next = v.list("next_on_success", true) }},
	scalar("loop_back_to", kindString, "", func(s *rawStep) *str { return &s.loopBackTo }),
	field[rawStep]{name: "gates", kind: kindOneOrList, elem: kindString,
		set: func(s *rawStep, v value) { s.gatesPos, s.gates = v.keyPos(), v.list("gates", true) }},
	scalar("human_in_the_loop", kindBool, "", func(s *rawStep) *str { return &s.orch.humanInLoop }),
	scalar("model", kindString, "", func(s *rawStep) *str { return &s.model }),
	field[rawStep]{name: "metadata", kind: kindMapping,
		set: func(s *rawStep, v value) {
			s.metadataPos = v.keyPos()
			if m, ok := v.literal("metadata"); ok {
				if mm, isMap := m.(map[string]any); isMap {
					s.metadata = mm
				} else if m != nil {
					v.errorf("metadata: want a mapping")
				}
			}
		}},
	field[rawStep]{name: "loop", kind: kindBlock, sub: orchLoopTable,
		set: func(s *rawStep, v value) {
			l := &rawOrchLoop{pos: v.keyPos()}
			if orchLoopTable.decode(v, l) {
				s.orch.loop, s.orch.loopPos = l, v.keyPos()
			}
		}},
	scalar("timeout", kindString, "", func(s *rawStep) *str { return &s.orch.timeout }),
	scalar("max_attempts", kindLimit, "", func(s *rawStep) *str { return &s.more().maxAttempts }),
)

var orchWorkflowTable = newTable("workflow", "", "",
	scalar("name", kindString, "", func(w *rawWorkflow) *str { return &w.name }),
	scalar("description", kindString, "", func(w *rawWorkflow) *str { return &w.description }),
	// metadata is the file's to describe itself: read by neither.
	field[rawWorkflow]{name: "metadata", kind: kindMapping, set: func(w *rawWorkflow, v value) {}},
	field[rawWorkflow]{name: "steps", kind: kindItems, sub: orchStepTable, required: true,
		set: func(w *rawWorkflow, v value) {
			v.items("steps", func(item value) {
				if !w.countStep(item) {
					return
				}
				s := &rawStep{pos: item.pos(), wf: w, orch: &rawOrchStep{}, rawStepMore: &rawStepMore{}}
				if orchStepTable.decodeEntry(item, s) {
					w.steps = append(w.steps, s)
				}
			})
		}},
)

// orchestratorOnly are the step keys that only agent_orchestrator's
// format has: one of them marks a file as written in it.
var orchestratorOnly = []string{"next_on_success", "human_in_the_loop", "loop"}

// flowOnly are the keys, of the workflow or of a step, that only flow's
// own format has: one of them marks a file as written in flow's. Keys
// both formats know (needs, loop_back_to, max_attempts, model, ...)
// count for neither.
var flowOnly = []string{"agents", "gate", "when", "for_each", "human", "vars", "defaults", "budget", "notify", "workspace", "secrets", "cleanup"}

// detection is what DetectFormat found of a file: its format, why, and
// for a file with agent_orchestrator's shape and a key of flow's own,
// both keys.
type detection struct {
	format, why string
	// marker is the key (or the .md prompt) that gives the file
	// agent_orchestrator's shape; flowKey the first key of flow's own.
	marker, flowKey         string
	markerNode, flowKeyNode *yaml.Node
}

// clash reports whether the file has agent_orchestrator's shape and a
// key of flow's own format: it is in neither.
func (det detection) clash() bool { return det.markerNode != nil && det.flowKeyNode != nil }

// DetectFormat says which format a workflow file is written in
// (docs/agent-orchestrator.md): a YAML file with agent_orchestrator's
// shape — a step key of its own (next_on_success, human_in_the_loop,
// loop), or steps that name an agent and a .md prompt while the file
// declares no agents — and no key of flow's own (flowOnly) is in
// agent_orchestrator's format; every other file is in flow's. Keys of
// neither format decide nothing: in agent_orchestrator's format they
// are warnings. why says what decided it, for a notice. A file with
// the shape and a key of flow's own is flow's here: loading it is an
// error naming both keys. A file that cannot be parsed is flow's, whose
// decoder says what is wrong with it.
func DetectFormat(path string, data []byte) (format, why string) {
	if f, err := formatOf(path); err != nil || f != "yaml" {
		return FormatFlow, ""
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return FormatFlow, ""
	}
	det := detectRoot(doc.Content[0])
	return det.format, det.why
}

// detectRoot is DetectFormat on a YAML file's root node.
func detectRoot(root *yaml.Node) detection {
	flow := detection{format: FormatFlow}
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		return flow
	}
	var steps *yaml.Node
	hasAgents := false
	note := func(k *yaml.Node) {
		if flow.flowKeyNode == nil && slices.Contains(flowOnly, k.Value) {
			flow.flowKey, flow.flowKeyNode = k.Value, k
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := resolve(root.Content[i])
		note(k)
		switch k.Value {
		case "steps":
			steps = resolve(root.Content[i+1])
		case "agents":
			hasAgents = true
		}
	}
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return flow
	}
	var mdPrompt *yaml.Node
	for _, s := range steps.Content {
		s = resolve(s)
		if s.Kind != yaml.MappingNode {
			continue
		}
		var agent, prompt *yaml.Node
		for i := 0; i+1 < len(s.Content); i += 2 {
			k := resolve(s.Content[i])
			note(k)
			if flow.markerNode == nil && slices.Contains(orchestratorOnly, k.Value) {
				flow.marker, flow.markerNode = k.Value, k
			}
			v := resolve(s.Content[i+1])
			switch k.Value {
			case "agent":
				agent = v
			case "prompt":
				prompt = v
			}
		}
		if mdPrompt == nil && agent != nil && agent.Kind == yaml.ScalarNode && prompt != nil && prompt.Kind == yaml.ScalarNode &&
			strings.HasSuffix(strings.ToLower(prompt.Value), ".md") && !strings.ContainsAny(prompt.Value, "\n") {
			mdPrompt = prompt
		}
	}
	if flow.markerNode == nil && mdPrompt != nil && !hasAgents {
		flow.marker, flow.markerNode = "prompt: "+mdPrompt.Value, mdPrompt
	}
	switch {
	case flow.markerNode == nil || flow.clash():
		return flow
	case mdPrompt == flow.markerNode:
		return detection{format: FormatOrchestrator, marker: flow.marker, markerNode: flow.markerNode,
			why: fmt.Sprintf("its steps name agents with prompt files (%s) and it declares no agents", mdPrompt.Value)}
	}
	return detection{format: FormatOrchestrator, marker: flow.marker, markerNode: flow.markerNode,
		why: "it has " + flow.marker + ", and no key of flow's own"}
}

// clashError reports a file with agent_orchestrator's shape and a key
// of flow's own format: one error, at the key of flow's, naming both.
func clashError(y *yamlDecoder, det detection) {
	y.d.errorf(y.pos(det.flowKeyNode), "%s is a key of flow's own format, but %s (line %d) is agent_orchestrator's: "+
		"a file is written in one of them (flow convert turns agent_orchestrator's into flow's); "+
		"--as orchestrator or --as flow (flow run --format) reads it as one",
		det.flowKey, det.marker, det.markerNode.Line)
}

// decodeOrchestrator decodes a YAML file in agent_orchestrator's format
// and maps it onto flow's raw model.
func decodeOrchestrator(y *yamlDecoder, root *yaml.Node, o Options) *rawWorkflow {
	src, d := y.src, y.d
	w := &rawWorkflow{src: src}
	pruneUnknown(y, root)
	orchWorkflowTable.decode(&yamlValue{y: y, n: root}, w)
	// Its sessions follow its contract: environment and report rules.
	w.compat = str{val: CompatOrchestrator, set: true, sp: y.span(root)}
	if w.tooManySteps {
		return w
	}
	ro := &rawOrchestrator{opts: o.Orchestrator, notes: map[string][]string{}}
	w.orchestrator = ro
	if !w.name.set {
		// agent_orchestrator names a run's workflow after its file.
		w.name = str{val: nameFromFile(src.name), set: true, sp: y.span(root)}
		ro.note("", fmt.Sprintf("name %q, from the file's name (the file gives none)", w.name.val))
	}
	ro.note("", "read in agent_orchestrator's format: compat keeps its session environment and report rules")
	for i := 0; i+1 < len(root.Content); i += 2 {
		if resolve(root.Content[i]).Value == "metadata" {
			ro.note("", "metadata is read by neither format, and left out")
		}
	}
	var steps []*rawStep
	for _, s := range w.steps {
		steps = append(steps, ro.mapStep(s, d)...)
	}
	w.steps = steps
	ro.defineAgents(w)
	return w
}

// pruneUnknown takes out of a file in agent_orchestrator's format the
// keys that format does not know, of the workflow, of its steps and of
// their loops, each a warning with a did-you-mean: agent_orchestrator
// ignores them, and so does flow.
func pruneUnknown(y *yamlDecoder, root *yaml.Node) {
	seen := map[*yaml.Node]bool{}
	prune := func(n *yaml.Node, t *keySet, where string) {
		n = resolve(n)
		if n.Kind != yaml.MappingNode || seen[n] {
			return
		}
		seen[n] = true
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if _, known := t.yIndex[k.Value]; known || k.Kind != yaml.ScalarNode {
				kept = append(kept, n.Content[i], n.Content[i+1])
				continue
			}
			msg := fmt.Sprintf("unknown %s key %q", where, k.Value)
			sg, ok := suggest.Closest(k.Value, t.yamlKeys)
			if ok {
				msg += fmt.Sprintf(" (did you mean %q?)", sg)
			}
			msg += ": ignored, as agent_orchestrator ignores it"
			y.d.warnings = append(y.d.warnings, Diagnostic{Pos: y.pos(k), Severity: SeverityWarning, Message: msg, Suggestion: sg})
		}
		n.Content = kept
	}
	prune(root, &orchWorkflowTable.keySet, "workflow")
	for i := 0; i+1 < len(root.Content); i += 2 {
		if resolve(root.Content[i]).Value != "steps" {
			continue
		}
		steps := resolve(root.Content[i+1])
		if steps.Kind != yaml.SequenceNode {
			continue
		}
		for _, st := range steps.Content {
			prune(st, &orchStepTable.keySet, "step")
			st = resolve(st)
			if st.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(st.Content); j += 2 {
				if resolve(st.Content[j]).Value == "loop" {
					prune(st.Content[j+1], &orchLoopTable.keySet, "loop")
				}
			}
		}
	}
}

// note adds a note to step id's notes.
func (ro *rawOrchestrator) note(id, text string) {
	ro.notes[id] = append(ro.notes[id], text)
}

// mapStep maps a step of agent_orchestrator's format onto flow's: it
// returns the step, or a for_each step over it for a loop.
func (ro *rawOrchestrator) mapStep(s *rawStep, d *diags) []*rawStep {
	id := s.id.val
	o := s.orch
	if !s.agent.set {
		d.errorf(s.pos, "step %q: agent is required (the name the wrapper is given)", id)
		// Said once: build is not to say it again in its own terms.
		s.agent = str{set: true, bad: true, sp: s.id.sp}
	} else if s.agent.ok() && !slices.ContainsFunc(ro.agents, func(a str) bool { return a.val == s.agent.val }) {
		ro.agents = append(ro.agents, s.agent)
	}
	if !o.promptGiven {
		d.errorf(s.pos, "step %q: prompt is required (the path of its prompt file)", id)
		s.promptPath = str{set: true, bad: true, sp: s.id.sp}
	} else {
		ro.note(id, fmt.Sprintf("prompt: %s → prompt_path, found when the step starts", s.promptPath.val))
	}
	if !s.needsSet {
		// In this format a step without needs is an entry step.
		s.needsSet, s.needsPos = true, s.pos
	}
	if len(o.next) > 0 {
		ro.next = append(ro.next, o.next...)
		names := make([]string, len(o.next))
		for i, n := range o.next {
			names[i] = n.val
		}
		ro.note(id, fmt.Sprintf("next_on_success: [%s] is checked and otherwise ignored, as agent_orchestrator does: needs decides the order", strings.Join(names, ", ")))
	}
	if s.model.ok() {
		ro.note(id, fmt.Sprintf("model: %s → $STEP_MODEL", s.model.val))
	}
	if len(s.gates) > 0 {
		ro.note(id, "gates → external_gates: the step waits until they are open in --gate-state-file")
		s.gatesPos = s.pos
	}
	if o.timeout.set {
		d.warnf(o.timeout.pos(), "timeout is ignored: agent_orchestrator's format does not enforce it (a timeout in flow's own format does)")
		ro.note(id, "timeout: "+o.timeout.val+" was ignored, as agent_orchestrator ignores it")
	}
	if h := o.humanInLoop; h.ok() {
		on, err := strconv.ParseBool(h.val)
		switch {
		case err != nil:
			d.errorf(h.pos(), "human_in_the_loop: want true or false, got %q", h.val)
		case on && ro.opts.PauseForHumanInput:
			s.human = &rawHuman{pos: h.pos(), anyFile: str{val: "true", set: true, sp: h.sp}}
			ro.note(id, "human_in_the_loop with --pause-for-human-input → human: the step waits, once its agent is done, for its manual-input file")
		case on:
			ro.note(id, "human_in_the_loop is ignored without --pause-for-human-input, as agent_orchestrator does")
		}
	}
	if o.loop == nil {
		return []*rawStep{s}
	}
	return []*rawStep{ro.mapLoop(s, d)}
}

// bodySuffix names the one step of the body of a loop mapped from a
// step with loop: <id>_item.
const bodySuffix = "_item"

// mapLoop maps a step with loop: onto a for_each step of the same id
// whose body is the step itself, renamed <id>_item: steps that need it
// need the whole loop, and a loop-back to it runs all its items again.
func (ro *rawOrchestrator) mapLoop(s *rawStep, d *diags) *rawStep {
	l := s.orch.loop
	id := s.id.val
	body := *s
	bodyMore := *s.more()
	body.rawStepMore = &bodyMore
	body.id.val = id + bodySuffix
	body.needs, body.needsSet, body.needsPos = nil, true, s.pos
	loop := &rawStep{id: s.id, pos: s.pos, wf: s.wf, needs: s.needs, needsSet: s.needsSet, needsPos: s.needsPos,
		forEachSet: true, body: []*rawStep{&body},
		rawStepMore: &rawStepMore{description: s.description, metadata: s.metadata, metadataPos: s.metadataPos,
			forEachPos: l.pos, bodySet: true, bodyPos: l.pos}}
	body.metadata = nil
	if body.loopBackTo.val == id {
		// A looped step that loops back to itself does its item again.
		body.loopBackTo.val = body.id.val
	}
	var from []string
	if l.itemsSet {
		from = append(from, "items")
		loop.forEachList, loop.forEachIsList = l.items, true
		if l.items == nil {
			loop.forEachList = []any{}
		}
	}
	if f := l.itemsFromStep; f.ok() {
		from = append(from, "items_from_step")
		loop.forEach = str{val: itemsOf("steps." + f.val + ".artifacts[0]"), set: true, sp: f.sp}
		if !slices.ContainsFunc(s.needs, func(n str) bool { return n.val == f.val }) {
			loop.needs = append(slices.Clone(loop.needs), f)
		}
	}
	if f := l.itemsFromArtifact; f.ok() {
		from = append(from, "items_from_artifact")
		loop.forEach = str{val: itemsOf(strconv.Quote(f.val)), set: true, sp: f.sp}
	}
	switch len(from) {
	case 0:
		d.errorf(l.pos, "step %q: loop needs one of items, items_from_step or items_from_artifact", id)
		loop.forEachList, loop.forEachIsList = []any{}, true
	case 1:
	default:
		d.errorf(l.pos, "step %q: loop has both %s and %s; give one", id, from[0], from[1])
	}
	loop.as, loop.indexAs, loop.maxItems = l.itemVar, l.indexVar, l.maxIterations
	how := "loop → for_each"
	switch {
	case l.itemsSet:
		how += " over the items written here"
	case l.itemsFromStep.ok():
		how += fmt.Sprintf(" over the JSON list in %s's first artifact, or its items", l.itemsFromStep.val)
	case l.itemsFromArtifact.ok():
		how += fmt.Sprintf(" over the JSON list in %s, or its items", l.itemsFromArtifact.val)
	}
	ro.note(id, how+fmt.Sprintf("; the step runs per item as %s%s", body.id.val, mapNames(l)))
	ro.notes[body.id.val] = ro.notes[id]
	delete(ro.notes, id)
	return loop
}

// itemsOf is the expression of a loop's items read from the JSON file
// at path (an expression), as agent_orchestrator reads them: a list, or
// an object whose items is one.
func itemsOf(path string) string {
	return "let f = read_json(" + path + `); type(f) == "map" ? f.items : f`
}

// mapNames says how a loop's names and limit were mapped.
func mapNames(l *rawOrchLoop) string {
	var parts []string
	if l.itemVar.ok() {
		parts = append(parts, "item_var → as")
	}
	if l.indexVar.ok() {
		parts = append(parts, "index_var → index_as")
	}
	if l.maxIterations.ok() {
		parts = append(parts, "max_iterations → max_items")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// defineAgents declares the agents the steps name as commands that run
// the wrapper or the command template. Without either the agents are
// left undeclared: the workflow loads, and a run refuses to start.
func (ro *rawOrchestrator) defineAgents(w *rawWorkflow) {
	o := ro.opts
	if o.Wrapper == "" && o.CommandTemplate == "" {
		return
	}
	for _, a := range ro.agents {
		cmd := OrchestratorCommand(o, a.val)
		w.agents = append(w.agents, &rawAgent{name: a, run: str{val: cmd, set: true, sp: a.sp}})
	}
	if o.Wrapper != "" {
		ro.note("", "agents → commands that run the wrapper "+o.Wrapper)
	} else {
		ro.note("", "agents → commands of the command template")
	}
}

// OrchestratorCommand is the shell command that starts a session of
// agent in agent_orchestrator's way: the wrapper with its flags, or the
// command template with its placeholders replaced by references to the
// session's environment ($RUN_ID, $STEP_ID, …), quoted for where each
// stands, so that no value is ever parsed by the shell; either is
// followed by the wrapper arguments.
func OrchestratorCommand(o OrchestratorOptions, agent string) string {
	var b strings.Builder
	if o.Wrapper == "" {
		b.WriteString(expandPlaceholders(o.CommandTemplate, agent))
	} else {
		if strings.HasSuffix(o.Wrapper, ".py") {
			py := o.Python
			if py == "" {
				py = "python3"
			}
			b.WriteString(ShellQuote(py) + " ")
		}
		b.WriteString(ShellQuote(o.Wrapper))
		b.WriteString(` --run-id "$RUN_ID" --step-id "$STEP_ID" --agent ` + ShellQuote(agent) +
			` --prompt "$PROMPT_PATH" --repo "$REPO_DIR" --report "$REPORT_PATH"`)
	}
	for _, a := range o.WrapperArgs {
		b.WriteString(" " + ShellQuote(a))
	}
	return b.String()
}

// placeholders maps the command template's placeholders to the
// environment variables of the session that hold their values.
var placeholders = map[string]string{
	"run_id": "RUN_ID", "step_id": "STEP_ID", "agent": "AGENT_ID", "prompt": "PROMPT_PATH",
	"repo": "REPO_DIR", "report": "REPORT_PATH", "attempt": "STEP_ATTEMPT", "manual_input": "MANUAL_RESULT_PATH",
}

// expandPlaceholders replaces each {name} of a command template by a
// reference to its variable: ${NAME:+"${NAME}"} outside quotes (one
// word, or none when the value is empty), ${NAME} inside double quotes,
// and '"${NAME}"' inside single quotes. {agent} is the
// agent's name itself, quoted the same way. Other braces stay as
// written.
func expandPlaceholders(tmpl, agent string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		if c == '{' {
			if j := strings.IndexByte(tmpl[i:], '}'); j > 0 {
				if v, ok := placeholders[tmpl[i+1:i+j]]; ok {
					ref := "${" + v + "}"
					switch quote {
					case '"':
						b.WriteString(ref)
					case '\'':
						b.WriteString(`'"` + ref + `"'`)
					default:
						// An empty value is no word, as shlex.split
						// reads agent_orchestrator's template.
						b.WriteString("${" + v + `:+"` + ref + `"}`)
					}
					i += j
					continue
				}
			}
		}
		switch {
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == c:
			quote = 0
		case c == '\\' && quote != '\'' && i+1 < len(tmpl):
			b.WriteByte(c)
			i++
			c = tmpl[i]
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ShellQuote quotes s for sh: as it is when it holds only safe
// characters, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%_-+=:,./", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nameFromFile makes a workflow name of a file's base name: lowercase,
// without its extension, with runs of other characters made -.
func nameFromFile(path string) string {
	base := strings.ToLower(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-_")
	if name == "" {
		return "workflow"
	}
	return name
}

// finishOrchestrator does what build does last for a file in
// agent_orchestrator's format: it checks next_on_success, marks the
// waiting human_in_the_loop steps as taking any manual-input file,
// reads --max-iterations' default as agent_orchestrator does, and keeps
// the notes.
func (b *builder) finishOrchestrator() {
	ro := b.raw.orchestrator
	w := b.w
	w.Dialect = DialectOrchestrator
	for _, n := range ro.next {
		if n.ok() && w.Step(n.val) == nil {
			b.d.unknown(n.pos(), "step", n.val, b.scope.Steps)
			b.d.list[len(b.d.list)-1].Message = "next_on_success: " + b.d.list[len(b.d.list)-1].Message
		}
	}
	if w.Defaults.MaxIterations == nil {
		// agent_orchestrator allows N loop-backs where flow stops when
		// the count reaches N: its default of 4 is flow's 5.
		w.Defaults.MaxIterations = &Limit{N: DefaultMaxIterations + 1, Pos: w.Pos}
		ro.note("", fmt.Sprintf("max_iterations %d: agent_orchestrator's default of %d loop-backs", DefaultMaxIterations+1, DefaultMaxIterations))
	}
	w.Notes = ro.notes
}
