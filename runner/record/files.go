package record

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/afero"
)

// osCreateTrunc opens a log for a new session.
const CreateTrunc = os.O_CREATE | os.O_TRUNC | os.O_WRONLY

// writeFile writes a small file that no reader depends on being whole
// (prompt and feedback files are written before their session starts).
func WriteFile(fsys afero.Fs, path string, data []byte) error {
	if err := afero.WriteFile(fsys, path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func RandRead(b []byte) (int, error) { return rand.Read(b) }

// removeStale removes the file at path if there is one: one lstat when
// there is none, as there mostly is not, where a plain Remove tries to
// unlink it and then to remove it as a directory.
func RemoveStale(fsys afero.Fs, path string) {
	if l, ok := fsys.(afero.Lstater); ok {
		if _, _, err := l.LstatIfPossible(path); errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
	_ = fsys.Remove(path)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
