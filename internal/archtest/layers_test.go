package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runnerLayers ranks the packages under runner/ (docs/architecture.md,
// "Layers"): a package may import only packages of a lower rank. The
// decision core and the agents' parsers stand at the bottom, the record
// on the core, retention (which removes finished runs from the record)
// on the record, the run's specification shared by the drivers (spec)
// beside it, the local driver on those, the operations layer on the
// driver, and the front ends and the Temporal engine on top.
var runnerLayers = map[string]int{
	"runner/core":      0,
	"runner/agents":    0,
	"runner/record":    1,
	"runner/retention": 2,
	"runner/spec":      2,
	"runner/local":     3,
	"runner/ops":       4,
	"runner/temporal":  5,
	"runner/serve":     5,
	"runner/wftest":    5,
}

// TestRunnerLayers: no package under runner/ imports one above it or
// beside it, and every package there has its place in runnerLayers.
func TestRunnerLayers(t *testing.T) {
	root := moduleRoot(t)
	const module = "github.com/flow-run/flow/"
	dirs, err := os.ReadDir(filepath.Join(root, "runner"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "testdata" {
			continue
		}
		pkg := "runner/" + d.Name()
		rank, ok := runnerLayers[pkg]
		if !ok {
			t.Errorf("%s has no place in runnerLayers: add it, below what imports it", pkg)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, ok := strings.CutPrefix(path, module)
				if !ok || !strings.HasPrefix(dep, "runner/") {
					continue
				}
				if r, known := runnerLayers[dep]; !known || r >= rank {
					t.Errorf("%s imports %s, which does not stand below it (docs/architecture.md, \"Layers\")", fset.Position(imp.Pos()), dep)
				}
			}
		}
	}
	if files, _ := filepath.Glob(filepath.Join(root, "runner", "*.go")); len(files) > 0 {
		t.Errorf("runner/ holds Go files %v: its packages are siblings, and runner/ is none of them", files)
	}
}
