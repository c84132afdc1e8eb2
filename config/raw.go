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
	cleanup     *rawCleanup
	signals     rawSignals
	secrets     []str
	// tooManySteps is set when the steps went past MaxSteps: the
	// workflow is refused, and not built, whatever else is in it.
	tooManySteps bool
}

type rawDefaults struct {
	maxAttempts   str
	maxIterations str
	timeout       str
	idleTimeout   str
	agent         str
	retry         *rawRetry
	promptLimit   str
	commandLimit  str
	reportLimit   str
	logLimit      str
}

type rawAgent struct {
	name str
	run  str
	env  []kv
}

type rawStep struct {
	id            str
	pos           Pos
	run           str
	prompt        str
	promptFile    str
	agent         str
	human         *rawHuman
	needs         []str
	needsSet      bool
	needsPos      Pos
	when          str
	gate          *rawGate
	loopBackTo    str
	maxAttempts   str
	maxIterations str
	retry         *rawRetry
	retryIf       str
	timeout       str
	idleTimeout   str
	artifacts     []str
	env           []kv
}

type rawGate struct {
	pos           Pos
	pass          str
	fail          str
	check         str
	loopBackTo    str
	maxIterations str
}

type rawHuman struct {
	pos         Pos
	message     str
	timeout     str
	autoApprove str
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

// The keys each part of a workflow may have, shared by both decoders and
// checked against the JSON Schema by a test.
var (
	workflowKeys = []string{"name", "description", "vars", "defaults", "agents", "steps", "max_parallel", "cleanup", "signals", "secrets"}
	defaultsKeys = []string{"max_attempts", "max_iterations", "timeout", "idle_timeout", "agent", "retry", "prompt_limit", "command_limit", "report_limit", "log_limit"}
	agentKeys    = []string{"run", "env"}
	stepKeys     = []string{"id", "run", "prompt", "prompt_file", "agent", "human", "needs", "when", "gate", "loop_back_to", "max_attempts", "max_iterations", "retry", "retry_if", "timeout", "idle_timeout", "artifacts", "env"}
	gateKeys     = []string{"pass", "fail", "check", "loop_back_to", "max_iterations"}
	humanKeys    = []string{"message", "timeout", "auto_approve"}
	retryKeys    = []string{"backoff", "max_backoff", "jitter"}
	cleanupKeys  = []string{"run", "prompt", "agent"}
	signalsKeys  = []string{"done", "pass", "fail"}
)
