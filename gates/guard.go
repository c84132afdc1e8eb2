package gates

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"
)

// Size limits on the strings and values an evaluation builds. expr's
// own memory budget (MemoryBudget) counts array elements and loop
// iterations but not the bytes of strings, nor the cost of walking
// nested values that share parts, so without these a few doublings
// (let b = a + a; let c = b + b; ...) would build gigabytes.
const (
	// MaxValueSize bounds, in bytes (an element of an array or map
	// counts as 8), a string built with + and the value handed to a
	// builtin whose cost grows with the size of nested values.
	MaxValueSize = 8 << 20
	// MaxEvalSize bounds the total of the sizes built by those
	// operations in one evaluation.
	MaxEvalSize = 32 << 20
)

// errTooLarge is the error of a value or evaluation over the limits.
var errTooLarge = errors.New("memory budget exceeded: value larger than 8 MiB or more than 32 MiB built")

// guardedBuiltins are expr's builtins whose cost grows with the size of
// nested values; they are replaced by versions that check sizes first.
// The slice is never modified.
var guardedBuiltins = []string{"toJSON", "string", "flatten", "join", "replace", "max", "min", "mean", "median"}

// Hidden names of the environment: the per-evaluation size budget and
// the functions + on strings is rewritten to call.
const (
	budgetName = "__budget"
	concatFunc = "__concat"
	addFunc    = "__add"
)

// budget is the size built so far by one evaluation.
type budget struct{ used int }

// spend adds n to the budget, failing when n or the total is too large.
func (b *budget) spend(n int) error {
	if n > MaxValueSize {
		return errTooLarge
	}
	b.used += n
	if b.used > MaxEvalSize {
		return errTooLarge
	}
	return nil
}

// budgetArg returns the budget passed as a guarded function's first
// argument; a missing one (a user calling a hidden function with
// something else) gets a fresh budget.
func budgetArg(args []any) *budget {
	if b, ok := args[0].(*budget); ok && b != nil {
		return b
	}
	return &budget{}
}

// budgetType is the type of a budget argument.
var budgetType = reflect.TypeFor[*budget]()

// guardOptions returns the expr options that bound the size of the
// values an evaluation builds.
func guardOptions() []expr.Option {
	opts := []expr.Option{
		expr.Function(concatFunc, concatStrings, new(func(*budget, string, string) string)),
		expr.Function(addFunc, addValues, new(func(*budget, any, any) any)),
		expr.Patch(guardPatcher{}),
	}
	for _, name := range guardedBuiltins {
		opts = append(opts, guardBuiltin(name))
	}
	return opts
}

// guardPatcher rewrites the syntax tree after a first type check: a + b
// becomes a call of concatFunc when both sides are strings, and of
// addFunc when a side's type is known only at run time and the other
// may be a string; guarded builtins get the budget as first argument.
type guardPatcher struct{}

// Visit implements ast.Visitor.
func (guardPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator != "+" || n.Left.Type() == nil || n.Right.Type() == nil {
			return
		}
		l, r := n.Left.Type().Kind(), n.Right.Type().Kind()
		var fn string
		switch {
		case l == reflect.String && r == reflect.String:
			fn = concatFunc
		case l == reflect.Interface && (r == reflect.Interface || r == reflect.String),
			l == reflect.String && r == reflect.Interface:
			fn = addFunc
		default:
			return
		}
		call := &ast.CallNode{
			Callee:    &ast.IdentifierNode{Value: fn},
			Arguments: []ast.Node{&ast.IdentifierNode{Value: budgetName}, n.Left, n.Right},
		}
		ast.Patch(node, call)
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || !slices.Contains(guardedBuiltins, id.Value) {
			return
		}
		if len(n.Arguments) > 0 {
			if first, ok := n.Arguments[0].(*ast.IdentifierNode); ok && first.Value == budgetName {
				return // already patched
			}
		}
		budgetNode := &ast.IdentifierNode{Value: budgetName}
		budgetNode.SetLocation(n.Location())
		n.Arguments = append([]ast.Node{budgetNode}, n.Arguments...)
	}
}

// concatStrings is + on two strings.
func concatStrings(args ...any) (any, error) {
	a, b := args[1].(string), args[2].(string)
	if err := budgetArg(args).spend(len(a) + len(b)); err != nil {
		return nil, err
	}
	return a + b, nil
}

