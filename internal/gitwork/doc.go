// Package gitwork performs the git operations of flow's workspaces: it
// creates, locks and removes git worktrees, commits what was left in
// one, and merges a branch into another — into a branch that no working
// tree has to hold (git merge-tree --write-tree, commit-tree,
// update-ref), or into a checkout through git's own merge, which
// refuses to touch local changes.
//
// Every git command goes through an injected Runner (Exec runs the git
// binary; tests may wrap it to stop between two commands), always with
// hooks and the file-system monitor off (-c core.hooksPath=/dev/null
// -c core.fsmonitor=false), signing and automatic gc off, and with its
// output bounded: a repository's hooks are code a workflow did not ask
// to run, and a command's output is never held whole when it is large.
//
// Each operation is idempotent, so that a process killed between two of
// its commands and started again ends where one run would have ended:
//
//   - Create finds a worktree already added at its path (and reuses it),
//     a branch already made (and checks it out), or a worktree whose
//     checkout was cut short (git leaves it locked "initializing"; it is
//     removed and made again).
//   - Commit stages everything and commits once; run again it finds
//     nothing to commit and returns the commit already made.
//   - MergeBranch moves the target branch with update-ref NEW OLD, so
//     that a kill leaves the old commit or the new one, never a half
//     merge; run again it finds the branch merged and only brings the
//     working tree that holds the target up to date.
//   - MergeCheckout aborts a merge of the same branch that a kill cut
//     short and merges again; a merge the user began is not touched.
//
// What can go wrong: a checkout with local changes in the way (a
// Refused result with git's reason, never an error), a conflict (a
// Conflict result with its files and hunks), a tree that still holds
// conflict markers (MarkersError), a path that exists and is no
// worktree of the repository, a branch name git's ref rules refuse
// (CheckBranch), and a worktree's files changed while its branch is
// moved (the working tree is then left for a person to bring up to
// date, and the error says so).
package gitwork
