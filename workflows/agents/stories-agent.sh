#!/bin/sh
# stories-agent.sh stands in for a coding agent in workflows/stories.yaml,
# so that the example runs on a machine with no agent CLI installed. It
# plays a planner, a coder or a reviewer (its first argument), reads the
# prompt and the item flow gives it, writes a report to $FLOW_REPORT_PATH
# and prints the lines a real agent would. The planner writes stories.json,
# three stories; the reviewer fails the first review of the second story
# (index 1) and passes every other, so that story loops back to its
# implement step exactly once while the others go straight through.
role=${1:-coder}
printf '[%s] step %s, iteration %s, attempt %s\n' "$role" "${FLOW_STEP_KEY:-$FLOW_STEP_ID}" "$FLOW_ITERATION" "$FLOW_ATTEMPT"
printf '[%s] prompt: %s\n' "$role" "$(head -n 1 "$FLOW_PROMPT_FILE")"
sleep 0.2
case $role in
planner)
	cat >stories.json <<'JSON'
{"stories": [
  {"id": "login", "title": "Log in with email and password"},
  {"id": "signup", "title": "Sign up with an email address"},
  {"id": "reset-password", "title": "Reset a forgotten password"}
]}
JSON
	echo "[planner] wrote stories.json: 3 stories"
	echo DONE
	;;
coder)
	if [ -n "$FLOW_FEEDBACK_FILE" ] && [ -s "$FLOW_FEEDBACK_FILE" ]; then
		echo "[coder] the review sent story $FLOW_ITEM_KEY back; fixing it"
	fi
	echo "[coder] implemented story $FLOW_ITEM_KEY: $FLOW_ITEM"
	printf '{"status": "completed", "metrics": {"files_changed": %d}}\n' $((FLOW_ITERATION + 1)) >"$FLOW_REPORT_PATH"
	echo DONE
	;;
reviewer)
	if [ "$FLOW_ITEM_INDEX" = 1 ] && [ "$FLOW_ITERATION" = 0 ]; then
		echo "[reviewer] story $FLOW_ITEM_KEY: the confirmation email is never sent"
		echo FAIL
	else
		echo "[reviewer] story $FLOW_ITEM_KEY looks good"
		echo PASS
	fi
	;;
*)
	echo "stories-agent.sh: unknown role $role" >&2
	exit 2
	;;
esac