// addValues is + on operands typed only at run time: concatenation
// within the budget for strings, expr's own + otherwise.
func addValues(args ...any) (any, error) {
	if a, ok := args[1].(string); ok {
		if b, ok := args[2].(string); ok {
			return concatStrings(args[0], a, b)
		}
	}
	return runtime.Add(args[1], args[2]), nil
}

// guardBuiltin replaces expr's builtin name by a function that takes
// the budget as first argument and checks the size of the others
// before calling the builtin, keeping the builtin's type checks.
func guardBuiltin(name string) expr.Option {
	var orig *builtin.Function
	for _, f := range builtin.Builtins {
		if f.Name == name {
			orig = f
		}
	}
	call := func(args ...any) (any, error) {
		switch {
		case orig.Func != nil:
			return orig.Func(args...)
		case orig.Fast != nil:
			return orig.Fast(args[0]), nil
		default:
			out, _, err := orig.Safe(args...)
			return out, err
		}
	}
	guarded := func(args ...any) (any, error) {
		b, args := budgetArg(args), args[1:]
		if err := b.spend(resultSize(name, args)); err != nil {
			return nil, err
		}
		return call(args...)
	}
	fn := &builtin.Function{Name: name, Func: guarded}
	for _, t := range orig.Types {
		in := []reflect.Type{budgetType}
		for i := range t.NumIn() {
			in = append(in, t.In(i))
		}
		out := make([]reflect.Type, t.NumOut())
		for i := range out {
			out[i] = t.Out(i)
		}
		fn.Types = append(fn.Types, reflect.FuncOf(in, out, t.IsVariadic()))
	}
	if orig.Validate != nil {
		fn.Validate = func(args []reflect.Type) (reflect.Type, error) {
			if len(args) == 0 || args[0] != budgetType {
				return nil, fmt.Errorf("%s: internal error: missing budget", name)
			}
			return orig.Validate(args[1:])
		}
	}
	if orig.Deref != nil {
		fn.Deref = func(i int, arg reflect.Type) bool {
			return i > 0 && orig.Deref(i-1, arg)
		}
	}
	return func(c *conf.Config) { c.Functions[name] = fn }
}

// resultSize estimates the size of the result of builtin name called
// with args, or of the work it does; at most MaxValueSize+1.
func resultSize(name string, args []any) int {
	const limit = MaxValueSize + 1
	switch name {
	case "replace":
		// replace(s, old, new): every match of old grows s by
		// len(new)-len(old); an empty old matches around every rune.
		if len(args) == 3 {
			s, _ := args[0].(string)
			old, _ := args[1].(string)
			repl, _ := args[2].(string)
			return min(limit, len(s)+strings.Count(s, old)*max(0, len(repl)-len(old)))
		}
	case "join":
		// join(array, sep): the elements and a separator between each.
		size := sizeOf(args[0], limit)
		if len(args) == 2 {
			sep, _ := args[1].(string)
			v := reflect.ValueOf(args[0])
			if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
				size += v.Len() * len(sep)
			}
		}
		return min(limit, size)
	}
	size := 0
	for _, a := range args {
		size += sizeOf(a, limit-size)
		if size >= limit {
			break
		}
	}
	return size
}

// sizeOf estimates the size of v, counting strings by their bytes and
// every element, key and field as 8, walking shared values once per
// reference. It stops, returning at least limit, once limit is reached,
// so its cost is bounded by limit whatever v is.
func sizeOf(v any, limit int) int {
	s := sizer{limit: limit}
	s.walk(reflect.ValueOf(v))
	return s.size
}

// sizer is the state of sizeOf.
type sizer struct {
	size, limit int
}

// walk adds the size of v.
func (s *sizer) walk(v reflect.Value) {
	if s.size >= s.limit {
		return
	}
	s.size += 8
	switch v.Kind() {
	case reflect.String:
		s.size += v.Len()
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			s.walk(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			s.size += v.Len()
			return
		}
		for i := 0; i < v.Len() && s.size < s.limit; i++ {
			s.walk(v.Index(i))
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() && s.size < s.limit {
			s.walk(it.Key())
			s.walk(it.Value())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField() && s.size < s.limit; i++ {
			if v.Type().Field(i).IsExported() {
				s.walk(v.Field(i))
			}
		}
	}
}
