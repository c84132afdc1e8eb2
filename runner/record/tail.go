package record

import (
	"github.com/spf13/afero"
)

// ReadTail returns the last n bytes of a file, or "" when it cannot be read.
func ReadTail(fsys afero.Fs, path string, n int64) string {
	tail, _ := ReadTailSize(fsys, path, n)
	return tail
}

// ReadTailSize is ReadTail, with the size of the file the tail ends: a
// file that grows while it is read gives the end of what it held when
// it was opened, and that size, so that a reader who compares two tails
// by their sizes sees each byte once.
func ReadTailSize(fsys afero.Fs, path string, n int64) (string, int64) {
	f, err := fsys.Open(path)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0
	}
	size := fi.Size()
	off := max(size-n, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && len(buf) > 0 {
		return "", 0
	}
	return string(buf), size
}
