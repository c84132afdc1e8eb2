#!/usr/bin/env bash
# bench/records.sh: time reading the run record — `flow status` (newest run,
# and a 5,000-step run) and `flow runs` — in repositories of many runs, for
# one or two flow binaries side by side.
#
# Usage: bench/records.sh [BEFORE_BINARY]
#
# It builds flow from this checkout (the "after" binary), makes three
# repositories from real runs, each copied with a new run id and creation
# time written into its files:
#   many   200 runs of a 20-step workflow
#   big    one run of a 5,000-step workflow
#   bigs   50 copies of that run
# and times `status` and `runs` in each, alternating the binaries, and
# measures their peak RSS with /usr/bin/time.
#
# Environment:
#   RUNS=7       timed runs per command and binary (medians are printed)
#   OUT=DIR      where binaries, repositories and raw times go (default
#                $HOME/flow-records; creating files under /tmp is slow on
#                some machines)
#   KEEP=1       reuse the repositories of an earlier call in OUT
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
RUNS=${RUNS:-7}
out=${OUT:-$HOME/flow-records}
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
maker=${bins[0]}

gen() { # N
	local n=$1 i
	{
		printf 'name: seq%d\nsteps:\n' "$n"
		for ((i = 1; i <= n; i++)); do printf '  - id: s%d\n    run: "true"\n' "$i"; done
	} >"$out/wf-$n.yaml"
}

# copies TEMPLATE_REPO DEST_REPO COUNT: COUNT copies of the template's one
# run, each with its own id (run ids appear in paths and events) and a
# creation time one minute apart.
copies() {
	local tpl=$1 dest=$2 count=$3 i id new at newat
	id=$(ls "$tpl/.agents/runs")
	at=$(sed -n 's/^  "created_at": "\(.*\)",$/\1/p' "$tpl/.agents/runs/$id/run_state.json")
	mkdir -p "$dest/.agents/runs"
	for ((i = 1; i <= count; i++)); do
		new=$(printf '20250101-%02d%02d00-%06x' $((i / 60)) $((i % 60)) "$i")
		newat=$(printf '2025-01-01T%02d:%02d:00.000000Z' $((i / 60)) $((i % 60)))
		cp -r "$tpl/.agents/runs/$id" "$dest/.agents/runs/$new"
		sed -i "s/$id/$new/g; s/$at/$newat/g; s#$tpl#$dest#g" \
			"$dest/.agents/runs/$new/run_state.json" "$dest/.agents/runs/$new/events.jsonl" \
			"$dest/.agents/runs/$new/run-summary.md"
	done
}

if [[ ${KEEP:-} != 1 || ! -d $out/many ]]; then
	rm -rf "$out/tpl20" "$out/tpl5000" "$out/many" "$out/big" "$out/bigs"
	gen 20
	gen 5000
	mkdir -p "$out/tpl20" "$out/tpl5000"
	say "one real run of 20 steps and one of 5,000"
	"$maker" run "$out/wf-20.yaml" --repo "$out/tpl20" >/dev/null
	"$maker" run "$out/wf-5000.yaml" --repo "$out/tpl5000" >/dev/null
	say "copying: 200 runs of 20 steps, 1 and 50 of 5,000 steps"
	copies "$out/tpl20" "$out/many" 200
	copies "$out/tpl5000" "$out/big" 1
	copies "$out/tpl5000" "$out/bigs" 50
	cp "$out/wf-20.yaml" "$out/wf-5000.yaml" "$out/many/" 2>/dev/null || true
fi

cases=(
	"many status|status --repo $out/many"
	"many runs|runs --repo $out/many"
	"big status|status --repo $out/big"
	"bigs status|status --repo $out/bigs"
	"bigs runs|runs --repo $out/bigs"
)

# microseconds, from bash's clock (no process spawned)
ms() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

: >"$out/times.tsv"
for c in "${cases[@]}"; do
	name=${c%%|*}
	args=${c#*|}
	for b in "${bins[@]}"; do "$b" $args >/dev/null 2>&1 || true; done # warm-up
	for ((r = 0; r < RUNS; r++)); do
		for b in "${bins[@]}"; do
			t0=$(ms)
			"$b" $args >/dev/null 2>&1 || true
			t1=$(ms)
			printf '%s\t%s\t%d\n' "$name" "$b" $((t1 - t0)) >>"$out/times.tsv"
		done
	done
done

printf '| command |'
for b in "${bins[@]}"; do printf ' %s |' "$b"; done
printf '\n|---|'
for b in "${bins[@]}"; do printf -- '---:|'; done
printf '\n'
for c in "${cases[@]}"; do
	name=${c%%|*}
	args=${c#*|}
	printf '| `flow %s` (%s) |' "${args% --repo*}" "$name"
	for b in "${bins[@]}"; do
		med=$(awk -F'\t' -v n="$name" -v b="$b" '$1 == n && $2 == b {print $3}' "$out/times.tsv" | median)
		rss=-
		if [[ -x /usr/bin/time ]]; then
			/usr/bin/time -o "$out/rss" -f %M "$b" $args >/dev/null 2>&1 || true
			rss=$(tail -1 "$out/rss")
			rss=$(awk -v k="$rss" 'BEGIN {printf "%.1f MB", k/1024}')
		fi
		awk -v m="$med" -v r="$rss" 'BEGIN {printf " %.1f ms, %s |", m/1000, r}'
	done
	printf '\n'
done
