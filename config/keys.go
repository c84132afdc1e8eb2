package config

// Every key of a workflow file is declared once, in the tables below:
// its name, the kind of its value, its description and a setter that
// stores the value into the raw model. Both decoders walk their files
// with these tables (yaml.go and hcl.go give the value abstraction), the
// unknown-key check and its did-you-mean take their candidates from them,
// and schema.go builds the JSON Schema from them. Adding a key is adding
// a line here, and giving it its meaning in build.

// kind is what a key's value is: it decides how the decoders read the
// value and what the JSON Schema says of it.
type kind int

const (
	kindString      kind = iota // a string, checked against pattern if given
	kindTemplate                // a string with {{ expr }} parts
	kindExpr                    // an expression
	kindLimit                   // a positive integer or an expression
	kindDuration                // a duration or an expression
	kindSize                    // a size in bytes, with or without a unit
	kindCount                   // a positive integer
	kindBool                    // true or false
	kindNumber                  // a number of at least 0, such as 0.3
	kindPositive                // a number greater than 0, such as 2.5
	kindStepID                  // a step's id
	kindVars                    // a mapping of names to scalars
	kindEnv                     // a mapping of environment variable names to templates
	kindList                    // a list of elem
	kindOneOrList               // an elem, or a list of them
	kindForEach                 // an expression, or a list of values of any shape
	kindMapping                 // a mapping of names to values of any shape
	kindWordOrBlock             // a word of enum, or a block of the keys of sub
	kindBlock                   // a nested block of the keys of sub
	kindEntries                 // named blocks of sub: a YAML mapping, HCL labelled blocks
	kindItems                   // a list of blocks of sub: a YAML list, HCL labelled blocks
)

// isBlock reports whether the values of a kind are HCL blocks rather than
// attributes.
func (k kind) isBlock() bool { return k >= kindBlock }

// A value is what a key is given in a workflow file: a YAML node, or an
// HCL attribute, block or block label. The setters of the tables read
// every value through it, keeping its position. A value is good only
// during the call it is given to (the decoders reuse it for the next
// key), so that decoding allocates little per key.
type value interface {
	// pos is where the value is written; keyPos where its key is.
	pos() Pos
	keyPos() Pos
	// errorf reports a problem at pos.
	errorf(format string, args ...any)
	// str reads a scalar: a string, a number or a boolean, as written.
	str(what string) str
	// list reads a list of scalars; with one, a scalar is a list of one.
	list(what string, one bool) []str
	// strMap reads a mapping of names to scalars, in file order.
	strMap(what string) []kv
	// section reads a block of the keys of t into dst, through t.set;
	// it reports whether the block stands (an HCL block with a label, or
	// the second of its kind, does not).
	section(t *keySet, dst any) bool
	// entries calls f with the name and body of each named block.
	entries(what string, f func(name str, body value))
	// items calls f with each block of a list of blocks.
	items(what string, f func(item value))
	// entry reads an item from items as a block of the keys of t into
	// dst; it reports whether the item is a block at all.
	entry(t *keySet, dst any) bool
	// isList reports whether the value is written as a list (a YAML
	// sequence, an HCL tuple).
	isList() bool
	// isBlock reports whether the value is written as a block (a YAML
	// mapping, an HCL block) rather than as a scalar.
	isBlock() bool
	// isEmpty reports whether the value is a block written without a
	// single key (a YAML {} or nothing, an HCL block with an empty
	// body); a value that is no block at all is not empty.
	isEmpty() bool
	// literalList reads a list of values of any shape as
	// JSON-compatible values: string, float64, bool, nil, []any and
	// map[string]any. It returns nil, having reported why, when a value
	// cannot be read.
	literalList(what string) []any
	// literal reads a value of any shape as a JSON-compatible value;
	// ok is false, having reported why, when it cannot be read.
	literal(what string) (v any, ok bool)
}

// field declares one key of a block whose raw form is T.
type field[T any] struct {
	// name is the key in YAML, and the attribute or block in HCL.
	name string
	// hcl is the HCL block name when it differs from name ("agent" for
	// agents); "-" for a key that HCL writes as the block's label.
	hcl  string
	kind kind
	// elem is the kind of the items of a kindList or kindOneOrList.
	elem kind
	// sub is the table of a kindBlock, kindEntries or kindItems.
	sub schemaTable
	// pattern constrains a kindString, the items of a list or the names
	// of entries, in the schema.
	pattern string
	// enum lists the values a kindString may have, in the schema.
	enum     []string
	unique   bool // a list's items are distinct
	required bool
	doc      string
	// def is the key's default: a value as a file would write it, or,
	// with defWords, words that say what a file that leaves the key out
	// gets ("the step before it"). The reference and the schema's
	// descriptions show it.
	def      string
	defWords bool
	// on says which steps may have a key of the step table.
	on  stepKind
	set func(t *T, v value)
}

// stepKind is the kind of step a key of the step table belongs on.
type stepKind int

const (
	anyStep     stepKind = iota
	loopStep             // a for_each loop only
	sessionStep          // any step but a for_each loop, whose body's steps take it
)

// placedKey is a key of the step table that belongs on one kind of
// step, as a step wrote it.
type placedKey struct {
	name string
	on   stepKind
	pos  Pos
}

// kindedKeys is a block that keeps where its keys that belong on one kind
// of step were written.
type kindedKeys interface {
	placed(k placedKey)
}

