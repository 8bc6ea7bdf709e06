"""tui-eval against pydantic-evals and Inspect AI on the same workloads, side by side.

    python bench/run_bench.py [--rounds 3] [--skip-inspect]

Each peer is installed by this script into its own virtualenv under bench/.venvs/ (the
project never depends on them). Frameworks run alternately, round after round, each
in a fresh process; the table shows medians and the tui-eval/peer ratios of this run.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS_DIR = HERE / "workloads"
sys.path.insert(0, str(WORKLOADS_DIR))
from common import WORKLOADS  # noqa: E402

PEERS = {
    "pydantic-evals": ("pydantic-evals", "pydantic_evals_run.py"),
    "inspect-ai": ("inspect-ai", "inspect_run.py"),
}


def peer_python(package: str, extra: str = "") -> Path:
    """The peer's virtualenv interpreter (bench/.venvs/PACKAGE), made on first use; `extra`
    names more packages to install into it (an HTTP client for the real-API bench)."""
    venv = HERE / ".venvs" / package
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"installing {package} into {venv} …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", package], check=True)
    if extra:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *extra.split()], check=True)
    return python


def run_once(python: Path, script: str, workload: str) -> dict:
    out = subprocess.run(
        [str(python), script, workload],
        cwd=WORKLOADS_DIR,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def ideal_seconds(workload: str) -> float:
    cases, samples, latency, concurrency = WORKLOADS[workload]
    return math.ceil(cases / concurrency) * samples * latency


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--skip-inspect", action="store_true", help="Inspect AI needs ~30 s per round of workload A"
    )
    args = parser.parse_args()
    frameworks = {"tui-eval": (Path(sys.executable), "tui_eval_run.py")}
    for name, (package, script) in PEERS.items():
        if name == "inspect-ai" and args.skip_inspect:
            continue
        frameworks[name] = (peer_python(package), script)
    results: dict[tuple[str, str], list[dict]] = {}
    for round_number in range(1, args.rounds + 1):
        for workload in WORKLOADS:
            for name, (python, script) in frameworks.items():
                result = run_once(python, script, workload)
                assert result["passed"] == result["samples"], result
                results.setdefault((name, workload), []).append(result)
                print(
                    f"round {round_number} {workload} {name:<15} {result['wall']:.3f}s  rss {result['rss_mb']:.0f} MB",
                    file=sys.stderr,
                )
    print_table(results, list(frameworks))


def print_table(results: dict[tuple[str, str], list[dict]], frameworks: list[str]) -> None:
    def median(name: str, workload: str, key: str) -> float:
        return statistics.median(r[key] for r in results[(name, workload)])

    rows = [
        "| workload | framework | samples/s | wall (s) | wall / ideal | peak RSS (MB) | tui-eval speed ÷ this | tui-eval RSS ÷ this |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for workload in WORKLOADS:
        ours_wall = median("tui-eval", workload, "wall")
        ours_rss = median("tui-eval", workload, "rss_mb")
        for name in frameworks:
            wall = median(name, workload, "wall")
            samples = results[(name, workload)][0]["samples"]
            rss = median(name, workload, "rss_mb")
            ideal = ideal_seconds(workload)
            ratio_speed = "—" if name == "tui-eval" else f"{wall / ours_wall:.1f}×"
            ratio_rss = "—" if name == "tui-eval" else f"{ours_rss / rss:.2f}"
            rows.append(
                f"| {workload} | {name} | {samples / wall:,.0f} | {wall:.3f} | "
                f"{(f'{wall / ideal:.3f}' if ideal else '—')} | {rss:.0f} | {ratio_speed} | {ratio_rss} |"
            )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
