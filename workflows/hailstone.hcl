name        = "hailstone"
description = "Walk the Collatz sequence from a start number to 1, one number a round, kept in hailstone.txt"

vars = {
  start      = "27"
  max_rounds = "200"
}

step "round" {
  run = <<-EOT
    if [ ! -s hailstone.txt ]; then
      echo {{ vars.start }} > hailstone.txt
      exit 0
    fi
    n=$(tail -n 1 hailstone.txt)
    if [ "$n" -eq 1 ]; then exit 0; fi
    if [ $((n % 2)) -eq 0 ]; then n=$((n / 2)); else n=$((3 * n + 1)); fi
    echo "$n" >> hailstone.txt
  EOT
  max_attempts = 1
  gate {
    # A round appends exactly one number: after round i (from 0) the
    # file holds i + 1 of them. A round that wrote more (a batch of the
    # sequence at once) fails its gate, and every round after it, until
    # its budget runs out (exit 5). Then the walk is done when the last
    # number is 1.
    check = <<-EOT
      n=$(wc -l < hailstone.txt)
      if [ "$n" -ne {{ iteration + 1 }} ]; then
        echo "round {{ iteration }} left $n numbers in hailstone.txt, want {{ iteration + 1 }}: a round appends exactly one"
        exit 2
      fi
      test "$(tail -n 1 hailstone.txt)" -eq 1
    EOT
    pass           = "check.exit_code == 0"
    loop_back_to   = "round"
    max_iterations = "int(vars.max_rounds)"
  }
}

step "summary" {
  run       = "echo \"reached 1 after $(($(wc -l < hailstone.txt) - 1)) steps\"; cat hailstone.txt"
  artifacts = ["hailstone.txt"]
}
