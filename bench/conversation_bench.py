"""Conversations per hour: agent and simulated user both model-driven, over a loopback API.

    python bench/conversation_bench.py [--rounds 3] [--in-flight 30 60 200] [--waves 3]
        [--turns 10] [--latency 0.05] [--jitter 0] [--cache]
    python bench/conversation_bench.py --profile 200   # one run under cProfile: where time goes
    python bench/conversation_bench.py --http 200      # CPU a request: aiohttp vs the provider
    python bench/conversation_bench.py --instructions 10 --old /tmp/old  # callgrind, per conversation

A loopback OpenAI-compatible server (its own process, `--serve`) answers every request
after `--latency` seconds (50 ms; `--jitter 0.5` spreads it evenly over 25-75 ms, as a
real API's latency varies, so the conversations do not move in lockstep). It plays both models, told apart by the request's model
name. The user's (`SimulatedUser(..., model="openai:bench-user")`) asks about one of its
orders each turn and writes `###STOP###` when it has written `--turns` messages (10). The
agent's (`Agent("openai:bench-agent", tools=[look_up_order])`) answers, and on every third
turn first calls the local tool `look_up_order`, which reads the conversation's environment
state. So a conversation is 10 turns and 24 requests (11 of the user's, 13 of the agent's):
at least 1.2 s of model latency, one request after another.

Both models are `openai:` spec strings, resolved through tui-eval's providers with
`OPENAI_BASE_URL` pointing at the loopback server: every request goes through the run's
rate limiter, meter (and response cache, with `--cache`). Each measurement is `evaluate()`
in a fresh process, `RunSettings(concurrency=N, parallel_samples=True)`, over 10 cases whose
samples (conversations, `--waves` × N of them) run N at once; the agent is a zero-argument
factory, so each conversation gets its own. The settings alternate order from round to round.

Beside the run, a task sleeps 10 ms again and again and records how late it wakes: the
event loop's lag, over the whole run and after its first second (the start: the modules
its first requests import, the TLS trust store, the price table). On a shared machine a
wake can be late because another process had the CPU; "the loop's own share" bounds each
lag by the CPU the loop's thread used meanwhile, the most of it the loop's own work explains.

tau2-bench publishes 272.7 conversations per hour at 30 in one process (tool time and
latency as its own); the targets are 20× that at 30 in flight and lag under 20 ms at 200.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from loopback_api import Server, _Connection  # noqa: E402

USER_MODEL = "bench-user"
AGENT_MODEL = "bench-agent"
CASES = 10
TAU2_PER_HOUR = 272.7
"""tau2-bench's published conversations per hour at 30 in flight, in one process."""
TOOL_EVERY = 3
"""The agent calls its tool on turns 2, 5, 8, ...: every third turn."""
PROBE_PERIOD = 0.01

STORE: dict[str, Any] = {
    "orders": {
        f"A-{k}": {"status": ("pending", "shipped", "delivered")[k % 3]} for k in range(1, 11)
    }
}


# -- the loopback server: both models ----------------------------------------------------------


