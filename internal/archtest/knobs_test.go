package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// knobs maps the import path of a package to those of its functions
// that no file of the module may use.
var knobs = map[string][]string{
	"runtime":               {"GOMAXPROCS"},
	"runtime/debug":         {"SetGCPercent", "FreeOSMemory"},
	"syscall":               {"RawSyscall", "RawSyscall6"},
	"golang.org/x/sys/unix": {"RawSyscall", "RawSyscall6", "RawSyscallNoError"},
}

// use is a use of a knob found in a file.
type use struct {
	pos token.Position
	// name is the knob as package.Function, the package by its own
	// name ("debug.FreeOSMemory"), or `. "path"` for a dot import.
	name string
}

func (u use) String() string { return fmt.Sprintf("%d:%d %s", u.pos.Line, u.pos.Column, u.name) }

// findKnobs returns the uses of knobs in f: every selector naming a
// knob through an import of its package, whatever the import's local
// name, whether called or not; and every dot import of a package with
// knobs, whose uses could not be told from local names.
func findKnobs(fset *token.FileSet, f *ast.File) []use {
	var uses []use
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || knobs[p] == nil {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
		case ".":
			uses = append(uses, use{fset.Position(imp.Pos()), ". " + imp.Path.Value})
		default:
			local[name] = p
		}
	}
	if len(local) == 0 {
		return uses
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok {
			if p, ok := local[id.Name]; ok && slices.Contains(knobs[p], sel.Sel.Name) {
				uses = append(uses, use{fset.Position(sel.Pos()), path.Base(p) + "." + sel.Sel.Name})
			}
		}
		return true
	})
	return uses
}

// TestNoRuntimeKnobs: no file of the module uses a runtime knob or a
// raw system call (see doc.go).
func TestNoRuntimeKnobs(t *testing.T) {
	root := moduleRoot(t)
	files := sourceFiles(t, root)
	if !slices.Contains(files, "internal/archtest/doc.go") {
		t.Fatalf("the walk of %s did not find internal/archtest/doc.go among %d files", root, len(files))
	}
	fset := token.NewFileSet()
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("read %s: %v", rel, err)
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parse: %v", err)
			continue
		}
		for _, u := range findKnobs(fset, f) {
			t.Errorf("%s: %s: a runtime knob or raw system call (internal/archtest/doc.go says why)", u.pos, u.name)
		}
	}
}

// moduleRoot returns the directory of the go.mod at or above the
// test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	start, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := start; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod at or above %s", start)
		}
		dir = parent
	}
}

// sourceFiles returns the module-relative, slash-separated paths of
// the .go files under root that are not tests, leaving out testdata,
// vendor, hidden and underscore directories and nested modules, as the
// go command does.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk module %s: %v", root, err)
	}
	return files
}

// TestFindKnobs: a knob is found through the import it is used by,
// whatever that import's name, and only through it.
func TestFindKnobs(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // "line:col package.Function"
	}{
		{"call", `package p

import "runtime"

func f() {
	runtime.GOMAXPROCS(1)
}
`, []string{"6:2 runtime.GOMAXPROCS"}},
		{"renamed import", `package p

import rt "runtime"

func f() int { return rt.GOMAXPROCS(0) }
`, []string{"5:23 runtime.GOMAXPROCS"}},
		{"runtime/debug, called and as a value", `package p

import "runtime/debug"

func f() func() {
	debug.SetGCPercent(50)
	return debug.FreeOSMemory
}
`, []string{"6:2 debug.SetGCPercent", "7:9 debug.FreeOSMemory"}},
		{"raw system calls", `package p

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func f() {
	syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
	syscall.Syscall(syscall.SYS_GETPID, 0, 0, 0)
	unix.RawSyscall6(unix.SYS_GETPID, 0, 0, 0, 0, 0, 0)
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
`, []string{"10:2 syscall.RawSyscall", "12:2 unix.RawSyscall6"}},
		{"another package's function of the same name", `package p

import (
	debug "example.com/debug"
	runtime "example.com/myruntime"
)

func f() {
	debug.FreeOSMemory()
	runtime.GOMAXPROCS(1)
}
`, nil},
		{"other functions of the packages", `package p

import (
	"runtime"
	"runtime/debug"
)

func f() int {
	debug.SetMemoryLimit(1 << 30)
	return runtime.NumCPU()
}
`, nil},
		{"in comments and strings only", `package p

import "fmt"

// f does not call runtime.GOMAXPROCS(1).
func f() { fmt.Println("debug.FreeOSMemory()", "syscall.RawSyscall") }
`, nil},
		{"blank import", `package p

import _ "runtime"
`, nil},
		{"dot import", `package p

import . "runtime"

func f() { GOMAXPROCS(1) }
`, []string{`3:8 . "runtime"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range findKnobs(fset, f) {
				got = append(got, u.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findKnobs = %q, want %q", got, tt.want)
			}
		})
	}
}
