name = "unknown-step-in-expr"
vars = {
  feature = "dark mode"
}
step "code_review" {
  run = "./review.sh"
}
step "ship" {
  when = "steps.code_reveiw.status == \"COMPLETED\"" # want :17 "when: unknown step \"code_reveiw\" (did you mean \"code_review\"?)"
  run  = "echo shipping {{ vars.featur }}" # want :33 "run: unknown var \"featur\" (did you mean \"feature\"?)"
  gate {
    pass = "steps.code_review.status == \"OK\" && steps.shipp.exit_code == 0" # want :57 "gate.pass: unknown step \"shipp\""
  }
}
