package gates

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
)

// Compiler compiles the expressions and templates of one workflow
// against one Scope. It builds the expr configuration (the typed
// environment, the functions, the patchers and the limits) and an index
// of the scope's names once, so that compiling many expressions costs
// little more than parsing and checking each. Compile and
// CompileTemplate with a Compiler are the package functions of the same
// name with its scope; the programs and templates it returns are
// independent of it and never change, and an expression compiled again
// with the same source and kind gives the same *Program (workflows
// repeat their gate expressions and template parts: each is compiled
// once).
//
// Create one with NewCompiler; the zero Compiler is not usable. A
// Compiler is safe for concurrent use, but compilations through one
// Compiler run one at a time, so goroutines that compile much in
// parallel should each have their own.
type Compiler struct {
	scope Scope
	// steps and vars index scope.Steps and scope.Vars; nil in a
	// single-use compiler, which searches the slices instead.
	steps, vars map[string]struct{}

	// mu guards cfg: the type checker caches type information in it.
	mu  sync.Mutex
	cfg *conf.Config
	// done holds the programs compiled so far, by source and kind; nil
	// in a single-use compiler.
	done map[compiled]*Program
}

// compiled is the key of a program a Compiler has compiled.
type compiled struct {
	src  string
	kind Kind
}

// NewCompiler returns a Compiler for the expressions of a workflow
// whose step ids and var names scope lists. It keeps a copy of scope,
// so the caller may change the slices afterwards.
func NewCompiler(scope Scope) *Compiler {
	scope = Scope{Steps: slices.Clone(scope.Steps), Vars: slices.Clone(scope.Vars),
		Item: scope.Item, Index: scope.Index, Elsewhere: maps.Clone(scope.Elsewhere), Inputs: maps.Clone(scope.Inputs)}
	c := newCompiler(scope)
	c.steps = nameSet(scope.Steps)
	c.vars = nameSet(scope.Vars)
	c.done = map[compiled]*Program{}
	return c
}

// newCompiler returns a compiler that searches scope's slices rather
// than indexing them: cheaper for a single compilation.
func newCompiler(scope Scope) *Compiler {
	c := &Compiler{scope: scope, cfg: conf.CreateNew()}
	opts := []expr.Option{
		expr.Env(exprEnv{}),
		expr.DisableBuiltin("now"),
		expr.MaxNodes(MaxNodes),
	}
	opts = append(opts, guardOptions()...)
	// As expr.Compile does with its options.
	for _, opt := range opts {
		opt(c.cfg)
	}
	for name := range c.cfg.Disabled {
		delete(c.cfg.Builtins, name)
	}
	c.cfg.Check()
	return c
}

// nameSet returns the set of names.
func nameSet(names []string) map[string]struct{} {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set
}

// hasStep reports whether id is a step of the scope.
func (c *Compiler) hasStep(id string) bool {
	if c.steps != nil {
		_, ok := c.steps[id]
		return ok
	}
	return slices.Contains(c.scope.Steps, id)
}

// hasVar reports whether name is a var of the scope.
func (c *Compiler) hasVar(name string) bool {
	if c.vars != nil {
		_, ok := c.vars[name]
		return ok
	}
	return slices.Contains(c.scope.Vars, name)
}

// Compile compiles an expression against the compiler's scope, as the
// package function Compile does.
func (c *Compiler) Compile(src string, kind Kind) (*Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.done[compiled{src, kind}]; ok {
		return p, nil
	}
	p, err := c.compile(src, kind)
	if err == nil && c.done != nil {
		c.done[compiled{src, kind}] = p
	}
	return p, err
}

// compile is Compile without the memory of what was compiled; c.mu is
// held.
func (c *Compiler) compile(src string, kind Kind) (*Program, error) {
	// The result kind is the only option that differs between
	// compilations; expr.AsBool sets these two fields.
	c.cfg.Expect, c.cfg.ExpectAny = reflect.Invalid, false
	if kind == Bool {
		expr.AsBool()(c.cfg)
	}

	// The steps of expr.Compile, except that the tree is parsed once
	// and its references checked, with better messages than the type
	// checker's, before the checker runs. The parser is a fresh one:
	// expr's Parser does not reset its node count between parses, so a
	// reused one would soon report too many nodes.
	tree, err := parser.ParseWithConfig(src, c.cfg)
	if err != nil {
		return nil, fromExpr(src, err)
	}
	refs := checkRefs(src, c, &tree.Node)
	if refs.err != nil {
		return nil, refs.err
	}
	if c.scope.Item != "" || c.scope.Index != "" {
		ast.Walk(&tree.Node, itemNames{item: c.scope.Item, index: c.scope.Index})
	}
	// Calls of guarded builtins get the budget as first argument
	// before the type check; the nodes whose cost is counted (see
	// patchTree) are rewritten after it, with the types it found, and
	// the tree checked again. An error is reported by the first check,
	// on the tree as written. The reference check records what needs
	// which as useBudget and usePatch: patching a tree with nothing to
	// rewrite would cost another pass of the type checker.
	if refs.use&useBudget != 0 {
		addBudgetArgs(&tree.Node)
	}
	var check checker.Checker
	if _, err := check.Check(tree, c.cfg); err != nil {
		return nil, c.explain(fromExpr(src, err))
	}
	if refs.use&usePatch != 0 {
		patchTree(&tree.Node)
		if _, err := check.Check(tree, c.cfg); err != nil {
			return nil, c.explain(fromExpr(src, err))
		}
	}
	if c.cfg.Optimize {
		if err := optimizer.Optimize(&tree.Node, c.cfg); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				err = fe.Bind(tree.Source)
			}
			return nil, c.explain(fromExpr(src, err))
		}
	}
	prog, err := compiler.Compile(tree, c.cfg)
	if err != nil {
		return nil, c.explain(fromExpr(src, err))
	}
	slices.Sort(refs.refs.Outputs)
	return &Program{src: src, kind: kind, prog: prog, use: refs.use, refs: refs.refs}, nil
}

// CompileTemplate compiles a template against the compiler's scope, as
// the package function CompileTemplate does.
func (c *Compiler) CompileTemplate(src string) (*Template, error) {
	return compileTemplate(src, c)
}
