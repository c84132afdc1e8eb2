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
// HCL twin have equal Specs and Digests. Unset budgets and durations stay
// nil in the model; the Step* methods of Workflow resolve them through
// the workflow's defaults to the seed defaults.
//
// What can go wrong: a file that cannot be read is an ordinary error
// (use errors.Is with fs.ErrNotExist); everything wrong with the
// workflow itself is a Diagnostics (use errors.As).
package config
