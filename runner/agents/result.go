package agents

// Result is what a session's structured output said.
type Result struct {
	// Text is the session's final text: claude's `result`, codex's last
	// agent message, gemini's `response` (or its streamed assistant
	// messages), cut at MaxText bytes.
	Text      string
	SessionID string // the tool's session or thread id, to resume
	Usage     Usage  // Sessions is 1 when anything structured was seen
	// UsageCumulative says that Usage is the thread's running total
	// (codex), including the sessions this one resumed: subtract what
	// they were charged (Usage.Sub) to get this session's usage.
	UsageCumulative bool
	Failed          bool   // the tool reported an error (is_error, subtype != success, turn.failed, an error object)
	Error           string // the tool's error message, when Failed
	// ResumeRefused says that the tool refused to resume the session
	// (unknown or expired id): the caller starts a fresh session instead.
	// It is meaningful only when the invocation asked to resume.
	ResumeRefused bool
	Structured    bool  // any JSON of the tool's was seen
	Skipped       int64 // bytes dropped to bound memory: over-long lines and text beyond MaxText
}
