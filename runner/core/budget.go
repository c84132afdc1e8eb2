package core

import (
	"fmt"
	"strconv"
)

// checkBudgets stops the run when what its sessions used has reached a
// budget (docs/agents.md): the run's, and, after a session of step (a step
// or an instance), that step's — for a body step, all its instances'
// together. Sessions in flight finish; none starts after. The run ends
// budget_exceeded (exit 6) and goes on when resumed with a higher
// budget.
func (c *Core) checkBudgets(x *decider, step StepKey) {
	if c.haltCode != 0 && c.haltCode != ExitFailed && c.haltCode != ExitBudget {
		return
	}
	if step.IsZero() {
		if what, limit, used, ok := c.plan.Budget.spent(counted(x.st.Usage, x.st.Sessions)); ok {
			c.budgetSpent(x, StepKey{}, what, limit, used)
		} else if l := c.plan.DailyCostUSD; l > 0 && c.dailySpent >= l {
			c.budgetSpent(x, StepKey{}, DailyCost, l, c.dailySpent)
		}
		return
	}
	ps := c.step(step)
	if ps == nil || !ps.budget().set() {
		if !step.IsZero() {
			c.checkBudgets(x, StepKey{})
		}
		return
	}
	if what, limit, used, ok := ps.budget().spent(c.stepUsage(x.st, ps)); ok {
		c.budgetSpent(x, Key(ps.ID), what, limit, used)
		return
	}
	c.checkBudgets(x, StepKey{})
}

// DailyCost is what BudgetExceeded names the daily cost limit.
const DailyCost = "daily_cost_usd"

// budgetSpent records a budget that ran out and stops the run.
func (c *Core) budgetSpent(x *decider, step StepKey, what string, limit, used float64) {
	if c.haltCode == ExitBudgetExceeded {
		return
	}
	x.emit(EvBudgetExceeded, StepKey{}, BudgetExceeded{Step: step, What: what, Limit: limit, Used: used})
	c.haltCode = ExitBudgetExceeded
	if what == DailyCost {
		c.haltReason = fmt.Sprintf("the repository's daily cost limit is spent (%s of %s USD today, UTC); resume with a higher one: flow resume %s --daily-cost-limit N",
			number(used), number(limit), x.st.RunID)
		return
	}
	whose := "the run's"
	if !step.IsZero() {
		whose = "step " + step.String() + "'s"
	}
	flag := map[string]string{"cost_usd": "--budget-cost", "tokens": "--budget-tokens", "sessions": "--budget-sessions"}[what]
	c.haltReason = fmt.Sprintf("%s %s budget is spent (%s of %s); resume with a higher one: flow resume %s %s N",
		whose, what, number(used), number(limit), x.st.RunID, flag)
}

// stepUsage sums what a step's sessions used: for a body step, every
// instance's.
func (c *Core) stepUsage(st *State, ps *PlanStep) *AgentUsage {
	if ps.Loop == "" {
		s := st.Steps[Key(ps.ID)]
		return counted(s.Usage, s.Sessions)
	}
	sum := &AgentUsage{}
	sessions := 0
	// In the record's order: a sum of costs is the same on every replay.
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && id.Loop == ps.Loop && id.Step == ps.ID {
			if s.Usage != nil {
				sum = sum.plus(*s.Usage)
			}
			sessions += s.Sessions
		}
	}
	return counted(sum, sessions)
}

// counted returns usage u with its sessions the larger of what the
// agents reported and sessions, the sessions the record counted: every
// session counts against budget.sessions, a command's as an agent's.
// (A run recorded before sessions were counted has only its agents'.)
func counted(u *AgentUsage, sessions int) *AgentUsage {
	if u == nil {
		return &AgentUsage{Sessions: sessions}
	}
	if int(u.Sessions) >= sessions {
		return u
	}
	c := *u
	c.Sessions = sessions
	return &c
}

// number writes a budget's number without a needless fraction.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
