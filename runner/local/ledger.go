package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/runner/core"
)

// The daily cost ledger: what the runs of a repository spent, day by
// UTC day, summed over their finished sessions, in flow's own state
// under .agents/ (which sessions do not write under the sandbox). Every
// run adds its sessions' cost; a run with a daily cost limit
// (--daily-cost-limit, budget.daily_cost_usd) reads the day's total as
// it starts and after each session, and stops, as at a spent budget,
// once the total reaches the limit. It is updated under a lock
// (flock(2) on LedgerLock), so that concurrent runs share it.

// The ledger's files, under <repo>/.agents/.
const (
	LedgerFile = "cost-ledger.json"
	LedgerLock = "cost-ledger.lock"
)

// ledgerDays is how many days the ledger keeps.
const ledgerDays = 366

// Ledger is the content of LedgerFile.
type Ledger struct {
	// Days maps a UTC day (2006-01-02) to what was spent on it.
	Days map[string]LedgerDay `json:"days"`
}

// LedgerDay is what the runs of a repository spent in a day.
type LedgerDay struct {
	CostUSD  float64 `json:"cost_usd"`
	Sessions int     `json:"sessions"`
}

// ledgerDay is the ledger's key of the UTC day of t.
func ledgerDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ReadLedger reads the ledger of repo; a missing one is empty.
func ReadLedger(fsys afero.Fs, repo string) (Ledger, error) {
	l := Ledger{Days: map[string]LedgerDay{}}
	path := filepath.Join(repo, ".agents", LedgerFile)
	b, err := afero.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("read the cost ledger %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return Ledger{Days: map[string]LedgerDay{}}, fmt.Errorf("read the cost ledger %s: %w", path, err)
	}
	if l.Days == nil {
		l.Days = map[string]LedgerDay{}
	}
	return l, nil
}

// AddCost adds a session's cost, spent at at, to the ledger of repo,
// under its lock, and returns the total of that UTC day.
func AddCost(fsys afero.Fs, repo string, at time.Time, usd float64) (float64, error) {
	dir := filepath.Join(repo, ".agents")
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("update the cost ledger: %w", err)
	}
	lock, err := fsys.OpenFile(filepath.Join(dir, LedgerLock), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, fmt.Errorf("lock the cost ledger: %w", err)
	}
	defer lock.Close()
	if err := flock(lock); err != nil {
		return 0, fmt.Errorf("lock the cost ledger: %w", err)
	}
	// A ledger that cannot be read starts again: the error is the
	// caller's warning.
	l, rerr := ReadLedger(fsys, repo)
	day := ledgerDay(at)
	d := l.Days[day]
	d.CostUSD += usd
	d.Sessions++
	l.Days[day] = d
	for keys := slices.Sorted(maps.Keys(l.Days)); len(keys) > ledgerDays; keys = keys[1:] {
		delete(l.Days, keys[0])
	}
	b, merr := json.MarshalIndent(l, "", "  ")
	if merr != nil {
		return 0, merr
	}
	if werr := atomicfile.Replace(fsys, filepath.Join(dir, LedgerFile), append(b, '\n'), 0o644); werr != nil {
		return d.CostUSD, fmt.Errorf("write the cost ledger: %w", werr)
	}
	return d.CostUSD, rerr
}

// dailySpent is the day's total of the repository's ledger, for Begin;
// a ledger that cannot be read is warned of and counts as nothing.
func (x *run) dailySpent() float64 {
	if x.plan.DailyCostUSD <= 0 {
		return 0
	}
	l, err := ReadLedger(x.rec, x.opts.Repo)
	if err != nil {
		x.warn(core.StepKey{}, err.Error())
	}
	return l.Days[ledgerDay(x.r.Clock.Now())].CostUSD
}

// sessionEnded does what the driver does when a session's outcome
// reaches the loop, before the core decides it: agent_orchestrator's
// memory updates, and the session's cost added to the ledger — the
// day's total told to the core when the run has a daily cost limit.
func (x *run) sessionEnded(in core.Input) core.Input {
	done, ok := in.(core.SessionDone)
	if !ok {
		return in
	}
	x.applyMemory(done)
	cost := 0.0
	if u := done.Outcome.Usage; u != nil {
		cost = u.CostUSD
	}
	switch {
	case cost > 0:
		total, err := AddCost(x.rec, x.opts.Repo, x.r.Clock.Now(), cost)
		if err != nil {
			x.warn(done.Step, err.Error())
		}
		if x.plan.DailyCostUSD > 0 {
			done.DailySpent = &total
		}
	case x.plan.DailyCostUSD > 0:
		// Other runs may have spent since.
		total := x.dailySpent()
		done.DailySpent = &total
	}
	return done
}
