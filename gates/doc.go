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
// a compile error. The usage of run and of a step (run.usage,
// steps.X.usage: tokens, cost in USD, turns and sessions, UsageFields)
// is typed the same way, so that a budget condition such as
// run.usage.cost_usd < 10 compares numbers and run.usage.cost is an
// error. Step ids and var names come from the workflow and
// are passed in a Scope: steps.X and vars.X with an X the workflow does
// not declare are compile errors too, with a did-you-mean hint, and so
// is an unknown name such as signal.PASS. Only names written literally
// are checked; steps[name] with a computed name is looked up at run
// time, where a missing step reads as a zero StepInfo.
//
// now() returns Env.Now rather than the wall clock, so that evaluation
// is reproducible; expr's own now builtin is disabled. The file
// functions read Env.FS relative to Env.Dir and refuse absolute paths
// and paths that climb out with "..". They go through internal/confine
// with Env.Dir as the root: a path whose real location, symbolic links
// resolved, lies outside the repository is an error; read_file and
// read_json read regular files only (a FIFO, a device, a socket or a
// directory is refused with an error naming the path and what it is),
// never block, and refuse files over MaxReadFile (4 MiB). file_exists
// reports any kind of file, and is an error, not false, for a path
// that leads out. glob matches one path component at a time and lists
// only directories inside the repository: a pattern whose fixed
// leading directories lead out is an error, and a match whose real
// location is outside is left out, so that a link pointing out reveals
// no outside name. It reads at most MaxGlobScan directory entries and
// refuses more than MaxGlob matches.
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
// counts the elements of ranges (a..b), arrays and maps before they are
// built, and stops ranges such as map(1..100000000, # * 2) and nested
// loops early. expr's budget does not count bytes, so on top of it
// every builtin that builds a value, or walks one, in proportion to its
// arguments estimates what it is about to build and checks it against
// MaxValueSize (8 MiB) per value and MaxEvalSize (32 MiB) per
// evaluation before it runs: repeat, split, splitAfter, join, replace,
// upper, lower, toBase64, fromBase64, toJSON, fromJSON, string,
// flatten, sort, reverse, uniq, concat, keys, values, toPairs,
// fromPairs, max, min, mean and median, and + on strings, where a few
// doublings (let b = a + a; ...) would otherwise build gigabytes. What
// read_file, read_json and glob return is charged to the same budget.
// The estimates count a string by its bytes and an element of a new
// array as 16 bytes; toJSON's counts the indentation of nested values,
// and a value nested deeper than 10,000 levels counts as too large.
// The other builtins build nothing in proportion to their arguments,
// and the predicates (map, filter, groupBy, sortBy, ...) loop over an
// array already built and counted. These guards are wired in by
// rewriting the syntax tree, so the names __budget, __concat and __add
// are reserved. Going over a limit is an evaluation error, "memory
// budget exceeded", which fails the step.
//
// What the limits do not bound is time spent in a single regular
// expression match (matches) over a large string, or in uniq, which
// compares every pair of elements; Go's regexp is linear, so the first
// cost is bounded by the input size.
//
// Template.RenderLimit stops with a *TooLargeError as soon as the
// rendered text would exceed the limit it is given, without building
// the rest; the runner passes the workflow's limits (DESIGN: 1 MiB for
// a prompt, 100 KiB for a command). Template.Render uses
// DefaultRenderLimit, 16 MiB. The message of every *Error is at most
// MaxMessage (4 KiB): a longer one, such as expr's invalid operation:
// int("...") quoting a whole value, is cut to its head and tail.
//
// # Signals
//
// ParseSignals and SignalScanner find the DONE, PASS and FAIL lines of
// a session's output that feed signals and verdict. Only whole lines
// count, so prose that mentions a word does not trip a gate.
package gates
