name       = "unknown-key"
descripton = "misspelt" # want :1 "unknown key \"descripton\" (did you mean \"description\"?)"
step "build" {
  run         = "make"
  loop_bak_to = "build" # want :3 "unknown key \"loop_bak_to\" (did you mean \"loop_back_to\"?)"
  gate {
    pas = "exit_code == 0" # want :5 "unknown key \"pas\" (did you mean \"pass\"?)"
  }
  colour = "blue" # want :3 "unknown key \"colour\""
}
steps "x" {} # want :1 "unknown block \"steps\" (did you mean \"step\"?)"
