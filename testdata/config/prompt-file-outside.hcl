name = "prompt-file-outside"
agent "coder" {
  run = "cat"
}
defaults {
  agent = "coder"
}
step "up" {
  prompt_file = "../../go.mod" # want :17 "prompt_file: ../../go.mod is outside the workflow's directory"
}
step "absolute" {
  prompt_file = "/etc/hostname" # want :17 "prompt_file: /etc/hostname is outside the workflow's directory"
}
step "device" {
  prompt_file = "/dev/zero" # want :17 "prompt_file: /dev/zero is outside the workflow's directory"
}
step "missing" {
  prompt_file = "prompts/none.md" # want :17 "prompt_file: read ../testdata/config/prompts/none.md"
}
