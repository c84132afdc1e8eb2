name = "step-id-too-long"
step "build" {
  run = "make"
}
step "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" { # want :6 "step id \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is 49 characters long: a step id has at most 48"
  run = "make test"
}
step "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
  run = "make check"
}
