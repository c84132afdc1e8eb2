package gates

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Limits that keep a hostile or careless expression from hanging the
// runner or exhausting its memory.
const (
	// MaxNodes is the largest number of syntax tree nodes an expression
	// may have.
	MaxNodes = 10000
	// MemoryBudget is the allocation budget of one evaluation, in expr's
	// units: roughly one per element of a range, array or map built, per
	// iteration of map, filter and the other predicates, and per byte of
	// a repeat. Exceeding it stops the evaluation with an error.
	MemoryBudget = 1_000_000
)

// Program is a compiled expression. It is immutable and may be
// evaluated any number of times, concurrently.
type Program struct {
	src  string
	kind Kind
	prog *vm.Program
	use  funcSet
}

// Compile compiles an expression once, checking it against the typed
// environment and scope: unknown names, steps, vars and fields are
// errors, and so is a non-boolean result when kind is Bool. Errors are
// *Error, positioned in src.
func Compile(src string, scope Scope, kind Kind) (*Program, error) {
	opts := []expr.Option{
		expr.Env(exprEnv{}),
		expr.DisableBuiltin("now"),
		expr.MaxNodes(MaxNodes),
	}
	opts = append(opts, guardOptions()...)
	if kind == Bool {
		opts = append(opts, expr.AsBool())
	}

	// Parse with the same configuration expr.Compile builds, so that
	// the references can be checked, with better messages than the type
	// checker's, before it runs.
	cfg := conf.CreateNew()
	for _, opt := range opts {
		opt(cfg)
	}
	for name := range cfg.Disabled {
		delete(cfg.Builtins, name)
	}
	tree, err := parser.ParseWithConfig(src, cfg)
	if err != nil {
		return nil, fromExpr(src, err)
	}
	refs := checkRefs(src, scope, &tree.Node)
	if refs.err != nil {
		return nil, refs.err
	}

	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, explain(fromExpr(src, err))
	}
	return &Program{src: src, kind: kind, prog: prog, use: refs.use}, nil
}

// Source returns the expression as written.
func (p *Program) Source() string { return p.src }

// Eval evaluates the program against env; a nil env is the zero Env.
// Run-time errors (a failing read_file, an exhausted memory budget, a
// bad index) are *Error too, positioned in the source.
func (p *Program) Eval(env *Env) (any, error) {
	if env == nil {
		env = &Env{}
	}
	machine := vm.VM{MemoryBudget: MemoryBudget}
	out, err := machine.Run(p.prog, newExprEnv(env, p.use))
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

// typeName names the type of v for messages.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}
