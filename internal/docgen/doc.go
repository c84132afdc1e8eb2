// Package docgen writes the references of docs/reference from the code
// they describe: the command line's, in Markdown and as man pages, from
// the cobra command tree (github.com/spf13/cobra/doc), beside the
// workflow file's, which config.Reference writes from the key table.
//
// The files are made in memory, so that a test can compare them with
// the ones in the repository and fail when they differ: the references
// cannot drift from the code. cmd/flow's TestReference does that, and
// rewrites them with -update, which go generate ./... runs. The package
// is linked only into that test, never into flow.
//
// What can go wrong: a help text that depends on the machine (a flag
// whose default is read from the environment, the date) would make the
// files differ from one machine to the next; the man pages carry no date
// for that reason, and the test generates them under two environments.
package docgen
