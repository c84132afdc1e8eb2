workflow = "demo.hcl"

test "the first review fails and loops back once" {
  sessions = {
    review = [
      { output = "The greeting is missing.\nFAIL" },
      { output = "PASS", report = { metrics = { severity = "none" } } },
    ]
  }
  expect {
    exit_code       = 0
    status          = "completed"
    path            = ["planning", "coding", "review", "coding", "review", "summary"]
    steps           = { coding = { iteration = 1 }, review = { verdict = "PASS" } }
    prompt_contains = { coding = "verdict == \"PASS\"" }
  }
}
