package gitwork

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"strings"
)

// Worktree is a working tree of a repository, as git worktree list
// gives it.
type Worktree struct {
	Path string
	// Head is the commit checked out; Branch the branch (without
	// refs/heads/), "" when the head is detached.
	Head   string
	Branch string
	// Locked is set when the worktree is locked, LockReason with why.
	Locked     bool
	LockReason string
	// Prunable is set when git would prune it (its directory is gone).
	Prunable bool
	// Main is set for the repository's main working tree.
	Main bool
}

// Worktrees lists the working trees of the repository that holds dir,
// the main one first.
func (g *Git) Worktrees(ctx context.Context, dir string) ([]Worktree, error) {
	args := []string{"worktree", "list", "--porcelain", "-z"}
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0); err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	if r.Truncated {
		return nil, fmt.Errorf("list worktrees: the list is longer than flow reads")
	}
	var out []Worktree
	var cur *Worktree
	for _, f := range strings.Split(string(r.Stdout), "\x00") {
		if f == "" {
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(f, " ")
		if key == "worktree" {
			out = append(out, Worktree{Path: val, Main: len(out) == 0})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = val
		case "branch":
			cur.Branch = strings.TrimPrefix(val, "refs/heads/")
		case "locked":
			cur.Locked, cur.LockReason = true, val
		case "prunable":
			cur.Prunable = true
		}
	}
	return out, nil
}

// find returns the worktree at path, or nil.
func find(list []Worktree, path string) *Worktree {
	for i := range list {
		if samePath(list[i].Path, path) {
			return &list[i]
		}
	}
	return nil
}

// samePath reports whether two absolute paths name one directory: as
// written, or once their links are resolved.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// Spec says which worktree Create makes: at Path (absolute), on Branch,
// which is made at Base (a commit) when it does not exist yet, and
// locked with LockReason.
type Spec struct {
	Path       string
	Branch     string
	Base       string
	LockReason string
}

// initializing is the reason git locks a worktree with while it checks
// it out: a worktree found locked so was cut short.
const initializing = "initializing"

// Created is what Create did: the worktree, and whether it was made now
// (false: found from an earlier call).
type Created struct {
	Worktree
	New bool
}

// Create makes the worktree s in the repository of repo, or finds the
// one an earlier call made: a worktree at s.Path on s.Branch is reused,
// a branch that exists is checked out rather than made again, a
// worktree whose checkout was cut short is made again. It locks the
// worktree, and initialises its submodules. A path that holds something
// else, or a worktree there on another branch, is an error.
func (g *Git) Create(ctx context.Context, repo string, s Spec) (Created, error) {
	if !filepath.IsAbs(s.Path) {
		return Created{}, fmt.Errorf("create worktree %s: the path must be absolute", s.Path)
	}
	if err := g.CheckBranch(ctx, repo, s.Branch); err != nil {
		return Created{}, fmt.Errorf("create worktree %s: %w", s.Path, err)
	}
	list, err := g.Worktrees(ctx, repo)
	if err != nil {
		return Created{}, err
	}
	if wt := find(list, s.Path); wt != nil {
		switch {
		case wt.Main:
			return Created{}, fmt.Errorf("create worktree %s: it is the repository's main working tree", s.Path)
		case wt.Prunable || wt.Locked && wt.LockReason == initializing || !g.exists(wt.Path):
			// Its directory is gone, or its checkout was cut short:
			// it is made again.
			if err := g.drop(ctx, repo, wt.Path); err != nil {
				return Created{}, err
			}
		case wt.Branch != s.Branch:
			return Created{}, fmt.Errorf("create worktree %s: a worktree is there on %s, not on %s", s.Path, describeBranch(wt.Branch), s.Branch)
		default:
			if err := g.Lock(ctx, repo, wt.Path, s.LockReason); err != nil {
				return Created{}, err
			}
			return Created{Worktree: *wt}, nil
		}
	}
	for _, wt := range list {
		if wt.Branch == s.Branch && !samePath(wt.Path, s.Path) && !wt.Prunable {
			return Created{}, fmt.Errorf("create worktree %s: branch %s is checked out in %s", s.Path, s.Branch, wt.Path)
		}
	}
	if err := g.emptyOrAbsent(s.Path); err != nil {
		return Created{}, err
	}
	head, err := g.branchCommit(ctx, repo, s.Branch)
	if err != nil {
		return Created{}, err
	}
	args := []string{"worktree", "add", "--quiet"}
	if head == "" {
		if s.Base == "" {
			return Created{}, fmt.Errorf("create worktree %s: branch %s does not exist and no base is given", s.Path, s.Branch)
		}
		args = append(args, "-b", s.Branch, "--", s.Path, s.Base)
	} else {
		args = append(args, "--", s.Path, s.Branch)
	}
	if r := g.exec(ctx, repo, nil, args...); failed(r, args, 0) != nil {
		return Created{}, fmt.Errorf("create worktree %s: %w", s.Path, failed(r, args, 0))
	}
	if err := g.Lock(ctx, repo, s.Path, s.LockReason); err != nil {
		return Created{}, err
	}
	if err := g.submodules(ctx, s.Path); err != nil {
		return Created{}, err
	}
	head, err = g.git(ctx, s.Path, "rev-parse", "HEAD")
	if err != nil {
		return Created{}, fmt.Errorf("create worktree %s: %w", s.Path, err)
	}
	return Created{Worktree: Worktree{Path: s.Path, Head: head, Branch: s.Branch, Locked: true, LockReason: s.LockReason}, New: true}, nil
}

