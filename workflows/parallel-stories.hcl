name        = "parallel-stories"
description = "Three stories are written at once, each by an agent in a git worktree and branch of its own; their work is merged into the run's branch one story at a time, and the story whose change conflicts with an earlier one goes back to its agent with the conflict, which it resolves before it merges"
workspace   = "worktree"

agent "developer" {
  run = "sh \"$FLOW_REPO_DIR/workflows/agents/demo-agent.sh\" developer"
}

defaults {
  agent   = "developer"
  timeout = "1m"
}

step "stories" {
  for_each = [
    { id = "greeting", line = 2, text = "say hello" },
    { id = "farewell", line = 8, text = "say goodbye" },
    { id = "help", line = 8, text = "print the usage" },
  ]
  as           = "story"
  key          = "story.id"
  max_parallel = 3
  workspace    = "worktree"
  merge {
    loop_back_to   = "implement"
    max_iterations = 3
  }

  step "implement" {
    prompt = <<-EOT
      Story {{ story.id }}: set line {{ story.line }} of app.txt to "{{ story.text }}".
      Work in this directory, your story's own worktree; flow commits what you leave and merges it. End with a line DONE.
    EOT
  }
}

step "summary" {
  run = "echo \"merged {{ len(steps.stories.items) }} stories into {{ steps.stories.items[0].merge != \"\" ? \"the run's branch\" : \"nothing\" }}\"; cat app.txt"
}
