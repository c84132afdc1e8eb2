name        = "demo"
description = "A coder and a reviewer played by a small shell agent; the first review fails and sends the work back, the second passes"

vars = {
  task = "print a friendly greeting"
}

agent "coder" {
  run = "sh workflows/agents/demo-agent.sh coder"
}

agent "reviewer" {
  run = "sh workflows/agents/demo-agent.sh reviewer"
}

defaults {
  agent        = "coder"
  max_attempts = 2
  timeout      = "1m"
}

step "planning" {
  prompt = "Plan how to {{ vars.task }}. End with a line DONE."
}

step "coding" {
  prompt = <<-EOT
    Implement the plan: {{ vars.task }}.{{ feedback.reason != "" ? " The reviewer sent it back: " + feedback.reason : "" }}
    End with a line DONE.
  EOT
}

step "review" {
  agent  = "reviewer"
  prompt = <<-EOT
    Review the change made to {{ vars.task }}. End with a line PASS or FAIL.
  EOT
  gate {
    pass           = "verdict == \"PASS\""
    loop_back_to   = "coding"
    max_iterations = 3
  }
}

step "summary" {
  run = "echo \"reviewed after {{ steps.review.iteration }} loop-back(s); severity {{ steps.review.metrics.severity }}\""
}
