name = "bad-duration"
defaults {
  timeout      = "30 minutes" # want :18 "timeout: invalid duration \"30 minutes\""
  idle_timeout = "0s"         # want :18 "idle_timeout: must be positive"
}
step "wait" {
  run          = "sleep 1"
  timeout      = "-5m" # want :18 "timeout: must be positive"
  max_attempts = 0     # want :18 "max_attempts: must be at least 1, got 0"
  retry {
    backoff = "10 s" # want :15 "retry.backoff: invalid duration"
    jitter  = "maybe" # want :15 "retry.jitter: want true or false"
  }
}
step "ask" {
  human {
    timeout = "1.5x" # want :15 "human.timeout: invalid duration"
  }
}
max_parallel = 0 # want :16 "max_parallel: must be at least 1"
