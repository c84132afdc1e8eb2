package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// Load reads the workflow file at path through fs, decodes it by its
// extension (.yaml and .yml are YAML; .hcl, including .flow.hcl, is
// HCL), and validates it. An invalid workflow yields a Diagnostics
// holding every problem found, sorted by position; a file that cannot be
// read yields an ordinary error wrapping the cause.
func Load(fs afero.Fs, path string) (*Workflow, error) {
	format, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := afero.ReadFile(fs, path)
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	return load(fs, path, format, data)
}

// Parse decodes and validates a workflow from its bytes; format is
// "yaml" or "hcl", and prompt files are read through fs relative to
// path's directory.
func Parse(fs afero.Fs, path, format string, data []byte) (*Workflow, error) {
	if format != "yaml" && format != "hcl" {
		return nil, fmt.Errorf("parse workflow %s: unknown format %q", path, format)
	}
	return load(fs, path, format, data)
}

func load(fs afero.Fs, path, format string, data []byte) (*Workflow, error) {
	src := newSource(path, data)
	d := &diags{}
	var raw *rawWorkflow
	if format == "yaml" {
		raw = decodeYAML(src, d)
	} else {
		raw = decodeHCL(src, d)
	}
	var w *Workflow
	if raw != nil {
		w = build(raw, fs, path, d)
	}
	if len(d.list) > 0 {
		d.list.sort()
		return nil, d.list
	}
	w.Format = format
	return w, nil
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
