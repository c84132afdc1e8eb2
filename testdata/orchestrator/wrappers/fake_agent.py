#!/usr/bin/env python3
"""A stand-in for an agent_orchestrator wrapper, for flow's tests.

It is called as agent_orchestrator calls its wrappers:

    fake_agent.py --run-id R --step-id S --agent A --prompt P --repo DIR \
        --report FILE [more arguments...]

with the step's environment (RUN_ID, STEP_ID, ARTIFACTS_DIR, LOOP_*,
DEP_*, ...). Like the real wrappers it reads the prompt, "works", writes
a run report (to --report, or printed between the RUN_REPORT_JSON
markers), may list memory_updates in it, and exits with the agent's
exit code, which need not be 0 when the report says COMPLETED.

What it does is read from the scenario file ($FAKE_AGENT_SCENARIO, or
.fake-agent.json in the repository): a JSON object whose keys are step
ids, or "step#i" for item i of a looped step, each a list of behaviours
taken one per call (the last one repeats). A behaviour may give:

    report          "file" (the default), "stdout" or "none"
    exit            the exit code (default 0)
    status          the report's status (default COMPLETED)
    gate_failure    true to send the work back
    artifacts       {name: content}: files written to $ARTIFACTS_DIR
                    (a name with a "/" is the repository's instead),
                    listed in the report in that order
    memory_updates  the report's memory_updates, as they are
    cost_usd        the report's metric cost_usd
    write           {path: content}: files written in the repository,
                    ${VAR} in path and content read from the environment
    sleep           seconds to wait before reporting

Every call is logged, one line, to calls.log in the repository, and its
working directory (CWD) and the environment variables agent_orchestrator
defines to env/<key>.<n>.
"""

import argparse
import json
import os
import string
import sys
import time


def main():
    p = argparse.ArgumentParser()
    for flag in ("--run-id", "--step-id", "--agent", "--prompt", "--repo", "--report"):
        p.add_argument(flag, required=True)
    args, extra = p.parse_known_args()
    repo = args.repo

    with open(args.prompt, encoding="utf-8") as f:
        prompt = f.read().strip().splitlines()

    scenario_file = os.environ.get("FAKE_AGENT_SCENARIO") or os.path.join(repo, ".fake-agent.json")
    try:
        with open(scenario_file, encoding="utf-8") as f:
            scenario = json.load(f)
    except FileNotFoundError:
        scenario = {}

    step = args.step_id
    index = next((v for k, v in sorted(os.environ.items()) if k.startswith("LOOP_") and k.endswith("INDEX")), None)
    key = step if index is None else "%s#%s" % (step, index)
    counts_file = os.path.join(repo, ".fake-agent.counts")
    try:
        with open(counts_file, encoding="utf-8") as f:
            counts = json.load(f)
    except (FileNotFoundError, ValueError):
        # None yet, or another run's agent writing it at this moment.
        counts = {}
    n = counts.get(key, 0)
    counts[key] = n + 1
    with open(counts_file, "w", encoding="utf-8") as f:
        json.dump(counts, f)
    behaviours = scenario.get(key) or scenario.get(step) or [{}]
    b = behaviours[min(n, len(behaviours) - 1)]

    items = " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items()) if k.startswith("LOOP_"))
    model = os.environ.get("STEP_MODEL", "<unset>")
    with open(os.path.join(repo, "calls.log"), "a", encoding="utf-8") as f:
        f.write("%s agent=%s attempt=%s model=%s extra=%s %s| %s\n" % (
            step, args.agent, os.environ.get("STEP_ATTEMPT"), model, " ".join(extra),
            (items + " ") if items else "", prompt[0] if prompt else ""))
    os.makedirs(os.path.join(repo, "env"), exist_ok=True)
    with open(os.path.join(repo, "env", "%s.%d" % (key, n + 1)), "w", encoding="utf-8") as f:
        f.write("CWD=%s\n" % os.getcwd())
        for k, v in sorted(os.environ.items()):
            if k in ("RUN_ID", "STEP_ID", "AGENT_ID", "REPO_DIR", "PROMPT_PATH", "REPORT_PATH", "MANUAL_RESULT_PATH",
                     "STEP_ATTEMPT", "ARTIFACTS_DIR", "STEP_MODEL", "ISSUE_NUMBER") or k.startswith(("DEP_", "LOOP_", "ISSUE_MARKDOWN_", "EXTRA_")):
                f.write("%s=%s\n" % (k, v))

    for path, content in (b.get("write") or {}).items():
        path = os.path.join(repo, string.Template(path).safe_substitute(os.environ))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(string.Template(content).safe_substitute(os.environ))

    artifacts = []
    for name, content in (b.get("artifacts") or {}).items():
        path = os.path.join(repo, name) if "/" in name else os.path.join(os.environ["ARTIFACTS_DIR"], name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        artifacts.append(name if "/" in name else path)

    time.sleep(b.get("sleep", 0))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report = {
        "schema": "run_report@v0", "run_id": args.run_id, "step_id": step, "agent": args.agent,
        "status": b.get("status", "COMPLETED"), "started_at": now, "ended_at": now,
        "artifacts": artifacts, "metrics": {}, "logs": ["did %s" % step],
    }
    if "gate_failure" in b:
        report["gate_failure"] = b["gate_failure"]
    if "memory_updates" in b:
        report["memory_updates"] = b["memory_updates"]
    if "cost_usd" in b:
        report["metrics"]["cost_usd"] = b["cost_usd"]
    how = b.get("report", "file")
    if how == "file":
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f)
    elif how == "stdout":
        print("working on %s" % step)
        print("<<<RUN_REPORT_JSON")
        print(json.dumps(report, indent=2))
        print("RUN_REPORT_JSON>>>")
    sys.stdout.flush()
    return b.get("exit", 0)


if __name__ == "__main__":
    sys.exit(main())
