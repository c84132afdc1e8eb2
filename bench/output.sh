#!/usr/bin/env bash
# bench/output.sh: time flow's live output (CI=true, stdout to a file)
# against the same output redirected to a file by the shell, for SIZE
# bytes of output in three shapes: one line without a newline (line),
# `yes` (two-byte lines) and lines of 80 bytes (text); also flow without
# live output, and, with BEFORE set, another flow binary side by side.
#
# Usage: bench/output.sh   (from anywhere)
#
# Environment:
#   SIZE=200000000   bytes of output per session
#   RUNS=5           timed runs per command, interleaved, after one warm-up
#   FLOW=PATH        time this flow binary instead of building one
#   BEFORE=PATH      a second flow binary to time alongside (e.g. one built
#                    from an earlier commit)
#   OUT=DIR          where the binary, workflows, outputs and results go
#                    (default: a new temporary directory, kept; put it
#                    under $HOME: /tmp is slow to create files in here)
#
# Each run is timed by /usr/bin/time -f '%e %M' (wall seconds, peak RSS
# in KiB; Debian package `time`). The "prefixed" row writes what live
# output writes for `yes` (every two-byte line behind "[big] ", four
# times the bytes) with the shell alone: the floor of any prefixing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
SIZE=${SIZE:-200000000}
RUNS=${RUNS:-5}
BEFORE=${BEFORE:-}
FLOW=${FLOW:-}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/flow-output-bench.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
say() { printf '%s\n' "$*" >&2; }
if [ ! -x /usr/bin/time ]; then
	say "bench/output.sh needs /usr/bin/time (apt-get install -y time)"
	exit 1
fi

if [ -n "$FLOW" ]; then
	cp "$FLOW" "$out/flow"
else
	say "building flow into $out"
	(cd "$root" && go build -o "$out/flow" ./cmd/flow)
fi

line_cmd="head -c $SIZE /dev/zero | tr '\\\\0' a"
yes_cmd="yes | head -c $SIZE"
text_cmd="yes 'flow output bench: just one ordinary line of log output, 80 bytes, with newline' | head -c $SIZE"
printf 'name: line\nsteps:\n  - id: big\n    run: "%s"\n' "$line_cmd" >"$out/line.yaml"
printf 'name: yes\nsteps:\n  - id: big\n    run: "%s"\n' "$yes_cmd" >"$out/yes.yaml"
printf 'name: text\nsteps:\n  - id: big\n    run: "%s"\n' "$text_cmd" >"$out/text.yaml"
line_sh="head -c $SIZE /dev/zero | tr '\\0' a"

# commands: name <TAB> shape <TAB> command (run by sh -c, stdout to a file)
cmds=$out/commands.tsv
{
	printf 'redirect\tline\t%s\n' "$line_sh"
	printf 'redirect\tyes\t%s\n' "$yes_cmd"
	printf 'redirect\ttext\t%s\n' "$text_cmd"
	printf 'prefixed\tyes\t%s\n' "yes '[big] y' | head -c $((SIZE * 4))"
	for shape in line yes text; do
		printf 'live\t%s\tCI=true %s run %s --repo %s\n' "$shape" "$out/flow" "$out/$shape.yaml" "$out/repo"
		printf 'quiet\t%s\tenv -u CI %s run %s --repo %s\n' "$shape" "$out/flow" "$out/$shape.yaml" "$out/repo"
		if [ -n "$BEFORE" ]; then
			printf 'before-live\t%s\tCI=true %s run %s --repo %s\n' "$shape" "$BEFORE" "$out/$shape.yaml" "$out/repo"
		fi
	done
} >"$cmds"

times=$out/times.tsv
: >"$times"
for ((r = 0; r <= RUNS; r++)); do
	say "run $r/$RUNS"
	while IFS=$'\t' read -r name shape cmd; do
		rm -rf "$out/repo" "$out/stdout" && mkdir -p "$out/repo"
		if ! /usr/bin/time -o "$out/time" -f '%e %M' sh -c "$cmd" >"$out/stdout" 2>"$out/stderr"; then
			say "$name $shape failed: $cmd (see $out/stderr)"
			exit 1
		fi
		((r > 0)) && printf '%s\t%s\t%s\n' "$name" "$shape" "$(tr ' ' '\t' <"$out/time")" >>"$times"
	done <"$cmds"
done
rm -f "$out/stdout"

median() { # name shape column(3: seconds, 4: KiB)
	awk -F'\t' -v n="$1" -v s="$2" -v c="$3" '$1 == n && $2 == s { print $c }' "$times" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
report=$out/results.md
{
	echo "Machine: $(nproc) CPUs, $(go version | cut -d' ' -f3-); SIZE=$SIZE; $RUNS interleaved runs per command, medians"
	echo
	echo "| shape | command | time | peak RSS | vs redirect |"
	echo "|---|---|---:|---:|---:|"
	for shape in line yes text; do
		base=$(median redirect "$shape" 3)
		for name in redirect prefixed live quiet before-live; do
			t=$(median "$name" "$shape" 3)
			[ -n "$t" ] || continue
			m=$(median "$name" "$shape" 4)
			printf '| %s | %s | %s s | %s MB | %s |\n' "$shape" "$name" "$t" "$(calc %.1f "$m / 1024")" "$(ratio "$t" "$base")"
		done
	done
} >"$report"
cat "$report"
say "raw times: $times; commands: $cmds; report: $report"
