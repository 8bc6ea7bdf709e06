"""A Ray worker lends tui-eval's HTTP layer as a run in one process does: an SDK's streamed
response is metered and priced through the cluster's shared limiter, and a worker's run
closes the connections it opened. The Ray tests are marked `ray` (`pytest -m ray -n 0`);
the limiter's shape is checked without Ray."""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

import tui_eval
from tests.agents.chat_server import ChatServer
from tests.agents.wire_server import Reply
from tui_eval.agents.http.context import Runtime
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.http.metering import ResponseTokens, price_of
from tui_eval.core.settings import RunSettings
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.ray_worker import LimiterActor, SharedLimiter
from tui_eval.suites import Suite, load_suites

USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 200,
    "prompt_tokens_details": {"cached_tokens": 400},
}
"""What every answer of `chat_answer` reports: cached prompt tokens included."""
TOKENS = ResponseTokens(1000, 200, cache_read=400)


def chat_answer(body: dict[str, Any]) -> Reply:
    """An OpenAI-compatible chat answer (for `ChatServer`): a JSON completion, or
    (`"stream": true`) server-sent chunks whose last one carries the usage, as
    `stream_options.include_usage` asks. The answer is the prompt in capitals."""
    answer = body["messages"][-1]["content"].upper()
    if not body.get("stream"):
        return Reply(body=json.loads(_completion(answer)))
    half = len(answer) // 2
    chunks = [
        _chunk({"choices": [{"index": 0, "delta": {"content": answer[:half]}}]}),
        _chunk({"choices": [{"index": 0, "delta": {"content": answer[half:]}}]}),
        _chunk({"choices": [], "usage": USAGE}),
        b"data: [DONE]\n\n",
    ]
    return Reply(body=b"".join(chunks), headers={"content-type": "text/event-stream"})


def _chunk(fields: dict[str, Any]) -> bytes:
    event = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini", **fields}
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def _completion(answer: str) -> bytes:
    message = {"role": "assistant", "content": answer}
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": USAGE,
        }
    ).encode()


SUITE = """
import json
import tui_eval
from tui_eval import Case, Suite, equals

URL = {url!r}
STREAM = {stream!r}

async def agent(prompt: str) -> str:
    # As an SDK does it: its own client, tui-eval's layer underneath.
    body = {{"model": "gpt-4o-mini", "messages": [{{"role": "user", "content": prompt}}]}}
    headers = {{"authorization": "Bearer sk-test"}}
    async with tui_eval.http_client(base_url=URL, headers=headers) as client:
        if not STREAM:
            reply = await client.post("/chat/completions", json=body)
            return reply.json()["choices"][0]["message"]["content"]
        body |= {{"stream": True, "stream_options": {{"include_usage": True}}}}
        parts = []
        async with client.stream("POST", "/chat/completions", json=body) as reply:
            async for line in reply.aiter_lines():
                if line.startswith("data: {{"):
                    for choice in json.loads(line[6:])["choices"]:
                        parts.append(choice["delta"].get("content", ""))
        return "".join(parts)

suite = Suite(
    "sdk",
    agent=agent,
    cases=[Case(f"q{{i}}", checks=[equals(f"Q{{i}}")], name=f"c{{i}}") for i in range(4)],
    concurrency=4,
)
"""


def sdk_suite(folder: Path, url: str, *, stream: bool) -> Suite:
    path = folder / "sdk_suite.py"
    path.write_text(textwrap.dedent(SUITE.format(url=url, stream=stream)))
    sys.modules.pop("sdk_suite", None)
    return load_suites([str(path)]).suites[0]


def run_on_ray(suite: Suite, runtime: Runtime | None = None) -> tui_eval.Report:
    from tui_eval.run.ray_executor import RayExecutor

    executor = RayExecutor(suite.path, suite.name, workers=1)  # type: ignore[arg-type]
    settings = RunSettings(executor=executor, runtime=runtime)
    evaluation = Evaluation(suite.agent, suite.cases, settings=settings, name=suite.name)
    return anyio.run(evaluation.run)


