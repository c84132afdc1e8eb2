#!/usr/bin/env bash
# bench/temporal.sh: the Temporal engine against a dev server, beside the
# local engine.
#
#   1. per-step cost of N sequential `true` steps: flow run (local, no
#      sandbox: the workers' sessions run without one) against flow run
#      --engine temporal with one warm worker;
#   2. CONC concurrent 10-step runs on 1, 2 and 4 workers sharing one
#      repository: steps/s, and the p50/p99 of a step's latency (the time
#      it adds to its run: from the end of the step before it, or the
#      run's start, to its own end, from the run's events);
#   3. one LONG-step run through continue-as-new: its time, its history
#      (events and bytes over every execution) and the peak RSS of the
#      worker that ran it;
#   4. a running session's output reaching flow logs --follow, and a
#      cancel reaching a session's process (medians of LAT_RUNS).
#
# Usage: bench/temporal.sh   (needs TEMPORAL_CLI, the Temporal CLI v1.5.1,
#                             and python3)
#
# Environment:
#   NS="10 100 1000"  step counts of (1)
#   RUNS=3            timed runs per engine and N (medians)
#   CONC=100          concurrent runs of (2); WORKERS="1 2 4"
#   LONG=10000        steps of (3)
#   LAT_RUNS=5        lines followed and cancels of (4)
#   PARTS="1 2 3 4"   which of the measurements above to make
#   SMOKE=1           a few seconds of each, to check that the script works
#                     (.ci/run)
#   OUT=DIR           where binaries, workflows and results go (default:
#                     a new temporary directory, kept)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
if [[ -n ${SMOKE:-} ]]; then
	NS=${NS:-10} RUNS=${RUNS:-1} CONC=${CONC:-4} WORKERS=${WORKERS:-1} LONG=${LONG:-60} LAT_RUNS=${LAT_RUNS:-2}
fi
NS=${NS:-"10 100 1000"}
RUNS=${RUNS:-3}
CONC=${CONC:-100}
WORKERS=${WORKERS:-"1 2 4"}
LONG=${LONG:-10000}
LAT_RUNS=${LAT_RUNS:-5}
PARTS=${PARTS:-"1 2 3 4"}
part() { [[ " $PARTS " == *" $1 "* ]]; }
cli=${TEMPORAL_CLI:?set TEMPORAL_CLI to the Temporal CLI (v1.5.1; .ci/run builds it)}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/flow-bench-temporal.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
say() { printf '%s\n' "$*" >&2; }
now() { date +%s.%N; }

say "building flow and flow-temporal into $out"
(cd "$root" && go build -o "$out/flow" ./cmd/flow && go build -tags temporal -o "$out/flow-temporal" ./cmd/flow)
ft=$out/flow-temporal

# --- the dev server ---------------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
addr=127.0.0.1:$port
"$cli" server start-dev --headless --port "$port" --log-level error >"$out/server.log" 2>&1 &
server=$!
workers=()
cleanup() {
	for p in "${workers[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${workers[@]}"; do wait "$p" 2>/dev/null || true; done
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
}
trap cleanup EXIT
until "$cli" operator cluster health --address "$addr" >/dev/null 2>&1; do sleep 0.2; done
tflags=(--engine temporal --address "$addr")

# start_worker QUEUE REPO [more flags]: a worker in the background.
start_worker() {
	local q=$1 repo=$2
	shift 2
	"$ft" worker --address "$addr" --task-queue "$q" --repo "$repo" "$@" >>"$out/worker-$q.log" 2>&1 &
	workers+=($!)
	last_worker=$!
}
stop_workers() {
	for p in "${workers[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${workers[@]}"; do wait "$p" 2>/dev/null || true; done
	workers=()
}

# seq_wf FILE N: N sequential steps of true.
seq_wf() {
	local i
	{
		printf 'name: seq%d\nsteps:\n' "$2"
		for ((i = 1; i <= $2; i++)); do printf '  - {id: s%d, run: "true"}\n' "$i"; done
	} >"$1"
}

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.stdin.read().split()]; print(statistics.median(v) if v else "nan")'; }

