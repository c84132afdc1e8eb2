name = "References!"
defaults {
  agent = "codr"
}
agent "coder" {
  run = "claude -p \"$FLOW_PROMPT\""
}
agent "Bad Name" {
  env = { "1X" = "y" }
}
step "plan" {
  prompt = "Plan."
  agent  = "reviewer"
}
step "code" {
  needs       = ["plan", "pln"]
  prompt_file = "prompts/missing.md"
}
cleanup {
  prompt = "Tidy up."
  agent  = "cleaner"
}
# want 1:8 "name \"References!\": want lowercase letters"
# want 3:11 "defaults.agent: unknown agent \"codr\" (did you mean \"coder\"?)"
# want 8:7 "agent name \"Bad Name\": want lowercase letters"
# want 8:7 "agent \"Bad Name\": give run (a command) or preset"
# want 9:11 "env: \"1X\" is not a valid variable name"
# want 13:12 "agent: unknown agent \"reviewer\""
# want 16:26 "needs: unknown step \"pln\" (did you mean \"plan\"?)"
# want 17:17 "prompt_file: read ../testdata/config/prompts/missing.md: "
# want 21:12 "cleanup.agent: unknown agent \"cleaner\""