// byDefault gives the key's default, as a workflow file writes it.
func (f field[T]) byDefault(v string) field[T] {
	f.def = v
	return f
}

// defaultIs says in words what a file that leaves the key out gets.
func (f field[T]) defaultIs(words string) field[T] {
	f.def, f.defWords = words, true
	return f
}

// only says which steps may have the key.
func (f field[T]) only(k stepKind) field[T] {
	f.on = k
	return f
}

// keySet is what the decoders need of a table: its keys and their kinds.
type keySet struct {
	// what names the block in messages ("step").
	what  string
	kinds []kind
	// yIndex and hIndex give the place of a key by its YAML and its HCL
	// name.
	yIndex, hIndex map[string]int
	// yamlKeys are the YAML keys; hclAttrs and hclBlocks the HCL
	// attributes and blocks (hclKnown lists both: the candidates of
	// did-you-mean).
	yamlKeys, hclAttrs, hclBlocks []string
	// label is the place of the key an HCL block label gives, or -1.
	label int
	// set stores the value of the key at place i into dst, the raw form
	// of the block.
	set func(dst any, i int, v value)
}

// table is the declaration of the keys of one block.
type table[T any] struct {
	keySet
	// doc describes the block, and def is its name under the schema's
	// $defs, when it is defined once there rather than inline.
	doc    string
	def    string
	fields []field[T]
	// oneOf lists keys of which a block gives exactly one, and nonEmpty
	// says that a block gives at least one key, in the schema; build
	// checks both with messages of its own.
	oneOf    []string
	nonEmpty bool
}

// newTable indexes the fields of a block.
func newTable[T any](what, doc, def string, fields ...field[T]) *table[T] {
	t := &table[T]{doc: doc, def: def}
	ks := &t.keySet
	ks.what, ks.label = what, -1
	ks.set = func(dst any, i int, v value) { t.fields[i].set(dst.(*T), v) }
	ks.yIndex, ks.hIndex = make(map[string]int, len(fields)), make(map[string]int, len(fields))
	for _, f := range fields {
		t.add(f)
	}
	return t
}

// add declares one more key of the block: a key whose value is a block
// of the table itself (the body of a loop) is added once the table
// exists.
func (t *table[T]) add(f field[T]) {
	ks := &t.keySet
	i := len(t.fields)
	if f.on != anyStep {
		// The kind of step the key belongs on is declared here once;
		// the step keeps where each such key was written, and build
		// refuses a key on the wrong kind of step from that.
		set, name, on := f.set, f.name, f.on
		f.set = func(t *T, v value) {
			if ks, ok := any(t).(kindedKeys); ok {
				ks.placed(placedKey{name: name, on: on, pos: v.keyPos()})
			}
			set(t, v)
		}
	}
	t.fields = append(t.fields, f)
	h := f.hcl
	if h == "" {
		h = f.name
	}
	ks.kinds = append(ks.kinds, f.kind)
	ks.yIndex[f.name] = i
	ks.yamlKeys = append(ks.yamlKeys, f.name)
	switch {
	case h == "-":
		ks.label = i
		return
	case f.kind.isBlock():
		ks.hclBlocks = append(ks.hclBlocks, h)
	default:
		ks.hclAttrs = append(ks.hclAttrs, h)
	}
	ks.hIndex[h] = i
}

// hclKnown lists the HCL attributes, then the HCL blocks: the
// candidates of did-you-mean, made when one is needed.
func (ks *keySet) hclKnown() []string {
	return append(append([]string{}, ks.hclAttrs...), ks.hclBlocks...)
}

// exactlyOne declares that a block gives exactly one of keys.
func (t *table[T]) exactlyOne(keys ...string) *table[T] {
	t.oneOf = keys
	return t
}

// atLeastOne declares that a block gives at least one of its keys.
func (t *table[T]) atLeastOne() *table[T] {
	t.nonEmpty = true
	return t
}

// decode reads a block of the table's keys into t; it reports whether the
// block stands.
func (tb *table[T]) decode(v value, t *T) bool {
	return v.section(&tb.keySet, t)
}

// decodeEntry reads an item of a list of blocks into t; it reports
// whether the item is a block.
func (tb *table[T]) decodeEntry(v value, t *T) bool {
	return v.entry(&tb.keySet, t)
}

// scalar declares a key whose value is one scalar, stored as written at
// the place dst gives.
func scalar[T any](name string, k kind, doc string, dst func(*T) *str) field[T] {
	return field[T]{name: name, kind: k, doc: doc, set: func(t *T, v value) { *dst(t) = v.str(name) }}
}

// The tables, from the innermost block out.

var retryTable = newTable("retry", "How attempts are spaced out.", "retry",
	scalar("backoff", kindDuration, "Wait before the second attempt, doubled each time.",
		func(r *rawRetry) *str { return &r.backoff }).defaultIs("none (a failed session is retried at once)"),
	scalar("max_backoff", kindDuration, "The longest wait.",
		func(r *rawRetry) *str { return &r.maxBackoff }).defaultIs("none (the wait keeps doubling)"),
	scalar("jitter", kindBool, "Randomize the waits.",
		func(r *rawRetry) *str { return &r.jitter }).byDefault("false"),
)