class ConversationServer(Server):
    """`loopback_api.Server` answering as the simulated user or the agent, by model name."""

    def __init__(self, latency: float, turns: int, jitter: float = 0.0) -> None:
        super().__init__(latency=latency, headers=False)
        self.turns = turns
        self.jitter = jitter
        self.random = random.Random(37)

    def answer(self, conn: _Connection, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path.endswith("/stats"):
            conn.send(200, {**self.stats.as_dict(), "cpu": time.process_time()}, {})
            return
        if method == "POST" and path.endswith("/reset"):
            super().answer(conn, method, path, body)
            return
        request = json.loads(body or b"{}")
        messages = request.get("messages") or []
        if request.get("model") == USER_MODEL:
            message = self.user_message(messages)
        else:
            message = agent_message(messages)
        reply = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(body) // 4,
                "completion_tokens": len(json.dumps(message)) // 4,
                "total_tokens": len(body) // 4 + len(json.dumps(message)) // 4,
            },
        }
        spread = self.latency * self.jitter
        delay = self.latency + self.random.uniform(-spread, spread) if spread else self.latency
        asyncio.get_running_loop().call_later(delay, self._ok, conn, reply, {})

    def user_message(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The simulated user's next message: its own earlier ones are the `assistant`
        messages of what it is sent."""
        said = sum(1 for m in messages if m.get("role") == "assistant")
        prompt = str(messages[0].get("content") or "") if messages else ""
        found = re.search(r"customer (\d+)", prompt)
        customer = found.group(1) if found else "0"
        if said >= self.turns:
            return {"role": "assistant", "content": "Thanks, that is all. ###STOP###"}
        order = f"A-{said % 10 + 1}"
        text = f"Customer {customer} here, message {said + 1}: what is the status of {order}?"
        return {"role": "assistant", "content": text}


def agent_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's next message: a reply from its tool's result, a tool call on every
    third turn, else a short answer."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"role": "assistant", "content": f"Looked it up: {last.get('content')}."}
    turn = sum(1 for m in messages if m.get("role") == "user")
    said = str(last.get("content") or "")
    found = re.search(r"A-\d+", said)
    if turn % TOOL_EVERY == 2 and found:
        arguments = json.dumps({"order_id": found.group()})
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "look_up_order", "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": f"Noted, turn {turn}: I am on it."}


def serve(latency: float, turns: int, jitter: float) -> None:
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    server = ConversationServer(latency, turns, jitter)
    asyncio.run(server.serve(0, lambda port: print(f"port {port}", flush=True)))


# -- one measurement: evaluate() at N in flight ------------------------------------------------


class LagProbe:
    """Sleeps `period` again and again, recording how late it wakes (seconds), when it went
    to sleep (seconds since it started), and how much CPU the event loop's thread used
    meanwhile: a wake late by more than that was late because the machine ran something
    else (a shared host), not because the loop was busy."""

    def __init__(self, period: float = PROBE_PERIOD) -> None:
        self.period = period
        self.lags: list[float] = []
        self.at: list[float] = []
        self.cpu: list[float] = []

    async def run(self) -> None:
        import anyio

        began = time.perf_counter()
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            await anyio.sleep(self.period)
            self.lags.append(time.perf_counter() - start - self.period)
            self.cpu.append(time.thread_time() - cpu)
            self.at.append(start - began)

    def own_lags(self) -> list[float]:
        """Each lag, at most the loop's CPU time over its interval: the most of it the
        loop's own work can explain."""
        return [min(lag, cpu) for lag, cpu in zip(self.lags, self.cpu, strict=True)]


def look_up_order(order_id: str, state: dict[str, Any]) -> dict[str, Any] | str:
    """An order's status."""
    order = state["orders"].get(order_id)
    return dict(order, order_id=order_id) if order is not None else f"no order {order_id}"


def make_agent() -> Any:
    from tui_eval import Agent

    return Agent(
        f"openai:{AGENT_MODEL}",
        tools=[look_up_order],
        instructions="You answer customers' questions about their orders.",
        settings={"temperature": 0},
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def conversation_cases(conversations: int, turns: int) -> list[Any]:
    """`conversations` spread over the 10 customers' cases."""
    from tui_eval import Case, SimulatedUser, no_error, state_equals, tool_called

    per_case = -(-conversations // CASES)
    return [
        Case(
            user=SimulatedUser(
                f"You are customer {c}. Ask about your orders, one question a message.",
                model=f"openai:{USER_MODEL}",
                max_turns=turns + 5,  # it ends on its ###STOP###, never on the limit
            ),
            name=f"customer {c}",
            state=STORE,
            samples=per_case,
            checks=[tool_called("look_up_order"), no_error(), state_equals(STORE)],
        )
        for c in range(CASES)
    ]


async def drive(in_flight: int, waves: int, turns: int, cache: bool) -> dict[str, Any]:
    import anyio

    from tui_eval import RunSettings, evaluate

    cases = conversation_cases(in_flight * waves, turns)
    settings = RunSettings(
        concurrency=in_flight, parallel_samples=True, cache="on" if cache else "off"
    )
    probe = LagProbe()
    async with anyio.create_task_group() as group:
        group.start_soon(probe.run)
        start, cpu_start = time.perf_counter(), time.process_time()
        report = await evaluate(make_agent, cases, settings=settings)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        group.cancel_scope.cancel()
    samples = [s for case in report.cases for s in case.samples]
    turns_seen = [len(s.run.conversation.turns) for s in samples if s.run and s.run.conversation]
    errors = [s.error or s.first_failure for s in samples if not s.passed]
    lags_ms = [lag * 1000 for lag in probe.lags]
    # The first second holds the run's start: modules its first requests import, the TLS
    # trust store, the price table. What follows is the steady state.
    steady_ms = [lag * 1000 for lag, at in zip(probe.lags, probe.at, strict=True) if at >= 1.0]
    own_ms = [lag * 1000 for lag in probe.own_lags()]
    return {
        "in_flight": in_flight,
        "conversations": len(samples),
        "passed": sum(1 for s in samples if s.passed),
        "first_error": str(errors[0])[:300] if errors else "",
        "turns_mean": statistics.fmean(turns_seen) if turns_seen else 0.0,
        "wall": wall,
        "cpu": cpu,
        "per_hour": len(samples) / wall * 3600,
        "lag_p50_ms": percentile(lags_ms, 0.50),
        "lag_p99_ms": percentile(lags_ms, 0.99),
        "lag_max_ms": max(lags_ms, default=0.0),
        "steady_p99_ms": percentile(steady_ms, 0.99),
        "steady_max_ms": max(steady_ms, default=0.0),
        "own_p99_ms": percentile(own_ms, 0.99),
        "own_max_ms": max(own_ms, default=0.0),
        "load": os.getloadavg()[0],
    }


async def count(conversations: int, turns: int) -> None:
    """What `--instructions` runs under callgrind: one conversation (imports, connections,
    prices), then `conversations` at once (none: the start-up alone, subtracted)."""
    from tui_eval import RunSettings, evaluate

    settings = RunSettings(concurrency=max(1, conversations), parallel_samples=True)
    await evaluate(make_agent, conversation_cases(1, turns)[:1], settings=settings)
    if conversations:
        report = await evaluate(
            make_agent, conversation_cases(conversations, turns), settings=settings
        )
        assert all(s.passed for s in report.samples), "a conversation failed"  # type: ignore[attr-defined]


def instructions(url: str, tree: Path, conversations: int, turns: int) -> float:
    """Instructions a conversation executes with the checkout at `tree` (callgrind: a run
    of `conversations` less the start-up alone, divided by `conversations`)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONHASHSEED": "0",
        "OPENAI_BASE_URL": url,
        "OPENAI_API_KEY": "bench-key",
    }
    counts = []
    for n in (0, conversations):
        with tempfile.TemporaryDirectory() as home:
            out = subprocess.run(
                [
                    *("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"),
                    *(sys.executable, __file__, "--count", str(n), "--turns", str(turns)),
                ],
                env={**env, "TUI_EVAL_HOME": home},
                capture_output=True,
                text=True,
                cwd="/",
            )
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-3000:])
        refs = next(line for line in out.stderr.splitlines() if "refs:" in line)
        counts.append(int(refs.split("refs:")[1].replace(",", "")))
    return (counts[1] - counts[0]) / conversations


def measure(url: str, in_flight: int, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh process, with the server's request and CPU counts."""
    before = _stats(url)
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": url,
            "OPENAI_API_KEY": "bench-key",
            "TUI_EVAL_HOME": home,
        }
        command = [
            sys.executable,
            __file__,
            "--drive",
            str(in_flight),
            "--waves",
            str(args.waves),
            "--turns",
            str(args.turns),
        ]
        if args.cache:
            command.append("--cache")
        out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    after = _stats(url)
    result["requests"] = after["ok"] - before["ok"]
    result["server_cpu"] = after["cpu"] - before["cpu"]
    return result


def _stats(url: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(f"{url}/stats") as response:
        stats: dict[str, Any] = json.loads(response.read())
    return stats


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        __file__,
        "--serve",
        "--latency",
        str(args.latency),
        "--jitter",
        str(args.jitter),
        "--turns",
        str(args.turns),
    ]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    return server, f"http://127.0.0.1:{port}/v1"


def spread(values: list[float], digits: int = 0) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:,.{digits}f} ({low:,.{digits}f}–{high:,.{digits}f})"


def report_table(results: dict[int, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    requests_each = args.turns + 1 + args.turns + len(range(2, args.turns + 1, TOOL_EVERY))
    print(
        f"\n{args.turns} turns, {requests_each} requests a conversation, "
        f"{args.latency * 1000:.0f} ms each (± {args.jitter:.0%}); cache {'on' if args.cache else 'off'}; "
        f"median (min–max) of {args.rounds} run(s), each a fresh process"
    )
    print(
        "| in flight | conversations | passed | conversations/hour | × tau2-bench (272.7) "
        "| ideal/hour | loop lag p50 / p99 / max (ms) | after the first second: p99 / max (ms) "
        "| the loop's own share: p99 / max (ms) | CPU s (runner / server) | load |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|---|---|---|---:|")
    for n, runs in sorted(results.items()):
        ideal = n / (requests_each * args.latency) * 3600
        per_hour = [r["per_hour"] for r in runs]
        passed = statistics.median(r["passed"] for r in runs)
        conversations = runs[0]["conversations"]
        lag = " / ".join(
            spread([r[key] for r in runs], 1) for key in ("lag_p50_ms", "lag_p99_ms", "lag_max_ms")
        )
        steady, own = (
            " / ".join(spread([r[key] for r in runs], 1) for key in keys)
            for keys in (("steady_p99_ms", "steady_max_ms"), ("own_p99_ms", "own_max_ms"))
        )
        load = statistics.median(r["load"] for r in runs)
        cpu = f"{statistics.median(r['cpu'] for r in runs):.1f} / "
        cpu += f"{statistics.median(r['server_cpu'] for r in runs):.1f}"
        print(
            f"| {n} | {conversations} | {passed:.0f} | {spread(per_hour)} "
            f"| {statistics.median(per_hour) / TAU2_PER_HOUR:.0f}× | {ideal:,.0f} | {lag} "
            f"| {steady} | {own} | {cpu} | {load:.1f} |"
        )
    if 30 in results:
        at_30 = statistics.median(r["per_hour"] for r in results[30]) / TAU2_PER_HOUR
        print(f"\nat 30 in flight: {at_30:.0f}× tau2-bench (target ≥ 20×)")
    if 200 in results:
        lag_200 = statistics.median(r["lag_p99_ms"] for r in results[200])
        worst = max(r["lag_max_ms"] for r in results[200])
        own = statistics.median(r["own_p99_ms"] for r in results[200])
        print(
            f"at 200 in flight: loop lag p99 {lag_200:.1f} ms, max {worst:.1f} ms (target < 20 ms);"
            f" the loop's own share p99 {own:.1f} ms"
        )


def profile(url: str, in_flight: int, args: argparse.Namespace) -> None:
    """One run at `in_flight` under cProfile in this process, after a one-conversation run
    that pays the start-up (imports, TLS, prices): CPU by package, then the top functions."""
    import cProfile
    import pstats

    os.environ.update(
        OPENAI_BASE_URL=url, OPENAI_API_KEY="bench-key", TUI_EVAL_HOME=tempfile.mkdtemp()
    )
    asyncio.run(drive(1, 1, args.turns, args.cache))
    profiler = cProfile.Profile()
    profiler.enable()
    result = asyncio.run(drive(in_flight, args.waves, args.turns, args.cache))
    profiler.disable()
    print(json.dumps(result))
    stats = pstats.Stats(profiler)
    requests = result["conversations"] * (2 * args.turns + 1 + len(range(2, args.turns + 1, 3)))
    by_package: dict[str, float] = {}
    for (file, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_package[_package(file, function)] = by_package.get(_package(file, function), 0) + own
    total = sum(by_package.values())
    print(f"\nCPU by package (own time, under the profiler): {total:.2f}s, {requests} requests")
    for name, own in sorted(by_package.items(), key=lambda item: -item[1])[:25]:
        print(f"{own:7.3f}s {own / total:6.1%} {own / requests * 1e6:6.0f} µs/request  {name}")
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(50)


async def http_costs(requests: int, in_flight: int) -> dict[str, float]:
    """CPU a request costs (µs) at `in_flight` at once: plain aiohttp, tui-eval's provider
    alone, and the provider inside `evaluate()` (one request a sample), on the same body."""
    import aiohttp

    from tui_eval import Case, RunSettings, evaluate
    from tui_eval.agents.messages import Message
    from tui_eval.agents.providers import resolve_model

    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    question = "Customer 1 here, message 1: what is the status of A-1?"
    body = {
        "model": AGENT_MODEL,
        "messages": [{"role": "user", "content": question}],
    }
    gate = asyncio.Semaphore(in_flight)
    provider = resolve_model(f"openai:{AGENT_MODEL}")
    messages = [Message("user", question)]

    async def each(send: Any, count: int) -> float:
        async def one() -> None:
            async with gate:
                await send()

        cpu = time.process_time()
        await asyncio.gather(*(one() for _ in range(count)))
        return time.process_time() - cpu

    async with aiohttp.ClientSession() as session:

        async def plain() -> None:
            headers = {"Authorization": "Bearer bench-key"}
            async with session.post(url, json=body, headers=headers) as response:
                json.loads(await response.read())

        await each(plain, in_flight)  # connections open, modules loaded
        costs = {"aiohttp alone": await each(plain, requests)}

    async def complete() -> None:
        await provider.complete(messages, [])

    await each(complete, in_flight)
    costs["the provider (OpenAIProvider.complete)"] = await each(complete, requests)

    async def agent(_: Any) -> str | None:
        return (await provider.complete(messages, [])).content

    settings = RunSettings(concurrency=in_flight, parallel_samples=True)
    await evaluate(agent, [Case("warm up", samples=in_flight)], settings=settings)
    cpu = time.process_time()
    await evaluate(agent, [Case("requests", samples=requests)], settings=settings)
    costs["the provider inside evaluate()"] = time.process_time() - cpu
    return {name: seconds / requests * 1e6 for name, seconds in costs.items()}


def _package(file: str, function: str) -> str:
    if "site-packages/" in file:
        return file.split("site-packages/")[1].split("/")[0]
    if "/tui_eval/" in file:
        return "tui_eval/" + file.split("/tui_eval/")[1]
    if "/lib/python3" in file:
        return "stdlib " + file.split("/lib/python3")[1].split("/", 1)[1].split("/")[0]
    return function if file == "~" else file


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[30, 60, 200])
    parser.add_argument("--waves", type=int, default=3, help="conversations = waves × in flight")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--jitter", type=float, default=0.0, help="latency ± this share")
    parser.add_argument("--cache", action="store_true", help="the response cache on (misses)")
    parser.add_argument("--profile", type=int, metavar="N", help="profile one run at N in flight")
    parser.add_argument(
        "--http", type=int, metavar="N", help="CPU per request of the HTTP path, N at once"
    )
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="N",
        help="instructions a conversation executes (callgrind, N at once), --old beside --new",
    )
    parser.add_argument("--old", type=Path, help="with --instructions: the other checkout")
    parser.add_argument("--new", type=Path, default=HERE.parent)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--drive", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency, args.turns, args.jitter)
        return
    if args.count is not None:
        asyncio.run(count(args.count, args.turns))
        return
    if args.drive:
        print(json.dumps(asyncio.run(drive(args.drive, args.waves, args.turns, args.cache))))
        return
    server, url = start_server(args)
    try:
        if args.profile:
            profile(url, args.profile, args)
            return
        if args.instructions:
            sides = {"old": args.old, "new": args.new} if args.old else {"new": args.new}
            for round_index in range(args.rounds):
                order = list(sides) if round_index % 2 == 0 else list(reversed(sides))
                for side in order:
                    tree = sides[side].resolve()
                    per = instructions(url, tree, args.instructions, args.turns)
                    print(f"{side} ({tree}): {per / 1e6:.2f}M instructions a conversation")
            return
        if args.http:
            os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY="bench-key")
            os.environ["TUI_EVAL_HOME"] = tempfile.mkdtemp()
            for _ in range(args.rounds):
                costs = asyncio.run(http_costs(4000, args.http))
                print(", ".join(f"{name}: {us:.0f} µs" for name, us in costs.items()))
            return
        results: dict[int, list[dict[str, Any]]] = {}
        for round_index in range(args.rounds):
            order = args.in_flight if round_index % 2 == 0 else list(reversed(args.in_flight))
            for n in order:
                result = measure(url, n, args)
                results.setdefault(n, []).append(result)
                print(
                    f"round {round_index + 1} · {n} in flight: {result['per_hour']:,.0f}/h, "
                    f"{result['passed']}/{result['conversations']} passed, "
                    f"{result['turns_mean']:.1f} turns, {result['requests']} requests, "
                    f"wall {result['wall']:.2f}s, CPU {result['cpu']:.2f}s "
                    f"(server {result['server_cpu']:.2f}s), lag p50/p99/max "
                    f"{result['lag_p50_ms']:.1f}/{result['lag_p99_ms']:.1f}/"
                    f"{result['lag_max_ms']:.1f} ms (own p99/max {result['own_p99_ms']:.1f}/"
                    f"{result['own_max_ms']:.1f} ms), load {result['load']:.1f} "
                    f"{result['first_error']}",
                    file=sys.stderr,
                )
        report_table(results, args)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
