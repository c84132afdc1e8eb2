//go:build !unix

package eventlog

import "github.com/spf13/afero"

// osFile would hold a real file's descriptor; on this platform the log
// has no descriptor lock and always uses a writer marker.
type osFile struct{}

// lockOS reports that no descriptor lock is available here.
func lockOS(afero.File, string) (*osFile, error) { return nil, nil }

// size is never called: lockOS returns no osFile.
func (*osFile) size() (int64, error) { return 0, nil }
