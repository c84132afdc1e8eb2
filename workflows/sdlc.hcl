name        = "sdlc"
description = "Plan, code, test and review a change, then merge it after a human approves"

vars = {
  feature       = "dark mode"
  test_command  = "go test ./..."
  merge_command = "git merge --ff-only feature"
}

defaults {
  max_attempts   = 2
  max_iterations = 4
  timeout        = "30m"
  idle_timeout   = "10m"
  agent          = "coder"
}

agent "coder" {
  preset = "claude"
  model  = "sonnet"
  args   = ["--permission-mode", "acceptEdits"]
  env    = { CLAUDE_CODE_MAX_OUTPUT_TOKENS = "32000" }
}

agent "reviewer" {
  preset = "codex"
  price {
    input_per_mtok  = 1.25
    output_per_mtok = 10
    cached_per_mtok = 0.125
  }
}

budget {
  cost_usd = 20
}

step "planning" {
  prompt    = "Write PLAN.md for {{ vars.feature }}. End with a line DONE."
  artifacts = ["PLAN.md"]
}

step "coding" {
  prompt_file = "prompts/coding.md"
}

step "tests" {
  run          = "{{ vars.test_command }}"
  max_attempts = 1
}

step "code_review" {
  agent  = "reviewer"
  prompt = <<-EOT
    Review the diff for {{ vars.feature }} against PLAN.md.
    List every problem you find, then end with a line PASS or FAIL.
  EOT
  gate {
    pass           = "signals.PASS && !signals.FAIL"
    loop_back_to   = "coding"
    max_iterations = 3
  }
}

step "manual_approval" {
  when = "steps.code_review.metrics.severity != \"none\""
  human {
    message = "Ship {{ vars.feature }}?"
    timeout = "24h"
  }
}

step "merge" {
  needs = ["manual_approval"]
  run   = "{{ vars.merge_command }}"
}

cleanup {
  prompt = "Refactor, delete dead code, keep the tests green."
}
