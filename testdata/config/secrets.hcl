name = "secrets"
secrets = [
  "DEPLOY_CREDENTIAL",
  "SENTRY-DSN",        # want :3 "secrets: \"SENTRY-DSN\" is not a valid variable name"
  "2FA_SEED",          # want :3 "secrets: \"2FA_SEED\" is not a valid variable name"
  "DEPLOY_CREDENTIAL", # want :3 "secrets: \"DEPLOY_CREDENTIAL\" is declared twice"
]
step "build" {
  run = "make"
}