// retryField declares the retry block of a step or of the defaults.
func retryField[T any](dst func(*T) **rawRetry) field[T] {
	return field[T]{name: "retry", kind: kindBlock, sub: retryTable, doc: "How a failed session's next attempts are spaced out.", set: func(t *T, v value) {
		r := &rawRetry{pos: v.pos()}
		if retryTable.decode(v, r) {
			*dst(t) = r
		}
	}}
}

var notifyTable = newTable("notify", "Tells people when a run needs a human or ends, without watching it: runs a command, POSTs to a webhook, or both. Also under defaults, where the workflow's keys win.", "notify",
	field[rawNotify]{name: "on", kind: kindOneOrList, elem: kindString, enum: NotifyEvents, unique: true,
		doc: "The events to tell of: waiting_on_human, failed, budget_exceeded, completed, dead.", def: "[waiting_on_human, failed, budget_exceeded]",
		set: func(n *rawNotify, v value) { n.onSet, n.onPos, n.on = true, v.keyPos(), v.list("on", true) }},
	scalar("command", kindString, "A shell command (sh -c) run in the repo directory, the notification as JSON on its stdin and in FLOW_* variables.",
		func(n *rawNotify) *str { return &n.command }),
	scalar("webhook", kindString, "A URL the notification is POSTed to as JSON that Slack-compatible incoming webhooks accept; $NAME or ${NAME} in it is read from the environment when sent, and hidden like a secret.",
		func(n *rawNotify) *str { return &n.webhook }),
	scalar("timeout", kindDuration, "How long each notifier may take, at most 5m; a notifier that fails or takes longer is a warning, never the run's failure.",
		func(n *rawNotify) *str { return &n.timeout }).byDefault("10s"),
).atLeastOne()

// notifyField declares the notify block of the workflow or of the
// defaults.
func notifyField[T any](doc string, dst func(*T) **rawNotify) field[T] {
	return field[T]{name: "notify", kind: kindBlock, sub: notifyTable, doc: doc, set: func(t *T, v value) {
		n := &rawNotify{pos: v.keyPos(), empty: v.isEmpty()}
		if notifyTable.decode(v, n) {
			*dst(t) = n
		}
	}}
}

var retentionTable = newTable("retention", "Which finished runs of the workflow flow removes when one of its runs ends, as flow prune does: completed runs only, never the run that ends, a live one or one that waits. Give keep, older_than or both (a run goes when both allow it).", "retention",
	scalar("keep", kindCount, "How many of the newest completed runs of the workflow stay, whatever their age (the run that ends is one of them).",
		func(r *rawRetention) *str { return &r.keep }).defaultIs("no limit by number"),
	scalar("older_than", kindDuration, "A completed run goes once it ended longer ago than this (e.g. 7d, 12h); newer ones stay, whatever their number.",
		func(r *rawRetention) *str { return &r.olderThan }).defaultIs("no limit by age"),
).atLeastOne()

var defaultsTable = newTable("defaults", "Values a step takes when it does not set its own.", "",
	scalar("max_attempts", kindLimit, "Sessions per iteration before a step fails.",
		func(d *rawDefaults) *str { return &d.maxAttempts }).byDefault("2"),
	scalar("max_iterations", kindLimit, "Runs of a loop-back target before the gate that sends work back to it fails its step.",
		func(d *rawDefaults) *str { return &d.maxIterations }).byDefault("4"),
	scalar("timeout", kindDuration, "Wall-clock limit of one session.",
		func(d *rawDefaults) *str { return &d.timeout }).defaultIs("none"),
	scalar("idle_timeout", kindDuration, "A session with no output for this long is stuck and is killed.",
		func(d *rawDefaults) *str { return &d.idleTimeout }).defaultIs("none"),
	scalar("sandbox", kindString, "on: sessions run sandboxed where the kernel allows it, unsandboxed with a warning where not; required: a step fails where it cannot be sandboxed; off: never sandboxed.",
		func(d *rawDefaults) *str { return &d.sandbox }).byDefault("on"),
	scalar("agent", kindString, "The agent of prompt steps that name none.",
		func(d *rawDefaults) *str { return &d.agent }).defaultIs("none (a prompt step must then name its agent)"),
	retryField(func(d *rawDefaults) **rawRetry { return &d.retry }),
	scalar("prompt_limit", kindSize, "The largest rendered prompt, and prompt_file (at most 1 GiB).",
		func(d *rawDefaults) *str { return &d.promptLimit }).byDefault("1MiB"),
	scalar("command_limit", kindSize, "The largest rendered command (at most 1 GiB).",
		func(d *rawDefaults) *str { return &d.commandLimit }).byDefault("100KiB"),
	scalar("report_limit", kindSize, "The largest session report (at most 1 GiB).",
		func(d *rawDefaults) *str { return &d.reportLimit }).byDefault("1MiB"),
	scalar("log_limit", kindSize, "The largest session log; above it the head and tail are kept (at most 64 GiB).",
		func(d *rawDefaults) *str { return &d.logLimit }).byDefault("64MiB"),
	scalar("max_items", kindCount, "The most items a for_each loop may have.",
		func(d *rawDefaults) *str { return &d.maxItems }).byDefault("10000"),
	notifyField("Notifications of every run of the workflow; the workflow's notify overrides them key by key.",
		func(d *rawDefaults) **rawNotify { return &d.notify }),
	field[rawDefaults]{name: "retention", kind: kindBlock, sub: retentionTable, doc: "Which finished runs of the workflow are removed when one of its runs ends (flow prune removes runs by hand).", def: "none: no run is removed", defWords: true,
		set: func(d *rawDefaults, v value) {
			if r := (&rawRetention{pos: v.keyPos(), empty: v.isEmpty()}); retentionTable.decode(v, r) {
				d.retention = r
			}
		}},
)

