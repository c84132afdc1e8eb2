package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Arg is the hidden first argument that makes flow's executable the
// launcher: Main runs the launcher when it finds Arg in os.Args[1].
const Arg = "__flow-sandbox"

// ExitSetup is the exit status of a launcher that could not set up the
// sandbox; it writes why to its standard error ("flow: sandbox: ...")
// and runs nothing.
const ExitSetup = 125

// ExitCannotRun and ExitNotFound are the exit statuses of a launcher
// that set up the sandbox but could not execute the command, as a shell
// reports them: 127 when the program does not exist, 126 otherwise.
const (
	ExitCannotRun = 126
	ExitNotFound  = 127
)

// AgentsDir is the directory of a repository that holds flow's state,
// which Spec always makes read-only.
const AgentsDir = ".agents"

// Spec describes the confinement of one session.
type Spec struct {
	// Repo is the repository, an absolute path. Its AgentsDir is made
	// read-only; it is the working directory when Dir is empty.
	Repo string `json:"repo"`
	// ReadOnly lists further absolute paths that are made read-only.
	ReadOnly []string `json:"read_only,omitempty"`
	// Writable lists absolute paths that are bound back read-write,
	// typically beneath AgentsDir: the session's own directory, an
	// artifacts directory, the worktree the session works in. Each
	// must exist, as a directory or a regular file, and not be a
	// symbolic link.
	Writable []string `json:"writable,omitempty"`
	// Dir is the session's working directory, an absolute path; empty
	// means Repo. It is entered after the mounts, so that a Dir beneath
	// a read-only path is read-only too.
	Dir string `json:"dir,omitempty"`
	// PIDNamespace runs the session in a PID namespace of its own,
	// under the launcher as its process 1: when the launcher dies, for
	// whatever reason, every process of the session dies with it.
	PIDNamespace bool `json:"pid_namespace,omitempty"`
}

// Validate reports the first thing wrong with s: a path that is empty,
// relative or not clean.
func (s Spec) Validate() error {
	if s.Repo == "" {
		return errors.New("sandbox: no repository")
	}
	check := func(what, p string) error {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox: %s %q is not an absolute path", what, p)
		}
		if filepath.Clean(p) != p {
			return fmt.Errorf("sandbox: %s %q is not a clean path (%q)", what, p, filepath.Clean(p))
		}
		return nil
	}
	if err := check("repository", s.Repo); err != nil {
		return err
	}
	for _, p := range s.ReadOnly {
		if err := check("read-only path", p); err != nil {
			return err
		}
	}
	for _, p := range s.Writable {
		if err := check("writable path", p); err != nil {
			return err
		}
	}
	if s.Dir != "" {
		if err := check("working directory", s.Dir); err != nil {
			return err
		}
	}
	return nil
}

// workDir returns the session's working directory.
func (s Spec) workDir() string {
	if s.Dir != "" {
		return s.Dir
	}
	return s.Repo
}

// mountKind says what a bind mount does to access.
type mountKind int

const (
	// pin only makes the directory a mount point, which cannot be
	// renamed or removed; its access does not change.
	pin mountKind = iota
	readOnly
	writable
)

// mount is one bind mount the launcher makes: path onto itself.
type mount struct {
	path string
	kind mountKind
}

// mounts returns the bind mounts that realise s, shallowest first, so
// that a path beneath another is mounted on top of it and keeps its own
// access whichever of the two is read-only. A path listed both ways is
// read-only. Every directory above a read-only path, up to but not
// including the root, is pinned: were the session able to rename the
// repository (or a directory above it) and put another in its place,
// whoever went on to use the old path would find a directory of the
// session's making.
func (s Spec) mounts() []mount {
	ro := append([]string{filepath.Join(s.Repo, AgentsDir)}, s.ReadOnly...)
	kinds := make(map[string]mountKind, len(ro)+len(s.Writable))
	var order []string
	add := func(p string, k mountKind) {
		old, ok := kinds[p]
		if !ok {
			order = append(order, p)
		}
		if !ok || k > old {
			kinds[p] = k
		}
	}
	for _, p := range ro {
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			add(d, pin)
		}
	}
	for _, p := range ro {
		add(p, readOnly)
	}
	for _, p := range s.Writable {
		switch {
		case kinds[p] == readOnly:
		case beneathAny(p, ro):
			add(p, writable)
		default:
			// Writable already, or made read-only by someone else:
			// the sandbox grants no access the caller does not have.
			add(p, pin)
		}
	}
	ms := make([]mount, len(order))
	for i, p := range order {
		ms[i] = mount{path: p, kind: kinds[p]}
	}
	sort.SliceStable(ms, func(i, j int) bool { return depth(ms[i].path) < depth(ms[j].path) })
	return ms
}

// beneathAny reports whether p lies strictly beneath one of dirs.
func beneathAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "/" && p != "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// depth counts the components of a clean absolute path.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// encode returns s as the launcher's argument.
func (s Spec) encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("sandbox: encode spec: %w", err)
	}
	return string(b), nil
}

// decodeSpec reads a Spec written by encode and validates it.
func decodeSpec(arg string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(arg), &s); err != nil {
		return Spec{}, fmt.Errorf("decode spec: %w", err)
	}
	return s, s.Validate()
}
