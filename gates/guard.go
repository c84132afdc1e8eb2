package gates

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

// guardedBuiltins are expr's builtins that build a value, or walk one,
// in proportion to their arguments; they are replaced by versions that
// check the size they are about to build (resultSize) against the
// budget before calling the builtin. expr's other builtins build
// nothing (len, type, abs, ceil, floor, round, int, float, the bit
// functions, first, last, get, take, indexOf, lastIndexOf, hasPrefix,
// hasSuffix, trim, trimPrefix, trimSuffix: a substring shares its
// bytes), or a value of fixed size (duration, date, timezone), or are
// predicates (all, any, one, none, filter, map, find, findIndex,
// findLast, findLastIndex, count, sum, groupBy, sortBy, reduce) that
// expr compiles into loops over an array built before, whose results
// its MemoryBudget counts and whose iterations are counted as work
// (see workPatcher). The slice is never modified.
var guardedBuiltins = []string{
	"toJSON", "string", "flatten", "join", "replace", "max", "min", "mean", "median",
	"repeat", "split", "splitAfter", "upper", "lower", "toBase64", "fromBase64", "fromJSON",
	"sort", "reverse", "uniq", "concat", "keys", "values", "toPairs", "fromPairs",
}

// Hidden names of the environment: the per-evaluation size budget and
// the functions + on strings is rewritten to call.
const (
	budgetName = "__budget"
	concatFunc = "__concat"
	addFunc    = "__add"
)

// budget is what one evaluation has spent so far: the size it built
// (used) and its work in steps (see MaxSteps), with the regular
// expressions it compiled (see pattern.go).
type budget struct {
	used, steps int
	patterns    map[string]*pattern
}

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
	}
	opts = append(opts, workOptions()...)
	for _, name := range guardedBuiltins {
		opts = append(opts, guardBuiltin(name))
	}
	return opts
}

// patchTree rewrites the tree rooted at node, after a first type check,
// with guardPatcher and workPatcher; the tree must be checked again.
func patchTree(node *ast.Node) {
	ast.Walk(node, guardPatcher{})
	ast.Walk(node, workPatcher{})
}

// guardPatcher rewrites the syntax tree after a first type check: a + b
// becomes a call of concatFunc when both sides are strings, and of
// addFunc when a side's type is known only at run time and the other
// may be a string.
type guardPatcher struct{}

// Visit implements ast.Visitor.
func (guardPatcher) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || n.Operator != "+" || n.Left.Type() == nil || n.Right.Type() == nil {
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
}

// addBudgetArgs gives every call of a guarded builtin in the tree
// rooted at node the budget as first argument. It runs before the type
// check, which then sees the guarded functions' true signatures: were
// it to run after a first check, as guardPatcher does, that check
// would find no overload for the calls and leave their results, and
// the expressions around them, of unknown type.
func addBudgetArgs(node *ast.Node) {
	ast.Walk(node, budgetArgs{})
}

// budgetArgs is the visitor of addBudgetArgs.
type budgetArgs struct{}

