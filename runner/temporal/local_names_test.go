package temporal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// localNames are what the Temporal driver may name of the local
// driver: its session performer, which a worker runs sessions with, and
// the announcer that prints a run's progress as a local run's. What a
// run is asked and how it ended is package spec's, shared by both.
var localNames = map[string]bool{"Runner": true, "Remote": true, "Mirrors": true, "NewAnnouncer": true, "Announcer": true}

// TestLocalOnlyForSessions: the driver's code names nothing else of
// runner/local.
func TestLocalOnlyForSessions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "local" && pkg.Obj == nil && !localNames[sel.Sel.Name] {
					t.Errorf("%s: local.%s: what both drivers share belongs in runner/spec", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
