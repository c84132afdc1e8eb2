name        = "presets"
description = "Preset agents, their prices, and budgets of the run and of steps."
defaults {
  agent = "coder"
}
agent "coder" {
  preset = "claude"
  model  = "sonnet"
  args   = ["--permission-mode", "acceptEdits"]
  price {
    input_per_mtok  = 3
    output_per_mtok = 15
    cached_per_mtok = 0.3
  }
  env = { CLAUDE_CODE_MAX_OUTPUT_TOKENS = "32000" }
}
agent "planner" {
  preset = "gemini"
  resume = false
}
agent "reviewer" {
  run = "codex exec \"$FLOW_PROMPT\""
}
budget {
  cost_usd = 25
  tokens   = 5000000
  sessions = 200
}
step "plan" {
  agent  = "planner"
  prompt = "Write PLAN.md."
}
step "code" {
  prompt = "Implement PLAN.md."
  budget {
    cost_usd = 5.5
  }
}
step "tests" {
  run = "go test ./..."
  budget {
    sessions = 3
  }
}
step "review" {
  agent  = "reviewer"
  prompt = "Review the diff. End with PASS or FAIL."
  gate {
    pass         = "signals.PASS && steps.code.usage.tokens_out < 100000"
    loop_back_to = "code"
  }
}
step "files" {
  for_each = ["a.go", "b.go"]
  step "lint" {
    prompt = "Lint {{ item }}."
    budget {
      tokens   = 200000
      cost_usd = 1
    }
  }
}
step "ship" {
  when = "run.usage.cost_usd < 20"
  human {
    message = "Ship it?"
  }
}
cleanup {
  prompt = "Tidy up."
}
