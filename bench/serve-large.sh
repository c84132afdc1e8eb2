#!/usr/bin/env bash
# bench/serve-large.sh: Mission Control on a large run. A run of N
# `true` commands (default 20,000) is started; while it runs, one curl
# client follows its live stream for FOLLOW seconds: the bytes it
# receives, its status and event messages and the server's CPU time are
# read. Once the run has finished, its page is fetched ROUNDS times:
# size and median time; and the server's peak RSS is read from /proc.
#
# Usage: bench/serve-large.sh [FLOW]   (Linux; needs curl and python3;
# FLOW defaults to a flow built from this tree)
#
# Environment: N=20000, FOLLOW=8, ROUNDS=5, PORT=18098, OUT=DIR (default:
# a new directory under $HOME, kept).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
N=${N:-20000}
FOLLOW=${FOLLOW:-8}
ROUNDS=${ROUNDS:-5}
PORT=${PORT:-18098}
out=${OUT:-$(mktemp -d "$HOME/flow-serve-large.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ $# -ge 1 ]]; then
	flow=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
	flow=$out/flow
	(cd "$root" && go build -o "$flow" ./cmd/flow)
fi
rm -rf "$out/repo" && mkdir -p "$out/repo"
cd "$out"
{
	printf 'name: seq%d\nsteps:\n' "$N"
	for ((i = 1; i <= N; i++)); do printf '  - id: s%d\n    run: "true"\n' "$i"; done
} >wf.yaml

"$flow" run wf.yaml --repo repo >run.log 2>&1 &
run=$!
"$flow" serve --repo repo --addr 127.0.0.1:"$PORT" >serve.log 2>&1 &
serve=$!
trap 'kill $serve $run 2>/dev/null || true' EXIT
sleep 2
id=$(ls repo/.agents/runs)
seq=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['seq'])" "repo/.agents/runs/$id/run_state.json")
ticks() { awk '{ print $14 + $15 }' "/proc/$serve/stat"; }
t0=$(ticks)
timeout "$FOLLOW" curl -sN "http://127.0.0.1:$PORT/runs/0/$id/events?after=$seq" >follow.txt || true
t1=$(ticks)
hz=$(getconf CLK_TCK)
echo "following the live run for $FOLLOW s: $(wc -c <follow.txt) bytes, $(grep -c '^event: status' follow.txt) status and $(grep -c '^event: event' follow.txt) event messages; server CPU $(awk -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }') s"
wait "$run" || true
for ((r = 0; r < ROUNDS; r++)); do
	curl -s -o page.html -w '%{time_total} %{size_download}\n' "http://127.0.0.1:$PORT/runs/0/$id"
done >page.tsv
sort -g page.tsv | awk -v n="$ROUNDS" '{ t[NR] = $1; b = $2 } END { printf "the finished run'"'"'s page: %d bytes, median %.0f ms of %d\n", b, t[int((n + 1) / 2)] * 1000, n }'
echo "flow serve peak RSS: $(awk '/VmHWM/ { printf "%.1f MB", $2 / 1024 }' "/proc/$serve/status")"