var priceTable = newTable("price", "What a preset agent's tokens cost, in USD per million (at least one key).", "",
	scalar("input_per_mtok", kindNumber, "USD per million input tokens.",
		func(p *rawPrice) *str { return &p.input }),
	scalar("output_per_mtok", kindNumber, "USD per million output tokens.",
		func(p *rawPrice) *str { return &p.output }),
	scalar("cached_per_mtok", kindNumber, "USD per million cached input tokens.",
		func(p *rawPrice) *str { return &p.cached }),
).atLeastOne()

var agentTable = newTable("agent", "How a session of an agent starts: a command of its own (run), or a coding-agent CLI flow knows (preset).", "",
	field[rawAgent]{name: "run", kind: kindTemplate, doc: "Shell command of a session; it reads the prompt from $FLOW_PROMPT or $FLOW_PROMPT_FILE. Give run or preset.",
		set: func(a *rawAgent, v value) { a.run = v.str("run") }},
	field[rawAgent]{name: "preset", kind: kindString, enum: presets,
		doc: "A tool flow starts itself, reading its final text, session id, tokens and cost: claude, codex or gemini. Give run or preset.",
		set: func(a *rawAgent, v value) { a.preset = v.str("preset") }},
	scalar("model", kindString, "The model a preset agent asks for.",
		func(a *rawAgent) *str { return &a.model }).defaultIs("the tool's own"),
	field[rawAgent]{name: "args", kind: kindList, elem: kindString, doc: "More arguments for a preset agent's tool, passed as they are.",
		set: func(a *rawAgent, v value) { a.argsPos, a.args = v.keyPos(), v.list("args", false) }},
	scalar("resume", kindBool, "A preset agent continues its conversation when a step is re-entered.",
		func(a *rawAgent) *str { return &a.resume }).byDefault("true"),
	field[rawAgent]{name: "price", kind: kindBlock, sub: priceTable, doc: "What a preset agent's tokens cost, for its sessions' cost_usd when the tool does not report it.",
		set: func(a *rawAgent, v value) {
			if p := (&rawPrice{pos: v.keyPos(), empty: v.isEmpty()}); priceTable.decode(v, p) {
				a.price = p
			}
		}},
	field[rawAgent]{name: "env", kind: kindEnv, doc: "Environment variables of the agent's sessions, added to the runner's; values are templates.",
		set: func(a *rawAgent, v value) { a.env = v.strMap("env") }},
).exactlyOne("run", "preset")

// presets are the tools an agent may name with preset:. runner/agents
// starts them; their names are written here again, rather than imported,
// because the runner depends on config and not the other way round.
var presets = []string{"claude", "codex", "gemini"}

var budgetTable = newTable("budget", "Stops the run before the next session once its sessions have used this much (each key optional, at least one).", "budget",
	scalar("cost_usd", kindPositive, "The most the sessions may cost, in USD.",
		func(b *rawBudget) *str { return &b.costUSD }),
	scalar("tokens", kindCount, "The most tokens the sessions may use, input and output together.",
		func(b *rawBudget) *str { return &b.tokens }),
	scalar("sessions", kindCount, "The most sessions that may start.",
		func(b *rawBudget) *str { return &b.sessions }),
	scalar("daily_cost_usd", kindPositive, "The workflow's budget only: the most every run of the repository may spend in a UTC day, in USD, summed in .agents/cost-ledger.json (flow run --daily-cost-limit).",
		func(b *rawBudget) *str { return &b.daily }),
).atLeastOne()

// budgetField declares the budget block of the workflow or of a step.
func budgetField[T any](doc string, dst func(*T) **rawBudget) field[T] {
	return field[T]{name: "budget", kind: kindBlock, sub: budgetTable, doc: doc, set: func(t *T, v value) {
		b := &rawBudget{pos: v.keyPos(), empty: v.isEmpty()}
		if budgetTable.decode(v, b) {
			*dst(t) = b
		}
	}}
}

var inputTable = newTable("input", "An input the human gives when approving; later steps read it as steps.<id>.input.<name>.", "input",
	field[rawInput]{name: "name", hcl: "-", kind: kindString, pattern: inputName.String(), required: true,
		doc: "The input's name: lowercase letters, digits and _, not starting with a digit.",
		set: func(in *rawInput, v value) {
			if in.name = v.str("name"); in.name.set {
				in.pos = in.name.pos()
			}
		}},
	scalar("description", kindString, "What the human is asked for, shown when flow run asks at a terminal.",
		func(in *rawInput) *str { return &in.description }),
	scalar("required", kindBool, "An approval must give it (flow approve --input name=value).",
		func(in *rawInput) *str { return &in.required }).byDefault("false"),
	scalar("default", kindString, "The value when an approval does not give it.",
		func(in *rawInput) *str { return &in.def }).defaultIs(`""`),
)

