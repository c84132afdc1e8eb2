package gitwork

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// MergeStatus is how a merge ended.
type MergeStatus string

// The ends of a merge.
const (
	// Merged: the target holds the branch's work (New), merged now or
	// before (Already).
	Merged MergeStatus = "merged"
	// Conflict: the two sides change the same lines; nothing was
	// changed, and Conflicts says where.
	Conflict MergeStatus = "conflict"
	// Refused: git would not merge into the checkout (local changes in
	// the way, another branch checked out, a merge of its own in
	// progress); nothing was changed, and Reason says why.
	Refused MergeStatus = "refused"
)

// Merge is the result of a merge.
type Merge struct {
	Status MergeStatus
	// Old and New are the target's commit before and after; equal when
	// nothing was merged.
	Old, New string
	// Already is set when the branch had been merged before.
	Already   bool
	Conflicts *Conflicts
	Reason    string
}

// Conflicts says where a merge conflicts: the files, git's messages,
// and the conflicting hunks of each file with a few lines around them,
// as the two sides wrote them between conflict markers. Messages and
// Hunks are bounded (maxConflictText).
type Conflicts struct {
	Files    []string
	Messages string
	Hunks    string
}

// String is the conflict as evidence for a person or an agent.
func (c *Conflicts) String() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "conflicting files: %s\n", strings.Join(c.Files, ", "))
	if c.Messages != "" {
		b.WriteString("\n" + c.Messages + "\n")
	}
	if c.Hunks != "" {
		b.WriteString("\n" + c.Hunks)
	}
	return b.String()
}

// The bounds of a conflict's description: files named, and bytes of
// messages and of hunks.
const (
	maxConflictFiles = 20
	maxConflictText  = 16 << 10
	hunkContext      = 3
)

// MergeSpec says what to merge: the branch (or commit) From into the
// branch Into, with Message as the merge commit's message. For
// MergeBranch, Checkout is the working tree that has Into checked out,
// brought up to date after the branch moves ("" for none). For
// MergeCheckout, Into is the branch the checkout must be on ("" for
// whichever).
type MergeSpec struct {
	Into, From string
	Message    string
	Checkout   string
}

// MergeBranch merges From into the branch Into without a working tree:
// the merged tree is written by git merge-tree --write-tree, committed
// by commit-tree with Into's commit and From's as parents, and Into is
// moved with update-ref NEW OLD, so that a kill leaves it at the old
// commit or the new one. A conflict changes nothing. When Into is
// checked out in spec.Checkout, that working tree is then brought to
// the new commit (git read-tree -m -u OLD NEW), keeping changes of its
// own that do not touch the merged files. Run again after a kill, it
// finds From merged and only brings the working tree up to date.
func (g *Git) MergeBranch(ctx context.Context, repo string, spec MergeSpec) (Merge, error) {
	fail := func(err error) (Merge, error) {
		return Merge{}, fmt.Errorf("merge %s into %s: %w", spec.From, spec.Into, err)
	}
	old, err := g.branchCommit(ctx, repo, spec.Into)
	if err != nil {
		return fail(err)
	}
	if old == "" {
		return fail(fmt.Errorf("no branch %s", spec.Into))
	}
	from, err := g.Resolve(ctx, repo, spec.From)
	if err != nil {
		return fail(err)
	}
	if done, err := g.isAncestor(ctx, repo, from, old); err != nil {
		return fail(err)
	} else if done {
		if spec.Checkout != "" {
			if err := g.catchUp(ctx, spec.Checkout, old); err != nil {
				return fail(err)
			}
		}
		return Merge{Status: Merged, Old: old, New: old, Already: true}, nil
	}
	tree, c, err := g.mergeTree(ctx, repo, old, from, spec.Into, spec.From)
	if err != nil {
		return fail(err)
	}
	if c != nil {
		return Merge{Status: Conflict, Old: old, New: old, Conflicts: c}, nil
	}
	ct := append(g.identity(), "commit-tree", tree, "-p", old, "-p", from, "-m", spec.Message)
	commit, err := g.git(ctx, repo, ct...)
	if err != nil {
		return fail(err)
	}
	if _, err := g.git(ctx, repo, "update-ref", "-m", "flow: "+firstLine(spec.Message), "refs/heads/"+spec.Into, commit, old); err != nil {
		return fail(err)
	}
	if spec.Checkout != "" {
		if err := g.sync(ctx, spec.Checkout, old, commit); err != nil {
			return fail(err)
		}
	}
	return Merge{Status: Merged, Old: old, New: commit}, nil
}

