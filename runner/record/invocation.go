package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
)

// InvocationFile is the file in a run directory that keeps how the run
// was asked to run beyond its workflow file and vars.
const InvocationFile = "invocation.json"

// Invocation is how a run was asked to run beyond its workflow file and
// vars: the format its file was read in, agent_orchestrator's flags
// (docs/agent-orchestrator.md, "Its command line on flow run") and more
// environment for its sessions. It is kept in the
// run directory, so that a resume reads the workflow and starts
// sessions the same way without the flags given again. Values of
// variables with secret names (config.IsSecretName) are not kept: a
// resume needs them given again.
type Invocation struct {
	Format             string   `json:"format,omitempty"`
	Wrapper            string   `json:"wrapper,omitempty"`
	WrapperArgs        []string `json:"wrapper_args,omitempty"`
	CommandTemplate    string   `json:"command_template,omitempty"`
	PauseForHumanInput bool     `json:"pause_for_human_input,omitempty"`
	GateStateFile      string   `json:"gate_state_file,omitempty"`
	// Env are NAME=value pairs for every session.
	Env []string `json:"env,omitempty"`
	// Python is the interpreter of a .py wrapper (default python3).
	Python string `json:"python,omitempty"`
	// Schema is a JSON Schema file every run report is checked against.
	Schema string `json:"schema,omitempty"`
	// Workdir is the directory, inside the repository, that sessions
	// run in; "" is the repository.
	Workdir string `json:"workdir,omitempty"`
	// LogsDir and StateFile receive a copy of the run's session logs
	// and of its run_state.json whenever its runner stops; the record
	// stays in the run directory.
	LogsDir   string `json:"logs_dir,omitempty"`
	StateFile string `json:"state_file,omitempty"`
	// PollInterval is how often, in seconds, a waiting run looks at its
	// manual inputs, gates and control file: at most 1.
	PollInterval float64 `json:"poll_interval,omitempty"`
	// DailyCostLimit is the most, in USD, the runs of the repository
	// may spend in a UTC day (the cost ledger under .agents/).
	DailyCostLimit float64 `json:"daily_cost_limit,omitempty"`
	// Sandbox, when set, is the sandbox mode of every step (flow run
	// --sandbox): it wins over the workflow's.
	Sandbox string `json:"sandbox,omitempty"`
	// SkipRetention leaves the workflow's other runs alone when this
	// one ends: no defaults.retention (agent_orchestrator's
	// --skip-cleanup).
	SkipRetention bool `json:"skip_retention,omitempty"`
	// GitWorktree, when set, gives the run a worktree of its own
	// (agent_orchestrator's --git-worktree flags): it replaces the
	// workflow's workspace: key.
	GitWorktree *GitWorktree `json:"git_worktree,omitempty"`
}

// GitWorktree is the run's worktree as agent_orchestrator's
// --git-worktree, --git-worktree-ref, --git-worktree-branch,
// --git-worktree-root and --git-worktree-keep give it.
type GitWorktree struct {
	// Ref is the commit, branch or tag the worktree starts from; "" is
	// the repository's HEAD when the run's first session starts.
	Ref string `json:"ref,omitempty"`
	// Branch is the worktree's branch; "" is flow/<run>/_run.
	Branch string `json:"branch,omitempty"`
	// Root is the directory worktrees are made in (relative to the
	// repository unless absolute); "" is .agents/worktrees.
	Root string `json:"root,omitempty"`
	// Keep keeps the worktree when the run completes; without it a
	// completed run's worktree is removed (its branch stays) and a
	// run that did not complete keeps its own.
	Keep bool `json:"keep,omitempty"`
}

// Workspace is the run-level workspace the flags give.
func (g *GitWorktree) Workspace() *config.Workspace {
	if g == nil {
		return nil
	}
	keep := config.KeepOnFailure
	if g.Keep {
		keep = config.KeepAlways
	}
	return &config.Workspace{
		Mode: config.WorkspaceWorktree, Base: g.Ref, Branch: g.Branch, Root: g.Root, Keep: keep,
		Pos: config.Pos{File: "--git-worktree"},
	}
}

// IsZero reports whether the invocation asks for nothing.
func (v Invocation) IsZero() bool {
	return v.Format == "" && v.Wrapper == "" && len(v.WrapperArgs) == 0 && v.CommandTemplate == "" &&
		!v.PauseForHumanInput && v.GateStateFile == "" && len(v.Env) == 0 && v.Sandbox == "" && v.Python == "" &&
		v.Schema == "" && v.Workdir == "" && v.LogsDir == "" && v.StateFile == "" && v.PollInterval == 0 && v.DailyCostLimit == 0 &&
		v.GitWorktree == nil && !v.SkipRetention
}

