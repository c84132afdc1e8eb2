package config

import (
	"bytes"
	_ "embed"
)

//go:embed schema.json
var schema []byte

// Schema returns a JSON Schema (draft 2020-12) of the YAML workflow
// format, with descriptions, for editors: a workflow file that starts
// with "# yaml-language-server: $schema=<path to it>" is checked and
// completed as it is typed. The schema checks shape only; Load checks
// everything else.
func Schema() []byte { return bytes.Clone(schema) }