// catchUp brings a working tree whose branch a merge moved to head
// from head's first parent, when its index is still there (a kill came
// between update-ref and the checkout).
func (g *Git) catchUp(ctx context.Context, dir, head string) error {
	parent, err := g.git(ctx, dir, "rev-parse", "--verify", "--quiet", head+"^1")
	if err != nil {
		return nil // a root commit: nothing merged into it
	}
	return g.sync(ctx, dir, parent, head)
}

// sync brings the index and files of the working tree at dir from
// commit old to commit new (its branch has moved from one to the
// other), keeping changes of its own; an index already at new is left.
func (g *Git) sync(ctx context.Context, dir, old, new string) error {
	if _, err := g.git(ctx, dir, "update-index", "-q", "--refresh"); err != nil {
		// Not up to date is what read-tree checks again below.
		var e *Error
		if !asError(err, &e) || e.Code != 1 {
			return fmt.Errorf("bring %s up to date: %w", dir, err)
		}
	}
	idx, err := g.git(ctx, dir, "write-tree")
	if err != nil {
		return fmt.Errorf("bring %s up to date: %w", dir, err)
	}
	trees, err := g.git(ctx, dir, "rev-parse", old+"^{tree}", new+"^{tree}")
	if err != nil {
		return fmt.Errorf("bring %s up to date: %w", dir, err)
	}
	t := strings.Fields(trees)
	switch {
	case len(t) != 2:
		return fmt.Errorf("bring %s up to date: unexpected output of git rev-parse", dir)
	case idx == t[1]:
		return nil
	case idx != t[0]:
		return fmt.Errorf("bring %s up to date: its index holds changes of its own; its branch moved to %s (git read-tree -m -u %s %s brings it there)", dir, short(new), short(old), short(new))
	}
	if _, err := g.git(ctx, dir, "read-tree", "-m", "-u", old, new); err != nil {
		return fmt.Errorf("bring %s up to date: its branch moved to %s but its files could not follow: %w", dir, short(new), err)
	}
	return nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// mergeTree merges commits ours and theirs (named oursName and
// theirsName in conflict markers) with git merge-tree --write-tree: the
// tree of the merge, or its conflicts.
func (g *Git) mergeTree(ctx context.Context, repo, ours, theirs, oursName, theirsName string) (string, *Conflicts, error) {
	// The names label the conflict markers: each side is given as the
	// name when it still names the commit resolved, else as the commit.
	label := func(name, commit string) string {
		if name != "" {
			if c, err := g.Resolve(ctx, repo, name); err == nil && c == commit {
				return name
			}
		}
		return commit
	}
	args := []string{"merge-tree", "--write-tree", "--name-only", "-z", "--", label(oursName, ours), label(theirsName, theirs)}
	r := g.exec(ctx, repo, nil, args...)
	if err := failed(r, args, 0, 1); err != nil {
		return "", nil, err
	}
	fields := strings.Split(string(r.Stdout), "\x00")
	tree := fields[0]
	if tree == "" {
		return "", nil, fmt.Errorf("git merge-tree gave no tree")
	}
	if r.Code == 0 {
		return tree, nil, nil
	}
	c := &Conflicts{}
	i := 1
	for ; i < len(fields) && fields[i] != ""; i++ {
		if len(c.Files) < maxConflictFiles && (len(c.Files) == 0 || c.Files[len(c.Files)-1] != fields[i]) {
			c.Files = append(c.Files, fields[i])
		}
	}
	// The messages: <count> NUL <paths...> NUL <type> NUL <message> NUL.
	var msgs []string
	for i++; i < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+n+2 >= len(fields) {
			break
		}
		i += 1 + n
		msgs = append(msgs, strings.TrimSpace(fields[i+1]))
		i += 2
	}
	c.Messages = bound(strings.Join(msgs, "\n"), maxConflictText)
	c.Hunks = g.treeHunks(ctx, repo, tree, c.Files)
	return "", c, nil
}

