name = "expr-syntax"
step "build" {
  run  = "make"
  when = "exit_code == == 0"
  gate {
    pass = <<-EOT
      exit_code == 0 &&
      (output contains "ok"
    EOT
    fail = "output matches \"[a-z\" &&"
  }
}
step "notify" {
  run = <<-EOT
    echo "built {{ steps.build.status }}"
    echo "{{ steps.biuld.status }}"
  EOT
}
# want 4:24 "when: unexpected token Operator(\"==\")"
# want 8:28 "gate.pass: unexpected token EOF"
# want 10:38 "gate.fail: unexpected token EOF"
# want 16:20 "run: unknown step \"biuld\" (did you mean \"build\"?)"