var humanTable = newTable("human", "A person decides: flow approve or flow reject, or the question flow run asks at a terminal. Beside run or a prompt, the person decides once the session has succeeded.", "",
	scalar("message", kindTemplate, "What the human is asked.",
		func(h *rawHuman) *str { return &h.message }),
	field[rawHuman]{name: "inputs", hcl: "input", kind: kindItems, sub: inputTable,
		doc: "The inputs an approval gives later steps: flow approve checks them and fills in their defaults.",
		set: func(h *rawHuman, v value) {
			v.items("inputs", func(item value) {
				if in := (&rawInput{pos: item.pos()}); inputTable.decodeEntry(item, in) {
					h.inputs = append(h.inputs, in)
				}
			})
		}},
	scalar("timeout", kindDuration, "Fail the step when nobody answers in this time.",
		func(h *rawHuman) *str { return &h.timeout }).defaultIs("none (the step waits)"),
	scalar("auto_approve", kindExpr, "Approve without asking when this is true.",
		func(h *rawHuman) *str { return &h.autoApprove }),
	scalar("any_file", kindBool, "Take a manual-input file written by hand as the decision: a JSON object with a boolean approved is honoured, any other content approves and is kept as the input (agent_orchestrator's human_in_the_loop).",
		func(h *rawHuman) *str { return &h.anyFile }).byDefault("false"),
)

var gateTable = newTable("gate", "Decides, once a step's session has succeeded, whether its work passes; when it does not, the step fails, or sends the work back to loop_back_to. Without pass, fail or check, an agent step passes only on a final PASS line (or a report with gate_failure false).", "",
	scalar("pass", kindExpr, "The gate fails when this is false.",
		func(g *rawGate) *str { return &g.pass }),
	scalar("fail", kindExpr, "The gate fails when this is true.",
		func(g *rawGate) *str { return &g.fail }),
	scalar("check", kindTemplate, "A command run first; its result is check.exit_code and check.output.",
		func(g *rawGate) *str { return &g.check }),
	scalar("loop_back_to", kindString, "The step (this one or one upstream) to run again when the gate fails.",
		func(g *rawGate) *str { return &g.loopBackTo }),
	scalar("max_iterations", kindLimit, "Runs of the loop-back target, counted on the target, before the gate fails its step (the run exits 5).",
		func(g *rawGate) *str { return &g.maxIterations }).defaultIs("the step's max_iterations, else flow run --max-iterations, else defaults.max_iterations, else 4"),
	field[rawGate]{name: "reviewers", kind: kindList, elem: kindStepID, unique: true,
		doc: "A pair review: at least two steps of the same scope whose verdicts this step decides from; the step then runs no session of its own, and needs its reviewers unless it says otherwise.",
		set: func(g *rawGate, v value) {
			g.reviewersSet, g.reviewersPos = true, v.keyPos()
			g.reviewers = v.list("reviewers", false)
		}},
	field[rawGate]{name: "consensus", kind: kindString, enum: Consensuses,
		doc: "How the reviewers' verdicts decide: all passes when every reviewer passes, any when one passes and none fails, majority when more pass than fail. MIXED counts as FAIL.", def: "all",
		set: func(g *rawGate, v value) { g.consensus = v.str("consensus") }},
)

var workspaceTable = newTable("workspace", "Where the sessions of a scope (the run, each item of a loop, a step) work: shared, the repository's checkout, or worktree, a git worktree and branch of the scope's own. Written as the word, or as a block of these keys.", "workspace",
	field[rawWorkspace]{name: "mode", kind: kindString, enum: WorkspaceModes,
		doc: "shared (the repository's checkout) or worktree.", def: "worktree",
		set: func(w *rawWorkspace, v value) { w.mode = v.str("mode") }},
	scalar("base", kindString, "The commit, branch or tag a new worktree starts from.",
		func(w *rawWorkspace) *str { return &w.base }).defaultIs("the commit the run or the loop started from, recorded"),
	scalar("root", kindString, "The directory the worktrees are made in, absolute or relative to the repository.",
		func(w *rawWorkspace) *str { return &w.root }).byDefault(".agents/worktrees/<run>"),
	field[rawWorkspace]{name: "keep", kind: kindString, enum: KeepPolicies,
		doc: "When a worktree is kept at the end of the run: never, on_failure (when its scope or the run failed) or always.", def: "on_failure",
		set: func(w *rawWorkspace, v value) { w.keep = v.str("keep") }},
	scalar("setup", kindTemplate, "A command run once in a new worktree, before its first session (installing dependencies); a template.",
		func(w *rawWorkspace) *str { return &w.setup }),
	field[rawWorkspace]{name: "copy", kind: kindList, elem: kindString, unique: true,
		doc: "Files or directories, relative to the repository, copied into a new worktree: ignored files such as .env that git does not check out.",
		set: func(w *rawWorkspace, v value) { w.copyPos, w.copy = v.keyPos(), v.list("copy", false) }},
)

// workspaceField declares the workspace key of the workflow or of a
// step: a word, or a block.
func workspaceField[T any](doc string, dst func(*T) **rawWorkspace) field[T] {
	return field[T]{name: "workspace", kind: kindWordOrBlock, sub: workspaceTable, enum: WorkspaceModes, doc: doc, set: func(t *T, v value) {
		w := &rawWorkspace{pos: v.keyPos()}
		if v.isBlock() {
			w.block = true
			if !workspaceTable.decode(v, w) {
				return
			}
		} else {
			w.mode = v.str("workspace")
		}
		*dst(t) = w
	}}
}

