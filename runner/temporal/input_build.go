package temporal

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// NewInput makes the workflow input of a new run from what the local
// engine would be given: the workflow's file and its prompt files are
// read through fsys and carried by their paths relative to the
// repository. An input over MaxPayload is refused, saying so.
func NewInput(fsys afero.Fs, opts spec.Options, queue string) (Input, error) {
	if err := checkEnv(opts.Workflow, opts.Invocation.Env); err != nil {
		return Input{}, err
	}
	src, err := ReadSource(fsys, opts.Workflow, opts.Repo)
	if err != nil {
		return Input{}, err
	}
	in := Input{RunID: opts.RunID, Source: src, Invocation: opts.Invocation, Vars: opts.Vars, Budgets: opts.Budgets, TaskQueue: queue}
	if err := checkSize("the run's input (its workflow and prompt files)", in); err != nil {
		return Input{}, ops.Usage("%v", err)
	}
	return in, nil
}

// ReadSource reads the source of workflow wf, loaded from a file in
// repository repo: the file and its prompt files, through fsys, by
// their paths relative to repo.
func ReadSource(fsys afero.Fs, wf *config.Workflow, repo string) (Source, error) {
	rel := func(p string) (string, error) {
		r, err := filepath.Rel(repo, p)
		if err != nil {
			return "", fmt.Errorf("%s is not under the repository %s: %w", p, repo, err)
		}
		return filepath.ToSlash(r), nil
	}
	file, err := filepath.Abs(wf.File)
	if err != nil {
		return Source{}, err
	}
	data, err := afero.ReadFile(fsys, file)
	if err != nil {
		return Source{}, fmt.Errorf("read workflow: %w", err)
	}
	src := Source{Data: data, Prompts: map[string][]byte{}}
	if src.Path, err = rel(file); err != nil {
		return Source{}, err
	}
	// A step's prompt_file is read as the workflow loads, so it goes
	// with the source; a prompt_path is found when its step starts, on
	// the worker (an earlier step may write it), and does not.
	for _, s := range wf.AllSteps() {
		if s.PromptFile() == "" {
			continue
		}
		p := s.PromptFile()
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		b, err := afero.ReadFile(fsys, p)
		if err != nil {
			return Source{}, fmt.Errorf("read prompt file: %w", err)
		}
		r, err := rel(p)
		if err != nil {
			return Source{}, err
		}
		src.Prompts[r] = b
	}
	return src, nil
}

// checkEnv refuses a --env NAME=value whose name is a secret's: a
// run's input stays in its history on the server, where no secret's
// value may go. Secrets reach a run on Temporal through the workers'
// environment.
func checkEnv(wf *config.Workflow, env []string) error {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); config.IsSecretName(k, wf.Secrets) {
			return ops.Usage("--env %s: a secret's value is not passed to a run on Temporal, whose history keeps what it was started with; set %s in the environment of the workers (flow worker)", k, k)
		}
	}
	return nil
}
