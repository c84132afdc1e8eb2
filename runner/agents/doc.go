// Package agents knows the headless interfaces of the agent CLIs that
// flow's presets drive (docs/agents.md): how to start a session of a preset
// (Command), and what the tool's structured output says at the end
// (Parser, Result), including what the session consumed (Usage) and what
// that cost (Price).
//
// The package does no process or file I/O: Command builds a shell
// command line and the Parser reads bytes handed to it. The runner
// starts the process, feeds its output to a Parser and decides what the
// Result means for the step.
//
// # Versions
//
// The shapes follow the tools' documentation as of 2025–2026:
//
//   - Claude Code: `claude -p --output-format json` (one result object)
//     and `--output-format stream-json --verbose` (JSON Lines ending in
//     the same result object); `--resume <session_id>`. Both
//     `total_cost_usd` (current) and `cost_usd` (older write-ups) are
//     read. With --verbose, some versions print the json format as an
//     array of messages; an array is read element by element.
//   - Codex CLI: `codex exec --json` (JSON Lines: thread.started,
//     turn.*, item.*, error) and `codex exec resume <thread_id>`. Both the
//     current item field `type`/`agent_message` and the older
//     `item_type`/`assistant_message` are read.
//   - Gemini CLI: `gemini -p --output-format json` (one object, usually
//     pretty-printed over many lines) and `--output-format stream-json`
//     (init, message, tool_use, tool_result, error, result).
//
// # What is uncertain
//
//   - Codex's turn.completed usage is, in the versions examined, the
//     thread's running total (openai/codex#17539, #16212): a resumed
//     session reports its predecessors' tokens too. The parser keeps the
//     last snapshot rather than summing, and marks the Result
//     UsageCumulative so that the caller can subtract what it recorded
//     for the earlier sessions of the thread (Usage.Sub).
//   - Gemini CLI's --resume takes "latest", an index or (in recent
//     versions) a session UUID; older versions have no --resume at all.
//     A refusal, including "unknown argument", is reported as
//     ResumeRefused so the caller can start fresh with the full prompt.
//   - The wording of "unknown session" errors is not documented by any
//     of the tools; it is matched leniently (see resumeRefusal).
//   - The prompt is passed as one argument, so it is subject to the
//     system's per-argument limit (128 KiB on Linux), and a prompt
//     starting with "-" may be read as an option by the tool.
//
// # What can go wrong
//
// Output is read leniently: unknown fields are ignored, missing ones
// tolerated, and lines that are not the tool's JSON (stderr noise,
// progress) skipped. Memory is bounded: a line, or a multi-line JSON
// value, longer than MaxLine is counted in Result.Skipped and dropped,
// and the final text is cut at MaxText. A dropped over-long line can
// lose the session id or usage it carried.
package agents
