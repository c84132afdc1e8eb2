#!/usr/bin/env bash
# bench/compare.sh: time two flow binaries side by side with the floor,
# interleaved run by run, and read each run's peak RSS: for before/after
# figures of a change.
#
# Usage: bench/compare.sh BEFORE_FLOW AFTER_FLOW
#
# Environment:
#   NS="1000 5000 20000"  step counts
#   RUNS=5                timed runs per command and N (after one warm-up
#                         round); the command order rotates every run
#   FLOW_ARGS="..."       more arguments of every flow run, e.g.
#                         FLOW_ARGS="--sandbox off" (as bench/run.sh takes them)
#   OUT=DIR               where workflows, raw figures and results go
#                         (default: a new directory under $HOME: creating
#                         files in /tmp is slow on some machines)
#
# times.tsv holds one line per run: command, N, seconds, peak RSS in KiB
# (from /usr/bin/time -f %M). Medians are over the RUNS runs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
[[ $# == 2 ]] || { echo "usage: $0 BEFORE_FLOW AFTER_FLOW" >&2; exit 2; }
before=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
after=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
NS=${NS:-"1000 5000 20000"}
RUNS=${RUNS:-5}
out=${OUT:-$(mktemp -d "$HOME/flow-compare.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is needed (Debian package 'time')" >&2; exit 1; }

(cd "$root" && go build -o "$out/floor" ./bench/floor)
for n in $NS; do
	{
		printf 'name: seq%d\nsteps:\n' "$n"
		for ((i = 1; i <= n; i++)); do printf '  - id: s%d\n    run: "true"\n' "$i"; done
	} >"$out/wf-$n.yaml"
done

repo=$out/repo
cmd_before() { printf "'%s' run '%s' --repo '%s' %s" "$before" "$out/wf-$1.yaml" "$repo" "${FLOW_ARGS:-}"; }
cmd_after() { printf "'%s' run '%s' --repo '%s' %s" "$after" "$out/wf-$1.yaml" "$repo" "${FLOW_ARGS:-}"; }
cmd_floor() { printf "'%s' -n %d -dir '%s'" "$out/floor" "$1" "$repo/floor"; }

times=$out/times.tsv
: >"$times"
cmds=(before after floor)
for n in $NS; do
	for ((r = 0; r <= RUNS; r++)); do
		for ((k = 0; k < 3; k++)); do
			c=${cmds[$(((r + k) % 3))]}
			rm -rf "$repo" && mkdir -p "$repo"
			t0=$(date +%s%N)
			/usr/bin/time -f %M -o "$out/rss.tmp" sh -c "exec $("cmd_$c" "$n") >/dev/null 2>&1" ||
				{ echo "$c failed at N=$n" >&2; exit 1; }
			t1=$(date +%s%N)
			# r=0 is the warm-up round.
			((r > 0)) && printf '%s\t%s\t%s\t%s\n' "$c" "$n" \
				"$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.6f", d / 1e9 }')" "$(tail -1 "$out/rss.tmp")" >>"$times"
		done
	done
	echo "N=$n done" >&2
done
rm -rf "$repo"

med() { # command N column
	awk -F'\t' -v c="$1" -v n="$2" -v k="$3" '$1 == c && $2 == n { print $k }' "$times" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
{
	echo "before: $before"
	echo "after:  $after"
	echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $RUNS runs per cell after a warm-up, order rotated; medians"
	echo
	echo "| N | before | after | floor | before/step | after/step | floor/step | before/floor | after/floor | RSS before | RSS after | RSS floor |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for n in $NS; do
		b=$(med before "$n" 3) a=$(med after "$n" 3) f=$(med floor "$n" 3)
		printf '| %s | %s ms | %s ms | %s ms | %s ms | %s ms | %s ms | %s | %s | %s MB | %s MB | %s MB |\n' "$n" \
			"$(calc %.0f "$b * 1000")" "$(calc %.0f "$a * 1000")" "$(calc %.0f "$f * 1000")" \
			"$(calc %.3f "$b * 1000 / $n")" "$(calc %.3f "$a * 1000 / $n")" "$(calc %.3f "$f * 1000 / $n")" \
			"$(calc %.2f "$b / $f")" "$(calc %.2f "$a / $f")" \
			"$(calc %.1f "$(med before "$n" 4) / 1024")" "$(calc %.1f "$(med after "$n" 4) / 1024")" "$(calc %.1f "$(med floor "$n" 4) / 1024")"
	done
} | tee "$out/results.md"
