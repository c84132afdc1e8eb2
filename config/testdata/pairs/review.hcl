name = "pair-review"

agent "coder" {
  run = "coder"
}
agent "claude_reviewer" {
  preset = "claude"
}
agent "codex_reviewer" {
  preset = "codex"
}

step "code" {
  agent  = "coder"
  prompt = "Implement the feature."
}
step "claude_review" {
  agent  = "claude_reviewer"
  prompt = "Review. End with PASS or FAIL."
}
step "codex_review" {
  needs  = ["code"]
  agent  = "codex_reviewer"
  prompt = "Review. End with PASS or FAIL."
}
step "review" {
  gate {
    reviewers      = ["claude_review", "codex_review"]
    loop_back_to   = "code"
    max_iterations = 3
  }
}
step "ship" {
  run = "make release"
}
step "langs" {
  for_each = ["go", "rust"]
  step "port" {
    run = "port {{ item }}"
  }
  step "lint_review" {
    needs = ["port"]
    run   = "lint {{ item }}"
  }
  step "test_review" {
    needs = ["port"]
    run   = "test {{ item }}"
  }
  step "ported" {
    needs = ["lint_review", "test_review"]
    gate {
      reviewers    = ["lint_review", "test_review"]
      consensus    = "majority"
      loop_back_to = "port"
    }
  }
}
