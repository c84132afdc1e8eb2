name = "notified"

defaults {
  notify {
    on      = ["failed"]
    command = "./scripts/notify.sh"
    timeout = "30s"
  }
}

notify {
  on      = ["completed", "waiting_on_human", "budget_exceeded"]
  webhook = "$${SLACK_WEBHOOK_URL}"
  timeout = "5s"
}

step "code" {
  run = "make"
}

step "approve" {
  human {
    message = "Ship it?"
  }
}
