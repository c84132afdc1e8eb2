name = "cycle"
step "a" {
  needs = ["c"] # want :3 "dependency cycle: a -> b -> c -> a"
  run   = "echo a"
}
step "b" {
  run = "echo b"
}
step "c" {
  run = "echo c"
}
step "d" {
  needs = ["d"] # want :12 "needs: step \"d\" cannot need itself"
  run   = "echo d"
}
