#!/bin/sh
# demo-agent.sh stands in for a coding agent in workflows/demo.yaml, so that
# the demo runs on a machine with no agent CLI installed. It plays a coder
# a reviewer or an approver (its first argument; an approver always passes), reads the prompt flow gives it, writes
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
