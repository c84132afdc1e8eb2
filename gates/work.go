package gates

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"
)

// MaxSteps bounds the work of one evaluation, in steps. A step is one
// iteration of a loop (map, filter, all, any, reduce and the other
// predicates), one element of a range, of an array a builtin or an
// operator walks, or of a value compared in depth, 64 bytes of a
// string scanned, or one byte of input times one part of a regular
// expression matched against it. The steps are counted from the
// values, never from a clock, so that the same expression over the
// same environment always stops at the same point, when it is
// evaluated again after a crash as when it first ran. The budget is
// well under a second of work on a current machine.
const MaxSteps = 5_000_000

// errTooMuchWork is the error of an evaluation over MaxSteps.
var errTooMuchWork = fmt.Errorf("expression does too much work: more than %d steps", MaxSteps)

// Costs, in steps.
const (
	// scanBytes is how many bytes of a string make one step of a
	// scan (==, contains, a map lookup, len, ...).
	scanBytes = 64
	// fileSteps is what a call of a file function costs besides
	// the bytes it returns: a system call or several.
	fileSteps = 1000
	// sortFactor multiplies the cost of a sortBy key: sorting
	// compares each key about log2(n) times, and n is below 2^32.
	sortFactor = 32
)

// step charges n steps to the budget, failing once the evaluation has
// spent more than MaxSteps. Once it has failed it fails again.
func (b *budget) step(n int) error {
	if n < 0 || n > MaxSteps-b.steps {
		b.steps = MaxSteps + 1
		return errTooMuchWork
	}
	b.steps += n
	return nil
}

// left returns the steps left before the budget is spent.
func (b *budget) left() int { return max(0, MaxSteps-b.steps) }

// Hidden functions that count work; the guard patcher wraps nodes in
// calls of them (see workPatcher).
const (
	eachFunc    = "__each"    // a loop's array: its length
	rangeFunc   = "__range"   // a..b: its size, before it is built
	scanFunc    = "__scan"    // a string a loop body scans
	sortKeyFunc = "__sortKey" // a sortBy key: compared log n times
	deepFunc    = "__deep"    // a value == compares in depth
	inFunc      = "__in"      // x in array: a comparison per element
	matchFunc   = "__match"   // s matches pattern
)

// hiddenFuncs are the names of the hidden functions that take the
// budget as first argument.
var hiddenFuncs = []string{concatFunc, addFunc, eachFunc, rangeFunc, scanFunc, sortKeyFunc, deepFunc, inFunc, matchFunc}

var (
	boolType     = reflect.TypeFor[bool]()
	intSliceType = reflect.TypeFor[[]int]()
)

// workOptions returns the expr options that declare the hidden
// functions counting work.
func workOptions() []expr.Option {
	same := func(args []reflect.Type) (reflect.Type, error) { return args[1], nil }
	fns := []*builtin.Function{
		{Name: eachFunc, Func: chargeEach, Validate: checkArgs(2, same)},
		{Name: scanFunc, Func: chargeScan, Validate: checkArgs(2, same)},
		{Name: sortKeyFunc, Func: chargeSortKey, Validate: checkArgs(2, same)},
		{Name: deepFunc, Func: chargeDeep, Validate: checkArgs(2, same)},
		{Name: rangeFunc, Func: makeRange, Validate: checkArgs(3, func([]reflect.Type) (reflect.Type, error) {
			return intSliceType, nil
		})},
		{Name: inFunc, Func: inArray, Validate: checkArgs(3, func([]reflect.Type) (reflect.Type, error) {
			return boolType, nil
		})},
		{Name: matchFunc, Func: match, Validate: checkArgs(3, func([]reflect.Type) (reflect.Type, error) {
			return boolType, nil
		})},
	}
	opts := make([]expr.Option, len(fns))
	for i, fn := range fns {
		opts[i] = func(c *conf.Config) { c.Functions[fn.Name] = fn }
	}
	return opts
}

