name = "budgets"
budget {
  cost_usd = 0   # want :14 "budget.cost_usd: must be greater than 0, got 0"
  tokens   = 5.5 # want :14 "budget.tokens: want a positive integer, got \"5.5\""
  sesions  = 3   # want :3 "unknown key \"sesions\" (did you mean \"sessions\"?)"
}
step "code" {
  run = "make"
  budget {} # want :3 "budget is empty: give at least one of cost_usd, tokens or sessions"
}
step "approve" {
  human {
    message = "Ship it"
  }
  budget { # want :3 "step \"approve\" is a human step: budget belongs on a step that runs sessions"
    sessions = 1
  }
}
step "files" {
  for_each = ["a", "b"]
  budget { # want :3 "step \"files\" is a for_each loop: budget belongs on a step of its body"
    cost_usd = 2
  }
  step "lint" {
    run = "lint {{ item }}"
    budget {
      cost_usd = 0.25
      sessions = "two" # want :18 "budget.sessions: want a positive integer, got \"two\""
    }
  }
}
step "check" {
  run  = "check"
  when = "run.usage.cost_usd < 10 && steps.code.usage.tokens_ot > 0" # want :55 "when: unknown field \"tokens_ot\" of the usage of step \"code\" (did you mean \"tokens_out\"?)"
}
