name = "invalid-utf8"
# want 4:18 "invalid UTF-8: byte 0xff is not text"
step "build" {
  run = "echo hÃ©hÿ"
}
