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
  human { # an approval after the session
    message = "Really?"
  }
}
