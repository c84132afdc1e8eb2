package temporal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// workflowFiles are the files of the workflow code: what runs inside
// Temporal's deterministic sandbox, on every replay.
var workflowFiles = []string{"workflow.go", "workflow_handlers.go", "workflow_gates.go", "workflow_artifacts.go", "workflow_tail.go", "input.go"}

// forbiddenImports reach files, processes, the network, randomness,
// goroutines or the worker's side of Temporal.
var forbiddenImports = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "io/ioutil": true, "io/fs": true, "path/filepath": true,
	"syscall": true, "net": true, "net/http": true, "net/url": true, "math/rand": true, "math/rand/v2": true,
	"crypto/rand": true, "unsafe": true, "runtime": true, "sync": true, "sync/atomic": true,
	"go.temporal.io/sdk/client": true, "go.temporal.io/sdk/activity": true, "go.temporal.io/sdk/worker": true,
	"github.com/flow-run/flow/internal/proc": true, "github.com/flow-run/flow/internal/eventlog": true,
}

// forbiddenTime are the functions of package time that read or wait on
// the clock: the workflow has workflow.Now and workflow.NewTimer.
var forbiddenTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTimer": true, "NewTicker": true,
}

// allowedCalls are, per package the workflow code calls into, the
// functions it may call: ones that read no file and no clock.
var allowedCalls = map[string]map[string]bool{
	"afero":  {"NewMemMapFs": true, "WriteFile": true},
	"config": {"LoadWith": true},
	"local":  {},
	"spec":   {"NewPlanOf": true, "Secrets": true},
	"record": {"Created": true, "RunDir": true, "FillInputs": true},
}

// TestWorkflowCodeIsPure: the workflow's files import nothing that
// reaches the machine, call no clock, start no goroutine of their own
// and call only the functions of flow's packages that are known to do
// no I/O. The SDK's workflowcheck does not see file access; this does.
func TestWorkflowCodeIsPure(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range workflowFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement (use workflow.Go)", fset.Position(n.Pos()))
			case *ast.SelectStmt:
				t.Errorf("%s: a select statement (use workflow.NewSelector)", fset.Position(n.Pos()))
			case *ast.SendStmt:
				t.Errorf("%s: a channel send (use workflow.Channel)", fset.Position(n.Pos()))
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					break
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok {
					break
				}
				if pkg.Name == "time" && forbiddenTime[sel.Sel.Name] {
					t.Errorf("%s: time.%s reads the clock", fset.Position(n.Pos()), sel.Sel.Name)
				}
				if allowed, ok := allowedCalls[pkg.Name]; ok && !allowed[sel.Sel.Name] && ast.IsExported(sel.Sel.Name) {
					t.Errorf("%s: %s.%s is not known to be free of I/O", fset.Position(n.Pos()), pkg.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// TestPurityTestCatchesIO: the test sees what it must refuse.
func TestPurityTestCatchesIO(t *testing.T) {
	src := `package temporal
import ("os"; "time"; "github.com/spf13/afero")
func f() { _ = time.Now(); go f(); _ = afero.NewOsFs(); os.Exit(1) }`
	f, err := parser.ParseFile(token.NewFileSet(), "bad.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		found["import "+path] = forbiddenImports[path]
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found["go"] = true
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					if pkg.Name == "time" {
						found["time."+sel.Sel.Name] = forbiddenTime[sel.Sel.Name]
					}
					if a, ok := allowedCalls[pkg.Name]; ok {
						found[pkg.Name+"."+sel.Sel.Name] = !a[sel.Sel.Name]
					}
				}
			}
		}
		return true
	})
	for _, want := range []string{"import os", "go", "time.Now", "afero.NewOsFs"} {
		if !found[want] {
			t.Errorf("the purity rules miss %s", want)
		}
	}
}