// checkArgs returns a Validate function requiring n arguments, the
// first the budget, and typing the call with result.
func checkArgs(n int, result func([]reflect.Type) (reflect.Type, error)) func([]reflect.Type) (reflect.Type, error) {
	return func(args []reflect.Type) (reflect.Type, error) {
		if len(args) != n || args[0] != budgetType {
			return nil, fmt.Errorf("internal error: hidden function called with %d arguments", len(args))
		}
		return result(args)
	}
}

// chargeEach is eachFunc: a loop over args[1] does an iteration per
// element.
func chargeEach(args ...any) (any, error) {
	return args[1], budgetArg(args).step(1 + lenOf(deref(args[1])))
}

// chargeScan is scanFunc: an operator or builtin in a loop's body scans
// the string args[1] each time the body runs.
func chargeScan(args ...any) (any, error) {
	return args[1], budgetArg(args).step(1 + scanSize(args[1]))
}

// chargeSortKey is sortKeyFunc: sortBy compares each key about log2(n)
// times.
func chargeSortKey(args ...any) (any, error) {
	return args[1], budgetArg(args).step(sortFactor * (1 + scanSize(args[1])))
}

// chargeDeep is deepFunc: == on two values that may be arrays or maps
// compares them element by element, at most as many elements as the
// smaller has; args[1] is one of the two.
func chargeDeep(args ...any) (any, error) {
	b := budgetArg(args)
	return args[1], b.step(1 + deepSize(args[1], b.left()+1))
}

// inArray is inFunc, x in array: a comparison of x with each element,
// as long as x where x is a string, and no longer than the element
// where x may hold arrays or maps. A map or a struct is a lookup.
func inArray(args ...any) (any, error) {
	b, x, coll := budgetArg(args), args[1], args[2]
	v := reflect.ValueOf(deref(coll))
	switch v.Kind() {
	case reflect.Array, reflect.Slice:
		n := v.Len()
		var cost int
		switch x := x.(type) {
		case nil, bool, int, int64, float64, time.Time, time.Duration:
			cost = n
		case string:
			cost = mulSat(n, 1+len(x)/scanBytes)
		default:
			cost = n + deepSize(coll, b.left()+1)
		}
		if err := b.step(1 + cost); err != nil {
			return nil, err
		}
	default:
		if err := b.step(1 + scanSize(x)); err != nil {
			return nil, err
		}
	}
	return runtime.In(x, coll), nil
}

// makeRange is rangeFunc, from..to: the steps and the bytes of the
// range are charged before it is built.
func makeRange(args ...any) (any, error) {
	b := budgetArg(args)
	from, to := runtime.ToInt(args[1]), runtime.ToInt(args[2])
	size := 0
	if to >= from {
		if from < 0 && to > math.MaxInt+from {
			size = math.MaxInt
		} else {
			size = min(to-from, math.MaxInt-1) + 1
		}
	}
	if err := b.step(1 + min(size, MaxSteps)); err != nil {
		return nil, err
	}
	if err := b.spend(mulSat(8, size)); err != nil {
		return nil, err
	}
	return runtime.MakeRange(from, to), nil
}

// mulSat returns a*b for non-negative a and b, or math.MaxInt when that
// overflows.
func mulSat(a, b int) int {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return math.MaxInt
	}
	return int(lo)
}

// deref returns v without the pointers around it.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.IsValid() && rv.CanInterface() {
		return rv.Interface()
	}
	return v
}

// scanSize is the cost of scanning v: a step per scanBytes of a string;
// nothing for other values, which comparing, hashing or measuring does
// in a step (arrays compared in depth are charged by deepFunc).
func scanSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) / scanBytes
	case []byte:
		return len(v) / scanBytes
	}
	return 0
}

// deepSize is the cost of comparing v in depth: a step for v and for
// every element, key and field within it, walking a value shared by
// several parents once per parent, as comparing does, and a step per
// scanBytes of its strings. It stops once the cost reaches limit, so
// that walking costs no more than limit whatever v is.
func deepSize(v any, limit int) int {
	s := sizer{limit: mulSat(limit, scanBytes), elem: scanBytes}
	s.walk(reflect.ValueOf(v), 0)
	return s.size / scanBytes
}