# --- 1. per-step cost -------------------------------------------------------
if part 1; then
say "== 1. per-step cost, N = $NS"
repo1=$out/repo1
mkdir -p "$repo1"
start_worker steps "$repo1"
printf 'N\tlocal_s\ttemporal_s\n' >"$out/steps.tsv"
for n in $NS; do
	seq_wf "$repo1/seq$n.yaml" "$n"
	lt=() tt=()
	for ((r = 1; r <= RUNS; r++)); do
		t0=$(now)
		(cd "$repo1" && "$out/flow" run "seq$n.yaml" --sandbox off --run-id "l$n-$r" >/dev/null)
		t1=$(now)
		(cd "$repo1" && "$ft" run "seq$n.yaml" "${tflags[@]}" --task-queue steps --run-id "t$n-$r" >/dev/null)
		t2=$(now)
		lt+=("$(python3 -c "print($t1-$t0)")") tt+=("$(python3 -c "print($t2-$t1)")")
	done
	l=$(printf '%s\n' "${lt[@]}" | median) t=$(printf '%s\n' "${tt[@]}" | median)
	printf '%s\t%s\t%s\n' "$n" "$l" "$t" >>"$out/steps.tsv"
	python3 -c "n=$n; l=$l; t=$t; print(f'N={n}: local {l:.2f} s ({l/n*1000:.1f} ms/step), temporal {t:.2f} s ({t/n*1000:.1f} ms/step), {t/l:.1f}x')" >&2
	# Where a step's time goes: the gaps between the events of the last
	# run's (latest execution's) history, per step.
	"$cli" workflow show -w "t$n-$RUNS" --address "$addr" --output json >"$out/history-$n.json"
	python3 - "$out/history-$n.json" "$n" >"$out/breakdown-$n.txt" <<'PY'
import json, sys
from collections import defaultdict
from datetime import datetime
evs = json.load(open(sys.argv[1]))["events"]
# The steps of this execution (a run past 8,000 events continued as new):
# its sessions' activities.
n = sum(1 for e in evs if e.get("activityTaskScheduledEventAttributes", {}).get("activityType", {}).get("name") == "flow.Session") or int(sys.argv[2])
t = lambda e: datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")).timestamp()
name = {
    ("WORKFLOW_TASK_SCHEDULED", "WORKFLOW_TASK_STARTED"): "workflow task: waiting for a worker",
    ("WORKFLOW_TASK_STARTED", "WORKFLOW_TASK_COMPLETED"): "workflow task: the workflow code",
    ("ACTIVITY_TASK_SCHEDULED", "ACTIVITY_TASK_STARTED"): "activity: waiting for a worker",
    ("ACTIVITY_TASK_STARTED", "ACTIVITY_TASK_COMPLETED"): "activity: on the worker",
}
gaps, count = defaultdict(float), defaultdict(int)
for a, b in zip(evs, evs[1:]):
    k = (a["eventType"].replace("EVENT_TYPE_", ""), b["eventType"].replace("EVENT_TYPE_", ""))
    k = name.get(k, "between")
    gaps[k] += (t(b) - t(a)) * 1000
    count[k] += 1
total = (t(evs[-1]) - t(evs[0])) * 1000
print(f"{len(evs) / n:.1f} history events per step, {total / n:.1f} ms per step:")
for k in sorted(gaps, key=lambda k: -gaps[k]):
    print(f"  {k}: {gaps[k] / n:.1f} ms per step ({count[k] / n:.1f} per step)")
PY
	cat "$out/breakdown-$n.txt" >&2
done
stop_workers
fi

# --- 2. concurrent runs -----------------------------------------------------
# wait_done REPO IDS...: until each run's mirrored state has ended.
wait_done() {
	local repo=$1
	shift
	python3 - "$repo" "$@" <<'PY'
import json, os, sys, time
repo, ids = sys.argv[1], sys.argv[2:]
left = set(ids)
while left:
    for i in list(left):
        try:
            st = json.load(open(os.path.join(repo, ".agents/runs", i, "run_state.json")))
        except (OSError, ValueError):
            continue
        if st.get("status") in ("completed", "failed", "interrupted", "budget_exceeded"):
            left.discard(i)
    time.sleep(0.1)
PY
}
# latencies REPO IDS...: steps/s over the runs, and the p50/p99 of a
# step's latency, from their events.
latencies() {
	local repo=$1
	shift
	python3 - "$repo" "$@" <<'PY'
import json, os, sys
from datetime import datetime
repo, ids = sys.argv[1], sys.argv[2:]
def t(s): return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
lat, first, last, steps = [], None, None, 0
for i in ids:
    prev = None
    for line in open(os.path.join(repo, ".agents/runs", i, "events.jsonl")):
        e = json.loads(line)
        at = t(e["at"])
        if prev is None:
            prev = at
            first = at if first is None else min(first, at)
        if e["type"] == "step_completed":
            lat.append(at - prev)
            prev = at
            steps += 1
            last = at if last is None else max(last, at)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"{steps / (last - first):.1f}\t{q(0.5) * 1000:.0f}\t{q(0.99) * 1000:.0f}\t{last - first:.2f}")