var mergeTable = newTable("merge", "How the work of a loop's items comes back, when each item has a worktree of its own.", "merge",
	field[rawMerge]{name: "mode", kind: kindString, enum: MergeModes,
		doc: "auto merges each item into the workspace the loop works in, one at a time in item order, once the item completed; none leaves the branches for a later step (steps.<loop>.items[i].branch).", def: "auto",
		set: func(m *rawMerge, v value) { m.mode = v.str("mode") }},
	scalar("loop_back_to", kindStepID, "A step of the loop's body that an item whose merge conflicts goes back to, with the conflict as its feedback; without it such an item fails.",
		func(m *rawMerge) *str { return &m.loopBackTo }),
	scalar("max_iterations", kindLimit, "Loop-backs of an item for conflicts before it fails.",
		func(m *rawMerge) *str { return &m.maxIterations }).defaultIs("defaults.max_iterations, else 4"),
)

var stepTable = loopKeys(newTable("step", "A step: exactly one of run, prompt or prompt_file, human, a for_each loop over items with a body of steps, or a pair review (gate.reviewers) that decides from its reviewers' verdicts.", "step",
	field[rawStep]{name: "id", hcl: "-", kind: kindStepID, required: true, doc: "The step's id, unique in the workflow.",
		set: func(s *rawStep, v value) {
			if s.id = v.str("id"); s.id.set {
				s.pos = s.id.pos()
			}
		}},
	scalar("description", kindString, "What the step does, for people.",
		func(s *rawStep) *str { return &s.more().description }),
	scalar("feedback", kindString, "append adds why a loop-back sent the step back to its prompt; none does not.",
		func(s *rawStep) *str { return &s.more().feedback }).defaultIs("append for an agent step").only(sessionStep),
	scalar("run", kindTemplate, "A command session: run with sh -c in the repo directory.",
		func(s *rawStep) *str { return &s.run }).only(sessionStep),
	scalar("prompt", kindTemplate, "An agent session with this prompt.",
		func(s *rawStep) *str { return &s.prompt }).only(sessionStep),
	scalar("prompt_file", kindString, "An agent session with the prompt in this file, relative to the workflow file.",
		func(s *rawStep) *str { return &s.more().promptFile }).only(sessionStep),
	scalar("prompt_path", kindString, "An agent session with the prompt in this file, found when the step starts (so an earlier step may write it): an absolute path, else <repo>/.agents/prompts/<its base name>, the workflow's directory, the repo.",
		func(s *rawStep) *str { return &s.more().promptPath }).only(sessionStep),
	scalar("agent", kindString, "The agent of a prompt step.",
		func(s *rawStep) *str { return &s.agent }).defaultIs("defaults.agent").only(sessionStep),
	scalar("model", kindString, "The model asked of the agent for this step: $STEP_MODEL in its session, and a preset agent's --model.",
		func(s *rawStep) *str { return &s.more().model }).only(sessionStep),
	field[rawStep]{name: "metadata", kind: kindMapping, doc: "Data about the step, for people and tools; expressions read it as steps.<id>.metadata.",
		set: func(s *rawStep, v value) {
			s.more().metadataPos = v.keyPos()
			if m, ok := v.literal("metadata"); ok {
				if mm, isMap := m.(map[string]any); isMap {
					s.metadata = mm
				} else {
					v.errorf("metadata: want a mapping")
				}
			}
		}},
	field[rawStep]{name: "external_gates", kind: kindList, elem: kindString, unique: true,
		doc: "Gates of the gate-state file (flow run --gate-state-file) that must be open before the step starts.",
		set: func(s *rawStep, v value) { s.more().gatesPos, s.gates = v.keyPos(), v.list("external_gates", false) }},
	field[rawStep]{name: "human", kind: kindBlock, sub: humanTable, doc: "A human step: waits for flow approve or flow reject.", on: sessionStep,
		set: func(s *rawStep, v value) {
			if h := (&rawHuman{pos: v.keyPos()}); humanTable.decode(v, h) {
				s.human = h
			}
		}},
	field[rawStep]{name: "needs", kind: kindOneOrList, elem: kindStepID, doc: "The steps this one depends on; [] makes it independent.", def: "the step before it", defWords: true,
		set: func(s *rawStep, v value) {
			s.needsSet, s.needsPos = true, v.keyPos()
			s.needs = v.list("needs", true)
		}},
	scalar("when", kindExpr, "Skip the step when this is false.",
		func(s *rawStep) *str { return &s.more().when }),
	field[rawStep]{name: "gate", kind: kindBlock, sub: gateTable, doc: "Decides, after the session succeeded, whether its work passes. On a for_each loop only as a pair review's (reviewers).",
		set: func(s *rawStep, v value) {
			if g := (&rawGate{pos: v.keyPos()}); gateTable.decode(v, g) {
				s.gate = g
			}
		}},
	scalar("loop_back_to", kindString, "The step to run again when the step's gate fails: a step with loop_back_to has a gate, decided as one without pass, fail or check is (the report's gate_failure, the verdict).",
		func(s *rawStep) *str { return &s.more().loopBackTo }).only(sessionStep),
	scalar("max_attempts", kindLimit, "Sessions per iteration before the step fails.",
		func(s *rawStep) *str { return &s.more().maxAttempts }).defaultIs("flow run --max-attempts, else defaults.max_attempts, else 2").only(sessionStep),
	scalar("max_iterations", kindLimit, "Runs of this step's loop-back target before its gate fails the step (the run exits 5); gate.max_iterations wins.",
		func(s *rawStep) *str { return &s.more().maxIterations }).defaultIs("flow run --max-iterations, else defaults.max_iterations, else 4"),
	retryField(func(s *rawStep) **rawRetry { return &s.more().retry }).only(sessionStep),
	scalar("retry_if", kindExpr, "Retry a failed session only when this is true (over exit_code, output, error).",
		func(s *rawStep) *str { return &s.more().retryIf }).defaultIs("true").only(sessionStep),
	scalar("timeout", kindDuration, "Wall-clock limit of one session.",
		func(s *rawStep) *str { return &s.more().timeout }).defaultIs("defaults.timeout").only(sessionStep),
	scalar("idle_timeout", kindDuration, "A session with no output for this long is stuck and is killed.",
		func(s *rawStep) *str { return &s.more().idleTimeout }).defaultIs("defaults.idle_timeout").only(sessionStep),
	scalar("sandbox", kindString, "on, required or off: whether this step's sessions run sandboxed.",
		func(s *rawStep) *str { return &s.more().sandbox }).defaultIs("defaults.sandbox, else on"),
	field[rawStep]{name: "artifacts", kind: kindList, elem: kindTemplate, doc: "Files the step produces, relative to the repo; templates.", on: sessionStep,
		set: func(s *rawStep, v value) { s.more().artifactsPos, s.artifacts = v.keyPos(), v.list("artifacts", false) }},
	field[rawStep]{name: "env", kind: kindEnv, doc: "Environment variables of the step's sessions, added to the runner's; values are templates.", on: sessionStep,
		set: func(s *rawStep, v value) { s.more().envPos, s.env = v.keyPos(), v.strMap("env") }},
	field[rawStep]{name: "for_each", kind: kindForEach, on: loopStep,
		doc: "Makes the step a loop: its body (steps) runs once per item of this list, written here or given by an expression.",
		set: func(s *rawStep, v value) {
			s.forEachSet, s.more().forEachPos = true, v.pos()
			if v.isList() {
				s.forEachList, s.forEachIsList = v.literalList("for_each"), true
				return
			}
			s.forEach = v.str("for_each")
		}},
	field[rawStep]{name: "as", kind: kindString, pattern: inputName.String(), on: loopStep, def: "item",
		doc: "The name of the item in the body's expressions and templates.",
		set: func(s *rawStep, v value) { s.more().as = v.str("as") }},
	field[rawStep]{name: "index_as", kind: kindString, pattern: inputName.String(), on: loopStep, def: "index",
		doc: "The name of the item's position, from 0, in the body's expressions and templates.",
		set: func(s *rawStep, v value) { s.more().indexAs = v.str("index_as") }},
	scalar("key", kindExpr, "An item's stable key, an expression with the item in scope.",
		func(s *rawStep) *str { return &s.more().key }).defaultIs("the item's index").only(loopStep),
	scalar("max_parallel", kindCount, "How many items of the loop run at once.",
		func(s *rawStep) *str { return &s.more().maxParallel }).byDefault("1").only(loopStep),
	scalar("max_items", kindCount, "The most items this loop may have.",
		func(s *rawStep) *str { return &s.more().maxItems }).defaultIs("defaults.max_items, else 10000").only(loopStep),
	scalar("continue_on_error", kindBool, "Run every item even when one fails; the loop still fails at the end.",
		func(s *rawStep) *str { return &s.more().continueOnError }).byDefault("false").only(loopStep),
	budgetField("The step's budget: its sessions, all attempts and iterations together (for a step of a loop's body, all its items together). Not on a human step or a for_each loop.",
		func(s *rawStep) **rawBudget { return &s.more().budget }).only(sessionStep),
	workspaceField("Where the step's sessions work: shared (the run's workspace) or worktree, a worktree and branch of the step's own, committed and merged back when it completes. On a for_each loop, each item gets its own. Not on a step of a loop's body, a human step or a pair review's decision.",
		func(s *rawStep) **rawWorkspace { return &s.more().workspace }).byDefault("shared"),
	field[rawStep]{name: "merge", kind: kindBlock, sub: mergeTable, doc: "How a for_each loop whose items have worktrees brings their work back.", on: loopStep,
		set: func(s *rawStep, v value) {
			if m := (&rawMerge{pos: v.keyPos()}); mergeTable.decode(v, m) {
				s.more().merge = m
			}
		}},
))

