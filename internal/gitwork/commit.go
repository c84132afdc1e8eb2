package gitwork

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// MarkersError is a tree that still holds conflict markers: Commit
// refuses it, naming the files and lines.
type MarkersError struct {
	// Where lists "file:line" of each marker found, the first of them.
	Where []string
}

func (e *MarkersError) Error() string {
	return "conflict markers remain: " + strings.Join(e.Where, ", ")
}

// maxMarkers is how many places a MarkersError names.
const maxMarkers = 20

// Committed is what Commit did: the commit the worktree's branch is at,
// and whether Commit made it (false: there was nothing to commit).
type Committed struct {
	Commit string
	Made   bool
}

// Commit commits everything the worktree at dir holds that its head
// does not — changes, new files not ignored, deletions — with message,
// as flow's identity. A merge left unfinished in the worktree (its
// conflicts resolved) is concluded by the commit. A tree whose changes
// still hold conflict markers is refused with a *MarkersError, and
// nothing is committed. Run again after a kill, it finds the commit
// made and makes none.
func (g *Git) Commit(ctx context.Context, dir, message string) (Committed, error) {
	if _, err := g.git(ctx, dir, "add", "--all"); err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	}
	if where, err := g.markers(ctx, dir); err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	} else if len(where) > 0 {
		return Committed{}, &MarkersError{Where: where}
	}
	merging, err := g.merging(ctx, dir)
	if err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	}
	args := []string{"diff", "--cached", "--quiet", "HEAD", "--"}
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0, 1); err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	}
	if r.Code == 0 && merging == "" {
		head, err := g.git(ctx, dir, "rev-parse", "HEAD")
		if err != nil {
			return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
		}
		return Committed{Commit: head}, nil
	}
	commit := append(g.identity(), "commit", "--quiet", "--no-verify", "--allow-empty", "--cleanup=verbatim", "-m", message)
	if err := failed(g.exec(ctx, dir, nil, commit...), commit, 0); err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	}
	head, err := g.git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return Committed{}, fmt.Errorf("commit in %s: %w", dir, err)
	}
	return Committed{Commit: head, Made: true}, nil
}

// markers returns where the staged changes of dir add conflict markers
// ("file:line"), from git diff --check.
func (g *Git) markers(ctx context.Context, dir string) ([]string, error) {
	args := []string{"diff", "--cached", "--check", "--no-color", "HEAD", "--"}
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0, 2); err != nil {
		return nil, err
	}
	// Each problem is a line "file:line: what". A line of seven '='
	// alone is also a markdown heading's underline: only the lines
	// that open and close a conflict count, read from the index.
	var where []string
	staged := map[string][]string{}
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		at, ok := strings.CutSuffix(line, ": leftover conflict marker")
		if !ok || len(where) >= maxMarkers {
			continue
		}
		i := strings.LastIndexByte(at, ':')
		n, err := strconv.Atoi(at[i+1:])
		if i < 0 || err != nil {
			continue
		}
		file := at[:i]
		text, ok := staged[file]
		if !ok {
			blob := g.exec(ctx, dir, nil, "cat-file", "blob", ":"+file)
			if blob.Err != nil {
				return nil, blob.Err
			}
			text = strings.Split(string(blob.Stdout), "\n")
			staged[file] = text
		}
		if n >= 1 && n <= len(text) && (strings.HasPrefix(text[n-1], "<<<<<<<") || strings.HasPrefix(text[n-1], ">>>>>>>")) {
			where = append(where, at)
		}
	}
	return where, nil
}

// merging returns the commit a merge in progress in dir merges
// (MERGE_HEAD), or "".
func (g *Git) merging(ctx context.Context, dir string) (string, error) {
	r := g.exec(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "MERGE_HEAD")
	if r.Err != nil {
		return "", r.Err
	}
	if r.Code != 0 {
		return "", nil
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// Clean reports whether the working tree at dir has nothing to commit
// (no change, no untracked file that is not ignored) and no merge in
// progress.
func (g *Git) Clean(ctx context.Context, dir string) (bool, error) {
	out, err := g.git(ctx, dir, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", dir, err)
	}
	m, err := g.merging(ctx, dir)
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", dir, err)
	}
	return out == "" && m == "", nil
}

// CurrentBranch returns the branch checked out in the working tree at
// dir; a detached head is an error.
func (g *Git) CurrentBranch(ctx context.Context, dir string) (string, error) {
	r := g.exec(ctx, dir, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if r.Err != nil {
		return "", fmt.Errorf("branch of %s: %w", dir, r.Err)
	}
	if r.Code != 0 {
		return "", fmt.Errorf("branch of %s: the head is detached", dir)
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// AbortMerge aborts a merge in progress in the working tree at dir,
// putting its files back as they were before it; with none in
// progress it does nothing.
func (g *Git) AbortMerge(ctx context.Context, dir string) error {
	m, err := g.merging(ctx, dir)
	if err != nil {
		return fmt.Errorf("abort the merge in %s: %w", dir, err)
	}
	if m == "" {
		return nil
	}
	if _, err := g.git(ctx, dir, "merge", "--abort"); err != nil {
		return fmt.Errorf("abort the merge in %s: %w", dir, err)
	}
	return nil
}
