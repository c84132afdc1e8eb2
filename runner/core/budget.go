package core

import (
	"fmt"
	"strconv"
	"strings"
)

// checkBudgets stops the run when what its sessions used has reached a
// budget (docs/agents.md): the run's, and, after a session of step (a step
// or an instance), that step's — for a body step, all its instances'
// together. Sessions in flight finish; none starts after. The run ends
// budget_exceeded (exit 6) and goes on when resumed with a higher
// budget.
func (c *Core) checkBudgets(x *decider, step string) {
	if c.haltCode != 0 && c.haltCode != ExitFailed && c.haltCode != ExitBudget {
		return
	}
	if step == "" {
		if what, limit, used, ok := c.plan.Budget.spent(counted(x.st.Usage, x.st.Sessions)); ok {
			c.budgetSpent(x, "", what, limit, used)
		} else if l := c.plan.DailyCostUSD; l > 0 && c.dailySpent >= l {
			c.budgetSpent(x, "", DailyCost, l, c.dailySpent)
		}
		return
	}
	ps := c.step(step)
	if ps == nil || !ps.budget().set() {
		if step != "" {
			c.checkBudgets(x, "")
		}
		return
	}
	if what, limit, used, ok := ps.budget().spent(c.stepUsage(x.st, ps)); ok {
		c.budgetSpent(x, ps.ID, what, limit, used)
		return
	}
	c.checkBudgets(x, "")
}

// DailyCost is what BudgetExceeded names the daily cost limit.
const DailyCost = "daily_cost_usd"

// budgetSpent records a budget that ran out and stops the run.
func (c *Core) budgetSpent(x *decider, step, what string, limit, used float64) {
	if c.haltCode == ExitBudgetExceeded {
		return
	}
	x.emit(EvBudgetExceeded, "", BudgetExceeded{Step: step, What: what, Limit: limit, Used: used})
	c.haltCode = ExitBudgetExceeded
	if what == DailyCost {
		c.haltReason = fmt.Sprintf("the repository's daily cost limit is spent (%s of %s USD today, UTC); resume with a higher one: flow resume %s --daily-cost-limit N",
			number(used), number(limit), x.st.RunID)
		return
	}
	whose := "the run's"
	if step != "" {
		whose = "step " + step + "'s"
	}
	flag := map[string]string{"cost_usd": "--budget-cost", "tokens": "--budget-tokens", "sessions": "--budget-sessions"}[what]
	c.haltReason = fmt.Sprintf("%s %s budget is spent (%s of %s); resume with a higher one: flow resume %s %s N",
		whose, what, number(used), number(limit), x.st.RunID, flag)
}

// stepUsage sums what a step's sessions used: for a body step, every
// instance's.
func (c *Core) stepUsage(st *State, ps *PlanStep) *AgentUsage {
	if ps.Loop == "" {
		s := st.Steps[ps.ID]
		return counted(s.Usage, s.Sessions)
	}
	sum := &AgentUsage{}
	sessions := 0
	prefix, suffix := ps.Loop+"[", "]."+ps.ID
	// In the record's order: a sum of costs is the same on every replay.
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && strings.HasPrefix(id, prefix) && strings.HasSuffix(id, suffix) {
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
