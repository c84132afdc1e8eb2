#!/usr/bin/env bash
# bench/gaps.sh: where a step's time goes, for flow and for the floor.
# perf records the kernel's process fork, exec and exit tracepoints of a
# run of N `true` steps; for each session this prints how long the
# session lived (its fork to its exit, split at its exec) and the gap
# from its exit to the next session's fork, which is the runner's own
# time on the critical path (noticing the exit, recording the step,
# syncing, preparing the next one). Medians and means over the steps.
#
# Usage: bench/gaps.sh [FLOW]   (FLOW: a flow binary; default: built
#                                from this tree)
#
# Environment:
#   N=1000    steps
#   OUT=DIR   where binaries, workflows and perf data go (default: a new
#             directory under $HOME)
#   FLOW_ARGS more arguments of flow run, such as "--sandbox off" (with
#             the sandbox, each session's fork is its launcher's)
#
# Needs perf (Debian: linux-perf) with access to the sched tracepoints
# (root, or kernel.perf_event_paranoid <= -1).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
N=${N:-1000}
out=${OUT:-$(mktemp -d "$HOME/flow-gaps.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v perf >/dev/null || { echo "perf is needed (Debian package linux-perf)" >&2; exit 1; }

(cd "$root" && go build -o "$out/floor" ./bench/floor)
if [[ $# -ge 1 ]]; then
	flow=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
	(cd "$root" && go build -o "$out/flow" ./cmd/flow)
	flow=$out/flow
fi
{
	printf 'name: seq%d\nsteps:\n' "$N"
	for ((i = 1; i <= N; i++)); do printf '  - id: s%d\n    run: "true"\n' "$i"; done
} >"$out/wf-$N.yaml"

events=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit
record() { # name command...
	local name=$1
	shift
	rm -rf "$out/repo" && mkdir -p "$out/repo"
	perf record -q -o "$out/$name.data" -e "$events" -- "$@" >/dev/null 2>&1
	perf script -i "$out/$name.data" -F comm,pid,time,event,trace 2>/dev/null >"$out/$name.txt"
}
record floor "$out/floor" -n "$N" -dir "$out/repo/floor"
# shellcheck disable=SC2086 # FLOW_ARGS is split into arguments
record flow "$flow" run "$out/wf-$N.yaml" --repo "$out/repo" ${FLOW_ARGS:-}

summarise() { # name
	perl -e '
	my (%fork, %exec, %exit, @kids);
	while (<STDIN>) {
		if (/ ([0-9.]+): sched:sched_process_fork: .* child_pid=(\d+)/) { $fork{$2} = $1; push @kids, $2 }
		elsif (/ ([0-9.]+): sched:sched_process_exec: filename=(\S+) pid=(\d+)/) { my ($t, $f, $p) = ($1, $2, $3); $exec{$p} = $t if $f =~ m{(^|/)sh$} }
		elsif (/ ([0-9.]+): sched:sched_process_exit: comm=\S+ pid=(\d+)/) { $exit{$2} = $1 }
	}
	sub med { my @s = sort { $a <=> $b } @_; return @s ? $s[int(@s / 2)] : 0 }
	sub avg { my $t = 0; $t += $_ for @_; return @_ ? $t / @_ : 0 }
	my @k = grep { exists $exec{$_} && exists $exit{$_} } @kids;
	my (@spawn, @run, @gap);
	for my $i (0 .. $#k) {
		my $p = $k[$i];
		push @spawn, $exec{$p} - $fork{$p};
		push @run, $exit{$p} - $exec{$p};
		push @gap, $fork{$p} - $exit{$k[$i - 1]} if $i > 0;
	}
	printf "| %s | %d | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f |\n", $ARGV[0], scalar(@k),
		1e6 * med(@spawn), 1e6 * avg(@spawn), 1e6 * med(@run), 1e6 * avg(@run), 1e6 * med(@gap), 1e6 * avg(@gap);
	' "$1" <"$out/$1.txt"
}
echo "N=$N; µs, median / mean; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| runner | sessions | fork → exec | exec → exit | exit → next fork |"
echo "|---|---:|---:|---:|---:|"
summarise floor
summarise flow
