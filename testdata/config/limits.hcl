name = "limits"
defaults {
  prompt_limit  = 0         # want :19 "prompt_limit: size \"0\": must be more than 0"
  command_limit = "100 kib" # want :19 "command_limit: invalid size \"100 kib\""
  report_limit  = "2GiB"    # want :19 "report_limit: 2GiB is more than 1 GiB, the largest report_limit allowed"
  log_limit     = -1        # want :19 "log_limit: size \"-1\": must be more than 0"
  log_limt      = "1MiB"    # want :3 "unknown key \"log_limt\" (did you mean \"log_limit\"?)"
}
step "build" {
  run = "make"
}
