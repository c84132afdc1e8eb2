package record

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/atomicfile"
)

// WriteLoadedWorkflow writes workflow.json in runDir: the workflow's
// file, its digest and its canonical form (WriteLoadedWorkflowAt).
func WriteLoadedWorkflow(fsys afero.Fs, runDir string, wf *config.Workflow) error {
	if err := fsys.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	return WriteLoadedWorkflowAt(fsys, filepath.Join(runDir, LoadedWorkflowFile), wf.File, wf.Digest(), wf)
}

// WriteLoadedWorkflowAt writes workflow.json at path, replacing it
// atomically: the workflow's file, digest and canonical form, encoded
// as it is written.
func WriteLoadedWorkflowAt(fsys afero.Fs, path, file, digest string, wf *config.Workflow) error {
	err := atomicfile.ReplaceWith(fsys, path, 0o644, func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "{\n  \"file\": %q,\n  \"digest\": %q,\n  \"workflow\": ", file, digest); err != nil {
			return err
		}
		if err := wf.WriteSpec(w); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n}\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("write workflow.json: %w", err)
	}
	return nil
}