// workPatcher rewrites the syntax tree, after a first type check, so
// that the work an evaluation does is counted (see MaxSteps):
//
//   - a loop over an array (all, map, filter, reduce, ...) charges an
//     iteration per element when it starts (eachFunc), and the keys of
//     groupBy and sortBy the bytes hashed and compared (scanFunc,
//     sortKeyFunc);
//   - a..b becomes rangeFunc, which charges its size before building it,
//     except where it is the right of in with constant ends, which
//     expr's optimizer turns into two comparisons;
//   - x in array becomes inFunc, except for an array of literals
//     written in the expression (see isScalarArray);
//   - a == b and a != b on two values that may be arrays or maps charge
//     the comparison in depth (deepFunc);
//   - s matches p becomes matchFunc (see pattern.go).
//
// In a loop's body, where each operation runs once per iteration,
// loopPatcher charges besides the strings that operators and builtins
// scan. Outside loops each operation runs at most once: the size of
// values bounds its cost.
//
// Each rewrite applies only to a node that type-checked, with operands
// of types the operation accepts, so that an error is reported for
// what the user wrote. The new calls take the place of the node they
// charge for, so that errors they return are positioned there.
type workPatcher struct{}

// Visit implements ast.Visitor.
func (workPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "..":
			if isIntLike(n.Left) && isIntLike(n.Right) {
				ast.Patch(node, hiddenCall(rangeFunc, n.Left, n.Right))
			}
		case "in":
			if r, ok := n.Right.(*ast.CallNode); ok && isHidden(r, rangeFunc) {
				_, from := r.Arguments[1].(*ast.IntegerNode)
				_, to := r.Arguments[2].(*ast.IntegerNode)
				if from && to {
					rng := &ast.BinaryNode{Operator: "..", Left: r.Arguments[1], Right: r.Arguments[2]}
					rng.SetLocation(r.Location())
					n.Right = rng
				}
				return
			}
			if isScalarArray(n.Right) {
				return
			}
			switch kindOf(n.Right) {
			case reflect.Array, reflect.Slice, reflect.Interface:
				ast.Patch(node, hiddenCall(inFunc, n.Left, n.Right))
			}
		case "==", "!=":
			if isScalar(n.Left) || isScalar(n.Right) {
				return
			}
			if isLiteral(n.Left) && !isLiteral(n.Right) {
				n.Left = wrap(deepFunc, n.Left)
			} else {
				n.Right = wrap(deepFunc, n.Right)
			}
		case "matches":
			switch kindOf(n.Left) {
			case reflect.String, reflect.Interface, reflect.Slice:
			default:
				return
			}
			pattern := n.Right
			switch p := pattern.(type) {
			case *ast.StringNode:
				// Checked by checkPattern before the type check.
				compiled, err := compilePattern(p.Value)
				if err != nil {
					return
				}
				c := &ast.ConstantNode{Value: compiled}
				c.SetLocation(p.Location())
				pattern = c
			default:
				switch kindOf(p) {
				case reflect.String, reflect.Interface:
				default:
					return
				}
			}
			ast.Patch(node, hiddenCall(matchFunc, n.Left, pattern))
		}
	case *ast.BuiltinNode:
		if !isPredicate(n.Name) || len(n.Arguments) == 0 {
			return
		}
		switch kindOf(n.Arguments[0]) {
		case reflect.Array, reflect.Slice, reflect.Map, reflect.Interface, reflect.Pointer:
		default:
			return
		}
		each := hiddenCall(eachFunc, n.Arguments[0])
		each.SetLocation(n.Location())
		n.Arguments[0] = each
		if p, ok := predicateOf(n); ok {
			switch n.Name {
			case "groupBy":
				p.Node = wrap(scanFunc, p.Node)
			case "sortBy":
				p.Node = wrap(sortKeyFunc, p.Node)
			}
			ast.Walk(&p.Node, loopPatcher{})
		}
	}
}

// loopPatcher charges, in a loop's body, the strings that operators
// and builtins scan each time the body runs: the operands of
// comparisons, contains, startsWith, endsWith and in, a computed key of
// a map, and the arguments of builtins such as len, indexOf, hasPrefix
// and trim. It wraps each such operand in scanFunc, unless it is a
// number, a boolean, a short literal or a call that charges already.
// A loop nested in the body is patched again: wrapping is idempotent.
type loopPatcher struct{}

