#!/usr/bin/env bash
# bench/worktree.sh: what a worktree costs per item. In a repository of
# FILES files (100 per directory, 1 KiB each) it times, K times each, the
# commands flow runs to make an item's worktree (git worktree add -b,
# then git worktree lock) and to remove it at the end of the run (git
# worktree remove --force, git branch -D), with the options flow gives
# every git command, and prints their medians and the worktree's size on
# disk.
#
# Usage: bench/worktree.sh   (from anywhere)
#
# Environment:
#   FILES=10000  files in the repository
#   K=20         worktrees made and removed
#   OUT=DIR      where the repository goes (default: a new temporary
#                directory, removed at the end)
set -euo pipefail

FILES=${FILES:-10000}
K=${K:-20}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/flow-worktree-bench.XXXXXX")}
[ -n "${OUT:-}" ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
say() { printf '%s\n' "$*" >&2; }
git_() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c commit.gpgSign=false -c gc.auto=0 -c maintenance.auto=false "$@"; }

repo=$out/repo
rm -rf "$repo" && mkdir -p "$repo"
say "making a repository of $FILES files in $repo"
(
	cd "$repo"
	git_ init -q -b main
	line=$(head -c 1023 /dev/zero | tr '\0' 'x')
	for ((d = 0; d < (FILES + 99) / 100; d++)); do
		mkdir -p "d$d"
		for ((f = 0; f < 100 && d * 100 + f < FILES; f++)); do
			printf '%s\n' "$line" >"d$d/f$f.txt"
		done
	done
	git_ add -A
	git_ -c user.name=bench -c user.email=bench@localhost commit -q -m files
)

now_ns() { date +%s%N; }
ms() { awk -v d="$1" 'BEGIN { printf "%.1f", d / 1e6 }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
adds=() removes=()
for ((i = 0; i < K; i++)); do
	wt=$out/worktrees/r/loop.item$i
	t0=$(now_ns)
	git_ -C "$repo" worktree add --quiet -b "flow/r/loop.item$i" -- "$wt" main
	git_ -C "$repo" worktree lock --reason "flow run r" -- "$wt"
	t1=$(now_ns)
	adds+=("$(ms $((t1 - t0)))")
	if ((i == 0)); then
		size=$(du -sk "$wt" | cut -f1)
	fi
done
for ((i = 0; i < K; i++)); do
	wt=$out/worktrees/r/loop.item$i
	t0=$(now_ns)
	git_ -C "$repo" worktree remove --force --force -- "$wt"
	git_ -C "$repo" branch --quiet -D -- "flow/r/loop.item$i"
	t1=$(now_ns)
	removes+=("$(ms $((t1 - t0)))")
done
printf 'git %s, %d files, %d worktrees\n' "$(git --version | cut -d' ' -f3)" "$FILES" "$K"
printf 'make a worktree (worktree add -b, lock):  median %s ms  (min %s, max %s)\n' \
	"$(printf '%s\n' "${adds[@]}" | median)" "$(printf '%s\n' "${adds[@]}" | sort -n | head -1)" "$(printf '%s\n' "${adds[@]}" | sort -n | tail -1)"
printf 'remove it (worktree remove, branch -D):   median %s ms  (min %s, max %s)\n' \
	"$(printf '%s\n' "${removes[@]}" | median)" "$(printf '%s\n' "${removes[@]}" | sort -n | head -1)" "$(printf '%s\n' "${removes[@]}" | sort -n | tail -1)"
printf 'one worktree on disk: %s KiB\n' "$size"