// Visit implements ast.Visitor.
func (budgetArgs) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.CallNode)
	if !ok {
		return
	}
	id, ok := n.Callee.(*ast.IdentifierNode)
	if !ok || !slices.Contains(guardedBuiltins, id.Value) {
		return
	}
	if len(n.Arguments) > 0 {
		if first, ok := n.Arguments[0].(*ast.IdentifierNode); ok && first.Value == budgetName {
			return // already given
		}
	}
	budgetNode := &ast.IdentifierNode{Value: budgetName}
	budgetNode.SetLocation(n.Location())
	n.Arguments = append([]ast.Node{budgetNode}, n.Arguments...)
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
		size := resultSize(name, args)
		if err := b.spend(size); err != nil {
			return nil, err
		}
		if err := b.step(builtinSteps(b, name, size, args)); err != nil {
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

// builtinSteps returns the work, in steps, of builtin name called with
// args, given the size it builds or walks (see resultSize): a step per
// elemSize bytes of it, and, for the builtins that compare elements,
// the comparisons: sort and median compare each element about log2(n)
// times, uniq each element with every distinct one before it. A
// comparison costs as much as comparing the elements in depth.
func builtinSteps(b *budget, name string, size int, args []any) int {
	steps := 1 + size/elemSize
	switch name {
	case "sort", "median", "uniq":
		if len(args) == 0 {
			break
		}
		n := lenOf(args[0])
		if n < 2 {
			break
		}
		compare := deepSize(args[0], b.left()+1)
		if name == "uniq" {
			steps += mulSat(n, compare)
		} else {
			steps += mulSat(bits.Len(uint(n)), compare)
		}
	}
	return steps
}

// elemSize is the size of an element of an array a builtin builds: an
// interface or a string header.
const elemSize = 16

// resultSize estimates, from its arguments and before it runs, the size
// of what builtin name builds when called with args (its result, and
// any copy it makes on the way), or of the values it walks; at most
// MaxValueSize+1. A new array's element counts as elemSize, a map
// entry as 4 of them. Arguments of unexpected types count as nothing:
// the builtin itself rejects them.
func resultSize(name string, args []any) int {
	const limit = MaxValueSize + 1
	str := func(i int) string {
		if i < len(args) {
			s, _ := args[i].(string)
			return s
		}
		return ""
	}
	switch name {
	case "repeat":
		// repeat(s, n): n copies of s.
		n, ok := toInt(args, 1)
		if !ok || n <= 0 {
			return 0
		}
		if s := str(0); len(s) > 0 && n > limit/len(s) {
			return limit
		} else {
			return len(s) * n
		}
	case "split", "splitAfter":
		// split(s, sep[, n]): an array of substrings sharing the
		// bytes of s, as many as strings.SplitN allocates.
		return min(limit, elemSize*splitCount(str(0), str(1), args))
	case "upper", "lower", "fromBase64":
		return len(str(0))
	case "toBase64":
		// The bytes of s copied, then encoded.
		return min(limit, len(str(0))+base64.StdEncoding.EncodedLen(len(str(0))))
	case "fromJSON":
		return jsonDecodeSize(str(0), limit)
	case "toJSON":
		if len(args) == 1 {
			return jsonSize(args[0], limit)
		}
	case "replace":
		// replace(s, old, new): every match of old grows s by
		// len(new)-len(old); an empty old matches around every rune.
		if len(args) == 3 || len(args) == 4 {
			s, old, repl := str(0), str(1), str(2)
			matches := strings.Count(s, old)
			if len(repl) > len(old) && matches > (limit-len(s))/(len(repl)-len(old)) {
				return limit
			}
			return min(limit, len(s)+matches*max(0, len(repl)-len(old)))
		}
	case "join":
		// join(array, sep): the elements and a separator between each.
		size := sizeOf(args[0], limit)
		if len(args) == 2 {
			if n := lenOf(args[0]); n > 0 && len(str(1)) > 0 {
				if n > limit/len(str(1)) {
					return limit
				}
				size += n * len(str(1))
			}
		}
		return min(limit, size)
	case "sort", "reverse", "uniq", "keys", "values":
		// A new array of the elements (or keys) of the first
		// argument, which are shared, not copied.
		if len(args) > 0 {
			return min(limit, elemSize*lenOf(args[0]))
		}
	case "toPairs":
		// A pair, itself an array of two, per key.
		if len(args) == 1 {
			return min(limit, 3*elemSize*lenOf(args[0]))
		}
	case "fromPairs":
		// A map entry, a key and a value, per pair.
		if len(args) == 1 {
			return min(limit, 4*elemSize*lenOf(args[0]))
		}
	case "concat":
		n := 0
		for _, a := range args {
			n += lenOf(a)
		}
		return min(limit, elemSize*n)
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

// toInt returns args[i] as an int when it is an integer.
func toInt(args []any, i int) (int, bool) {
	if i >= len(args) {
		return 0, false
	}
	v := reflect.ValueOf(args[i])
	switch {
	case v.CanInt():
		n := v.Int()
		if n > math.MaxInt || n < math.MinInt {
			return 0, false
		}
		return int(n), true
	case v.CanUint():
		n := v.Uint()
		if n > math.MaxInt {
			return math.MaxInt, true
		}
		return int(n), true
	}
	return 0, false
}

// lenOf returns the length of an array, slice or map, and 0 for any
// other value.
func lenOf(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Slice, reflect.Map:
		return rv.Len()
	}
	return 0
}

// splitCount returns the number of strings split or splitAfter
// allocates for s and sep with the optional count in args[2], as
// strings.SplitN does: a negative count means all of them, and a count
// larger than the parts still allocates len(s)+1 of them.
func splitCount(s, sep string, args []any) int {
	n := -1
	if len(args) == 3 {
		var ok bool
		if n, ok = toInt(args, 2); !ok {
			return 0
		}
	}
	if n == 0 {
		return 0
	}
	if sep == "" {
		runes := utf8.RuneCountInString(s)
		if n < 0 || n > runes {
			return runes
		}
		return n
	}
	if n < 0 {
		return strings.Count(s, sep) + 1
	}
	return min(n, len(s)+1)
}

// jsonDecodeSize bounds the size of the value JSON text s decodes to:
// its strings take at most the bytes of s, and every value but the
// first follows one of the bytes , : [ {, so that there are at most as
// many values as those bytes, plus one. At most limit.
func jsonDecodeSize(s string, limit int) int {
	size := len(s) + 16
	for i := 0; i < len(s) && size < limit; i++ {
		switch s[i] {
		case ',', ':', '[', '{':
			size += 16
		}
	}
	return min(size, limit)
}

// maxNesting is the deepest nesting of arrays, maps and structs that
// sizeOf and jsonSize walk; a deeper value counts as too large, so
// that neither they nor the builtins they guard (toJSON, string,
// flatten, ...) recurse without bound. encoding/json refuses to decode
// deeper values too.
const maxNesting = 10000

// sizeOf estimates the size of v, counting strings by their bytes and
// every element, key and field as 8, walking shared values once per
// reference. It stops, returning at least limit, once limit is reached
// or the nesting is deeper than maxNesting, so its cost is bounded by
// limit whatever v is.
func sizeOf(v any, limit int) int {
	s := sizer{limit: limit, elem: 8}
	s.walk(reflect.ValueOf(v), 0)
	return s.size
}

// minTextSize returns a lower bound of the length of v as a template
// writes it (see format): the bytes of its strings, and one for every
// other value, element, key and field. Like sizeOf, it stops at limit,
// and counts a value nested deeper than maxNesting as limit.
func minTextSize(v any, limit int) int {
	switch v := v.(type) {
	case nil:
		return 0
	case string: // written as it is, without quotes
		return len(v)
	case []byte:
		return len(v)
	}
	s := sizer{limit: limit, elem: 1}
	s.walk(reflect.ValueOf(v), 0)
	return s.size
}

// sizer is the state of sizeOf, minTextSize and jsonSize; elem is what
// sizeOf and minTextSize count for each value besides its bytes.
type sizer struct {
	size, limit, elem int
}

// walk adds the size of v, found at nesting depth.
func (s *sizer) walk(v reflect.Value, depth int) {
	if s.size >= s.limit {
		return
	}
	if depth > maxNesting {
		s.size = s.limit
		return
	}
	s.size += s.elem
	switch v.Kind() {
	case reflect.String:
		s.size += v.Len()
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			s.walk(v.Elem(), depth)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			s.size += v.Len()
			return
		}
		for i := 0; i < v.Len() && s.size < s.limit; i++ {
			s.walk(v.Index(i), depth+1)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() && s.size < s.limit {
			s.walk(it.Key(), depth+1)
			s.walk(it.Value(), depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField() && s.size < s.limit; i++ {
			if v.Type().Field(i).IsExported() {
				s.walk(v.Field(i), depth+1)
			}
		}
	}
}

// jsonSize estimates the length of toJSON(v): json.MarshalIndent with
// an indent of two spaces, which puts every element on a line of its
// own indented by its depth, so that a deeply nested value prints far
// larger than it is. Like sizeOf, it stops at limit and refuses
// nesting deeper than maxNesting.
func jsonSize(v any, limit int) int {
	s := sizer{limit: limit}
	s.json(reflect.ValueOf(v), 0)
	// MarshalIndent builds the compact text first, then indents it.
	return min(limit, s.size+s.size/2)
}

// json adds the length of v as JSON at nesting depth.
func (s *sizer) json(v reflect.Value, depth int) {
	if s.size >= s.limit {
		return
	}
	if depth > maxNesting {
		s.size = s.limit
		return
	}
	// Each element and entry of a container starts a line indented
	// by its depth and ends with a comma.
	line := 2 + 2*depth
	var buf [32]byte
	switch v.Kind() {
	case reflect.Invalid:
		s.size += 4 // null
	case reflect.Bool:
		s.size += 5
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.size += len(strconv.AppendInt(buf[:0], v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.size += len(strconv.AppendUint(buf[:0], v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		s.size += len(strconv.AppendFloat(buf[:0], v.Float(), 'g', -1, 64)) + 4
	case reflect.String:
		s.size += jsonStringSize(v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			s.size += 4
			return
		}
		s.json(v.Elem(), depth)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			s.size += base64.StdEncoding.EncodedLen(v.Len()) + 2
			return
		}
		s.size += 2 + line
		for i := 0; i < v.Len() && s.size < s.limit; i++ {
			s.size += line + 2
			s.json(v.Index(i), depth+1)
		}
	case reflect.Map:
		s.size += 2 + line
		it := v.MapRange()
		for it.Next() && s.size < s.limit {
			s.size += line + 4
			if k := it.Key(); k.Kind() == reflect.String {
				s.size += jsonStringSize(k.String())
			} else {
				s.json(k, depth+1)
			}
			s.json(it.Value(), depth+1)
		}
	case reflect.Struct:
		// Values such as time.Time, with no exported field, marshal
		// themselves into short text.
		s.size += 2 + line + 64
		for i := 0; i < v.NumField() && s.size < s.limit; i++ {
			if f := v.Type().Field(i); f.IsExported() {
				s.size += line + 4 + len(f.Name)
				s.json(v.Field(i), depth+1)
			}
		}
	default:
		s.size += 8
	}
}

// jsonStringSize returns the length of s as a JSON string as
// encoding/json writes it, with HTML characters, control characters,
// invalid UTF-8 and U+2028 and U+2029 escaped.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}
