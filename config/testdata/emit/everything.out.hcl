# everything.yaml, emitted
#
# every key of a flow file

name        = "everything"
description = "Every key: plan, code, review in pairs, loop over files, ask a human"
compat      = "agent_orchestrator"

vars = {
  feature = "dark mode"
  rounds  = "3"
  empty   = ""
}

max_parallel = 3
secrets      = ["API_KEY_X", "DEPLOY_PW"]
workspace    = "worktree"

defaults {
  max_attempts   = 3
  max_iterations = "int(vars.rounds)"
  timeout        = "30m"
  idle_timeout   = "1m30s"
  agent          = "coder"
  prompt_limit   = "2MiB"
  command_limit  = "100KiB"
  report_limit   = 1000000
  log_limit      = "1GiB"
  max_items      = 500
  retry {
    backoff     = "2s"
    max_backoff = "1m"
    jitter      = true
  }
}

agent "coder" {
  preset = "claude"
  model  = "sonnet"
  args   = ["--permission-mode", "acceptEdits"]
  env = {
    CLAUDE_CODE_MAX_OUTPUT_TOKENS = "32000"
  }
  price {
    input_per_mtok  = 3
    output_per_mtok = 15
    cached_per_mtok = 0.3
  }
}

agent "planner" {
  preset = "gemini"
  resume = false
}

agent "reviewer" {
  run = "codex exec \"$FLOW_PROMPT\""
  env = {
    DEPTH = "{{ vars.rounds }}"
    MODE  = "review"
  }
}

# the planner writes PLAN.md
step "plan" {
  description = "Write the plan"
  prompt      = <<-EOT
    Write PLAN.md for {{ vars.feature }}.
    End with a line DONE.
  EOT
  agent       = "planner"
  model       = "gemini-2.5-pro"
  metadata = {
    draft  = false
    labels = ["plan", "phase: 1"]
    owner  = "platform"
    parent = null
    weight = 0.5
  }
  external_gates = ["design.approved"]
  artifacts      = ["PLAN.md", "notes/{{ vars.feature }}.md"]
  budget {
    sessions = 2
  }
}

step "code" {
  feedback     = "none"
  prompt_file  = "prompts/code.md"
  max_attempts = 4
  retry_if     = "exit_code != 2"
  timeout      = "int(vars.rounds) * 600"
  idle_timeout = "5m"
  retry {}
  budget {
    cost_usd = 5.5
    tokens   = 200000
  }
}

step "test" {
  run          = "go test ./..."
  loop_back_to = "code"
  env = {
    GOFLAGS = "-count=1"
  }
  gate {
    pass           = "check.exit_code == 0"
    fail           = "signals.FAIL"
    check          = "go vet ./..."
    max_iterations = 2
  }
}

step "review_a" {
  prompt = "Review the diff. End with PASS or FAIL."
  agent  = "reviewer"
  needs  = ["test"]
}

step "review_b" {
  prompt = "Review the diff again. End with PASS or FAIL."
  agent  = "reviewer"
  needs  = ["test"]
}

step "review" {
  description = "Both reviewers decide"
  when        = "vars.feature != \"\""
  gate {
    loop_back_to   = "code"
    max_iterations = 3
    reviewers      = ["review_a", "review_b"]
    consensus      = "majority"
  }
}

step "files" {
  needs          = []
  max_iterations = 2
  for_each = ["a.go", {
    path = "b.go"
    size = 2
  }, 3, true, null]
  as                = "file"
  index_as          = "i"
  key               = "string(i)"
  max_parallel      = 2
  max_items         = 10
  continue_on_error = true
  workspace {
    base  = "main"
    root  = "../flow-worktrees"
    keep  = "always"
    setup = "npm ci --prefix {{ file }}"
    copy  = [".env", "config/local"]
  }
  merge {
    loop_back_to   = "fix"
    max_iterations = 3
  }

  # once per file
  step "lint" {
    run            = "echo \"{{ i }} {{ file }}\""
    max_iterations = 2
  }

  step "fix" {
    prompt = "Fix the lint of {{ file }}."
    gate {
      pass         = "verdict == \"PASS\""
      loop_back_to = "lint"
    }
  }
}

step "shards" {
  for_each  = "steps.plan.metrics.shards"
  workspace = "worktree"
  merge {
    mode = "none"
  }

  step "shard" {
    run = "echo {{ item }} {{ index }}"
  }
}

step "approve" {
  needs = ["review", "files", "shards"]
  human {
    message      = "Ship {{ vars.feature }}?"
    timeout      = "24h"
    auto_approve = "vars.empty == \"yes\""
    any_file     = true
    input "ticket" {
      description = "The change ticket"
      required    = true
    }
    input "channel" {
      default = "stable"
    }
  }
}

step "ship" {
  run = "echo shipping"
  human {
    message = "Shipped. Announce it?"
  }
}

step "announce" {
  prompt_path = "prompts/announce.md"
  model       = "haiku"
  workspace {
    keep = "never"
  }
}

cleanup {
  prompt = "Tidy up."
  agent  = "reviewer"
}

signals {
  done = "FINISHED"
  pass = "OK"
  fail = "NOPE"
}

budget {
  cost_usd       = 20
  tokens         = 5000000
  sessions       = 100
  daily_cost_usd = 50
}

notify {
  on      = ["failed", "completed"]
  command = "./notify.sh"
  webhook = "https://hooks.example.com/$${HOOK_PATH}"
  timeout = "30s"
}
