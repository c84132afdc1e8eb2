package ops

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// Limits of an archive ImportRun accepts.
const (
	// MaxImportBytes bounds the uncompressed size of an imported run.
	MaxImportBytes int64 = 1 << 30
	// MaxImportEntries bounds the number of entries of an imported run.
	MaxImportEntries = 100_000
)

// ExportRun writes run id of repo ("" for the Service's directory; the
// newest run when id is "") to w as a gzip-compressed tar: every
// directory and regular file of the run directory, except its lock,
// named <id>/... . The archive carries the run's record only, not the
// repository. It returns the id of the run exported.
func (s *Service) ExportRun(repo, id string, w io.Writer) (string, error) {
	_, ref, err := s.openRun(repo, id)
	if err != nil {
		return "", err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = afero.Walk(s.FS, ref.Dir, func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(ref.Dir, p)
		if err != nil {
			return err
		}
		if rel == record.LockFile || atomicfile.IsTemp(p) {
			return nil
		}
		name := ref.ID
		if rel != "." {
			name = ref.ID + "/" + filepath.ToSlash(rel)
		}
		switch {
		case fi.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: fi.ModTime()})
		case fi.Mode().IsRegular():
			return exportFile(s.FS, tw, p, name, fi)
		}
		// Symbolic links and special files are not part of a run.
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		return "", fmt.Errorf("export run %s: %w", ref.ID, err)
	}
	return ref.ID, nil
}

// exportFile writes one regular file to tw: as many bytes as it had
// when it was listed, so that a log still being written is cut where
// its header says.
func exportFile(fsys afero.Fs, tw *tar.Writer, p, name string, fi fs.FileInfo) error {
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}

// ExportRunFile writes ExportRun's archive to the file out (relative to
// the Service's directory) atomically: a reader sees no archive or the
// whole one.
func (s *Service) ExportRunFile(repo, id, out string) (string, error) {
	dst, err := s.abs(out)
	if err != nil {
		return "", Usage("-o %s: %v", out, err)
	}
	f, err := afero.TempFile(s.FS, filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("export to %s: %w", out, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = s.FS.Remove(tmp)
		}
	}()
	runID, err := s.ExportRun(repo, id, f)
	if err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("export to %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("export to %s: %w", out, err)
	}
	if err := s.FS.Rename(tmp, dst); err != nil {
		_ = s.FS.Remove(tmp)
		ok = true
		return "", fmt.Errorf("export to %s: %w", out, err)
	}
	ok = true
	return runID, nil
}

// ImportRequest asks for an archive written by ExportRun to become a
// run of a repository.
type ImportRequest struct {
	// Repo is the repository; "" is the Service's directory.
	Repo string
	// Archive is the gzip-compressed tar.
	Archive io.Reader
	// Force replaces a run with the same id.
	Force bool
}

