package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is this module's path; imports under it are followed.
const module = "github.com/flow-run/flow/"

// forbidden are the packages through which code reaches files,
// processes, the network, randomness or the environment.
var forbidden = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "io/ioutil": true, "path/filepath": true,
	"syscall": true, "net": true, "net/http": true, "math/rand": true, "math/rand/v2": true,
	"crypto/rand": true, "unsafe": true, "runtime": true,
	"github.com/spf13/afero": true,
}

// forbiddenCalls are the functions of package time that read the clock
// or wait on it.
var forbiddenCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTimer": true, "NewTicker": true,
}

// TestCoreIsPure: the decision core and every package of this module it
// imports do no I/O, read no clock, draw no random numbers and start no
// goroutine, so that any driver — the local one, a test, a Temporal
// workflow replaying history — gets the same decisions from the same
// inputs. The rule is checked on the source of the package and of its
// imports within this module, transitively.
func TestCoreIsPure(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var visit func(pkg string)
	visit = func(pkg string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join(root, strings.TrimPrefix(pkg, module))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("read %s: %v", dir, err)
		}
		fset := token.NewFileSet()
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if forbidden[path] {
					t.Errorf("%s/%s imports %s", pkg, name, path)
				}
				if strings.HasPrefix(path, module) {
					visit(path)
				}
			}
			full, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(full, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: starts a goroutine", fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && forbiddenCalls[n.Sel.Name] {
						t.Errorf("%s: calls time.%s", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				return true
			})
		}
	}
	visit(module + "runner/core")
	if !seen[module+"internal/event"] {
		t.Errorf("the walk did not reach the core's imports: %v", seen)
	}
}
