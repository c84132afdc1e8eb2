package config

// The raw model is what the YAML and HCL decoders produce: every value a
// string, as written, with where it was written. build turns it into the
// Workflow, so that both formats share one set of rules and messages.

// str is a scalar value as written in the file.
type str struct {
	val string
	set bool
	// bad is true when the value was written but could not be read (a
	// list where a string belongs); it counts as given, so that no
	// second error follows from its absence, but it is not compiled.
	bad bool
	sp  span
}

func (s str) pos() Pos { return s.sp.pos() }

// ok reports whether the value was given and could be read.
func (s str) ok() bool { return s.set && !s.bad }

// kv is one entry of a map, in file order.
type kv struct {
	key    string
	keyPos Pos
	val    str
}

type rawWorkflow struct {
	src         *source
	name        str
	description str
	vars        []kv
	defaults    rawDefaults
	agents      []*rawAgent
	steps       []*rawStep
	maxParallel str
	compat      str
	cleanup     *rawCleanup
	signals     rawSignals
	secrets     []str
	budget      *rawBudget
	notify      *rawNotify
	workspace   *rawWorkspace
	// stepCount counts the steps met, decoded or not; tooManySteps is
	// set when it went past MaxSteps: the workflow is refused, and not
	// built, whatever else is in it.
	stepCount    int
	tooManySteps bool
	// orchestrator is set for a file read in agent_orchestrator's
	// format: what build does differently for it.
	orchestrator *rawOrchestrator
}

// countStep counts a step met, of the top level or of a loop's body,
// and reports whether it is to be decoded: past MaxSteps, the rest of
// the steps are left undecoded.
func (w *rawWorkflow) countStep(item value) bool {
	if w.stepCount++; w.stepCount > MaxSteps {
		if w.stepCount == MaxSteps+1 {
			item.errorf("too many steps: a workflow has at most %d", MaxSteps)
			w.tooManySteps = true
		}
		return false
	}
	return true
}

type rawDefaults struct {
	maxAttempts   str
	maxIterations str
	timeout       str
	idleTimeout   str
	sandbox       str
	agent         str
	retry         *rawRetry
	promptLimit   str
	commandLimit  str
	reportLimit   str
	logLimit      str
	maxItems      str
	notify        *rawNotify
	retention     *rawRetention
}

// rawRetention is defaults.retention; empty is set when it is written
// without a key.
type rawRetention struct {
	pos       Pos
	empty     bool
	keep      str
	olderThan str
}

type rawAgent struct {
	name    str
	run     str
	preset  str
	model   str
	args    []str
	argsPos Pos
	resume  str
	price   *rawPrice
	env     []kv
}

// rawPrice and rawBudget are blocks that must not be empty: empty is
// set when one is written without a key.
type rawPrice struct {
	pos    Pos
	empty  bool
	input  str
	output str
	cached str
}

type rawBudget struct {
	pos      Pos
	empty    bool
	costUSD  str
	tokens   str
	sessions str
	daily    str
}

// rawNotify is a notify block, of the workflow or of its defaults; empty
// is set when one is written without a key.
type rawNotify struct {
	pos     Pos
	empty   bool
	on      []str
	onSet   bool
	onPos   Pos
	command str
	webhook str
	timeout str
}

type rawStep struct {
	id       str
	pos      Pos
	run      str
	prompt   str
	agent    str
	needs    []str
	needsSet bool
	needsPos Pos
	// human and gate are blocks: a pointer each, which many steps give.
	human *rawHuman
	gate  *rawGate
	// orch holds the keys of agent_orchestrator's format flow's has
	// not, for a step read in it; nil otherwise.
	orch *rawOrchStep

	// wf is the workflow the step is in, which counts its steps.
	wf *rawWorkflow
	// forEachSet is whether for_each was written: the step is a loop,
	// whose body holds the steps of its body.
	forEachSet bool
	body       []*rawStep

	// The keys most steps do not write are apart, allocated by the first
	// one written (more), so that a file of many plain steps does not
	// hold a kilobyte and a half of empty keys for each while it loads.
	// build gives every step its own before it reads them.
	*rawStepMore
}

// rawStepMore holds the keys of a step that most steps leave out.
type rawStepMore struct {
	description   str
	feedback      str
	promptFile    str
	when          str
	loopBackTo    str
	maxAttempts   str
	maxIterations str
	retry         *rawRetry
	retryIf       str
	timeout       str
	idleTimeout   str
	sandbox       str
	artifacts     []str
	artifactsPos  Pos
	env           []kv
	envPos        Pos
	budget        *rawBudget
	promptPath    str
	model         str
	metadata      map[string]any
	metadataPos   Pos
	gates         []str
	gatesPos      Pos
	maxItems      str
	workspace     *rawWorkspace
	merge         *rawMerge

	// The keys of a for_each loop. forEach is the expression, or
	// forEachList the list written in the file when forEachIsList;
	// forEachPos is where either is written.
	forEach         str
	forEachList     []any
	forEachIsList   bool
	forEachPos      Pos
	as              str
	indexAs         str
	key             str
	maxParallel     str
	continueOnError str
	// bodySet is whether steps was written at all, and bodyPos where.
	bodySet bool
	bodyPos Pos

	// kinded are the keys written that belong on one kind of step
	// only, in the order written.
	kinded []placedKey
}

// placed keeps where a key that belongs on one kind of step was
// written.
func (s *rawStep) placed(k placedKey) { s.more().kinded = append(s.more().kinded, k) }

// more returns the step's rarely written keys, allocating them the
// first time.
func (s *rawStep) more() *rawStepMore {
	if s.rawStepMore == nil {
		s.rawStepMore = &rawStepMore{}
	}
	return s.rawStepMore
}

type rawGate struct {
	pos           Pos
	pass          str
	fail          str
	check         str
	loopBackTo    str
	maxIterations str
	// reviewers are the steps of a pair review, reviewersSet whether
	// reviewers was written at all (an empty list makes a consensus
	// step too), and reviewersPos where.
	reviewers    []str
	reviewersSet bool
	reviewersPos Pos
	consensus    str
}

type rawHuman struct {
	pos         Pos
	message     str
	timeout     str
	autoApprove str
	anyFile     str
	inputs      []*rawInput
}

type rawInput struct {
	pos         Pos
	name        str
	description str
	required    str
	def         str
}

type rawRetry struct {
	pos        Pos
	backoff    str
	maxBackoff str
	jitter     str
}

type rawCleanup struct {
	pos    Pos
	run    str
	prompt str
	agent  str
}

type rawSignals struct {
	done str
	pass str
	fail str
}

// rawWorkspace is a workspace: written as a word (mode) or, when
// block is set, as a block of its keys.
type rawWorkspace struct {
	pos     Pos
	block   bool
	mode    str
	base    str
	root    str
	keep    str
	setup   str
	copy    []str
	copyPos Pos
}

// rawMerge is the merge block of a loop.
type rawMerge struct {
	pos           Pos
	mode          str
	loopBackTo    str
	maxIterations str
}
