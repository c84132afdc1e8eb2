// Package config decodes workflow files, written in YAML or HCL, into one
// validated model: a Workflow whose steps, gates, loop-backs, limits and
// human steps the runner interprets.
//
// Load reads a file through an afero.Fs, decodes it keeping the position
// of every value, compiles every expression and template with the gates
// package, and validates the whole: names and ids, step kinds,
// references to steps and agents, the dependency graph, loop-back
// targets, durations and limits. It does not stop at the first mistake:
// an invalid workflow yields Diagnostics, every problem found, each with
// the file, line and column it was made at. An error inside an expression
// or a template points at the offending character inside the YAML or HCL
// string, whatever the quoting style it was written in.
//
// The two formats decode into the same model, so a YAML workflow and its
// HCL twin have equal Specs and Digests. Each key is declared once, in
// the tables of keys.go: both decoders, the unknown-key check with its
// did-you-mean, and the JSON Schema (Schema) are driven by them. Unset budgets and durations stay
// nil in the model; the Step* methods of Workflow resolve them through
// the workflow's defaults to flow's own defaults.
//
// An agent is a command (run:) or a preset (preset: claude, codex or
// gemini, with model, args, resume and price), exactly one; the keys of a
// preset are errors on a command. A budget (cost_usd, tokens, sessions:
// positive, at least one) bounds the whole run (Workflow.Budget) or one
// step's sessions (Step.Budget), never a human or a for_each loop step.
// The model only records them: the runner starts presets and keeps to
// budgets. Expressions read what sessions consumed as run.usage and
// steps.<id>.usage (gates.Usage).
//
// notify: (of the workflow, or of its defaults, the workflow's keys
// winning) gives a command, a webhook or both, the events told of (on:,
// checked with a did-you-mean) and a timeout; Workflow.Notify holds the
// merged block. A webhook written as a URL must be http or https; one
// that reads $NAME or ${NAME} is checked when sent, and the variables it
// reads join Workflow.Secrets. internal/notify sends.
//
// Everything the loader reads is bounded. The workflow file is opened
// without blocking and must be a regular file of at most
// MaxWorkflowSize bytes, in UTF-8, holding one YAML document; at most
// MaxSteps steps are decoded, and a step id has at most MaxStepIDLen
// characters. A list written in the file holds at most 1,048,576
// values, YAML aliases expanded. An HCL file nests brackets, strings,
// interpolations and template directives at most 1000 levels deep (its
// parser would overflow its stack). An HCL value is evaluated without
// variables or functions, but its for expressions and %{for}
// directives repeat their bodies once per element, nested loops
// multiplying: before a value with loops is evaluated, its syntax alone
// bounds how many times they could run their bodies, at most 10,000 in
// all, and how large they could make it, at most 1 MiB, and a value
// beyond either is refused where its loops are (hclbound.go). An HCL
// number beyond float64's range is read as it is written, never written
// out in all its digits. A prompt_file is read through
// internal/confine: its real path, symlinks resolved, must lie inside
// the workflow file's directory tree or the repository named in Options
// (LoadWith), and it must be a regular file no larger than the prompt
// limit. The sizes a run keeps to (Limits) and the secret variables it
// must never write (Secrets, IsSecretName) are part of the model; the
// runner enforces them.
//
// What can go wrong: a file that cannot be read, or that is a FIFO, a
// device or a directory, is an ordinary error (use errors.Is with
// fs.ErrNotExist, errors.As with *confine.NotRegularError); everything
// wrong with the workflow itself, its size included, is a Diagnostics
// (use errors.As).
package config
