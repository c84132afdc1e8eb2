package temporal

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
)

// staleStat is a file system whose Stat of a path says what the file
// held a moment before (empty), as when a session writes its log between
// a look at its size and the read of its end.
type staleStat struct{ afero.Fs }

func (s staleStat) Stat(name string) (os.FileInfo, error) {
	fi, err := s.Fs.Stat(name)
	if err != nil {
		return nil, err
	}
	return emptyInfo{fi}, nil
}

type emptyInfo struct{ os.FileInfo }

func (emptyInfo) Size() int64 { return 0 }

// TestTailSizeIsTheTails: a beat's size is the size the tail it carries
// ends at, so that flow logs --follow, which prints what two beats'
// sizes differ by, prints each byte once.
func TestTailSizeIsTheTails(t *testing.T) {
	fsys := staleStat{afero.NewMemMapFs()}
	if err := afero.WriteFile(fsys, "/log", []byte("line 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Runner: &local.Runner{FS: fsys}, Host: "w"}
	got := a.tail(core.StartSession{Step: keytest.K("s"), Iteration: 0, Attempt: 1}, "/log")
	if got.Tail != "line 1\n" || got.Size != int64(len(got.Tail)) {
		t.Errorf("tail %q of size %d", got.Tail, got.Size)
	}
	big := strings.Repeat("x", TailBytes) + "end\n"
	if err := afero.WriteFile(fsys, "/log", []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := a.tail(core.StartSession{Step: keytest.K("s")}, "/log"); len(got.Tail) != TailBytes || got.Size != int64(len(big)) || !strings.HasSuffix(got.Tail, "end\n") {
		t.Errorf("tail of a long log: %d bytes of %d", len(got.Tail), got.Size)
	}
	if got := a.tail(core.StartSession{Step: keytest.K("s")}, "/none"); got.Tail != "" || got.Size != 0 {
		t.Errorf("tail of no log: %+v", got)
	}
}