PY
}
if part 2; then
say "== 2. $CONC concurrent 10-step runs on $WORKERS worker(s)"
printf 'workers\tsteps_per_s\tp50_ms\tp99_ms\twall_s\n' >"$out/concurrent.tsv"
for w in $WORKERS; do
	repo2=$out/repo2-$w
	mkdir -p "$repo2"
	seq_wf "$repo2/ten.yaml" 10
	for ((i = 1; i <= w; i++)); do start_worker "conc$w" "$repo2" --shared-repo; done
	ids=() starts=()
	for ((i = 1; i <= CONC; i++)); do
		(cd "$repo2" && "$ft" run ten.yaml "${tflags[@]}" --task-queue "conc$w" --run-id "c$w-$i" --detach >/dev/null) &
		starts+=($!)
		ids+=("c$w-$i")
	done
	wait "${starts[@]}"
	wait_done "$repo2" "${ids[@]}"
	r=$(latencies "$repo2" "${ids[@]}")
	printf '%s\t%s\n' "$w" "$r" >>"$out/concurrent.tsv"
	say "$w worker(s): $(printf '%s' "$r" | awk -F'\t' '{printf "%s steps/s, step latency p50 %s ms, p99 %s ms, %s s", $1, $2, $3, $4}')"
	stop_workers
done
fi

# --- 3. a long run through continue-as-new --------------------------------
if part 3; then
say "== 3. one $LONG-step run"
repo3=$out/repo3
mkdir -p "$repo3"
seq_wf "$repo3/long.yaml" "$LONG"
start_worker long "$repo3"
lw=$last_worker
t0=$(now)
(cd "$repo3" && "$ft" run long.yaml "${tflags[@]}" --task-queue long --run-id long-1 --detach >/dev/null)
wait_done "$repo3" long-1
t1=$(now)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$lw/status")
"$cli" workflow list --address "$addr" --query "WorkflowId = 'long-1'" --output json >"$out/long-executions.json"
python3 - "$out/long-executions.json" "$t0" "$t1" "$rss" "$LONG" >"$out/long.txt" <<'PY'
import json, sys
path, t0, t1, rss, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
raw = open(path).read().strip()
try:
    execs = json.loads(raw)
except ValueError:
    execs = [json.loads(l) for l in raw.splitlines() if l.strip()]
if isinstance(execs, dict):
    execs = execs.get("executions", [execs])
events = sum(int(e.get("historyLength", 0)) for e in execs)
size = sum(int(e.get("historySizeBytes", 0)) for e in execs)
d = t1 - t0
print(f"{n} steps: {d:.1f} s ({d / n * 1000:.1f} ms/step); {len(execs)} executions, {events} history events, {size / 1e6:.1f} MB of history; worker peak RSS {rss / 1024:.1f} MB")
PY
cat "$out/long.txt" >&2
stop_workers
fi

# --- 4. output and cancel latency -------------------------------------------
if part 4; then
say "== 4. output and cancel latency ($LAT_RUNS each)"
repo4=$out/repo4
mkdir -p "$repo4"
start_worker lat "$repo4"
cat >"$repo4/talk.yaml" <<EOF
name: talk
steps:
  - id: talk
    run: "touch talk.up; sleep 1; for i in \$(seq $LAT_RUNS); do date +%s.%N; sleep 0.5; done"
EOF
(cd "$repo4" && "$ft" run talk.yaml "${tflags[@]}" --task-queue lat --run-id talk-1 --detach >/dev/null)
until [[ -f $repo4/talk.up ]]; do sleep 0.02; done
(cd "$repo4" && "$ft" logs talk-1 talk --follow "${tflags[@]}" 2>/dev/null) | while read -r line; do
	printf '%s %s\n' "$line" "$(now)"
done >"$out/output-latency.txt"
out_ms=$(python3 -c 'import sys,statistics; v=[(float(b)-float(a))*1000 for a,b in (l.split() for l in open(sys.argv[1]) if l.strip())]; print(f"{statistics.median(v):.0f}")' "$out/output-latency.txt")
cat >"$repo4/stuck.yaml" <<'EOF'
name: stuck
steps:
  - id: stuck
    run: "trap 'date +%s.%N > $FLOW_RUN_ID.term; exit 1' TERM; touch $FLOW_RUN_ID.up; while :; do sleep 0.01; done"
EOF
cl=()
for ((i = 1; i <= LAT_RUNS; i++)); do
	(cd "$repo4" && "$ft" run stuck.yaml "${tflags[@]}" --task-queue lat --run-id "stuck-$i" --detach >/dev/null)
	until [[ -f $repo4/stuck-$i.up ]]; do sleep 0.02; done
	t0=$(now)
	(cd "$repo4" && "$ft" cancel "stuck-$i" "${tflags[@]}" >/dev/null)
	until [[ -s $repo4/stuck-$i.term ]]; do sleep 0.01; done
	cl+=("$(python3 -c "print(($(cat "$repo4/stuck-$i.term") - $t0) * 1000)")")
done
cancel_ms=$(printf '%s\n' "${cl[@]}" | median)
printf 'output_ms\t%s\ncancel_ms\t%.0f\n' "$out_ms" "$cancel_ms" >"$out/latency.tsv"
say "output reaches flow logs --follow in $out_ms ms (median of $LAT_RUNS lines); a cancel reaches the session in $(printf '%.0f' "$cancel_ms") ms (median of $LAT_RUNS, from flow cancel's start)"
stop_workers
fi
say "results in $out"