// treeHunks reads the conflicting hunks of files from a tree that
// merge-tree wrote with conflict markers.
func (g *Git) treeHunks(ctx context.Context, repo, tree string, files []string) string {
	var b strings.Builder
	for _, f := range files {
		if b.Len() >= maxConflictText {
			break
		}
		r := g.exec(ctx, repo, nil, "cat-file", "blob", tree+":"+f)
		if r.Err != nil || r.Code != 0 {
			continue
		}
		b.WriteString(hunks(f, string(r.Stdout)))
	}
	return bound(b.String(), maxConflictText)
}

// hunks returns the regions of a file between conflict markers, each
// with hunkContext lines before and after and its line numbers.
func hunks(file, text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "<<<<<<<") {
			continue
		}
		end := i
		for end < len(lines) && !strings.HasPrefix(lines[end], ">>>>>>>") {
			end++
		}
		from, to := max(i-hunkContext, 0), min(end+hunkContext, len(lines)-1)
		fmt.Fprintf(&b, "--- %s, lines %d-%d\n", file, from+1, to+1)
		for _, l := range lines[from : to+1] {
			b.WriteString(l + "\n")
		}
		i = end
	}
	return b.String()
}

// bound cuts s to at most n bytes, at a line, saying so.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + "[… cut]\n"
}

// MergeCheckout merges From into the working tree at dir, with git's
// own merge (a merge commit, even when a fast-forward would do): what
// a shared checkout gets, where the user may have changes of their own.
// When git would not merge — the checkout is not on spec.Into, local
// changes or untracked files are in the way, a merge or another
// operation of the user's is in progress — the result is Refused with
// git's reason, and nothing is changed. A conflict is found with git
// merge-tree first and reported without touching the checkout. A merge
// of From that a kill cut short (MERGE_HEAD is From) is aborted and
// made again; From merged already is Merged with Already.
func (g *Git) MergeCheckout(ctx context.Context, dir string, spec MergeSpec) (Merge, error) {
	fail := func(err error) (Merge, error) {
		return Merge{}, fmt.Errorf("merge %s into the checkout %s: %w", spec.From, dir, err)
	}
	from, err := g.Resolve(ctx, dir, spec.From)
	if err != nil {
		return fail(err)
	}
	sr := g.exec(ctx, dir, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if sr.Err != nil {
		return fail(sr.Err)
	}
	if sr.Code != 0 {
		return Merge{Status: Refused, Reason: "the checkout's head is detached"}, nil
	}
	branch := strings.TrimSpace(string(sr.Stdout))
	if spec.Into != "" && branch != spec.Into {
		return Merge{Status: Refused, Reason: fmt.Sprintf("the checkout is on branch %s, not on %s, which the run merges into", branch, spec.Into)}, nil
	}
	if m, err := g.merging(ctx, dir); err != nil {
		return fail(err)
	} else if m != "" {
		if m != from {
			return Merge{Status: Refused, Reason: "a merge is in progress in the checkout (git merge --continue or --abort ends it)"}, nil
		}
		// A merge of ours that a kill cut short.
		if _, err := g.git(ctx, dir, "merge", "--abort"); err != nil {
			return fail(err)
		}
	}
	old, err := g.git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return fail(err)
	}
	if done, err := g.isAncestor(ctx, dir, from, old); err != nil {
		return fail(err)
	} else if done {
		return Merge{Status: Merged, Old: old, New: old, Already: true}, nil
	}
	if _, c, err := g.mergeTree(ctx, dir, old, from, branch, spec.From); err != nil {
		return fail(err)
	} else if c != nil {
		return Merge{Status: Conflict, Old: old, New: old, Conflicts: c}, nil
	}
	args := append(g.identity(), "merge", "--no-ff", "--no-edit", "--no-verify", "--quiet", "-m", spec.Message, from)
	r := g.exec(ctx, dir, nil, args...)
	if r.Err != nil {
		return fail(failed(r, args))
	}
	if r.Code == 0 {
		head, err := g.git(ctx, dir, "rev-parse", "HEAD")
		if err != nil {
			return fail(err)
		}
		return Merge{Status: Merged, Old: old, New: head}, nil
	}
	if m, _ := g.merging(ctx, dir); m != "" {
		// Conflicts merge-tree did not foresee: the checkout is put back.
		if _, err := g.git(ctx, dir, "merge", "--abort"); err != nil {
			return fail(err)
		}
		return Merge{Status: Conflict, Old: old, New: old, Conflicts: &Conflicts{Messages: bound(tail(string(r.Stdout)+"\n"+string(r.Stderr), 40), maxConflictText)}}, nil
	}
	reason := tail(string(r.Stderr)+"\n"+string(r.Stdout), 20)
	if reason == "" {
		reason = fmt.Sprintf("git merge exited %d", r.Code)
	}
	return Merge{Status: Refused, Old: old, New: old, Reason: reason}, nil
}

