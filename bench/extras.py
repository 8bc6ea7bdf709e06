"""tui-eval-only figures: report I/O, compare, start-up time, and the app against headless.

python bench/extras.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tui_eval import Report
from tui_eval.agents.messages import Message, RunResult, ToolCall, Usage
from tui_eval.checks.base import CheckResult
from tui_eval.core.results import CaseResult, SampleResult


def realistic_report(cases: int, samples: int, *, fail_every: int = 0) -> Report:
    """A report with a realistic trajectory per sample: system, user, a tool call and answer."""
    out = []
    for c in range(cases):
        rows = []
        for s in range(samples):
            call = ToolCall(
                "search",
                {"query": f"question {c}", "limit": 5},
                f"call_{c}_{s}",
                result=[{"title": f"doc {i}", "score": 0.9 - i / 10} for i in range(3)],
                latency_ms=12.5,
            )
            run = RunResult(
                output=f"The answer to question {c} is {c * 7}. " * 4,
                messages=[
                    Message("system", "You are a helpful research assistant. Cite your sources."),
                    Message("user", f"Question {c}: what do the documents say?"),
                    Message("assistant", None, [call]),
                    Message(
                        "tool",
                        '[{"title": "doc 0"}, {"title": "doc 1"}, {"title": "doc 2"}]',
                        tool_call_id=call.id,
                    ),
                    Message("assistant", f"The answer to question {c} is {c * 7}."),
                ],
                tool_calls=[call],
                usage=Usage(420, 60, 2),
                turns=2,
                latency_ms=812.0,
            )
            passed = not (fail_every and c % fail_every == 0)
            checks = [
                CheckResult(
                    "contains",
                    passed,
                    1.0 if passed else 0.0,
                    "" if passed else "expected 'x' in output, got '…'",
                ),
                CheckResult(
                    "llm_judge",
                    True,
                    0.85,
                    "Cites its sources and answers directly.",
                    Usage(300, 40, 1),
                ),
            ]
            rows.append(
                SampleResult(
                    f"case {c}",
                    s,
                    "passed" if passed else "failed",
                    checks=checks,
                    run=run,
                    usage=Usage(720, 100, 3),
                    judge_usage=Usage(300, 40, 1),
                    latency_ms=812.0,
                    cost=0.0012,
                )
            )
        out.append(CaseResult(f"case {c}", rows, planned=samples, input=f"Question {c}"))
    return Report("bench", out, started_at=time.time(), duration_s=12.0)


def timed(fn, rounds: int) -> float:
    values = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        values.append(time.perf_counter() - start)
    return statistics.median(values)


def command_seconds(args: list[str], rounds: int) -> float:
    return timed(lambda: subprocess.run(args, check=True, capture_output=True), rounds)


def app_versus_headless(rounds: int) -> tuple[float, float]:
    """Workload A headless and through the app, alternately, each in a fresh process."""
    headless, app = [], []
    script = Path(__file__).parent / "workloads" / "app_run.py"
    for _ in range(rounds):
        for mode, values in (("headless", headless), ("app", app)):
            out = subprocess.run(
                [sys.executable, str(script), mode], capture_output=True, text=True, check=True
            )
            values.append(float(out.stdout.split()[-1]))
    return statistics.median(headless), statistics.median(app)


def _two_timings(workload: str, rounds: int) -> tuple[float, float]:
    """The medians of the two times `bench/workloads/<workload>` prints, each round in a
    fresh process (nothing cached)."""
    firsts, seconds = [], []
    script = Path(__file__).parent / "workloads" / workload
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, check=True
        )
        first, second = out.stdout.split()
        firsts.append(float(first))
        seconds.append(float(second))
    return statistics.median(firsts), statistics.median(seconds)


def end_to_end(rounds: int) -> tuple[float, float]:
    """Workload A's inner `evaluate()` time and `asyncio.run(evaluate(...))` end to end."""
    return _two_timings("end_to_end_run.py", rounds)


def compare_spread(rounds: int) -> tuple[float, float]:
    """`compare()` of two 2,000 × 5 reports with spread pass rates, and printing the diff."""
    return _two_timings("compare_run.py", rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = ["| figure | median | target |", "|---|---:|---|"]
    report = realistic_report(10_000, 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        save = timed(lambda: report.save(path), args.rounds)
        load = timed(lambda: Report.load(path), args.rounds)
        size = path.stat().st_size / 1e6
    rows.append(f"| save a 10,000-sample report ({size:.1f} MB JSON) | {save:.3f} s | < 1 s |")
    rows.append(f"| load it | {load:.3f} s | < 1 s |")
    current = realistic_report(10_000, 1, fail_every=7)
    compare = timed(lambda: current.compare(report), args.rounds)
    rows.append(f"| compare() two 10,000-case reports | {compare:.3f} s | — |")
    spread, printed = compare_spread(args.rounds + 2)
    rows.append(
        f"| compare() two 2,000 × 5 reports, rates spread (fresh process) | {spread:.3f} s | < 1 s |"
    )
    rows.append(f"| `str()` of that diff (reads `samples_needed`) | {printed:.3f} s | — |")
    helps = command_seconds([sys.executable, "-m", "tui_eval", "--help"], args.rounds + 2)
    rows.append(f"| `tui-eval --help` (process wall) | {helps * 1000:.0f} ms | < 150 ms |")
    bare = command_seconds([sys.executable, "-c", "pass"], args.rounds + 2)
    rows.append(f"| `python -c pass` (for reference) | {bare * 1000:.0f} ms | — |")
    imports = command_seconds([sys.executable, "-c", "import tui_eval"], args.rounds + 2)
    rows.append(
        f"| `import tui_eval` (process wall; names load lazily) | {imports * 1000:.0f} ms | — |"
    )
    full = command_seconds(
        [sys.executable, "-c", "from tui_eval import evaluate, Case, llm_judge"], args.rounds + 2
    )
    rows.append(f"| `from tui_eval import evaluate, Case, llm_judge` | {full * 1000:.0f} ms | — |")
    headless, app = app_versus_headless(args.rounds + 2)
    rows.append(f"| workload A headless (2,000 × 5, C=50) | {headless:.3f} s | — |")
    rows.append(
        f"| workload A streamed through the app | {app:.3f} s ({app / headless:.2f}× headless) | ≤ 1.1× |"
    )
    inner, outer = end_to_end(args.rounds + 2)
    rows.append(
        f"| workload A end to end, `asyncio.run(evaluate(...))` | {outer:.3f} s "
        f"({outer / inner:.2f}× the inner {inner:.3f} s) | ≤ 1.2× |"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
