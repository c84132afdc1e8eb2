package config

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite schema.json from the key tables")

// TestSchemaFile checks that schema.json, the copy of the schema kept in
// the repository for editors to point at, is what Schema builds; go test
// -run TestSchemaFile -update rewrites it.
func TestSchemaFile(t *testing.T) {
	if *update {
		if err := os.WriteFile("schema.json", Schema(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, Schema()) {
		t.Error("schema.json is not what Schema builds: run go generate ./... (or go test ./config -run TestSchemaFile -update)")
	}
}
