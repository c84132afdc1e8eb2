package gitwork

import (
	"context"
	"fmt"
	"strings"
)

// Branch is a branch of a repository and the commit it points at.
type Branch struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

// Branches lists the branches of dir's repository under prefix — a
// path of branch names such as "flow" or "flow/r1", whose branches
// are "flow/…" and "flow/r1/…" — sorted by name. A repository
// without such branches has none.
func (g *Git) Branches(ctx context.Context, dir, prefix string) ([]Branch, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" || strings.HasPrefix(prefix, "-") {
		return nil, fmt.Errorf("list branches: the prefix %q names no branches", prefix)
	}
	args := []string{"for-each-ref", "--format=%(refname:lstrip=2)%00%(objectname)", "--sort=refname", "refs/heads/" + prefix + "/"}
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0); err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	if r.Truncated {
		return nil, fmt.Errorf("list branches: the list is longer than flow reads")
	}
	var out []Branch
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		name, commit, ok := strings.Cut(line, "\x00")
		if ok && name != "" {
			out = append(out, Branch{Name: name, Commit: commit})
		}
	}
	return out, nil
}

// DeleteBranch deletes a branch of dir's repository, whatever it holds.
// A branch already gone is no error; one checked out in a working tree
// is (git refuses to delete it).
func (g *Git) DeleteBranch(ctx context.Context, dir, name string) error {
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("delete branch %q: not a branch name", name)
	}
	head, err := g.branchCommit(ctx, dir, name)
	if err != nil || head == "" {
		return err
	}
	args := []string{"branch", "--quiet", "-D", "--", name}
	if err := failed(g.exec(ctx, dir, nil, args...), args, 0); err != nil {
		return fmt.Errorf("delete branch %s: %w", name, err)
	}
	return nil
}
