#!/usr/bin/env bash
# bench/serve.sh: the load check of flow serve. Two servers show the same
# repository: one is followed by CLIENTS curl clients — each a login of
# its own (a token each) following a 1,000-step run's live stream — the
# other by nobody. The run of `true` commands is timed (its first to
# last step, from its events) with the clients, then without,
# alternately, ROUNDS times. Then the finished run's page is fetched
# PAGES times from each server (its render time), and each server's
# peak RSS is read from /proc.
#
# The runs run with --sandbox off: what is measured is the server.
#
# Usage: bench/serve.sh   (Linux; needs curl and python3)
#
# Environment: CLIENTS=50, ROUNDS=3, PAGES=5, PORT=18099 (and PORT+1),
# OUT=DIR (default: a new temporary directory, kept).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
CLIENTS=${CLIENTS:-50}
ROUNDS=${ROUNDS:-3}
PAGES=${PAGES:-5}
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

# One token per client: each is a login of its own.
tokens=()
for ((i = 1; i <= CLIENTS; i++)); do
	tokens+=(--token "c$i=bench-secret-$(printf %04d "$i")-0123456789")
done
./flow serve --repo repo --addr 127.0.0.1:"$PORT" "${tokens[@]}" >serve-clients.log 2>&1 &
followed=$!
./flow serve --repo repo --addr 127.0.0.1:"$((PORT + 1))" >serve-none.log 2>&1 &
idle=$!
curls=()
stop_curls() {
	for p in "${curls[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${curls[@]}"; do wait "$p" 2>/dev/null || true; done
	curls=()
}
trap 'stop_curls; kill $followed $idle 2>/dev/null || true' EXIT
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
		(cd repo && ../flow run wf.yaml --run-id "$id" --sandbox off >/dev/null) &
		run=$!
		if [[ $mode == clients ]]; then
			sleep 0.3
			for ((i = 1; i <= CLIENTS; i++)); do
				curl -sN -H "Authorization: Bearer bench-secret-$(printf %04d "$i")-0123456789" \
					"http://127.0.0.1:$PORT/runs/0/$id/events" >"c$i.out" &
				curls+=($!)
			done
		fi
		wait $run
		printf '%s\t%s\n' "$mode" "$(steps_ms "$id")" >>times.tsv
		sleep 1 # the streams' last events
		stop_curls
	done
done

# The finished run's page, PAGES times from each server.
for ((i = 1; i <= PAGES; i++)); do
	curl -s -o page.html -w 'clients\t%{time_total}\n' -H "Authorization: Bearer bench-secret-0001-0123456789" \
		"http://127.0.0.1:$PORT/runs/0/none-$ROUNDS" >>pages.tsv
	curl -s -o /dev/null -w 'none\t%{time_total}\n' "http://127.0.0.1:$((PORT + 1))/runs/0/none-$ROUNDS" >>pages.tsv
done

median() { awk -F'\t' -v m="$2" '$1 == m { print $2 }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rss() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
c=$(median times.tsv clients) n=$(median times.tsv none)
events=$(grep -c '^event: event' c1.out || true)
echo "1000 steps: $c ms with $CLIENTS clients following the run, $n ms without (medians of $ROUNDS, alternating; ratio $(awk "BEGIN { printf \"%.2f\", $c / $n }"))"
echo "events one client received in the last round: $events"
echo "the finished run's page ($(wc -c <page.html) bytes): $(awk "BEGIN { printf \"%.1f\", $(median pages.tsv none) * 1000 }") ms on the idle server, $(awk "BEGIN { printf \"%.1f\", $(median pages.tsv clients) * 1000 }") ms on the followed one (medians of $PAGES)"
echo "flow serve peak RSS: $(rss $followed) MB followed by $CLIENTS logins, $(rss $idle) MB followed by nobody"
echo "flow serve CPU time: $(cpu $followed) s followed by $CLIENTS logins, $(cpu $idle) s followed by nobody"