// loopKeys adds to the step table the body of a loop: steps, a list of
// steps (HCL step blocks inside the step), each read with the table
// itself.
func loopKeys(t *table[rawStep]) *table[rawStep] {
	t.add(field[rawStep]{name: "steps", hcl: "step", kind: kindItems, sub: t, on: loopStep,
		doc: "The body of a for_each loop: the steps run once per item, in order as at the top level.",
		set: func(s *rawStep, v value) {
			if !s.more().bodySet {
				s.bodySet, s.bodyPos = true, v.keyPos()
			}
			v.items("steps", func(item value) {
				if !s.wf.countStep(item) {
					return
				}
				if b := (&rawStep{pos: item.pos(), wf: s.wf}); t.decodeEntry(item, b) {
					s.body = append(s.body, b)
				}
			})
		}})
	return t
}

var cleanupTable = newTable("cleanup", "The session flow cleanup starts (control state run_cleanup): a command, or a prompt for an agent.", "",
	scalar("run", kindTemplate, "A command to run.",
		func(c *rawCleanup) *str { return &c.run }),
	scalar("prompt", kindTemplate, "A prompt for an agent.",
		func(c *rawCleanup) *str { return &c.prompt }),
	scalar("agent", kindString, "The agent of the prompt.",
		func(c *rawCleanup) *str { return &c.agent }).defaultIs("defaults.agent"),
)

