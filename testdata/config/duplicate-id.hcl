name = "duplicate-id"
step "build" {
  run = "make"
}
step "build" { # want :6 "duplicate step id \"build\""
  run = "make again"
}
step "Build_Step" { # want :6 "step id \"Build_Step\": want lowercase"
  run = "make it so"
}
step { # want :6 "a step block needs a name"
  run = "echo no id"
}
