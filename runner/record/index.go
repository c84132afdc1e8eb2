package record

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/runner/core"
)

// IndexFile is the runs index: beside the run directories, in
// .agents/runs/, hidden so that it is never taken for a run.
const IndexFile = ".index"

// RunEntry is a run as a list of runs shows it (flow runs): what its
// state says of it without its steps, its runner or its workspaces.
type RunEntry struct {
	ID  string
	Dir string
	// Workflow, Status, ExitCode, CreatedAt, UpdatedAt and Usage are the
	// state's fields of those names; they are empty when Err is set and
	// the run could not be read at all. The times are written as the
	// record writes them (core.Time's text: UTC, microseconds, a layout
	// whose text sorts as the times do), "" when unknown: a list shows
	// them as they are, and never parses them.
	Workflow  string
	Status    core.RunStatus
	ExitCode  int
	CreatedAt string
	UpdatedAt string
	Usage     *core.AgentUsage
	// Err is why the run could not be read, as in RunHead.
	Err error
}

// entryOf returns the entry of a run read as ListRunHeads reads it.
func entryOf(h RunHead) RunEntry {
	e := RunEntry{ID: h.ID, Dir: h.Dir, Err: h.Err}
	if st := h.State; st != nil {
		e.Workflow, e.Status, e.ExitCode = st.WorkflowName, st.Status, st.ExitCode
		e.CreatedAt, e.UpdatedAt, e.Usage = timeText(st.CreatedAt), timeText(st.UpdatedAt), st.Usage
	}
	return e
}

// timeText returns a time of the record as the record writes it, or ""
// for none.
func timeText(t *core.Time) string {
	if t == nil {
		return ""
	}
	return t.String()
}

// ParseTime reads a time written as the record writes it (RunEntry's
// times); "" is the zero time.
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	var t core.Time
	if err := t.UnmarshalText([]byte(s)); err != nil {
		return time.Time{}, err
	}
	return t.Time, nil
}

// ListRunEntries returns the runs of repo, newest first, each as
// ListRunHeads says it — but without reading the runs that have not
// changed since the runs index last recorded them.
//
// The index (IndexFile) holds, for each run that no runner holds and
// whose snapshot is as new as its log, what the list shows of it and
// the size and modification time of its run_state.json. An entry is
// used only while the file's size and modification time are the ones
// it records: one stat per run. Every writer of a run changes the file
// before its log can be ahead of it — a runner touches it when it
// takes the run (TouchState), before its first append, and replaces it
// as it goes — so an entry cannot outlive what it describes. A run
// whose entry does not match is read as ListRunHeads reads it.
//
// When index is not nil and the index changed (runs read again, runs
// gone), the index is replaced through it; an error writing it is
// ignored, since the index only saves time. A repository without runs
// has none.
func ListRunEntries(fsys afero.Fs, repo string, index afero.Fs) ([]RunEntry, error) {
	dir := filepath.Clean(RunsDir(repo))
	d, err := openRunsDir(fsys, dir)
	if err != nil || d == nil {
		return nil, err
	}
	defer d.close()
	ids, err := d.names()
	if err != nil {
		return nil, err
	}
	// The index is read while the runs' snapshots are looked at (one
	// stat each); the two are compared once both are done.
	index0 := make(chan map[string]*indexEntry, 1)
	go func() { index0 <- readIndex(fsys, filepath.Join(dir, IndexFile)) }()
	n := len(ids)
	size, mtime := make([]int64, n), make([]int64, n)
	statted := make([]bool, n)
	each(n, func() func(i int) {
		stat := d.stater()
		return func(i int) {
			var err error
			size[i], mtime[i], err = stat(ids[i])
			statted[i] = err == nil
		}
	})
	old := <-index0
	runs := make([]RunEntry, n)
	// use is the index entry of each run: the one it had, still valid,
	// or a new one; found is false for a name that is not a run.
	use := make([]*indexEntry, n)
	found := make([]bool, n)
	each(n, func() func(i int) {
		return func(i int) {
			// The names are those of the directory's entries, and dir
			// is clean: they are joined without filepath.Join's
			// cleaning, which costs as much as a stat.
			id := ids[i]
			rd := dir + string(filepath.Separator) + id
			if statted[i] {
				if e := old[id]; e != nil && e.size == size[i] && e.mtime == mtime[i] {
					runs[i], use[i], found[i] = e.RunEntry, e, true
					runs[i].ID, runs[i].Dir = id, rd
					return
				}
			} else if d, err := fsys.Stat(rd); err != nil || !d.IsDir() {
				return // not a run directory
			}
			found[i] = true
			st, whole, err := readHeadFrom(fsys, rd)
			runs[i] = entryOf(RunHead{ID: id, Dir: rd, State: st, Err: err})
			if statted[i] && err == nil && !whole && indexable(runs[i]) && settled(fsys, rd) {
				use[i] = &indexEntry{RunEntry: runs[i], size: size[i], mtime: mtime[i], fresh: true}
			}
		}
	})
	// The index changes when a run was indexed now, or an entry was not
	// used (its run is gone, or changed).
	changed, used := false, 0
	order := make([]int, 0, len(ids))
	for i := range ids {
		if found[i] {
			order = append(order, i)
		}
		if e := use[i]; e != nil && e.fresh {
			changed = true
		} else if e != nil {
			used++
		}
	}
	changed = changed || used != len(old)
	// Newest first, by creation time then id: the ids are distinct, so
	// the order is total and an unstable sort gives it. The runs are
	// sorted by their place, not moved about while sorting; their
	// times' text sorts as the times do, and "" (unknown) last.
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(runs[b].CreatedAt, runs[a].CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(ids[b], ids[a])
	})
	if index != nil && changed {
		kept := make([]*indexEntry, 0, len(order))
		for _, i := range order {
			if use[i] != nil {
				kept = append(kept, use[i])
			}
		}
		_ = writeIndex(index, filepath.Join(dir, IndexFile), kept)
	}
	listed := len(order)
	for i := range ids {
		if !found[i] {
			order = append(order, i)
		}
	}
	permute(runs, order)
	return runs[:listed], nil
}

