package atomicfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// tempMarker separates a target's name from the random suffix of its
// temporary files.
const tempMarker = ".tmp-"

// WriteFile writes data to name so that no reader ever sees a torn file.
// It writes a temporary file in the same directory (name + ".tmp-" + a
// random suffix) with permissions perm, syncs and closes it, renames it
// over name and then, best effort, syncs the directory. On any failure
// the temporary file is removed and the old file is untouched.
func WriteFile(fs afero.Fs, name string, data []byte, perm os.FileMode) (err error) {
	return write(fs, name, data, perm, syncAll)
}

// Replace is WriteFile without the syncs: readers still never see a torn
// file, but after a crash of the machine the file may hold its old
// content. It suits files derived from others (a summary, a copy), whose
// loss costs nothing.
func Replace(fs afero.Fs, name string, data []byte, perm os.FileMode) error {
	return write(fs, name, data, perm, syncNone)
}

// Swap is WriteFile without the directory's sync: the new content is
// synced before the rename, so that the name holds the old file or the
// new one and never an empty one, but after a crash of the machine the
// rename may be undone. It suits a writer that rewrites a file others
// made durable with what it reports of itself, whose loss leaves the
// file as they wrote it.
func Swap(fs afero.Fs, name string, data []byte, perm os.FileMode) error {
	return write(fs, name, data, perm, syncData)
}

// ReplaceWith is Replace with the content written by write, through a
// buffer, instead of held in memory whole: for large files written
// often. An error from write fails the replacement like any other.
func ReplaceWith(fs afero.Fs, name string, perm os.FileMode, write func(io.Writer) error) error {
	return writeWith(fs, name, perm, syncNone, buffered(write))
}

// buffered returns write writing through a buffer.
func buffered(write func(io.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
}

// syncs says what a replacement syncs.
type syncs int

const (
	syncNone syncs = iota // nothing
	syncData              // the new content, before the rename
	syncAll               // the new content, and the directory after the rename
)

func write(fs afero.Fs, name string, data []byte, perm os.FileMode, sync syncs) error {
	return writeWith(fs, name, perm, sync, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func writeWith(fs afero.Fs, name string, perm os.FileMode, sync syncs, write func(io.Writer) error) (err error) {
	tmp, f, err := createTemp(fs, name, perm)
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			if f != nil {
				_ = f.Close()
			}
			_ = fs.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if sync >= syncData {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	err = f.Close()
	f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = fs.Rename(tmp, name); err != nil {
		return fmt.Errorf("replace %s: %w", name, err)
	}
	if sync == syncAll {
		syncDir(fs, filepath.Dir(name))
	}
	return nil
}

// createTemp creates a new, exclusive temporary file beside name.
func createTemp(fs afero.Fs, name string, perm os.FileMode) (string, afero.File, error) {
	var b [8]byte
	for range 10 {
		if _, err := rand.Read(b[:]); err != nil {
			return "", nil, err
		}
		tmp := name + tempMarker + hex.EncodeToString(b[:])
		f, err := fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return tmp, f, nil
	}
	return "", nil, fmt.Errorf("no unused temporary name beside %s", name)
}

// syncDir makes a completed rename durable. It is best effort: errors
// are ignored because not every file system can sync a directory.
func syncDir(fs afero.Fs, dir string) {
	d, err := fs.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// IsTemp reports whether path names a temporary file left by WriteFile,
// for example by a process killed before its rename.
func IsTemp(path string) bool {
	base := filepath.Base(path)
	i := strings.LastIndex(base, tempMarker)
	if i <= 0 {
		return false
	}
	suffix := base[i+len(tempMarker):]
	if len(suffix) != 16 {
		return false
	}
	_, err := hex.DecodeString(suffix)
	return err == nil
}