// Visit implements ast.Visitor.
func (loopPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "==", "!=", "<", ">", "<=", ">=", "contains", "startsWith", "endsWith", "in":
			n.Left = scanned(n.Left)
			n.Right = scanned(n.Right)
		}
	case *ast.MemberNode:
		n.Property = scanned(n.Property)
	case *ast.BuiltinNode:
		if isPredicate(n.Name) {
			return
		}
		for i, arg := range n.Arguments {
			n.Arguments[i] = scanned(arg)
		}
	}
}

// scanned returns node wrapped in scanFunc when scanning it may cost
// more than a step.
func scanned(node ast.Node) ast.Node {
	switch n := node.(type) {
	case *ast.StringNode:
		if len(n.Value) < scanBytes {
			return node
		}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.PredicateNode:
		return node
	case *ast.BinaryNode:
		if n.Operator == ".." { // put back by workPatcher, untyped
			return node
		}
	case *ast.CallNode:
		for _, name := range hiddenFuncs {
			if isHidden(n, name) {
				return node
			}
		}
	}
	switch kindOf(node) {
	case reflect.String, reflect.Interface:
		return wrap(scanFunc, node)
	}
	return node
}

// predicates are expr's builtins that loop over their first argument.
var predicates = []string{"all", "none", "any", "one", "filter", "map", "count", "sum", "find",
	"findIndex", "findLast", "findLastIndex", "groupBy", "sortBy", "reduce"}

// isPredicate reports whether builtin name loops over its first argument.
func isPredicate(name string) bool {
	for _, p := range predicates {
		if p == name {
			return true
		}
	}
	return false
}

// predicateOf returns the predicate (the loop's body) of a builtin.
func predicateOf(n *ast.BuiltinNode) (*ast.PredicateNode, bool) {
	if len(n.Arguments) < 2 {
		return nil, false
	}
	p, ok := n.Arguments[1].(*ast.PredicateNode)
	return p, ok
}

// hiddenCall returns a call of the hidden function name with the budget
// and args, positioned at the first of args.
func hiddenCall(name string, args ...ast.Node) *ast.CallNode {
	budgetNode := &ast.IdentifierNode{Value: budgetName}
	budgetNode.SetLocation(args[0].Location())
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: name},
		Arguments: append([]ast.Node{budgetNode}, args...),
	}
	call.SetLocation(args[0].Location())
	return call
}

// wrap returns node wrapped in a call of the hidden function name,
// which returns it unchanged.
func wrap(name string, node ast.Node) ast.Node {
	if c, ok := node.(*ast.CallNode); ok && isHidden(c, name) {
		return node
	}
	return hiddenCall(name, node)
}

// isHidden reports whether call calls the hidden function name.
func isHidden(call *ast.CallNode, name string) bool {
	id, ok := call.Callee.(*ast.IdentifierNode)
	return ok && id.Value == name
}

// kindOf returns the kind of node's type after the type check;
// Interface when it is unknown.
func kindOf(node ast.Node) reflect.Kind {
	if _, ok := node.(*ast.NilNode); ok {
		return reflect.Invalid
	}
	t := node.Type()
	if t == nil {
		return reflect.Interface
	}
	return t.Kind()
}

// isIntLike reports whether node may be an integer, as the operands of
// .. must.
func isIntLike(node ast.Node) bool {
	switch kindOf(node) {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Interface:
		return true
	}
	return false
}

// isScalar reports whether node's value cannot hold other values, so
// that comparing it costs a step or a scan of a string: nil, booleans,
// numbers, strings, times and durations.
func isScalar(node ast.Node) bool {
	switch k := kindOf(node); k {
	case reflect.Invalid, reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Struct:
		return node.Type() == reflect.TypeFor[time.Time]()
	}
	return false
}

// isLiteral reports whether node is an array or a map written in the
// expression.
func isLiteral(node ast.Node) bool {
	switch node.(type) {
	case *ast.ArrayNode, *ast.MapNode:
		return true
	}
	return false
}
