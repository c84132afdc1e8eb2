#!/usr/bin/env bash
# bench/loop.sh: time a for_each loop of N items x 2 `true` steps against
# the same 2N sessions as plain steps and against the floor (bench/floor
# -n 2N), then time `flow status` on the loop's run and compare the size
# of run_state.json at N/10 and N items.
#
# Usage: bench/loop.sh   (from anywhere)
#
# Environment:
#   N=1000     items (each runs two sessions)
#   RUNS=5     timed runs per command, interleaved, after one warm-up
#   OUT=DIR    where binaries, workflows and results go (default: a new
#              temporary directory, kept)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
N=${N:-1000}
RUNS=${RUNS:-5}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/flow-loop-bench.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
say() { printf '%s\n' "$*" >&2; }

say "building flow and the floor into $out"
(cd "$root" && go build -o "$out/flow" ./cmd/flow && go build -o "$out/floor" ./bench/floor)

loop_wf() { # items file
	printf 'name: loop%d\nsteps:\n  - id: l\n    for_each: 0..%d\n    steps:\n      - id: a\n        run: "true"\n      - id: b\n        run: "true"\n' "$1" "$(($1 - 1))" >"$2"
}
seq_wf() { # steps file
	{
		printf 'name: seq%d\nsteps:\n' "$1"
		for ((i = 1; i <= $1; i++)); do printf '  - id: s%d\n    run: "true"\n' "$i"; done
	} >"$2"
}
loop_wf "$N" "$out/loop.yaml"
loop_wf "$((N / 10))" "$out/loop-tenth.yaml"
seq_wf "$((2 * N))" "$out/seq.yaml"

now_ns() { date +%s%N; }
secs() { awk -v d="$1" 'BEGIN { printf "%.6f", d / 1e9 }'; }
times=$out/times.tsv
: >"$times"
run_one() { # name command
	rm -rf "$out/repo" "$out/floordir" && mkdir -p "$out/repo"
	local t0 t1
	t0=$(now_ns)
	sh -c "$2" >/dev/null 2>&1 || { say "$1 failed: $2"; exit 1; }
	t1=$(now_ns)
	printf '%s\t%s\n' "$1" "$(secs $((t1 - t0)))"
}
cmd_loop="'$out/flow' run '$out/loop.yaml' --repo '$out/repo'"
cmd_seq="'$out/flow' run '$out/seq.yaml' --repo '$out/repo'"
cmd_floor="'$out/floor' -n $((2 * N)) -dir '$out/floordir'"
for ((r = 0; r <= RUNS; r++)); do
	say "run $r/$RUNS"
	for c in loop seq floor; do
		var=cmd_$c
		line=$(run_one "$c" "${!var}")
		((r > 0)) && printf '%s\n' "$line" >>"$times"
	done
done

# flow status on a finished loop run, and the size of its record.
rm -rf "$out/repo" && mkdir -p "$out/repo"
sh -c "$cmd_loop" >/dev/null
run=$(ls "$out/repo/.agents/runs")
for ((r = 0; r <= RUNS; r++)); do
	t0=$(now_ns)
	"$out/flow" status --repo "$out/repo" "$run" >/dev/null
	t1=$(now_ns)
	((r > 0)) && printf 'status\t%s\n' "$(secs $((t1 - t0)))" >>"$times"
done
size_n=$(wc -c <"$out/repo/.agents/runs/$run/run_state.json")
rm -rf "$out/repo" && mkdir -p "$out/repo"
"$out/flow" run "$out/loop-tenth.yaml" --repo "$out/repo" >/dev/null
size_tenth=$(wc -c <"$out/repo/.agents/runs/"*/run_state.json)

median() {
	awk -F'\t' -v c="$1" '$1 == c { print $2 }' "$times" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
l=$(median loop) s=$(median seq) f=$(median floor) st=$(median status)
report=$out/results.md
{
	echo "Machine: $(nproc) CPUs, $(go version | cut -d' ' -f3-); $RUNS interleaved runs per command, medians"
	echo
	echo "| command | sessions | median | per session | vs floor |"
	echo "|---|---:|---:|---:|---:|"
	printf '| loop of %d items x 2 steps | %d | %s ms | %s ms | %s |\n' "$N" "$((2 * N))" "$(calc %.0f "$l * 1000")" "$(calc %.3f "$l * 1000 / (2 * $N)")" "$(calc %.2f "$l / $f")"
	printf '| %d plain steps | %d | %s ms | %s ms | %s |\n' "$((2 * N))" "$((2 * N))" "$(calc %.0f "$s * 1000")" "$(calc %.3f "$s * 1000 / (2 * $N)")" "$(calc %.2f "$s / $f")"
	printf '| floor -n %d | %d | %s ms | %s ms | 1.00 |\n' "$((2 * N))" "$((2 * N))" "$(calc %.0f "$f * 1000")" "$(calc %.3f "$f * 1000 / (2 * $N)")"
	echo
	echo "- flow status on the loop's run: $(calc %.1f "$st * 1000") ms (target < 100 ms)"
	echo "- run_state.json: $size_tenth bytes at $((N / 10)) items, $size_n bytes at $N items ($(calc %.2f "$size_n / $size_tenth")x for 10x the items)"
} >"$report"
cat "$report"
say "raw times: $times; report: $report"
