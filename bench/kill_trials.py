"""Kill trials: SIGKILL a 200-sample headless run at a random moment, resume it, and count
what was lost or duplicated.

    python bench/kill_trials.py --trials 20

Each trial runs in a fresh project folder and data folder: `tui-eval run --headless` on a
suite of 40 cases × 5 samples (agent latency 30-90 ms, concurrency 8) is killed with SIGKILL
after a random 0.4-1.9 s (the run takes about 2 s), then `tui-eval resume` finishes it. Lost: a (case, sample) missing
from the final report. Duplicated: a (case, sample) journaled twice, or present twice in the
report. Prints one line per trial and a total; exits 1 if anything was lost or duplicated.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SUITE = """
import random
import anyio
from tui_eval import Case, Suite, contains

async def agent(question: str) -> str:
    await anyio.sleep(random.uniform(0.03, 0.09))
    return "answer to " + question

suite = Suite("kill", agent=agent, concurrency=8,
              cases=[Case(f"q{i}", checks=[contains("answer")], samples=5) for i in range(40)])
"""
EXPECTED = {(f"q{i}", s) for i in range(40) for s in range(5)}


def trial(seed: int) -> tuple[int, int, int]:
    """One kill and resume; returns (journaled before the kill, lost, duplicated)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as root:
        project, home = Path(root) / "project", Path(root) / "home"
        (project / "suites").mkdir(parents=True)
        (project / "suites" / "kill_suite.py").write_text(SUITE)
        env = {**os.environ, "TUI_EVAL_HOME": str(home)}
        command = [sys.executable, "-m", "tui_eval"]
        proc = subprocess.Popen(
            [*command, "run", "suites", "--headless"],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.4, 1.9))
        proc.kill()
        proc.wait()
        journals = list(home.glob("projects/*/runs/*/journal.jsonl"))
        before = _journaled(journals[0]) if journals else Counter()
        subprocess.run([*command, "resume"], cwd=project, env=env, capture_output=True, timeout=120)
        journals = list(home.glob("projects/*/runs/*/journal.jsonl"))
        if not journals:  # killed before the journal existed: nothing was lost
            return 0, 0, 0
        journaled = _journaled(journals[0])
        report = json.loads((journals[0].parent / "report.json").read_text())
        in_report = Counter(
            (s["case_name"], s["index"]) for c in report["report"]["cases"] for s in c["samples"]
        )
        lost = len(EXPECTED - set(in_report))
        duplicated = sum(n - 1 for n in journaled.values() if n > 1) + sum(
            n - 1 for n in in_report.values() if n > 1
        )
        return sum(before.values()), lost, duplicated


def _journaled(path: Path) -> Counter[tuple[str, int]]:
    counts: Counter[tuple[str, int]] = Counter()
    for line in path.read_bytes().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the torn line of the kill
        if entry.get("kind") == "sample":
            counts[(entry["sample"]["case_name"], entry["sample"]["index"])] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    total_lost = total_duplicated = 0
    for number in range(args.trials):
        before, lost, duplicated = trial(args.seed + number)
        total_lost += lost
        total_duplicated += duplicated
        print(
            f"trial {number + 1:>2}: killed after {before:>3} journaled samples · "
            f"lost {lost} · duplicated {duplicated}"
        )
    print(f"{args.trials} kills: {total_lost} lost, {total_duplicated} duplicated")
    return 1 if total_lost or total_duplicated else 0


if __name__ == "__main__":
    sys.exit(main())