// MergeInto merges From into the worktree at dir, leaving conflict
// markers in its files when the two conflict (git merge, which keeps
// the merge in progress for the next commit to conclude): how the work
// of the scope it merges into reaches a scope sent back to resolve a
// conflict. A merge already in progress there is left as it is.
func (g *Git) MergeInto(ctx context.Context, dir string, spec MergeSpec) (Merge, error) {
	fail := func(err error) (Merge, error) {
		return Merge{}, fmt.Errorf("merge %s into %s: %w", spec.From, dir, err)
	}
	from, err := g.Resolve(ctx, dir, spec.From)
	if err != nil {
		return fail(err)
	}
	old, err := g.git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return fail(err)
	}
	if m, err := g.merging(ctx, dir); err != nil {
		return fail(err)
	} else if m != "" {
		return Merge{Status: Conflict, Old: old, New: old, Conflicts: g.unmerged(ctx, dir)}, nil
	}
	if done, err := g.isAncestor(ctx, dir, from, old); err != nil {
		return fail(err)
	} else if done {
		return Merge{Status: Merged, Old: old, New: old, Already: true}, nil
	}
	args := append(g.identity(), "merge", "--no-ff", "--no-edit", "--no-verify", "--quiet", "-m", spec.Message, spec.From)
	r := g.exec(ctx, dir, nil, args...)
	if r.Err != nil {
		return fail(failed(r, args))
	}
	if r.Code == 0 {
		head, err := g.git(ctx, dir, "rev-parse", "HEAD")
		if err != nil {
			return fail(err)
		}
		return Merge{Status: Merged, Old: old, New: head}, nil
	}
	if m, _ := g.merging(ctx, dir); m != "" {
		return Merge{Status: Conflict, Old: old, New: old, Conflicts: g.unmerged(ctx, dir)}, nil
	}
	return fail(failed(r, args))
}

// unmerged describes the conflicts of a merge in progress in dir.
func (g *Git) unmerged(ctx context.Context, dir string) *Conflicts {
	c := &Conflicts{}
	r := g.exec(ctx, dir, nil, "diff", "--name-only", "--diff-filter=U", "-z")
	for _, f := range strings.Split(string(r.Stdout), "\x00") {
		if f != "" && len(c.Files) < maxConflictFiles {
			c.Files = append(c.Files, f)
		}
	}
	var b strings.Builder
	for _, f := range c.Files {
		if b.Len() >= maxConflictText {
			break
		}
		data, err := readBounded(g.fs(), filepath.Join(dir, filepath.FromSlash(f)), maxConflictText)
		if err == nil {
			b.WriteString(hunks(f, string(data)))
		}
	}
	c.Hunks = bound(b.String(), maxConflictText)
	return c
}
