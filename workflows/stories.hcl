name        = "stories"
description = "A planner breaks a feature into stories; each story is implemented and reviewed, two at a time, and the second story's first review fails and loops back inside its item; then the stories are integrated"

vars = {
  feature = "user accounts"
}

agent "planner" {
  run = "sh workflows/agents/stories-agent.sh planner"
}

agent "coder" {
  run = "sh workflows/agents/stories-agent.sh coder"
}

agent "reviewer" {
  run = "sh workflows/agents/stories-agent.sh reviewer"
}

defaults {
  agent        = "coder"
  max_attempts = 2
  timeout      = "1m"
}

step "breakdown" {
  agent  = "planner"
  prompt = "Break {{ vars.feature }} into small stories. Write them to stories.json as {\"stories\":[{\"id\",\"title\"}]}. End with a line DONE."
}

step "stories" {
  for_each     = "read_json(\"stories.json\").stories"
  as           = "story"
  key          = "story.id"
  max_parallel = 2

  step "implement" {
    prompt = <<-EOT
      Implement story {{ index + 1 }} of {{ vars.feature }}: {{ story.title }}.{{ feedback.reason != "" ? " The reviewer sent it back: " + feedback.reason : "" }}
      End with a line DONE.
    EOT
  }

  step "review" {
    agent  = "reviewer"
    prompt = <<-EOT
      Review the change for the story "{{ story.title }}". End with a line PASS or FAIL.
    EOT
    gate {
      pass           = "verdict == \"PASS\""
      loop_back_to   = "implement"
      max_iterations = 3
    }
  }
}

step "integrate" {
  run = "echo \"integrating {{ len(steps.stories.items) }} stories; {{ join(map(steps.stories.items, .key + \" reviewed \" + .review.verdict + \" after \" + string(.review.iteration) + \" loop-back(s)\"), \", \") }}\""
}
