#!/usr/bin/env bash
# bench/runs.sh: time `flow runs` in a repository of many finished runs
# (10,000 by default: one that nothing pruned), for one or two flow
# binaries side by side.
#
# Usage: bench/runs.sh [BEFORE_BINARY]
#
# It builds flow from this checkout (the "after" binary), records one
# real run of a 3-step workflow, copies its run_state.json and
# events.jsonl COUNT times (each copy with its own run id and a creation
# time one second apart), and times `flow runs` with each binary,
# alternating them. The first call of each binary is a warm-up: it is
# the one that builds the runs index (.agents/runs/.index), which later
# calls check with one stat per run.
#
# Environment:
#   COUNT=10000  runs in the repository
#   RUNS=9       timed calls per binary (medians are printed)
#   OUT=DIR      where binaries, the repository and raw times go (default
#                $HOME/flow-runs-bench)
#   KEEP=1       reuse the repository of an earlier call in OUT
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
COUNT=${COUNT:-10000}
RUNS=${RUNS:-9}
out=${OUT:-$HOME/flow-runs-bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
say() { printf '%s\n' "$*" >&2; }

bins=()
if [[ $# -gt 0 ]]; then
	bins+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
fi
say "building flow into $out/after"
mkdir -p "$out/after"
(cd "$root" && go build -o "$out/after/flow" ./cmd/flow)
bins+=("$out/after/flow")
maker=${bins[-1]}

repo=$out/repo-$COUNT
if [[ ${KEEP:-} != 1 || ! -d $repo ]]; then
	rm -rf "$out/tpl" "$repo"
	mkdir -p "$out/tpl" "$repo/.agents/runs"
	printf 'name: small\nsteps:\n  - id: a\n    run: "true"\n  - id: b\n    run: "true"\n  - id: c\n    run: "true"\n' >"$out/tpl/small.yaml"
	say "one real run of 3 steps"
	"$maker" run "$out/tpl/small.yaml" --repo "$out/tpl" >/dev/null
	id=$(ls "$out/tpl/.agents/runs")
	say "copying it $COUNT times"
	# One awk writes every copy: the run id and the creation time are
	# replaced in both files.
	seq 1 "$COUNT" | awk -v n="$COUNT" -v runs="$repo/.agents/runs" '{printf "%s/20250101-%06d\n", runs, $1}' | xargs mkdir -p
	awk -v id="$id" -v n="$COUNT" -v runs="$repo/.agents/runs" -v tpl="$out/tpl/.agents/runs/$id" '
		BEGIN {
			RS = "^$"
			getline state < (tpl "/run_state.json")
			getline events < (tpl "/events.jsonl")
			match(state, /"created_at": "[^"]*"/)
			at = substr(state, RSTART + 15, RLENGTH - 16)
			for (i = 1; i <= n; i++) {
				new = sprintf("20250101-%06d", i)
				newat = sprintf("2025-01-01T%02d:%02d:%02d.000000Z", int(i / 3600) % 24, int(i / 60) % 60, i % 60)
				s = state; e = events
				gsub(id, new, s); gsub(at, newat, s)
				gsub(id, new, e); gsub(at, newat, e)
				f = runs "/" new "/run_state.json"; printf "%s", s > f; close(f)
				f = runs "/" new "/events.jsonl"; printf "%s", e > f; close(f)
			}
		}'
fi

ms() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

: >"$out/times.tsv"
for b in "${bins[@]}"; do "$b" runs --repo "$repo" >/dev/null; done # warm-up
for ((r = 0; r < RUNS; r++)); do
	for b in "${bins[@]}"; do
		t0=$(ms)
		"$b" runs --repo "$repo" >/dev/null
		t1=$(ms)
		printf '%s\t%d\n' "$b" $((t1 - t0)) >>"$out/times.tsv"
	done
done

printf '| `flow runs`, %d runs | median | min | max |\n|---|---:|---:|---:|\n' "$COUNT"
for b in "${bins[@]}"; do
	awk -F'\t' -v b="$b" '$1 == b {print $2}' "$out/times.tsv" | sort -n >"$out/one"
	awk -v b="$b" -v m="$(median <"$out/one")" -v lo="$(head -1 "$out/one")" -v hi="$(tail -1 "$out/one")" \
		'BEGIN {printf "| %s | %.1f ms | %.1f ms | %.1f ms |\n", b, m/1000, lo/1000, hi/1000}'
done
