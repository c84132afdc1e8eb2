package temporal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/temporal"

	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// The worker's control queue: besides the queues its sessions come
// from, every worker serves ControlQueue of its own queue, where
// nothing waits for a session's slot. The run's workflow sends a kill
// there when it is cancelled (ActivityKill), so that a session's
// process group is ended at once rather than when its activity next
// reaches the server; a follower of a session's output reads it there
// (ActivityTail), through a short workflow of its own (TailWorkflow),
// since a client reaches a worker only through an activity.

// The activities of a worker's control queue.
const (
	ActivityKill = "flow.Kill"
	ActivityTail = "flow.Tail"
)

// ControlQueue is the control queue of the workers of queue (a host
// queue, or the shared queue of workers that share a repository).
func ControlQueue(queue string) string { return queue + "/control" }

// SessionID names one session of a run.
type SessionID struct {
	RunID     string       `json:"run_id"`
	Step      core.StepKey `json:"step"`
	Iteration int          `json:"iteration"`
	Attempt   int          `json:"attempt"`
}

func sessionOf(runID string, e core.StartSession) SessionID {
	return SessionID{RunID: runID, Step: e.Step, Iteration: e.Iteration, Attempt: e.Attempt}
}

// KillRequest asks a worker to end a session now: its process group
// gets SIGTERM, then SIGKILL after the kill grace.
type KillRequest struct {
	Session SessionID `json:"session"`
	Reason  string    `json:"reason"`
}

// KillReply says whether the worker had the session running.
type KillReply struct {
	Killed bool   `json:"killed"`
	Host   string `json:"host"`
}

// errKilled ends a session that its run's workflow cancelled.
var errKilled = errors.New("the run was cancelled")

// errHandedBack ends a session that its worker, asked to stop, gave
// up on after its drain timeout: the session's step runs again on
// another worker.
var errHandedBack = errors.New("handed back")

// track notes a session running on this worker, which stop ends; the
// returned func forgets it.
func (a *Activities) track(id SessionID, stop context.CancelCauseFunc) func() {
	a.mu.Lock()
	if a.running == nil {
		a.running = map[SessionID]context.CancelCauseFunc{}
	}
	a.running[id] = stop
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.running, id)
		a.mu.Unlock()
	}
}

// Running returns how many sessions run on this worker.
func (a *Activities) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.running)
}

// isRunning reports whether session id runs on this worker.
func (a *Activities) isRunning(id SessionID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.running[id]
	return ok
}

// handBack ends every session running on this worker: each is handed
// back to its run, which runs it again elsewhere. It returns the
// sessions it ended.
func (a *Activities) handBack() []SessionID {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []SessionID
	for id, stop := range a.running {
		stop(errHandedBack)
		ids = append(ids, id)
	}
	return ids
}

