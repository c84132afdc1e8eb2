name = "presets"
agent "coder" {
  preset = "claud" # want :12 "agent \"coder\": unknown preset \"claud\" (did you mean \"claude\"?)"
  model  = "sonnet"
  price {
    input_per_mtok = -3 # want :22 "price.input_per_mtok: must be at least 0, got -3"
    output_per_mtk = 15 # want :5 "unknown key \"output_per_mtk\" (did you mean \"output_per_mtok\"?)"
  }
}
agent "reviewer" {
  run    = "codex exec \"$FLOW_PROMPT\""
  preset = "codex" # want :12 "agent \"reviewer\" has both run and preset; give one"
}
agent "tester" {
  run    = "./test-agent"
  resume = false # want :12 "agent \"tester\": resume is for preset agents"
}
agent "nothing" { # want :7 "agent \"nothing\": give run (a command) or preset (claude, codex or gemini)"
  env = { X = "1" }
}
step "code" {
  agent  = "coder"
  prompt = "Code."
}
cleanup {
  prompt = "Tidy up."
  agent  = "coder"
}
