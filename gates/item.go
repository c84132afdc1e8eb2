package gates

import (
	"slices"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
)

// The hidden names of the environment under which the expressions of a
// loop's body read the item and its position (Env.Item, Env.Index).
// The names users give them (Scope.Item, Scope.Index) are renamed to
// these when an expression compiles; a user who writes one of these
// names directly gets an unknown-name error, so that only a loop's body
// reads the item.
const (
	itemName  = "__item"
	indexName = "__index"
)

// itemNames renames, in a parsed expression, the identifiers that are
// the scope's item and index names to the hidden names of the
// environment. It runs after the reference check, which has refused a
// let that would shadow either name, so every identifier it renames
// means the item or its position.
type itemNames struct{ item, index string }

// Visit implements ast.Visitor.
func (r itemNames) Visit(node *ast.Node) {
	id, ok := (*node).(*ast.IdentifierNode)
	if !ok {
		return
	}
	switch {
	case r.item != "" && id.Value == r.item:
		id.Value = itemName
	case r.index != "" && id.Value == r.index:
		id.Value = indexName
	}
}

// keywords are the words of expr's syntax that a name cannot be.
var keywords = []string{
	"true", "false", "nil", "not", "and", "or", "in", "matches", "contains",
	"startsWith", "endsWith", "let", "if", "else", "then",
}

// Reserved reports whether name cannot name a loop's item or its
// position because an expression already means something else by it,
// and says what: a name of the environment (Names), a builtin function
// or a keyword of the expression language.
func Reserved(name string) (what string, reserved bool) {
	switch {
	case slices.Contains(Names(), name):
		return "a name of the expression environment", true
	case slices.Contains(keywords, name):
		return "a keyword of the expression language", true
	}
	for _, f := range builtin.Builtins {
		if f.Name == name {
			return "a builtin function", true
		}
	}
	return "", false
}

// Map returns the facts of the step under their expression names
// ("status", "exit_code", "verdict", ...), as an entry of
// StepInfo.Items holds a body step's facts for one item, so that
// steps.<loop>.items[i].<body step>.verdict reads like
// steps.<step>.verdict. Items is left out when nil (it is for every
// step but a loop).
func (s StepInfo) Map() map[string]any {
	m := map[string]any{
		"status":    s.Status,
		"attempts":  s.Attempts,
		"iteration": s.Iteration,
		"exit_code": s.ExitCode,
		"output":    s.Output,
		"signals":   s.Signals,
		"verdict":   s.Verdict,
		"metrics":   s.Metrics,
		"artifacts": s.Artifacts,
		"report":    s.Report,
		"input":     s.Input,
		"error":     s.Error,
		"duration":  s.Duration,
		"usage":     s.Usage.Map(),
		"metadata":  s.Metadata,
	}
	if s.Items != nil {
		m["items"] = s.Items
	}
	return m
}
