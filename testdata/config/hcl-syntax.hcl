# want 5:16 "hcl: Invalid multi-line string"
# want 6:2 "hcl: Invalid multi-line string"
name = "hcl-syntax"
step "a" {
  run = "echo a
}