// Kill ends a session of this worker at once (ActivityKill). When the
// workers share the repository, a session another worker runs is ended
// by that worker, which looks for the kill file this one leaves in the
// run's directory (watchKill); otherwise a session this worker does not
// run is not its to end: its activity learns of the cancel from the
// server.
func (a *Activities) Kill(ctx context.Context, req KillRequest) (KillReply, error) {
	id := req.Session
	if err := record.CheckRunID(id.RunID); err != nil {
		return KillReply{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	a.mu.Lock()
	stop, ok := a.running[id]
	a.mu.Unlock()
	if ok {
		stop(errKilled)
		if a.Log != nil {
			fmt.Fprintf(a.Log, "flow worker: run %s: step %s's session ended: %s\n", id.RunID, id.Step, req.Reason)
		}
		return KillReply{Killed: true, Host: a.Host}, nil
	}
	if a.Shared {
		path := a.killFile(id)
		if err := a.fs().MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return KillReply{}, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := afero.WriteFile(a.fs(), path, []byte(req.Reason+"\n"), 0o644); err != nil {
			return KillReply{}, fmt.Errorf("write kill file %s: %w", path, err)
		}
	}
	return KillReply{Host: a.Host}, nil
}

// KillsDir is the directory of a run, on workers that share the
// repository, where a kill for a session another worker runs is left
// (a file named after the session).
const KillsDir = "temporal_kills"

// killFile is where a kill of session id is left.
func (a *Activities) killFile(id SessionID) string {
	dir := record.RunDir(a.Repo, id.RunID)
	return filepath.Join(dir, KillsDir, record.LayoutOf(dir, id.RunID).Session(id.Step, id.Iteration, id.Attempt))
}

// killEvery is how often a session on workers that share the
// repository looks for a kill left for it.
const killEvery = 200 * time.Millisecond

// watchKill ends session id with errKilled when a kill is left for it
// (Kill, on another worker of a shared repository), until done is
// closed. A kill left before the session began is not its.
func (a *Activities) watchKill(id SessionID, end context.CancelCauseFunc, done <-chan struct{}) {
	path := a.killFile(id)
	_ = a.fs().Remove(path)
	go func() {
		defer a.fs().Remove(path)
		for {
			select {
			case <-done:
				return
			case <-a.Runner.Clock.After(killEvery):
			}
			if _, err := a.fs().Stat(path); err == nil {
				if a.Log != nil {
					fmt.Fprintf(a.Log, "flow worker: run %s: step %s's session ended: its run was cancelled (a kill left by another worker)\n", id.RunID, id.Step)
				}
				end(errKilled)
				return
			}
		}
	}()
}

// TailRequest asks a worker for a session's output from Offset on
// (ActivityTail). Gen is the run's generation (its restarts), which
// names its sessions' logs.
type TailRequest struct {
	Session SessionID `json:"session"`
	Gen     int       `json:"gen"`
	Offset  int64     `json:"offset"`
	// Wait is how long to wait for output past Offset while the session
	// runs on this worker; 0 answers at once.
	Wait time.Duration `json:"wait"`
}

// TailReply is a session's output from the request's Offset on, at most
// MaxTailChunk bytes of it, and where the log is.
type TailReply struct {
	Data []byte `json:"data"`
	// Offset is where Data starts: the request's, unless the log is
	// shorter (it was cut to its limit); Size is the log's size.
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Host   string `json:"host"`
	Log    string `json:"log"`
	// Running says that the session still runs on this worker.
	Running bool `json:"running"`
}

// MaxTailChunk bounds the output one TailReply carries.
const MaxTailChunk = 256 << 10

// tailPoll is how often a tail that waits looks at the log.
const tailPoll = 50 * time.Millisecond

// Tail reads a session's log on this worker from req.Offset: at once
// when there is output past it, else when some comes, the session ends
// or req.Wait passes. The log is opened beneath the run's directory,
// following no link.
func (a *Activities) Tail(ctx context.Context, req TailRequest) (TailReply, error) {
	id := req.Session
	if err := record.CheckRunID(id.RunID); err != nil {
		return TailReply{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	dir := record.RunDir(a.Repo, id.RunID)
	names := record.LayoutOf(dir, id.RunID)
	names.Gen = req.Gen
	log := names.Log(id.Step, id.Iteration, id.Attempt)
	if rel, err := filepath.Rel(dir, log); err != nil || !filepath.IsLocal(rel) {
		return TailReply{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %q names no log of run %s", id.Step, id.RunID), "refused", nil)
	}
	clk := a.Runner.Clock
	until := clk.Now().Add(req.Wait)
	for {
		running := a.isRunning(id)
		r, err := a.readFrom(dir, log, req.Offset)
		if err != nil {
			return TailReply{}, err
		}
		r.Running = running
		if len(r.Data) > 0 || !running || !clk.Now().Before(until) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-clk.After(tailPoll):
		}
	}
}

// readFrom reads log from off on, at most MaxTailChunk bytes.
func (a *Activities) readFrom(dir, log string, off int64) (TailReply, error) {
	r := TailReply{Host: a.Host, Log: log, Offset: off}
	f, err := confine.Open(a.fs(), log, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, nil // not begun yet
		}
		return r, fmt.Errorf("open log %s: %w", log, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return r, fmt.Errorf("stat log %s: %w", log, err)
	}
	r.Size = fi.Size()
	if r.Offset > r.Size {
		r.Offset = 0 // the log was cut to its limit: from its start again
	}
	n := min(r.Size-r.Offset, MaxTailChunk)
	if n <= 0 {
		return r, nil
	}
	r.Data = make([]byte, n)
	m, err := f.ReadAt(r.Data, r.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return r, fmt.Errorf("read log %s: %w", log, err)
	}
	r.Data = r.Data[:m]
	return r, nil
}
