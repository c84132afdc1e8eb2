#!/usr/bin/env bash
# bench/serve.sh: the load check of flow serve. A 1,000-step run of
# `true` commands is timed (its first to last step, from its events)
# with CLIENTS curl clients following its live stream, and without,
# alternately, ROUNDS times; flow serve's peak RSS is read from /proc.
#
# Usage: bench/serve.sh   (Linux; needs curl and python3)
#
# Environment: CLIENTS=50, ROUNDS=3, PORT=18099, OUT=DIR (default: a new
# temporary directory, kept).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
CLIENTS=${CLIENTS:-50}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18099}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/flow-serve-bench.XXXXXX")}
mkdir -p "$out/repo"
cd "$out"
(cd "$root" && go build -o "$out/flow" ./cmd/flow)
python3 - >repo/wf.yaml <<'PY'
print("name: seq1000\nsteps:\n  - id: wait\n    run: sleep 1")
for i in range(1000):
    print(f"  - id: s{i}\n    run: \"true\"")
PY
./flow serve --repo repo --addr 127.0.0.1:"$PORT" >serve.log 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; pkill -f "curl -sN http://127.0.0.1:$PORT" 2>/dev/null || true' EXIT
sleep 0.5

steps_ms() { # run id -> ms from s0 to s999 completed
	python3 - "repo/.agents/runs/$1/events.jsonl" <<'PY'
import datetime, json, sys
at = {e["step"]: e["at"] for e in map(json.loads, open(sys.argv[1])) if e["type"] == "step_completed"}
p = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
print(round((p(at["s999"]) - p(at["s0"])).total_seconds() * 1000))
PY
}
: >times.tsv
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in clients none; do
		id=$mode-$r
		(cd repo && ../flow run wf.yaml --run-id "$id" >/dev/null) &
		run=$!
		if [[ $mode == clients ]]; then
			sleep 0.3
			for ((i = 1; i <= CLIENTS; i++)); do
				curl -sN "http://127.0.0.1:$PORT/runs/0/$id/events" >"c$i.out" &
			done
		fi
		wait $run
		printf '%s\t%s\n' "$mode" "$(steps_ms "$id")" >>times.tsv
		pkill -f "curl -sN http://127.0.0.1:$PORT" 2>/dev/null || true
	done
done
median() { awk -F'\t' -v m="$1" '$1 == m { print $2 }' times.tsv | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
c=$(median clients) n=$(median none)
events=$(grep -c '^event: event' c1.out || true)
echo "1000 steps: $c ms with $CLIENTS clients following the run, $n ms without (medians of $ROUNDS, alternating; ratio $(awk "BEGIN { printf \"%.2f\", $c / $n }"))"
echo "events one client received in the last round: $events"
grep -E 'VmHWM' /proc/$serve/status | awk '{ printf "flow serve peak RSS: %.1f MB\n", $2 / 1024 }'
