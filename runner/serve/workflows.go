package serve

import (
	"sync"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// maxCachedWorkflows bounds the workflows a server keeps loaded.
const maxCachedWorkflows = 8

// workflowCache keeps the workflows that runs' pages load, by file, for
// as long as the file's size and modification time stay the same: a
// workflow of 20,000 steps takes about 100 ms to load, which every view
// of its run's page paid. Loaded workflows are only read.
type workflowCache struct {
	mu   sync.Mutex
	tick uint64
	m    map[workflowKey]*cachedWorkflow
}

// workflowKey names a workflow file as loaded for a repository.
type workflowKey struct{ repoDir, path string }

// cachedWorkflow is a loaded workflow and the file it was loaded from.
type cachedWorkflow struct {
	size int64
	mod  time.Time
	wf   *config.Workflow
	used uint64 // the cache's tick when last used
}

// workflow loads a run's workflow, or returns nil when it cannot; a
// workflow loaded before from the same unchanged file is reused.
func (s *Server) workflow(repoDir string, state *core.State) *config.Workflow {
	path, err := ops.LocateWorkflow(s.svc.FS, state, repoDir)
	if err != nil {
		return nil
	}
	fi, err := s.svc.FS.Stat(path)
	if err != nil {
		return nil
	}
	key := workflowKey{repoDir, path}
	c := &s.workflows
	c.mu.Lock()
	c.tick++
	if e := c.m[key]; e != nil && e.size == fi.Size() && e.mod.Equal(fi.ModTime()) {
		e.used = c.tick
		c.mu.Unlock()
		return e.wf
	}
	c.mu.Unlock()
	wf, err := s.svc.LoadWorkflow(path, repoDir)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[workflowKey]*cachedWorkflow{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedWorkflows {
		var oldest workflowKey
		var at uint64
		for k, e := range c.m {
			if at == 0 || e.used < at {
				oldest, at = k, e.used
			}
		}
		delete(c.m, oldest)
	}
	c.m[key] = &cachedWorkflow{size: fi.Size(), mod: fi.ModTime(), wf: wf, used: c.tick}
	return wf
}