// exists reports whether something is at path.
func (g *Git) exists(path string) bool {
	_, err := g.fs().Stat(path)
	return err == nil
}

func describeBranch(b string) string {
	if b == "" {
		return "a detached head"
	}
	return "branch " + b
}

// emptyOrAbsent refuses a path that holds anything: flow never writes
// a worktree over files it did not make.
func (g *Git) emptyOrAbsent(path string) error {
	fi, err := g.fs().Stat(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create worktree %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("create worktree %s: a file is there", path)
	}
	f, err := g.fs().Open(path)
	if err != nil {
		return fmt.Errorf("create worktree %s: %w", path, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && len(names) == 0 {
		return nil // empty
	}
	return fmt.Errorf("create worktree %s: the directory exists and is not a worktree of this repository (remove it, or give the workspace another root)", path)
}

// submodules initialises the submodules of a new worktree, when it has
// any.
func (g *Git) submodules(ctx context.Context, path string) error {
	if _, err := g.fs().Stat(filepath.Join(path, ".gitmodules")); err != nil {
		return nil
	}
	args := []string{"submodule", "update", "--init", "--recursive", "--quiet"}
	if r := g.exec(ctx, path, nil, args...); failed(r, args, 0) != nil {
		return fmt.Errorf("initialise the submodules of %s: %w", path, failed(r, args, 0))
	}
	return nil
}

// Lock locks the worktree at path with reason, so that git worktree
// prune leaves it alone; a worktree already locked stays as it is.
func (g *Git) Lock(ctx context.Context, repo, path, reason string) error {
	args := []string{"worktree", "lock"}
	if reason != "" {
		args = append(args, "--reason", reason)
	}
	args = append(args, "--", path)
	r := g.exec(ctx, repo, nil, args...)
	if r.Err == nil && r.Code != 0 && strings.Contains(string(r.Stderr), "already locked") {
		return nil
	}
	if err := failed(r, args, 0); err != nil {
		return fmt.Errorf("lock worktree %s: %w", path, err)
	}
	return nil
}

// Unlock unlocks the worktree at path; one not locked is left as it is.
func (g *Git) Unlock(ctx context.Context, repo, path string) error {
	args := []string{"worktree", "unlock", "--", path}
	r := g.exec(ctx, repo, nil, args...)
	if r.Err == nil && r.Code != 0 && strings.Contains(string(r.Stderr), "not locked") {
		return nil
	}
	if err := failed(r, args, 0); err != nil {
		return fmt.Errorf("unlock worktree %s: %w", path, err)
	}
	return nil
}

// drop removes a registered worktree whatever its state: locked,
// changed, or with its directory gone.
func (g *Git) drop(ctx context.Context, repo, path string) error {
	args := []string{"worktree", "remove", "--force", "--force", "--", path}
	r := g.exec(ctx, repo, nil, args...)
	if failed(r, args, 0) == nil {
		return nil
	}
	// A worktree whose directory is gone is pruned instead.
	if _, err := g.fs().Stat(path); errors.Is(err, iofs.ErrNotExist) {
		if err := g.Unlock(ctx, repo, path); err != nil {
			return err
		}
		pr := []string{"worktree", "prune"}
		if err := failed(g.exec(ctx, repo, nil, pr...), pr, 0); err != nil {
			return fmt.Errorf("remove worktree %s: %w", path, err)
		}
		return nil
	}
	return fmt.Errorf("remove worktree %s: %w", path, failed(r, args, 0))
}

// Remove removes the worktree at path, with what it holds, and then,
// when deleteBranch is set, its branch. A worktree or branch already
// gone is no error.
func (g *Git) Remove(ctx context.Context, repo, path, branch string, deleteBranch bool) error {
	list, err := g.Worktrees(ctx, repo)
	if err != nil {
		return err
	}
	if wt := find(list, path); wt != nil {
		if wt.Main {
			return fmt.Errorf("remove worktree %s: it is the repository's main working tree", path)
		}
		if err := g.drop(ctx, repo, wt.Path); err != nil {
			return err
		}
	}
	if !deleteBranch || branch == "" {
		return nil
	}
	head, err := g.branchCommit(ctx, repo, branch)
	if err != nil || head == "" {
		return err
	}
	args := []string{"branch", "--quiet", "-D", "--", branch}
	if err := failed(g.exec(ctx, repo, nil, args...), args, 0); err != nil {
		return fmt.Errorf("delete branch %s: %w", branch, err)
	}
	return nil
}
