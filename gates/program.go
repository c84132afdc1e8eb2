package gates

import (
	"fmt"
	"slices"

	"github.com/expr-lang/expr/vm"
)

// Limits that keep a hostile or careless expression from hanging the
// runner or exhausting its memory.
const (
	// MaxNodes is the largest number of syntax tree nodes an expression
	// may have.
	MaxNodes = 10000
	// MemoryBudget is the allocation budget of one evaluation, in expr's
	// units: roughly one per element of an array or map built, by map
	// and filter among others. Exceeding it stops the evaluation with an
	// error. Ranges are charged to the size and work budgets instead
	// (see MaxEvalSize and MaxSteps).
	MemoryBudget = 1_000_000
)

// Program is a compiled expression. It is immutable and may be
// evaluated any number of times, concurrently.
type Program struct {
	src  string
	kind Kind
	prog *vm.Program
	use  funcSet
	refs Refs
}

// Refs says what of the run an expression reads, from its syntax tree:
// what a runner must keep for it. A false positive costs only time or
// memory.
type Refs struct {
	// RunWide is true when the expression reads steps or run at all.
	RunWide bool
	// Outputs lists, sorted, the steps whose output it reads by name
	// (steps.X.output, steps["X"]["output"]).
	Outputs []string
	// AnyOutput is true when it reads an output whose step is known
	// only at run time (steps[x].output, or through a variable).
	AnyOutput bool
	// Item is true when it reads a loop's item or its index (the
	// scope's Item or Index name). The item is a value recorded when
	// the loop's list was evaluated: reading it, even item.output,
	// reads nothing else of the run.
	Item bool
}

// Refs returns what the expression reads of the run.
func (p *Program) Refs() Refs { return p.refs }

// union adds what o reads to r.
func (r *Refs) union(o Refs) {
	r.RunWide = r.RunWide || o.RunWide
	r.AnyOutput = r.AnyOutput || o.AnyOutput
	r.Item = r.Item || o.Item
	for _, s := range o.Outputs {
		if !slices.Contains(r.Outputs, s) {
			r.Outputs = append(r.Outputs, s)
		}
	}
	slices.Sort(r.Outputs)
}

// Compile compiles an expression once, checking it against the typed
// environment and scope: unknown names, steps, vars and fields are
// errors, and so is a non-boolean result when kind is Bool. Errors are
// *Error, positioned in src. To compile many expressions against one
// scope, a Compiler is much cheaper.
func Compile(src string, scope Scope, kind Kind) (*Program, error) {
	return newCompiler(scope).Compile(src, kind)
}

// Source returns the expression as written.
func (p *Program) Source() string { return p.src }

// Eval evaluates the program against env; a nil env is the zero Env.
// Run-time errors (a failing read_file, an exhausted memory budget, a
// bad index) are *Error too, positioned in the source.
func (p *Program) Eval(env *Env) (any, error) {
	return p.eval(env, nil)
}

// eval is Eval. When steps is not nil, the evaluation's work is counted
// from *steps on, the steps evaluations before it have spent (the
// other parts of a template), and *steps is updated.
func (p *Program) eval(env *Env, steps *int) (any, error) {
	if env == nil {
		env = &Env{}
	}
	e := newExprEnv(env, p.use)
	if steps != nil && e.Budget != nil {
		e.Budget.steps = *steps
		defer func() { *steps = e.Budget.steps }()
	}
	machine := vm.VM{MemoryBudget: MemoryBudget}
	out, err := machine.Run(p.prog, e)
	if err != nil {
		return nil, fromExpr(p.src, err)
	}
	return out, nil
}

// EvalBool evaluates the program and requires a boolean result.
func (p *Program) EvalBool(env *Env) (bool, error) {
	out, err := p.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, newError(p.src, 0, fmt.Sprintf("expected bool, but got %s", typeName(out)))
	}
	return b, nil
}

// Int converts an expression's value to a whole number: an int, a
// float with no fraction, or a string holding a number (a var).
func Int(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if n != float64(int(n)) {
			return 0, fmt.Errorf("%v is not a whole number", n)
		}
		return int(n), nil
	case string:
		var i int
		if _, err := fmt.Sscan(n, &i); err != nil {
			return 0, fmt.Errorf("%q is not a number", n)
		}
		return i, nil
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

// typeName names the type of v for messages.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}
