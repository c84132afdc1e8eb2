name        = "review-loop"
description = "A coder implements a task and a reviewer judges it; a FAIL verdict sends the work back to the coder"

vars = {
  task = "add a --verbose flag"
}

agent "coder" {
  run = "claude -p \"$FLOW_PROMPT\""
}

agent "reviewer" {
  run = "codex exec \"$(cat \"$FLOW_PROMPT_FILE\")\""
}

defaults {
  max_attempts = 2
  timeout      = "20m"
}

step "code" {
  agent  = "coder"
  prompt = <<-EOT
    Implement this task: {{ vars.task }}.
    {{ feedback.reason != "" ? "The reviewer sent it back: " + feedback.reason : "" }}
    End with a line DONE.
  EOT
}

step "review" {
  agent  = "reviewer"
  prompt = <<-EOT
    Review the change made for: {{ vars.task }}.
    Explain what is wrong, if anything, then end with a line that is
    exactly PASS or FAIL.
  EOT
  gate {
    pass           = "verdict == \"PASS\""
    loop_back_to   = "code"
    max_iterations = 5
  }
}