// each calls work(i) for every i below n, from a few goroutines (one
// per CPU, at most maxHeadReaders), each with its own work function
// made by newWork: looking at a run is mostly system calls.
func each(n int, newWork func() func(i int)) {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(runtime.NumCPU(), maxHeadReaders, n) {
		wg.Go(func() {
			work := newWork()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				work(i)
			}
		})
	}
	wg.Wait()
}

// permute puts runs[order[k]] at k, for every k, in place (order is a
// permutation of the indices of runs, and is used up): a list of
// 10,000 runs is not copied to be sorted.
func permute(runs []RunEntry, order []int) {
	for i := range order {
		if order[i] < 0 {
			continue
		}
		held, j := runs[i], i
		for {
			k := order[j]
			order[j] = -1
			if k == i {
				runs[j] = held
				break
			}
			runs[j], j = runs[k], k
		}
	}
}

// settled reports whether no runner holds the run in runDir and no
// Temporal worker mirrors it: only then does nothing append to its log
// without first changing its run_state.json.
func settled(fsys afero.Fs, runDir string) bool {
	for _, f := range []string{LockFile, TemporalLaunchFile} {
		if _, err := fsys.Stat(filepath.Join(runDir, f)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// TouchState changes the modification time of the run_state.json of
// the run in runDir, if it has one, so that the runs index reads the
// run again (see ListRunEntries). A writer calls it when it takes a run
// whose log it will append to, before its first append. The new time
// is now, or a second after the file's, whichever is later, so that it
// differs from the old one even on a file system that keeps times to
// the second.
func TouchState(fsys afero.Fs, runDir string, now time.Time) error {
	path := filepath.Join(runDir, StateFile)
	fi, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("touch run state: %w", err)
	}
	t := fi.ModTime().Add(time.Second)
	if now.After(t) {
		t = now
	}
	if err := fsys.Chtimes(path, t, t); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("touch run state: %w", err)
	}
	return nil
}

// indexEntry is a run in the runs index: what the list shows of it,
// and the size and modification time (Unix nanoseconds) of its
// run_state.json when it was read. fresh marks an entry made now.
type indexEntry struct {
	RunEntry
	size, mtime int64
	fresh       bool
}

// indexHeader is the first line of the runs index; an index that does
// not begin with it (another version's) is not used.
const indexHeader = "flow runs index 1\n"

// The runs index is a text file of one line per run, its fields
// separated by tabs:
//
//	id size mtime workflow status exit_code created updated usage
//
// created and updated are as RunEntry holds them ("-" when unknown); usage is
// "-" or tokens_in,tokens_out,tokens_cached,cost_usd,cost_estimated,
// turns,sessions. Reading it costs a split per line, not a JSON
// decoding per run: flow runs reads it whole each time.

// indexable reports whether an entry can be written in the index: its
// text fields hold no tab or newline.
func indexable(e RunEntry) bool {
	for _, s := range []string{e.ID, e.Workflow, string(e.Status)} {
		if strings.ContainsAny(s, "\t\n") {
			return false
		}
	}
	for _, t := range []string{e.CreatedAt, e.UpdatedAt} {
		if t == "-" || strings.ContainsAny(t, "\t\n") {
			return false
		}
	}
	return true
}

// writeIndex replaces the index at path with entries.
func writeIndex(fsys afero.Fs, path string, entries []*indexEntry) error {
	return atomicfile.ReplaceWith(fsys, path, 0o644, func(w io.Writer) error {
		b := make([]byte, 0, 256)
		if _, err := io.WriteString(w, indexHeader); err != nil {
			return err
		}
		for _, e := range entries {
			b = append(b[:0], e.ID...)
			b = append(b, '\t')
			b = strconv.AppendInt(b, e.size, 10)
			b = append(b, '\t')
			b = strconv.AppendInt(b, e.mtime, 10)
			b = append(append(b, '\t'), e.Workflow...)
			b = append(append(b, '\t'), e.Status...)
			b = append(b, '\t')
			b = strconv.AppendInt(b, int64(e.ExitCode), 10)
			for _, t := range []string{e.CreatedAt, e.UpdatedAt} {
				b = append(b, '\t')
				if t == "" {
					t = "-"
				}
				b = append(b, t...)
			}
			b = append(b, '\t')
			if u := e.Usage; u == nil {
				b = append(b, '-')
			} else {
				b = strconv.AppendInt(b, u.TokensIn, 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, u.TokensOut, 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, u.TokensCached, 10)
				b = append(b, ',')
				b = strconv.AppendFloat(b, u.CostUSD, 'g', -1, 64)
				b = append(b, ',')
				b = strconv.AppendBool(b, u.CostEstimated)
				b = append(b, ',')
				b = strconv.AppendInt(b, int64(u.Turns), 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, int64(u.Sessions), 10)
			}
			b = append(b, '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// maxIndex bounds what is read of the runs index: at about 150 bytes a
// run, a million runs.
const maxIndex = 256 << 20

// readIndex reads the runs index at path. A missing, unreadable or
// foreign index is an empty one, and a line that cannot be read is
// left out: its run is read again.
func readIndex(fsys afero.Fs, path string) map[string]*indexEntry {
	f, err := fsys.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIndex {
		return nil
	}
	// One string holds the whole index, read into it once: the fields
	// of the entries are slices of it, not copies.
	var b strings.Builder
	b.Grow(int(fi.Size()) + 1)
	if _, err := io.Copy(&b, io.LimitReader(f, maxIndex)); err != nil {
		return nil
	}
	rest, ok := strings.CutPrefix(b.String(), indexHeader)
	if !ok {
		return nil
	}
	n := strings.Count(rest, "\n")
	out := make(map[string]*indexEntry, n)
	// The entries and their times are made together, not one by one.
	entries := make([]indexEntry, n)
	for i := 0; len(rest) > 0; i++ {
		var line string
		var full bool
		line, rest, full = strings.Cut(rest, "\n")
		if !full {
			break // a torn last line
		}
		if e := &entries[i]; parseIndexLine(line, e) {
			out[e.ID] = e
		}
	}
	return out
}

// parseIndexLine reads one line of the runs index into e; it reports
// whether the line could be read.
func parseIndexLine(line string, e *indexEntry) bool {
	var f [9]string
	for i := range f {
		var ok bool
		if i == len(f)-1 {
			f[i], ok = line, !strings.Contains(line, "\t")
		} else {
			f[i], line, ok = strings.Cut(line, "\t")
		}
		if !ok {
			return false
		}
	}
	*e = indexEntry{RunEntry: RunEntry{ID: f[0], Workflow: f[3], Status: core.RunStatus(f[4])}}
	var err error
	if e.size, err = strconv.ParseInt(f[1], 10, 64); err != nil || e.ID == "" {
		return false
	}
	if e.mtime, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return false
	}
	if e.ExitCode, err = strconv.Atoi(f[5]); err != nil {
		return false
	}
	for i, t := range []*string{&e.CreatedAt, &e.UpdatedAt} {
		if f[6+i] != "-" {
			*t = f[6+i]
		}
	}
	if f[8] != "-" {
		u, ok := parseUsage(f[8])
		if !ok {
			return false
		}
		e.Usage = u
	}
	return true
}

// parseUsage reads the usage field of a line of the runs index.
func parseUsage(s string) (*core.AgentUsage, bool) {
	p := strings.Split(s, ",")
	if len(p) != 7 {
		return nil, false
	}
	var u core.AgentUsage
	var errs [7]error
	u.TokensIn, errs[0] = strconv.ParseInt(p[0], 10, 64)
	u.TokensOut, errs[1] = strconv.ParseInt(p[1], 10, 64)
	u.TokensCached, errs[2] = strconv.ParseInt(p[2], 10, 64)
	u.CostUSD, errs[3] = strconv.ParseFloat(p[3], 64)
	u.CostEstimated, errs[4] = strconv.ParseBool(p[4])
	u.Turns, errs[5] = strconv.Atoi(p[5])
	u.Sessions, errs[6] = strconv.Atoi(p[6])
	if errors.Join(errs[:]...) != nil {
		return nil, false
	}
	return &u, true
}
