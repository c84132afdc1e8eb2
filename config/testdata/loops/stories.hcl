name        = "stories"
description = "Break a feature into stories, then implement and review each."
defaults {
  agent     = "coder"
  max_items = 100
}
agent "coder" {
  run = "claude -p \"$FLOW_PROMPT\""
}
step "breakdown" {
  run = "./make-stories"
}
step "stories" {
  for_each          = "read_json(\"stories.json\").stories"
  as                = "story"
  index_as          = "i"
  key               = "story.id"
  max_parallel      = 2
  continue_on_error = true
  max_iterations    = 2
  step "implement" {
    prompt = "Implement {{ story.title }} ({{ i }})."
  }
  step "review" {
    prompt = "Review {{ story.title }}. End with PASS or FAIL."
    gate {
      pass           = "verdict == \"PASS\""
      loop_back_to   = "implement"
      max_iterations = 3
    }
  }
  step "notes" {
    needs = ["breakdown", "implement"]
    run   = "echo \"{{ steps.breakdown.exit_code }} {{ steps.implement.verdict }} {{ story.id }}\""
  }
}
step "langs" {
  needs    = []
  for_each = ["go", { name = "rust", edition = 2021 }, 3, true]
  step "build" {
    run = "build {{ item }} {{ index }}"
  }
}
step "integrate" {
  needs = ["stories", "langs"]
  when  = "steps.stories.items[0].review.verdict == \"PASS\""
  run   = "go test ./..."
}
