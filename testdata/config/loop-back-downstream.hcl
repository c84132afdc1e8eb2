name = "loop-back-downstream"
step "plan" {
  run          = "echo plan"
  loop_back_to = "review" # want :18 "loop_back_to \"review\" is downstream of \"plan\"; a loop-back must go to this step or one it depends on"
}
step "code" {
  run = "echo code"
}
step "review" {
  run = "echo review"
}
step "docs" {
  needs = []
  run   = "echo docs"
  gate {
    pass         = "exit_code == 0"
    loop_back_to = "code" # independent of docs: docs waits for it
  }
}
