#!/bin/sh
# demo-agent.sh stands in for a coding agent in workflows/demo.yaml, so that
# the demo runs on a machine with no agent CLI installed. It plays a coder,
# a reviewer, an approver (its first argument; an approver always passes) or
# a developer (workflows/parallel-stories.yaml: it edits a line of a file),
# reads the prompt flow gives it, writes
# a report to $FLOW_REPORT_PATH and prints the lines a real agent would.
# The reviewer fails the first review and passes the second, which makes
# the review gate loop back to coding exactly once.
role=${1:-coder}
printf '[%s] step %s, iteration %s, attempt %s\n' "$role" "$FLOW_STEP_ID" "$FLOW_ITERATION" "$FLOW_ATTEMPT"
printf '[%s] prompt: %s\n' "$role" "$(head -n 1 "$FLOW_PROMPT_FILE")"
sleep 0.2
case $role in
coder)
	if [ -n "$FLOW_FEEDBACK_FILE" ] && [ -s "$FLOW_FEEDBACK_FILE" ]; then
		reason=$(sed -n 's/^ *"reason": *"\(.*\)",*$/\1/p' "$FLOW_FEEDBACK_FILE")
		echo "[coder] the review sent the work back ($reason); fixing it"
	fi
	echo "[coder] done"
	printf '{"status": "completed", "metrics": {"files_changed": %d}}\n' $((FLOW_ITERATION + 1)) >"$FLOW_REPORT_PATH"
	echo DONE
	;;
reviewer)
	if [ "$FLOW_ITERATION" = 0 ]; then
		echo "[reviewer] the greeting has no trailing newline"
		printf '{"status": "completed", "metrics": {"severity": "minor"}}\n' >"$FLOW_REPORT_PATH"
		echo FAIL
	else
		echo "[reviewer] looks good"
		printf '{"status": "completed", "metrics": {"severity": "none"}}\n' >"$FLOW_REPORT_PATH"
		echo PASS
	fi
	;;
developer)
	# Its prompt's first line says what to change:
	#   Story ID: set line N of FILE to "TEXT".
	# It edits FILE in the directory it works in (its item's worktree).
	# Sent back with a merge conflict, it keeps both sides: it drops the
	# conflict markers.
	first=$(head -n 1 "$FLOW_PROMPT_FILE")
	line=$(printf '%s\n' "$first" | sed -n 's/^Story [^:]*: set line \([0-9]*\) of .*/\1/p')
	file=$(printf '%s\n' "$first" | sed -n 's/^Story [^:]*: set line [0-9]* of \([^ ]*\) to .*/\1/p')
	text=$(printf '%s\n' "$first" | sed -n 's/^Story [^:]*: set line [0-9]* of [^ ]* to "\(.*\)"\.$/\1/p')
	if [ -z "$line" ] || [ -z "$file" ]; then
		echo "[developer] the prompt says no line to change" >&2
		exit 2
	fi
	if grep -q '^<<<<<<< ' "$file"; then
		echo "[developer] the merge conflicts in $file; keeping both sides"
		sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' "$file"
	else
		echo "[developer] line $line of $file: $text"
		awk -v n="$line" -v t="$text" 'NR == n { print t; next } { print }' "$file" >"$file.new" && mv "$file.new" "$file"
	fi
	printf '{"status": "completed"}\n' >"$FLOW_REPORT_PATH"
	echo DONE
	;;
approver)
	echo "[approver] the change does what it says"
	printf '{"status": "completed", "metrics": {"severity": "none"}}\n' >"$FLOW_REPORT_PATH"
	echo PASS
	;;
*)
	echo "demo-agent.sh: unknown role $role" >&2
	exit 2
	;;
esac
