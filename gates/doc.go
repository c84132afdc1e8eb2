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
// counts the elements of the arrays and maps it builds, such as the
// result of map(1..100000, # * 2). expr's budget does not count bytes,
// so on top of it every builtin that builds a value, or walks one, in
// proportion to its arguments estimates what it is about to build and
// checks it against MaxValueSize (8 MiB) per value and MaxEvalSize (32
// MiB) per evaluation before it runs: repeat, split, splitAfter, join,
// replace, upper, lower, toBase64, fromBase64, toJSON, fromJSON,
// string, flatten, sort, reverse, uniq, concat, keys, values, toPairs,
// fromPairs, max, min, mean and median, ranges (a..b, 8 bytes an
// element) and + on strings, where a few doublings (let b = a + a;
// ...) would otherwise build gigabytes. What read_file, read_json and
// glob return is charged to the same budget. The estimates count a
// string by its bytes and an element of a new array as 16 bytes;
// toJSON's counts the indentation of nested values, and a value nested
// deeper than 10,000 levels counts as too large. Going over a limit is
// an evaluation error, "memory budget exceeded", which fails the step.
//
// Memory is not the only thing an expression can exhaust: loops nest,
// and a comparison or a match can cost as much as its operands are
// long, so that a few bytes of source, such as
// let a = 1..999999; all(a, all(a, true)), would run for hours. Every
// evaluation therefore counts its work in steps and stops, with the
// error "expression does too much work: more than 5000000 steps"
// positioned at the operation that went over, once it has done more
// than MaxSteps. A step is an iteration of a loop (all, any, none, one,
// filter, map, count, sum, find and its variants, groupBy, sortBy,
// reduce: charged for the whole array when the loop starts, whether it
// ends early or not), an element of a range, an element a builtin
// builds, sorts or compares (sort and median count n log n
// comparisons, uniq a comparison of each element with every one
// before it), an element of a value that
// == or in compares in depth (values that share parts, as
// reduce(1..60, [#acc, #acc], []) builds, count once per reference),
// 64 bytes of a string that an operator or builtin scans in a loop's
// body (==, <, contains, startsWith, endsWith, in, a map lookup, len,
// indexOf, trim, ...; outside loops each runs once and the size of
// values bounds it), a thousand per call of a file function, or, for
// matches, a byte of input times a part of the pattern (a pattern that
// is a plain string costs a step per 64 bytes). The steps are counted
// from the values, never from a clock: an expression evaluated again
// over the same environment, after a crash or on another machine,
// stops at the same point with the same error. The parts of a
// template share one budget. These counters are wired in by rewriting
// the syntax tree after its type check (see workPatcher); the calls
// they add carry the position of what they count. The names __budget,
// __concat, __add, __each, __range, __scan, __sortKey, __deep, __in and
// __match are reserved.
//
// The patterns of matches are bounded before they are compiled, since
// Go compiles a regular expression into a program as large as the
// pattern with its repetitions expanded: (a{1000}) repeated 3000 times,
// 27 KB of pattern, takes 1.4 GB and seconds to compile. A pattern
// must be at most MaxPattern (4 KiB) long and MaxPatternSize (2000)
// parts large, counting each character, class, operator and group as
// a part and x{n,m} as m copies of x, so that nested repetitions
// multiply. A pattern written in the expression is checked, and
// compiled, once when the expression is; one built at run time is
// checked and compiled when it is matched, and kept for the rest of
// the evaluation (up to 16 of them), so that a pattern matched in a
// loop is compiled once; its compilation costs steps too.
//
// Template.RenderLimit stops with a *TooLargeError as soon as the
// rendered text would exceed the limit it is given, without building
// the rest; the runner passes the workflow's limits (docs/reference/limits.md: 1 MiB for
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
