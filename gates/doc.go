// Package gates is the expression language of flow workflows.
//
// The values of when, gate.pass, gate.fail, retry_if and
// human.auto_approve are expressions in the expr language
// (github.com/expr-lang/expr); strings such as prompt, run and
// human.message are templates whose {{ expr }} parts are expressions.
// Both are compiled once, when the workflow loads, by Compile and
// CompileTemplate, and evaluated many times, by Program.Eval,
// Program.EvalBool and Template.Render, against an Env describing the
// run so far. A workflow with many expressions compiles them through
// one Compiler, which builds the expr configuration and indexes the
// scope once rather than for every expression.
//
// # The environment
//
// Expressions see vars, env, run, steps, exit_code, output, signals,
// verdict, metrics, report, attempt, iteration, error, feedback and
// check (Names lists them), and the functions file_exists, read_file,
// read_json, glob and now. The environment is typed: steps is a map of
// StepInfo whose fields (StepFields) are known, so a misspelt field is
// a compile error. Step ids and var names come from the workflow and
// are passed in a Scope: steps.X and vars.X with an X the workflow does
// not declare are compile errors too, with a did-you-mean hint, and so
// is an unknown name such as signal.PASS. Only names written literally
// are checked; steps[name] with a computed name is looked up at run
// time, where a missing step reads as a zero StepInfo.
//
// now() returns Env.Now rather than the wall clock, so that evaluation
// is reproducible; expr's own now builtin is disabled. The file
// functions read Env.FS relative to Env.Dir and refuse absolute paths
// and paths that climb out with "..". They do not resolve symbolic
// links, so on an OS file system a link inside the repository can
// still lead outside it; read_file and read_json refuse files over
// MaxReadFile, and glob refuses more than MaxGlob matches.
//
// # Positions
//
// Every error of this package is an *Error with a 1-based Line and Col
// (Col counts runes) and a 0-based byte Offset into the source as
// given; for a template, into the whole template string. expr locates
// tokens by rune index, which is converted here, so multi-byte
// characters before an error do not shift it. Messages carry no source
// snippet: the caller prints the line and a caret.
//
// # Limits
//
// Workflow files may come from anywhere, and an expression must not
// hang or exhaust the runner. Compile refuses expressions of more than
// MaxNodes syntax nodes. Evaluation runs with expr's MemoryBudget, which
// stops ranges such as map(1..100000000, # * 2) and nested loops early.
// On top of it, strings built with + and the values passed to the
// builtins whose cost grows with nested values (toJSON, string,
// flatten, join, replace, max, min, mean, median) are bounded by
// MaxValueSize each and MaxEvalSize per evaluation: expr's budget does
// not count bytes, and a few doublings (let b = a + a; ...) would
// otherwise build gigabytes. These guards are wired in by rewriting
// the syntax tree, so the names __budget, __concat and __add are
// reserved. What the limits do not bound is time spent in a single
// regular expression match (matches) over a large string; Go's regexp
// is linear, so that cost is bounded by the input size.
//
// # Signals
//
// ParseSignals and SignalScanner find the DONE, PASS and FAIL lines of
// a session's output that feed signals and verdict. Only whole lines
// count, so prose that mentions a word does not trip a gate.
package gates
