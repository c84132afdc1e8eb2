package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/confine"
	"github.com/spf13/afero"
)

// The caps on what a workflow may hold (docs/reference/limits.md). A workflow file is
// refused before it is read past MaxWorkflowSize bytes, and decoding
// stops at the first step over MaxSteps, so that a huge or hostile file
// costs little.
const (
	MaxWorkflowSize = 16 << 20
	MaxSteps        = 50_000
	// MaxStepIDLen keeps every file name built from a step id (logs,
	// reports, decisions, with run id, generation, iteration and attempt)
	// under 255 bytes.
	MaxStepIDLen = 48
)

// Options are what LoadWith needs to know beyond the workflow file.
type Options struct {
	// Repo is the repository the workflow runs in. A prompt_file may lie
	// inside it as well as inside the workflow file's directory tree;
	// when it is "", only the workflow's directory tree is allowed.
	Repo string
	// Format is FormatFlow or FormatOrchestrator to read a YAML file in
	// that format; "" detects it (DetectFormat).
	Format string
	// Orchestrator says how a file in agent_orchestrator's format runs.
	Orchestrator OrchestratorOptions
	// Workspace, when set, is the run's workspace as the command line
	// gives it (agent_orchestrator's --git-worktree flags): it replaces
	// the file's own workspace: key.
	Workspace *Workspace
}

// Load reads the workflow file at path through fs with no repository
// known: it is LoadWith(fs, path, Options{}).
func Load(fs afero.Fs, path string) (*Workflow, error) {
	return LoadWith(fs, path, Options{})
}

// LoadWith reads the workflow file at path through fs, decodes it by its
// extension (.yaml and .yml are YAML; .hcl, including .flow.hcl, is
// HCL), and validates it. An invalid workflow yields a Diagnostics
// holding every problem found, sorted by position; so does a file larger
// than MaxWorkflowSize. A file that cannot be read, or that is not a
// regular file (a FIFO or a device, refused without blocking on it),
// yields an ordinary error wrapping the cause.
func LoadWith(fs afero.Fs, path string, o Options) (*Workflow, error) {
	format, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := readWorkflow(fs, path)
	if err != nil {
		return nil, err
	}
	return load(fs, path, format, data, o)
}

// Parse decodes and validates a workflow from its bytes; format is
// "yaml" or "hcl", and prompt files are read through fs relative to
// path's directory, confined to it.
func Parse(fs afero.Fs, path, format string, data []byte) (*Workflow, error) {
	if format != "yaml" && format != "hcl" {
		return nil, fmt.Errorf("parse workflow %s: unknown format %q", path, format)
	}
	return load(fs, path, format, data, Options{})
}

// readWorkflow reads a workflow file: a regular file, opened without
// blocking, of at most MaxWorkflowSize bytes however large it claims or
// grows to be. A larger file is a Diagnostics at its first character.
func readWorkflow(fs afero.Fs, path string) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load workflow: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("load workflow: %w", &confine.NotRegularError{Path: path, Mode: fi.Mode()})
	}
	if fi.Size() > MaxWorkflowSize {
		return nil, tooLarge(path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxWorkflowSize+1))
	if err != nil {
		return nil, fmt.Errorf("load workflow: read %s: %w", path, err)
	}
	if len(data) > MaxWorkflowSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

// tooLarge is the diagnostic of a workflow file over MaxWorkflowSize.
func tooLarge(path string) Diagnostics {
	return Diagnostics{{
		Pos:      Pos{File: path, Line: 1, Col: 1},
		Severity: SeverityError,
		Message:  fmt.Sprintf("workflow file is larger than %s, the most a workflow may be", confine.Size(MaxWorkflowSize)),
	}}
}

func load(fs afero.Fs, path, format string, data []byte, o Options) (*Workflow, error) {
	if len(data) > MaxWorkflowSize {
		return nil, tooLarge(path)
	}
	src := newSource(path, data)
	d := &diags{}
	dialect, why := o.Format, ""
	switch dialect {
	case "", FormatFlow:
	case FormatOrchestrator:
		if format != "yaml" {
			return nil, fmt.Errorf("load workflow %s: agent_orchestrator's format is YAML, not %s", path, format)
		}
	default:
		return nil, fmt.Errorf("load workflow %s: unknown format %q (want flow or orchestrator)", path, dialect)
	}
	if !invalidUTF8(src, d) {
		var raw *rawWorkflow
		if format == "yaml" {
			// One parse serves the format's detection and the decoding.
			y, root := yamlRoot(src, d)
			var det detection
			if dialect == "" && root != nil {
				det = detectRoot(root)
				dialect, why = det.format, det.why
			}
			switch {
			case root == nil:
			case det.clash():
				// One error naming both keys, rather than every key of
				// the other format reported as unknown.
				clashError(y, det)
			case dialect == FormatOrchestrator:
				raw = decodeOrchestrator(y, root, o)
			default:
				raw = decodeYAML(y, root)
			}
		} else {
			raw = decodeHCL(src, d)
		}
		if raw != nil && !raw.tooManySteps {
			w := build(raw, fs, path, o, d)
			if len(d.list) == 0 {
				w.Format = format
				if w.Dialect == "" {
					w.Dialect = DialectFlow
				}
				w.DialectReason = why
				w.Warnings = d.warnings
				w.Warnings.sort()
				return w, nil
			}
		}
	}
	d.list.sort()
	return nil, d.list
}

// invalidUTF8 reports the first byte of the file that is not UTF-8, at
// its own line and column; it returns whether there was one.
func invalidUTF8(src *source, d *diags) bool {
	if utf8.Valid(src.data) {
		return false
	}
	off := 0
	for off < len(src.data) {
		r, n := utf8.DecodeRune(src.data[off:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		off += n
	}
	d.errorf(src.pos(off), "invalid UTF-8: byte 0x%02x is not text (a workflow file is UTF-8)", src.data[off])
	return true
}

// formatOf tells the format of a workflow file from its name.
func formatOf(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".hcl":
		return "hcl", nil
	default:
		return "", fmt.Errorf("load workflow %s: unknown file type %q (want .yaml, .yml, .hcl or .flow.hcl)", path, ext)
	}
}