// LoadOptions are the config options that load the workflow as the
// invocation says, for a run in repo.
func (v Invocation) LoadOptions(repo string) config.Options {
	return config.Options{Repo: repo, Format: v.Format, Orchestrator: config.OrchestratorOptions{
		Wrapper: v.Wrapper, WrapperArgs: v.WrapperArgs, CommandTemplate: v.CommandTemplate,
		PauseForHumanInput: v.PauseForHumanInput, Python: v.Python,
	}, Workspace: v.GitWorktree.Workspace()}
}

// Merge returns the invocation with what later gives over v, flag by
// flag: a format, a wrapper or a command template (either replaces
// both), wrapper arguments, a gate-state file, the interpreter, the
// schema, the directories and files, the poll interval, the daily cost
// limit (a higher one lifts a spent limit), the run's worktree, and
// --pause-for-human-input when set; its environment goes over v's, name by name.
func (v Invocation) Merge(later Invocation) Invocation {
	out := v
	if later.Format != "" {
		out.Format = later.Format
	}
	if later.Wrapper != "" || later.CommandTemplate != "" {
		out.Wrapper, out.CommandTemplate = later.Wrapper, later.CommandTemplate
	}
	if len(later.WrapperArgs) > 0 {
		out.WrapperArgs = later.WrapperArgs
	}
	if later.GateStateFile != "" {
		out.GateStateFile = later.GateStateFile
	}
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&out.Python, later.Python}, {&out.Schema, later.Schema}, {&out.Workdir, later.Workdir},
		{&out.LogsDir, later.LogsDir}, {&out.StateFile, later.StateFile},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	if later.PollInterval > 0 {
		out.PollInterval = later.PollInterval
	}
	if later.DailyCostLimit > 0 {
		out.DailyCostLimit = later.DailyCostLimit
	}
	if later.Sandbox != "" {
		out.Sandbox = later.Sandbox
	}
	if later.GitWorktree != nil {
		out.GitWorktree = later.GitWorktree
	}
	out.PauseForHumanInput = v.PauseForHumanInput || later.PauseForHumanInput
	out.SkipRetention = v.SkipRetention || later.SkipRetention
	out.Env = mergeEnv(v.Env, later.Env)
	return out
}

// mergeEnv puts the NAME=value pairs of over on base's, name by name.
func mergeEnv(base, over []string) []string {
	out := slices.Clone(base)
	for _, kv := range over {
		name, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(o string) bool { n, _, _ := strings.Cut(o, "="); return n == name })
		out = append(out, kv)
	}
	return out
}

// ReadInvocation reads the invocation kept in a run directory; a run
// without one (from before it existed, or asked for nothing) has the
// zero Invocation.
func ReadInvocation(fsys afero.Fs, runDir string) (Invocation, error) {
	var v Invocation
	b, err := afero.ReadFile(fsys, filepath.Join(runDir, InvocationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("read %s: %w", InvocationFile, err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("read %s: %w", InvocationFile, err)
	}
	return v, nil
}

// Created returns the record that creates a run of wf in repo with the
// --var overrides vars: its workflow, its vars, where its reports and
// decisions are, and its steps.
func Created(wf *config.Workflow, repo, runID string, vars map[string]string) core.RunCreated {
	dir := RunDir(repo, runID)
	all := make(map[string]string, len(wf.Vars)+len(vars))
	for k, v := range wf.Vars {
		all[k] = v
	}
	for k, v := range vars {
		all[k] = v
	}
	// The overrides are recorded never nil, so that a run with none is
	// told from one recorded before they were kept apart.
	over := make(map[string]string, len(vars))
	for k, v := range vars {
		over[k] = v
	}
	return core.RunCreated{
		RunID: runID, WorkflowName: wf.Name, WorkflowFile: wf.File, WorkflowDigest: wf.Digest(),
		RepoDir: repo, ReportsDir: filepath.Join(dir, ReportsDir), ManualInputsDir: filepath.Join(dir, InputsDir),
		Vars: all, VarOverrides: over, Steps: topKeys(wf.TopSteps()),
	}
}

// topKeys returns the keys of a workflow's steps of the top level.
func topKeys(ids []string) []core.StepKey {
	out := make([]core.StepKey, len(ids))
	for i, id := range ids {
		out[i] = core.Key(id)
	}
	return out
}
