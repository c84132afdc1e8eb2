package gates

import (
	"reflect"
	"strings"
	"time"
)

// exprEnv is the typed environment every expression is compiled against
// and evaluated with. Its expr tags are the names users write; the func
// fields are bound per evaluation, and only when the program uses them.
type exprEnv struct {
	Vars      map[string]string   `expr:"vars"`
	Env       map[string]string   `expr:"env"`
	Run       RunInfo             `expr:"run"`
	Steps     map[string]StepInfo `expr:"steps"`
	ExitCode  int                 `expr:"exit_code"`
	Output    string              `expr:"output"`
	Signals   map[string]bool     `expr:"signals"`
	Verdict   string              `expr:"verdict"`
	Metrics   map[string]string   `expr:"metrics"`
	Report    map[string]any      `expr:"report"`
	Attempt   int                 `expr:"attempt"`
	Iteration int                 `expr:"iteration"`
	Error     string              `expr:"error"`
	Feedback  Feedback            `expr:"feedback"`
	Check     CheckInfo           `expr:"check"`

	FileExists func(string) (bool, error)     `expr:"file_exists"`
	ReadFile   func(string) (string, error)   `expr:"read_file"`
	ReadJSON   func(string) (any, error)      `expr:"read_json"`
	Glob       func(string) ([]string, error) `expr:"glob"`
	Now        func() time.Time               `expr:"now"`

	// Budget bounds the sizes built and the work done by this
	// evaluation; see guard.go and work.go.
	Budget *budget `expr:"__budget"`
	// budget is what Budget points to, when set: allocated with the
	// environment rather than on its own. expr does not see
	// unexported fields.
	budget budget

	// Item and Index are the loop item and its position. Users never
	// write these names: the compiler renames the identifiers that are
	// the scope's Item and Index to them (see itemNames).
	Item  any `expr:"__item"`
	Index int `expr:"__index"`
}

// funcSet records which environment functions a program calls, so that
// evaluation binds only those.
type funcSet uint8

// The environment functions.
const (
	useFileExists funcSet = 1 << iota
	useReadFile
	useReadJSON
	useGlob
	useNow
	// useBudget: the program needs a budget (see guard.go and work.go).
	useBudget
	// usePatch: the program's tree is patched after a first type check
	// (guardPatcher and workPatcher).
	usePatch
)

// funcBit returns the bit of the environment function name, or 0 when
// name is not one.
func funcBit(name string) funcSet {
	switch name {
	case "file_exists":
		return useFileExists
	case "read_file":
		return useReadFile
	case "read_json":
		return useReadJSON
	case "glob":
		return useGlob
	case "now":
		return useNow
	}
	return 0
}

// Names returns the names of the expression environment, variables
// first and then functions, in the order the documentation lists them.
func Names() []string {
	return tagNames(reflect.TypeFor[exprEnv]())
}

// StepFields returns the field names of steps.<id>, in declaration order.
func StepFields() []string {
	return tagNames(reflect.TypeFor[StepInfo]())
}

// UsageFields returns the field names of run.usage and
// steps.<id>.usage, in declaration order.
func UsageFields() []string {
	return tagNames(reflect.TypeFor[Usage]())
}

// tagNames returns the expr tag names of the fields of struct type t.
func tagNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("expr"); name != "" && name != "-" && !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	return names
}

// structFields returns the expr tag names of the fields of the struct
// values an expression may select from by a fixed name: run, feedback,
// check, steps.<id> and the usage of run and of a step. It returns nil
// for any other type.
func structFields(t reflect.Type) []string {
	switch t {
	case reflect.TypeFor[RunInfo](), reflect.TypeFor[Feedback](),
		reflect.TypeFor[CheckInfo](), reflect.TypeFor[StepInfo](),
		reflect.TypeFor[Usage]():
		return tagNames(t)
	}
	return nil
}

// newExprEnv copies env into the environment the VM reads and binds
// the functions in use.
func newExprEnv(env *Env, use funcSet) *exprEnv {
	e := &exprEnv{
		Vars:      env.Vars,
		Env:       env.Env,
		Run:       env.Run,
		Steps:     env.Steps,
		ExitCode:  env.ExitCode,
		Output:    env.Output,
		Signals:   env.Signals,
		Verdict:   env.Verdict,
		Metrics:   env.Metrics,
		Report:    env.Report,
		Attempt:   env.Attempt,
		Iteration: env.Iteration,
		Error:     env.Error,
		Feedback:  env.Feedback,
		Check:     env.Check,
		Item:      env.Item,
		Index:     env.Index,
	}
	if use == 0 {
		return e
	}
	// The file functions charge their calls and what they read to the
	// budget too.
	if use&(useBudget|useFileExists|useReadFile|useReadJSON|useGlob) != 0 {
		e.Budget = &e.budget
	}
	files := fileFuncs{fs: env.FS, dir: env.Dir, budget: e.Budget}
	if use&useFileExists != 0 {
		e.FileExists = files.exists
	}
	if use&useReadFile != 0 {
		e.ReadFile = files.read
	}
	if use&useReadJSON != 0 {
		e.ReadJSON = files.readJSON
	}
	if use&useGlob != 0 {
		e.Glob = files.glob
	}
	if use&useNow != 0 {
		now := env.Now
		e.Now = func() time.Time { return now }
	}
	return e
}
