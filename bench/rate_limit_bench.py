"""Real API runs: tui-eval, pydantic-evals and Inspect AI against a rate-limited loopback API.

    python bench/rate_limit_bench.py [--rounds 1] [--skip-inspect] [--no-headers]
        [--only FRAMEWORK ...] [--scenario "no limit" ...]

Each scenario starts a fresh `loopback_api.py` process (an OpenAI-compatible server with a
token bucket that answers 429 with Retry-After / retry-after-ms, and OpenAI's rate-limit
headers unless --no-headers — in "mislabelled 100/s" its per-second limit under their
per-minute names; 50 ms per accepted request) and runs every framework on its
defaults at 64 concurrent samples, one after another, each in a fresh process. Peers run in
their own virtualenvs (bench/.venvs, made by run_bench.py's installer). "ideal" is the best
any client can do: (cases - burst) / rate + latency, or waves x latency without a limit.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from run_bench import peer_python

HERE = Path(__file__).resolve().parent
API = HERE / "api"
LATENCY = 0.05
CONCURRENCY = 64
SCENARIOS = {
    # name: (rate per second or None, burst, cases)
    "100 req/s": (100.0, 10, 600),
    "20 req/s": (20.0, 2, 200),
    "no limit": (None, 1, 640),
    "mislabelled 100/s": (100.0, 10, 600),
}
MISLABELLED = {"mislabelled 100/s"}
"""Scenarios whose server states its per-second limit under OpenAI's per-minute names."""
EXTRAS = {"pydantic-evals": "pydantic-ai-slim[openai]", "inspect-ai": "openai"}
FLOOR = "aiohttp (floor)"
"""Plain aiohttp on the no-limit scenario only: the best any Python client does here. It
runs on this interpreter (aiohttp is a dependency of tui-eval: the sockets under its HTTP
layer), right after tui-eval in each round."""
DRIVERS = {
    "tui-eval": (None, "tui_eval_api.py"),
    FLOOR: (None, "aiohttp_floor_api.py"),
    "pydantic-evals": ("pydantic-evals", "pydantic_evals_api.py"),
    "inspect-ai": ("inspect-ai", "inspect_api.py"),
}


def ideal(rate: float | None, burst: int, cases: int) -> float:
    if rate is None:
        return math.ceil(cases / CONCURRENCY) * LATENCY
    return max(0, cases - burst) / rate + LATENCY


def run_scenario(
    python: Path,
    script: str,
    rate: float | None,
    burst: int,
    cases: int,
    headers: bool,
    mislabelled: bool = False,
) -> dict:
    command = [sys.executable, str(HERE / "loopback_api.py"), "--latency", str(LATENCY)]
    if rate is not None:
        command += ["--rate", str(rate), "--burst", str(burst)]
    if not headers:
        command.append("--no-headers")
    if mislabelled:
        command.append("--mislabelled")
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}/v1"
        out = subprocess.run(
            [str(python), script, url, "--cases", str(cases), "--concurrency", str(CONCURRENCY)],
            cwd=API,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-2000:])
        result = json.loads(out.stdout.strip().splitlines()[-1])
        with urllib.request.urlopen(f"{url}/stats") as response:
            result.update(json.loads(response.read()))
        return result
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--skip-inspect", action="store_true")
    parser.add_argument("--only", choices=list(DRIVERS), action="append")
    parser.add_argument(
        "--scenario", choices=list(SCENARIOS), action="append", help="run only these scenarios"
    )
    parser.add_argument(
        "--no-headers", action="store_true", help="the server sends no x-ratelimit-* headers"
    )
    args = parser.parse_args()
    chosen = args.only or [n for n in DRIVERS if not (n == "inspect-ai" and args.skip_inspect)]
    pythons = {
        name: Path(sys.executable)
        if DRIVERS[name][0] is None
        else peer_python(DRIVERS[name][0], EXTRAS.get(name, ""))
        for name in chosen
    }
    results: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.rounds):
        for scenario, (rate, burst, cases) in SCENARIOS.items():
            if args.scenario and scenario not in args.scenario:
                continue
            for name in chosen:
                if name == FLOOR and rate is not None:
                    continue  # no retries: the floor is for the no-limit scenario
                started = time.perf_counter()
                result = run_scenario(
                    pythons[name],
                    DRIVERS[name][1],
                    rate,
                    burst,
                    cases,
                    not args.no_headers,
                    scenario in MISLABELLED,
                )
                results.setdefault((scenario, name), []).append(result)
                print(
                    f"{scenario:10} {name:15} {result} ({time.perf_counter() - started:.1f}s)",
                    file=sys.stderr,
                )
    print(
        f"\nheaders: {'off' if args.no_headers else 'on (OpenAI x-ratelimit-*)'}; "
        f"{CONCURRENCY} concurrent samples; {LATENCY * 1000:.0f} ms per request; median of {args.rounds}"
    )
    print("| scenario | framework | passed | wall | × ideal | 429s/sample | connections | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario, (rate, burst, cases) in SCENARIOS.items():
        best = ideal(rate, burst, cases)
        for name in chosen:
            if (scenario, name) not in results:
                continue
            runs = results[(scenario, name)]
            wall = statistics.median(r["wall"] for r in runs)
            passed = statistics.median(r["passed"] for r in runs)
            limited = statistics.median(r["limited"] for r in runs)
            connections = statistics.median(r["connections"] for r in runs)
            cpu = statistics.median(r["cpu"] for r in runs)
            print(
                f"| {scenario} (ideal {best:.2f}s) | {name} | {passed:.0f}/{cases} | {wall:.2f}s | "
                f"{wall / best:.2f}× | {limited / cases:.2f} | {connections:.0f} | {cpu:.2f} |"
            )
    mine, floor = results.get(("no limit", "tui-eval")), results.get(("no limit", FLOOR))
    if mine and floor:
        ratios = [m["wall"] / f["wall"] for m, f in zip(mine, floor, strict=True)]
        median = statistics.median(r["wall"] for r in mine) / statistics.median(
            r["wall"] for r in floor
        )
        print(
            f"\nno limit, tui-eval ÷ aiohttp floor (same rounds): median {median:.2f}×; "
            f"per round {', '.join(f'{r:.2f}×' for r in ratios)}"
        )


if __name__ == "__main__":
    main()
