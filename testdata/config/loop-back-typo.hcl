# want 16:20 "gate.loop_back_to: unknown step \"codng\" (did you mean \"coding\"?)"
name = "typo"
agent "coder" {
  run = "claude -p \"$FLOW_PROMPT\""
}
defaults {
  agent = "coder"
}
step "coding" {
  prompt = "Write the code."
}
step "review" {
  prompt = "Review it. End with PASS or FAIL."
  gate {
    pass         = "signals.PASS"
    loop_back_to = "codng"
  }
}