@pytest.mark.ray
def test_a_streamed_sdk_answer_in_a_worker_is_metered_and_its_connections_closed(
    tmp_path, ray_runtime
):
    """One Ray run (a worker's start is the slow part under load) checks both: a streamed
    answer is metered and priced (it raised at the end of the stream: no `settle_tokens`),
    and the worker's run closes the connections it opened (they stayed open)."""
    ray, runtime = ray_runtime, Runtime()
    with ChatServer(chat_answer) as api:
        report = run_on_ray(sdk_suite(tmp_path, api.url, stream=True), runtime)
    assert report.passed, report.header()
    price = price_of("openai", "gpt-4o-mini", TOKENS)
    assert price is not None and price > 0
    for sample in report.samples:
        assert sample.status == "passed", sample.error
        usage = sample.usage
        assert (usage.input_tokens, usage.output_tokens, usage.requests) == (1000, 200, 1)
        assert sample.cost == pytest.approx(price)
    assert len(api.requests) == 4

    def left_open(worker: object) -> tuple[int, list[str]]:
        """In the worker: aiohttp sessions still open, and the warnings of sessions that
        were dropped unclosed (collected now)."""
        import gc
        import warnings

        import aiohttp

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()
        unclosed = [str(w.message) for w in caught if "Unclosed" in str(w.message)]
        sessions = [o for o in gc.get_objects() if isinstance(o, aiohttp.ClientSession)]
        return sum(not session.closed for session in sessions), unclosed

    workers = [actor for idle in runtime.idle_workers.values() for actor in idle]
    assert workers  # the run's workers wait for the driver's next run
    found = ray.get([worker.__ray_call__.remote(left_open) for worker in workers])
    assert found == [(0, [])] * len(workers)


def _limiter_uses() -> set[str]:
    """Every attribute tui-eval reads or calls on a quota's limiter (`limiter.X`) outside
    the limiter itself: what a `SharedLimiter` must answer too."""
    root = Path(tui_eval.__file__).parent
    used: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "limiter"
            ):
                used.add(node.attr)
    return used


def test_a_shared_limiter_answers_everything_asked_of_a_limiter():
    """A worker's `SharedLimiter` stands in for a `RateLimiter`: a method the HTTP layer
    calls on a limiter that it lacks (or takes other arguments) fails a sample at run
    time, on Ray only. This fails when the two drift."""
    used = _limiter_uses()
    assert {"acquire", "on_response", "settle_tokens", "status"} <= used  # the scan works
    for name in sorted(used):
        assert hasattr(SharedLimiter, name), f"SharedLimiter has no {name!r}"
        theirs = getattr(RateLimiter, name, None)  # None: an attribute of each instance
        if callable(theirs):
            ours = getattr(SharedLimiter, name)
            assert _parameters(ours) == _parameters(theirs), name
            assert inspect.iscoroutinefunction(ours) == inspect.iscoroutinefunction(theirs)


def _parameters(method: Any) -> list[tuple[str, Any, Any]]:
    """How a method is called: its parameters' names, kinds and defaults."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


class _Actor:
    """A `LimiterActor` behind a fake handle: `.method.remote(...)` calls it at once."""

    def __init__(self, actor: LimiterActor) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.actor, name)
        return type("Method", (), {"remote": staticmethod(method)})()


def test_a_streams_token_usage_corrects_the_clusters_estimate():
    """A stream's usage comes after its response: settled on the cluster's limiter, so a
    request that used more tokens than estimated holds the next ones back by that much."""
    actor = LimiterActor("http://api", rpm=None, tpm=6000)  # 100 tokens a second
    shared = SharedLimiter(_Actor(actor), "http://api")
    before = actor.limiter.next_token_slot
    shared.settle_tokens(100, 300)
    assert actor.limiter.next_token_slot == pytest.approx(before + 2.0)


class _FakeRun:
    """A run's sample runner as a worker's streams use it: samples that wait for `go`, and
    connections whose closing is counted."""

    def __init__(self) -> None:
        import contextlib

        self.go = anyio.Event()
        self.closed = 0
        run = self

        class Context:
            @contextlib.asynccontextmanager
            async def closing_clients(self):  # type: ignore[no-untyped-def]
                yield
                run.closed += 1

        self.context = Context()

    async def sample(self, position: int, index: int) -> Any:
        from tui_eval.core.results import SampleResult

        await self.go.wait()
        return SampleResult("c", index, "passed")


def test_a_runs_connections_close_when_its_own_streams_end_though_another_runs():
    """A worker serving the driver's next run while a stream of the previous one is still
    going closes each run's connections when that run's last stream ends (it closed only
    when no stream of any run was left)."""
    pytest.importorskip("ray")
    from tui_eval.run.ray_worker import SampleWorker

    worker = SampleWorker()
    worker.positions, worker.concurrency, worker._capacity = {"c": 0}, 2, None

    async def drain(stream: Any) -> None:
        async for _ in stream:
            pass

    async def main() -> tuple[int, int]:
        first, second = _FakeRun(), _FakeRun()
        async with anyio.create_task_group() as group:
            worker.samples = first
            group.start_soon(drain, worker.run([("c", 0)]))
            await anyio.wait_all_tasks_blocked()
            worker.samples = second  # `prepare` for the next run
            group.start_soon(drain, worker.run([("c", 1)]))
            await anyio.wait_all_tasks_blocked()
            first.go.set()  # the first run's last stream ends; the second's goes on
            with anyio.fail_after(10):
                while not first.closed:
                    await anyio.sleep(0.01)
            closed_then = second.closed
            second.go.set()
        return closed_then, second.closed

    assert anyio.run(main) == (0, 1)
