package gitwork

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

func asError(err error, target **Error) bool { return errors.As(err, target) }

// readBounded reads at most n bytes of the regular file at path,
// refusing a link or anything else.
func readBounded(fsys afero.Fs, path string, n int64) ([]byte, error) {
	if l, ok := fsys.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(path)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", path)
		}
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// IgnoreFile is the .gitignore flow keeps in a repository's .agents/
// directory, and IgnoreLines what it lists: the run records, the
// worktrees, the cost ledger and the history of runs, which are flow's
// state, and the file itself, so that a run leaves git status as it
// found it (git add -f adds it). A repository's .agents/prompts/ are its
// own files, and are never listed.
const IgnoreFile = ".agents/.gitignore"

// IgnoreLines are the lines of IgnoreFile, each a path under .agents/.
var IgnoreLines = []string{"runs/", "worktrees/", "cost-ledger.json", "cost-ledger.lock", "history.jsonl", ".gitignore"}

// EnsureIgnore makes <repo>/.agents/.gitignore list IgnoreLines: it
// writes the file when there is none, and adds the lines it lacks to
// one there, leaving the rest as it is.
func EnsureIgnore(fsys afero.Fs, repo string) error {
	path := filepath.Join(repo, filepath.FromSlash(IgnoreFile))
	if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	old, err := readBounded(fsys, path, 1<<20)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range IgnoreLines {
		if !have[l] && !have["/"+l] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return nil
	}
	text := string(old)
	if len(old) == 0 {
		text = "# flow's state: run records, worktrees, cost ledger, history (written by flow)\n"
	} else if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += strings.Join(add, "\n") + "\n"
	if err := afero.WriteFile(fsys, path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CopyIn copies the files (or directories, recursively) named by paths,
// relative to from, to the same places under to: ignored files such as
// .env that a new worktree does not get from git. A path that is
// absolute or leaves from is refused; one that does not exist is
// skipped; links are copied as the links they are, never followed.
func CopyIn(fsys afero.Fs, from, to string, paths []string) error {
	if filepath.Clean(from) == filepath.Clean(to) {
		return nil
	}
	for _, p := range paths {
		clean := filepath.Clean(filepath.FromSlash(p))
		if filepath.IsAbs(clean) || !filepath.IsLocal(clean) {
			return fmt.Errorf("copy %s: the path must lie inside the repository", p)
		}
		if err := copyTree(fsys, filepath.Join(from, clean), filepath.Join(to, clean)); err != nil {
			return fmt.Errorf("copy %s: %w", p, err)
		}
	}
	return nil
}

func copyTree(fsys afero.Fs, src, dst string) error {
	var fi os.FileInfo
	var err error
	if l, ok := fsys.(afero.Lstater); ok {
		fi, _, err = l.LstatIfPossible(src)
	} else {
		fi, err = fsys.Stat(src)
	}
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		lr, ok := fsys.(afero.LinkReader)
		ls, ok2 := fsys.(afero.Linker)
		if !ok || !ok2 {
			return nil
		}
		target, err := lr.ReadlinkIfPossible(src)
		if err != nil {
			return err
		}
		if err := fsys.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		_ = fsys.Remove(dst)
		return ls.SymlinkIfPossible(target, dst)
	case fi.IsDir():
		if err := fsys.MkdirAll(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		f, err := fsys.Open(src)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyTree(fsys, filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		if err := fsys.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		in, err := fsys.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := fsys.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	return nil // a device, a FIFO: never copied
}