var signalsTable = newTable("signals", "The words that, alone on a line of a session's output, set signals.DONE, signals.PASS and signals.FAIL.", "",
	scalar("done", kindString, "The word for DONE.",
		func(s *rawSignals) *str { return &s.done }).byDefault("DONE"),
	scalar("pass", kindString, "The word for PASS.",
		func(s *rawSignals) *str { return &s.pass }).byDefault("PASS"),
	scalar("fail", kindString, "The word for FAIL.",
		func(s *rawSignals) *str { return &s.fail }).byDefault("FAIL"),
)

var workflowTable = newTable("workflow", "A flow workflow: steps of agent and command sessions and human approvals, with quality gates, loop-backs and budgets.", "",
	field[rawWorkflow]{name: "name", kind: kindString, pattern: namePattern.String(), required: true,
		doc: "The workflow's name: lowercase letters, digits, _ and -, starting with a letter or digit.",
		set: func(w *rawWorkflow, v value) { w.name = v.str("name") }},
	scalar("description", kindString, "What the workflow does, for people.",
		func(w *rawWorkflow) *str { return &w.description }),
	field[rawWorkflow]{name: "compat", kind: kindString, enum: []string{CompatOrchestrator},
		doc: "agent_orchestrator: sessions get its environment (RUN_ID, PROMPT_PATH, …) and its report rules (required fields, a report printed between markers, none is a failure), as a workflow in its format does.",
		set: func(w *rawWorkflow, v value) { w.compat = v.str("compat") }},
	field[rawWorkflow]{name: "vars", kind: kindVars,
		doc: "Variables, as strings; override with `flow run --var name=value`. Read them as vars.<name> in expressions and templates.",
		set: func(w *rawWorkflow, v value) { w.vars = v.strMap("vars") }},
	field[rawWorkflow]{name: "defaults", kind: kindBlock, sub: defaultsTable, doc: "Values a step takes when it does not set its own.",
		set: func(w *rawWorkflow, v value) { defaultsTable.decode(v, &w.defaults) }},
	field[rawWorkflow]{name: "agents", hcl: "agent", kind: kindEntries, sub: agentTable, pattern: namePattern.String(),
		doc: "How a session of each agent is started.",
		set: func(w *rawWorkflow, v value) {
			v.entries("agents", func(name str, body value) {
				a := &rawAgent{name: name}
				agentTable.decode(body, a)
				w.agents = append(w.agents, a)
			})
		}},
	field[rawWorkflow]{name: "steps", hcl: "step", kind: kindItems, sub: stepTable, required: true,
		doc: "The steps, in order: a step without needs depends on the one before it.",
		set: func(w *rawWorkflow, v value) {
			v.items("steps", func(item value) {
				if !w.countStep(item) {
					return
				}
				if s := (&rawStep{pos: item.pos(), wf: w}); stepTable.decodeEntry(item, s) {
					w.steps = append(w.steps, s)
				}
			})
		}},
	scalar("max_parallel", kindCount, "How many independent ready steps run at once (a loop's items count apart: its own max_parallel).",
		func(w *rawWorkflow) *str { return &w.maxParallel }).byDefault("1"),
	field[rawWorkflow]{name: "cleanup", kind: kindBlock, sub: cleanupTable, doc: "The session that the run_cleanup control state starts.",
		set: func(w *rawWorkflow, v value) {
			if c := (&rawCleanup{pos: v.pos()}); cleanupTable.decode(v, c) {
				w.cleanup = c
			}
		}},
	field[rawWorkflow]{name: "signals", kind: kindBlock, sub: signalsTable, doc: "The words that, alone on a session's output line, set signals.",
		set: func(w *rawWorkflow, v value) { signalsTable.decode(v, &w.signals) }},
	field[rawWorkflow]{name: "secrets", kind: kindList, elem: kindString, pattern: envName.String(), unique: true,
		doc: "Environment variables whose values flow never writes or prints (replaced by ***). Names ending in _TOKEN, _KEY or _SECRET, or containing PASSWORD, are secret without being listed.",
		set: func(w *rawWorkflow, v value) { w.secrets = v.list("secrets", false) }},
	budgetField("The run's budget: every session of the run together.",
		func(w *rawWorkflow) **rawBudget { return &w.budget }),
	notifyField("Whom to tell when a run waits on a human, fails, spends its budget or completes: a command, a webhook or both.",
		func(w *rawWorkflow) **rawNotify { return &w.notify }),
	workspaceField("Where the run's sessions work: shared (the repository's checkout) or worktree, a git worktree and branch of the run's own (flow/<run>/_run), which leaves the checkout to its user.",
		func(w *rawWorkflow) **rawWorkspace { return &w.workspace }).byDefault("shared"),
)
