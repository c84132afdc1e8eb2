name = "two-kinds"
agent "coder" {
  run = "claude -p \"$FLOW_PROMPT\""
}
step "build" {
  run    = "make"
  prompt = "Build it." # want :12 "step \"build\" has both run and prompt"
  agent  = "coder"
}
step "idle" { # want :6 "step \"idle\" does nothing"
}
step "ask" { # want :6 "step \"ask\" has a prompt but no agent"
  prompt = "Who?"
  human { # want :3 "step \"ask\" has both prompt and human"
    message = "Really?"
  }
}
