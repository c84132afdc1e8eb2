name = "wrong-types"
vars = ["a", "b"]
step "a" {
  run       = ["echo", "a"]
  gate      = "exit_code == 0"
  artifacts = ["out.txt", ["x"]]
  env       = { A = { b = "c" } }
  prompt    = upper("x")
}
step "b" "c" {
  run = "echo"
}
# want 2:8 "vars: want a map { name = \"value\" }"
# want 4:15 "run: want a string, got a list"
# want 5:3 "gate is a block: write gate { ... }"
# want 6:27 "artifacts: want a string, got a list"
# want 7:21 "env.A: want a string, got a map"
# want 8:15 "hcl: Function calls not allowed"
# want 10:10 "a step block takes 1 label"
