name        = "pair"
description = "A coder and two reviewers (agentpair's claudex review); the change passes only when both reviewers pass, and the first round sends it back"

vars = {
  task = "print a friendly greeting"
}

agent "coder" {
  run = "sh workflows/agents/demo-agent.sh coder"
}

agent "strict" {
  run = "sh workflows/agents/demo-agent.sh reviewer"
}

agent "lenient" {
  run = "sh workflows/agents/demo-agent.sh approver"
}

defaults {
  timeout = "1m"
}

step "coding" {
  agent  = "coder"
  prompt = <<-EOT
    Implement: {{ vars.task }}.{{ feedback.reason != "" ? " The reviewers sent it back: " + feedback.reason : "" }}
    End with a line DONE.
  EOT
}

step "claude_review" {
  agent  = "strict"
  prompt = "Review the change made to {{ vars.task }}. End with a line PASS or FAIL."
}

step "codex_review" {
  needs  = ["coding"]
  agent  = "lenient"
  prompt = "Review the change made to {{ vars.task }}. End with a line PASS or FAIL."
}

step "review" {
  gate {
    reviewers      = ["claude_review", "codex_review"]
    consensus      = "all"
    loop_back_to   = "coding"
    max_iterations = 3
  }
}

step "merge" {
  run = "echo \"both reviewers passed iteration {{ steps.coding.iteration }}\""
}