// ImportRun extracts an archive written by ExportRun into
// <repo>/.agents/runs/<id>/ and returns the id. The archive is refused
// (ExitUsage, nothing written) unless every entry is a directory or a
// regular file under one top directory that is a valid run id, with no
// absolute name and no "..", at most MaxImportEntries entries and
// MaxImportBytes bytes, and it holds a run's record. A run id that
// exists is refused without Force; with Force it is replaced, unless a
// live runner holds it (ExitHeld). The run is extracted beside its
// place and renamed into it, so that readers never see half a run. An
// imported run is re-rooted into the repository on its next resume.
func (s *Service) ImportRun(req ImportRequest) (string, error) {
	repo, err := s.Repo(req.Repo)
	if err != nil {
		return "", err
	}
	runs := record.RunsDir(repo)
	if err := s.FS.MkdirAll(runs, 0o755); err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	tmp, err := afero.TempDir(s.FS, runs, ".import-")
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = s.FS.RemoveAll(tmp)
		}
	}()
	id, err := s.extract(req.Archive, tmp)
	if err != nil {
		return "", err
	}
	// The archive is checked as a runner checks a run it takes over:
	// every event replayed, and the snapshot compared with the replay.
	// A log that does not replay, or a snapshot that says otherwise
	// (edited in the archive), is refused: a run's readers trust its
	// snapshot.
	_, disagrees, err := record.LoadState(s.FS, filepath.Join(tmp, id), true, s.clock().Now())
	switch {
	case err != nil:
		return "", Usage("import: the archive holds no readable run %s: %v", id, err)
	case disagrees:
		return "", Usage("import: the archive's %s of run %s does not agree with its %s (edited or damaged): not imported", record.StateFile, id, record.EventsFile)
	}
	target := record.RunDir(repo, id)
	_, statErr := s.FS.Stat(target)
	exists := statErr == nil
	if exists && !req.Force {
		return "", Usage("import: run %s already exists in %s; pass --force to replace it", id, runs)
	}
	var old string
	if exists {
		if h, err := runlock.Read(s.FS, filepath.Join(target, record.LockFile)); err == nil && s.alive()(h) {
			return "", &ExitError{Code: ExitHeld,
				Err: fmt.Errorf("import: run %s is held by a live runner (pid %d on %s); it is not replaced", id, h.PID, h.Host)}
		}
		// A runner may hold it without a lock file to show (deleted by
		// hand): a run still running with a fresh heartbeat has one.
		if st, _, err := record.LoadState(s.FS, target, false, s.clock().Now()); err == nil && st.Status == core.RunRunning && st.Runner != nil && st.Runner.HeartbeatAt != nil {
			if age := s.clock().Now().Sub(st.Runner.HeartbeatAt.Time); age < 3*record.HeartbeatInterval {
				return "", &ExitError{Code: ExitHeld,
					Err: fmt.Errorf("import: run %s has a runner that beat %s ago (pid %d on %s); it is not replaced", id, age.Round(time.Second), st.Runner.PID, st.Runner.Host)}
			}
		}
		old = filepath.Join(tmp, ".replaced")
		if err := s.FS.Rename(target, old); err != nil {
			return "", fmt.Errorf("import: set run %s aside: %w", id, err)
		}
	}
	if err := s.FS.Rename(filepath.Join(tmp, id), target); err != nil {
		if old != "" {
			_ = s.FS.Rename(old, target)
		}
		return "", fmt.Errorf("import run %s: %w", id, err)
	}
	_ = s.FS.RemoveAll(tmp)
	done = true
	return id, nil
}

// extract writes the entries of a gzip tar under dir, checking each one
// before it is written, and returns the archive's run id.
func (s *Service) extract(r io.Reader, dir string) (string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return "", Usage("import: not a gzip archive: %v", err)
	}
	tr := tar.NewReader(gz)
	id := ""
	entries := 0
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", Usage("import: not a tar archive: %v", err)
		}
		entries++
		if entries > MaxImportEntries {
			return "", Usage("import: the archive has more than %d entries", MaxImportEntries)
		}
		top, rel, err := entryName(h.Name)
		if err != nil {
			return "", err
		}
		if id == "" {
			id = top
		} else if top != id {
			return "", Usage("import: entry %q is outside %s/: an archive holds one run", h.Name, id)
		}
		dst := filepath.Join(dir, id, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := s.FS.MkdirAll(dst, 0o755); err != nil {
				return "", fmt.Errorf("import: %w", err)
			}
		case tar.TypeReg, tar.TypeRegA:
			if h.Size < 0 || h.Size > MaxImportBytes-total {
				return "", Usage("import: the archive holds more than %d bytes", MaxImportBytes)
			}
			total += h.Size
			if rel == record.LockFile {
				continue
			}
			if err := s.extractFile(tr, dst, h.Size); err != nil {
				return "", err
			}
		default:
			return "", Usage("import: entry %q is a %s; a run holds only directories and regular files", h.Name, kindOf(h.Typeflag))
		}
	}
	if id == "" {
		return "", Usage("import: the archive is empty")
	}
	return id, nil
}

// extractFile writes size bytes of r to the new file dst.
func (s *Service) extractFile(r io.Reader, dst string, size int64) error {
	if err := s.FS.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	f, err := s.FS.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	_, err = io.CopyN(f, r, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Usage("import: %s: %v", dst, err)
	}
	return nil
}

// entryName splits an archive entry's name into its top directory, which
// must be a valid run id, and the rest, refusing absolute names, ".."
// and anything that is not plainly under the top directory.
func entryName(name string) (top, rel string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", Usage("import: entry %q: %s", name, why)
	}
	switch {
	case name == "":
		return bad("empty name")
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
		return bad("absolute name")
	case strings.ContainsAny(name, "\\\x00"):
		return bad("backslash or NUL in the name")
	}
	for _, el := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if el == ".." {
			return bad(`".." in the name`)
		}
	}
	clean := path.Clean(name)
	top, rel, _ = strings.Cut(clean, "/")
	if err := record.CheckRunID(top); err != nil {
		return bad(fmt.Sprintf("not under a run id directory: %v", err))
	}
	if rel == "" {
		rel = "."
	}
	return top, rel, nil
}

// kindOf names a tar entry type.
func kindOf(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", t)
}
