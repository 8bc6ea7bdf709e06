"""Workloads A and B on two checkouts of tui-eval, alternating fresh processes.

python bench/side_by_side.py --old /tmp/old [--new .] [--rounds 7] [--repeat 5] [--only A]

Each round runs every workload once per checkout, in turn (old, new, then new, old in the
next round), each in a fresh process with `PYTHONPATH` set to that checkout. A process
builds the workload once and runs `evaluate()` `--repeat` times, timing each run's wall
and process CPU (user + sys); the figure of a process is its fastest run. The table gives
best-of-rounds and medians, and new ÷ old for both, with the load average before and after.
`e2e` is workload A as `asyncio.run(evaluate(...))`, timed from outside (one run a process);
`app` is workload A streamed through the app (`workloads/app_run.py app`: wall only, one
run a process, after a 10-case warm-up run).

`--instructions` counts instead of timing, for machines too loaded for a few-percent
difference to show in seconds: each checkout runs the workload under valgrind's callgrind
after a warm-up run, once with 0 runs and once with 2, and the difference halved is the
instructions one run executes (PYTHONHASHSEED=0; the scheduler's 10 ms time slices, the
one thing that depends on the clock, are set to never end, the same on both sides).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKLOADS = {"A": (2000, 5, 0.0, 50), "B": (500, 1, 0.020, 50)}


def inner(workload: str, repeat: int, steady: bool = False) -> None:
    """Run in the measured process: print one JSON line of (wall, cpu) per run."""
    import asyncio
    import importlib

    from tui_eval import Case, equals, evaluate

    if steady:  # the time slices are `YIELD_EVERY_S` in the runner (older), the scheduler or the sample runner
        for module in (
            "tui_eval.runner",
            "tui_eval.scheduling",
            "tui_eval.run.runner",
            "tui_eval.run.scheduling",
            "tui_eval.run.sample_runner",
        ):
            try:
                found = importlib.import_module(module)
            except ImportError:
                continue
            if hasattr(found, "YIELD_EVERY_S"):
                found.YIELD_EVERY_S = 1e9

    if workload == "e2e":
        cases_n, samples, latency, concurrency = WORKLOADS["A"]
    else:
        cases_n, samples, latency, concurrency = WORKLOADS[workload]

    async def agent(question: str) -> str:
        if latency:
            await asyncio.sleep(latency)
        return question.replace("question", "answer")

    cases = [
        Case(f"question {i}", checks=[equals(f"answer {i}")], samples=samples)
        for i in range(cases_n)
    ]

    async def once() -> object:
        return await evaluate(agent, cases, concurrency=concurrency)

    runs = []
    if workload == "e2e":
        wall, cpu = time.perf_counter(), time.process_time()
        asyncio.run(once())
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    else:

        async def main() -> None:
            if steady:
                await evaluate(agent, cases[:20], concurrency=concurrency)
            for _ in range(repeat):
                wall, cpu = time.perf_counter(), time.process_time()
                report = await once()
                runs.append((time.perf_counter() - wall, time.process_time() - cpu))
                assert len(report.samples) == cases_n * samples  # type: ignore[attr-defined]

        asyncio.run(main())
    print(json.dumps({"runs": runs}))


def measure(tree: Path, workload: str, repeat: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if workload == "app":
        script = Path(__file__).resolve().parent / "workloads" / "app_run.py"
        out = subprocess.run(
            [sys.executable, str(script), "app"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        )
        return float(out.stdout.split()[-1]), math.nan
    out = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--inner",
            workload,
            "--repeat",
            str(repeat),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    runs = json.loads(out.stdout.splitlines()[-1])["runs"]
    return min(w for w, _ in runs), min(c for _, c in runs)


def instructions(tree: Path, workload: str) -> int:
    """Instructions one run of `workload` executes with the checkout at `tree` (callgrind)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    counts = []
    for runs in (0, 2):
        out = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"),
                *(sys.executable, str(Path(__file__).resolve()), "--inner", workload),
                *("--repeat", str(runs), "--steady"),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        )
        refs = next(line for line in out.stderr.splitlines() if "refs:" in line)
        counts.append(int(refs.split("refs:")[1].replace(",", "")))
    return (counts[1] - counts[0]) // 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path)
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", action="append", choices=["A", "B", "e2e", "app"])
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--inner")
    parser.add_argument("--steady", action="store_true")
    args = parser.parse_args()
    if args.inner:
        inner(args.inner, args.repeat, args.steady)
        return
    if args.old is None:
        parser.error("--old is required")
    workloads = args.only or ["A", "B", "e2e"]
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    if args.instructions:
        print("| workload | old (instructions a run) | new | new ÷ old |")
        print("|---|---:|---:|---:|")
        for workload in workloads:
            for _ in range(args.rounds):
                old, new = (instructions(sides[side], workload) for side in sides)
                print(f"| {workload} | {old / 1e6:.1f}M | {new / 1e6:.1f}M | {new / old:.3f} |")
        return
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {
        (w, s): [] for w in workloads for s in sides
    }
    load_before = os.getloadavg()
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for workload in workloads:
            for side in order:
                figures[workload, side].append(measure(sides[side], workload, args.repeat))
    load_after = os.getloadavg()
    print(
        f"{args.rounds} rounds, {args.repeat} runs a process; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print(
        "| workload | figure | old best | new best | new ÷ old (best) | old median | "
        "new median | new ÷ old (median) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for workload in workloads:
        for position, label in ((1, "CPU"), (0, "wall")):
            if workload == "app" and label == "CPU":
                continue
            old = [f[position] for f in figures[workload, "old"]]
            new = [f[position] for f in figures[workload, "new"]]
            print(
                f"| {workload} | {label} | {min(old):.4f} | {min(new):.4f} | "
                f"{min(new) / min(old):.3f} | {statistics.median(old):.4f} | "
                f"{statistics.median(new):.4f} | "
                f"{statistics.median(new) / statistics.median(old):.3f} |"
            )


if __name__ == "__main__":
    main()
