// Package spec is how a run is asked to run and how it ended, shared by
// the drivers: Options, Result, Budgets, the core plan a workflow
// resolves into (NewPlan, NewPlanOf), start-at planning (PlanStartAt),
// run ids (NewRunID), and the workflow's secret redactor (Secrets).
//
// The local driver (runner/local) and the Temporal engine
// (runner/temporal) both take Options and give a Result, and both
// resolve a workflow into the same core.Plan, so that the decision core
// decides alike whichever driver runs it; the operations layer and the
// front ends speak of runs in these terms without naming a driver. It
// runs nothing, decides nothing (package core does) and imports no
// driver (docs/architecture.md, "Layers").
//
// What can go wrong, and what it does about it:
//
//   - A budget expression that fails, or gives less than 1: NewPlan
//     returns an error naming the step and the field, and no plan.
//   - A plan that differs between the machines of one run: NewPlanOf
//     evaluates budget expressions with the run's vars and a given time
//     only — no files, no environment — for a driver whose decisions
//     must replay alike wherever they run.
//   - A restart at a step whose kept steps' artifacts are gone:
//     PlanStartAt lists them (Missing) for the caller to say, and
//     changes nothing itself.
//   - Two run ids made in the same microsecond: NewRunID adds a random
//     suffix; if randomness fails it falls back to the time to the
//     microsecond.
//   - Secrets in what is written or printed: Secrets hides the values
//     of the variables the workflow declares secret and of those whose
//     names look secret; the values are read from the environment when
//     a run starts and never kept.
package spec
