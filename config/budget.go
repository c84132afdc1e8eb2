package config

import (
	"strconv"
	"strings"
)

// A budget (docs/agents.md) bounds the cost, the tokens and the sessions of
// the whole run or of one step; the runner stops before the next
// session once one is used up. Here a budget is only read: each value
// given is a positive number (the cost a decimal, tokens and sessions
// whole numbers), and at least one is given. A human step starts no
// session and a for_each loop's sessions are its body's, so neither
// takes a budget; the steps of its body do.

// budget reads a budget block, of the workflow or of a step.
func (b *builder) budget(rb *rawBudget) *Budget {
	if rb == nil {
		return nil
	}
	bu := &Budget{Pos: rb.pos}
	if rb.empty {
		b.d.errorf(rb.pos, "budget is empty: give at least one of cost_usd, tokens or sessions")
		return nil
	}
	bu.CostUSD, _ = b.number("budget.cost_usd", rb.costUSD, true)
	bu.DailyCostUSD, _ = b.number("budget.daily_cost_usd", rb.daily, true)
	if rb.tokens.ok() {
		bu.Tokens, _ = b.count64("budget.tokens", rb.tokens)
	}
	if rb.sessions.ok() {
		bu.Sessions, _ = b.count("budget.sessions", rb.sessions)
	}
	return bu
}

// count64 reads a positive whole number that may be large.
func (b *builder) count64(field string, s str) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s.val), 10, 64)
	switch {
	case err != nil:
		b.d.errorf(s.pos(), "%s: want a positive integer, got %q", field, s.val)
		return 0, false
	case n < 1:
		b.d.errorf(s.pos(), "%s: must be at least 1, got %d", field, n)
		return 0, false
	}
	return n, true
}
