"""A run's context is explicit: its runtime owns the rate limiters, its samples carry the rest."""

from __future__ import annotations

import ast
import math
import re
from collections import deque
from pathlib import Path

import pytest

import tui_eval
from tui_eval import Agent, Case, RunSettings, evaluate
from tui_eval.agents.http.context import Runtime, current_sample
from tui_eval.agents.http.limits import RateLimiter
from tui_eval.agents.providers.openai import OpenAIProvider
from tui_eval.run.sample_runner import SampleRunner
from tui_eval.run.sample_sources import AgentRuns

from .wire_server import Reply, WireServer, openai_text

pytestmark = pytest.mark.anyio

KEY = "sk-test-CONTEXT-0123456789"


def answering(server: WireServer) -> tuple[OpenAIProvider, list[RateLimiter], object]:
    """A provider, the limiters its samples' requests went through, and an agent using it."""
    provider = OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY)
    used: list[RateLimiter] = []

    async def agent(question: str) -> str:
        result = await Agent(provider).run(question)
        used.append(provider.limiter())  # the one the run's runtime gives this quota
        return str(result.output)

    return provider, used, agent


async def test_runs_given_one_runtime_share_a_quotas_limiter_and_others_do_not():
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, used, agent = answering(server)
        runtime = Runtime()
        for name in ("a", "b"):
            await evaluate(agent, [Case(name)], settings=RunSettings(runtime=runtime))
        await evaluate(agent, [Case("c")])  # given none: a runtime of its own
        runner = SampleRunner([Case("d")], AgentRuns(agent))  # the engine's own, too
        assert (await runner.sample(0, 0)).status == "passed"
    assert used[0] is used[1] and runtime.limiters() == [used[0]]
    assert len({id(limiter) for limiter in used[1:]}) == 3


@pytest.mark.parametrize(
    ("userinfo", "options"),
    [("me:pw@", {"api_key": ""}), ("", {"api_key": KEY, "headers": {"Authorization": "Bearer b"}})],
    ids=["credentials in base_url", "key given as a header"],
)
async def test_a_providers_limiter_is_the_one_its_requests_go_through(userinfo, options):
    """The quota is named by the key a request carries, however the key was given; outside
    a run, the provider's requests go through limiters of its own client's."""
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        base_url = server.url.replace("http://", f"http://{userinfo}") + "/v1"
        provider = OpenAIProvider("m", base_url=base_url, **options)
        await Agent(provider).run("hi")
        assert provider.limiter().last_used > -math.inf  # the request went through it
        await provider.aclose()


def test_a_runtime_builds_each_quotas_limiter_once_with_its_factory():
    built: list[tuple[str, str, float | None, float | None]] = []

    def factory(base_url: str, key: str, rpm: float | None, tpm: float | None) -> RateLimiter:
        built.append((base_url, key, rpm, tpm))
        return RateLimiter(base_url, rpm=rpm, tpm=tpm)

    runtime = Runtime(factory)
    one = runtime.limiter("http://api", "k1", rpm=60)
    assert runtime.limiter("http://api", "k1") is one
    assert runtime.limiter("http://api", "k2") is not one
    assert built == [("http://api", "k1", 60, None), ("http://api", "k2", None, None)]


async def test_an_agent_sees_the_sample_it_runs_in():
    seen: list[tuple[str, int, object]] = []

    async def agent(question: str) -> str:
        sample = current_sample()
        assert sample is not None
        seen.append((sample.case_name, sample.index, sample.run.provider))
        return question

    assert current_sample() is None
    await evaluate(agent, [Case("q", name="named", samples=2)], concurrency=1)
    assert seen == [("named", 0, None), ("named", 1, None)]
    assert current_sample() is None


async def test_the_connections_a_run_opens_are_closed_when_it_ends():
    with WireServer() as server:
        server.always = Reply(body=openai_text("ok"))
        _, _, agent = answering(server)
        open_during: list[object] = []

        async def watched(question: str) -> str:
            answer = await agent(question)
            run = current_sample().run
            open_during.extend(run.sockets._transports.values())
            return answer

        await evaluate(watched, [Case("a")])
    (connections,) = open_during  # the run's own connections (aiohttp's)...
    assert connections._session is None  # ...closed when the run ended


def test_the_current_sample_is_the_one_context_variable():
    """Everything else a run needs travels in explicit objects (issue #33)."""
    root = Path(tui_eval.__file__).parent
    defined = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bContextVar\(", line)
    ]
    assert len(defined) == 1 and defined[0].startswith("agents/http/context.py:"), defined


MUTABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "bytearray",
        "defaultdict",
        "OrderedDict",
        "Counter",
        "deque",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
        "count",
        "Lock",
        "RLock",
        "local",
        "Thread",
        "Event",
    }
)
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "clear",
     "remove", "discard"}
)  # fmt: skip
PURE_MEMOS = {
    # Memos of a pure function of an immutable key: every caller gets the same answer,
    # whichever runtime or run asks, so sharing them between runs shares nothing else.
    "checks/base.py": {"_ASYNC_CALL", "_TAKES_CONTEXT"},
    "report/report.py": {"_FILE_MODELS"},  # pydantic's ReportFile[cls], by class
    "agents/tools.py": {"_READ"},  # the Tool read from a function's signature
    "stats/group_sequential.py": {"_calibrated"},
    "stats/proportions.py": {"_fisher_rejected", "_exact_samples_needed"},
    "stats/two_sample.py": {
        "_schedule",
        "_orders",
        "_block_log_e",
        "_margin_reachable",
        "_reachable_margin",
    },
    "suites/discovery.py": {"_installed"},  # the interpreter's own library folders
}
REGISTRIES = {
    # Filled as modules are imported, by the user's `register_provider` as by codecs'.
    "agents/providers/__init__.py": {"_REGISTRY"},
}


def module_state(path: Path) -> list[str]:
    """What of the module at `path` is process state: `global` statements; names bound at
    module level to a mutable container (a dict, list or set display, or a call of a
    container, counter, lock or thread type) that is empty there or that the module
    changes in a function (item assignment, a mutating method, `next()`); names bound to
    a call of one of its own classes that is not frozen (a singleton);
    `functools.cache`/`lru_cache` on a module-level function. A table the module fills
    as it is imported and never changes after is a constant."""
    tree = ast.parse(path.read_text())
    # One walk (as `ast.walk`, breadth first) that knows whether a node is in a function.
    nodes: list[tuple[ast.AST, bool]] = []
    queue = deque([(tree, False)])
    while queue:
        node, in_function = queue.popleft()
        nodes.append((node, in_function))
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        queue.extend((child, inner) for child in ast.iter_child_nodes(node))
    found = [f"global {', '.join(n.names)}" for n, _ in nodes if isinstance(n, ast.Global)]
    ours = {
        n.name
        for n, _ in nodes
        if isinstance(n, ast.ClassDef)
        # Its decorators, bases and class-level statements: not its methods' bodies.
        and not any(
            "frozen=True" in ast.unparse(part)
            for part in [*n.decorator_list, *n.keywords, *n.body]
            if not isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef)
        )
    }
    changed: set[str] = set()
    for node, in_function in nodes:
        if not in_function:
            continue
        target = None
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del)) or (
            isinstance(node, ast.Attribute) and node.attr in MUTATING_METHODS
        ):
            target = node.value
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "next" and node.args:
            target = node.args[0]
        if isinstance(target, ast.Name):
            changed.add(target.id)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if any("cache" in ast.unparse(d) for d in node.decorator_list):
                found.append(node.name)
            continue
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name) and t.id != "__all__"]
        value = node.value
        called = ast.unparse(value.func).split(".")[-1] if isinstance(value, ast.Call) else ""
        display = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp)
        empty = (display and not ast.unparse(value)[1:-1].strip()) or (
            called in MUTABLE_CALLS and not (value.args or value.keywords)  # type: ignore[union-attr]
        )
        for name in names:
            if (
                called in ours
                or called in {"count", "Lock", "RLock", "local", "Thread", "Event"}
                or ((display or called in MUTABLE_CALLS) and (empty or name in changed))
            ):
                found.append(name)
    return found


def test_no_module_holds_process_state():
    """What a run shares lives in its `Runtime` (or on an object its owner holds), never
    in a module: no `global` statement, no module-level cache, counter, lock or singleton
    (`module_state` says how each is recognised), but for the short lists above."""
    root = Path(tui_eval.__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        allowed = set().union(*(known.get(name, ()) for known in (PURE_MEMOS, REGISTRIES)))
        state = [s for s in module_state(path) if s not in allowed]
        if state:
            found[name] = state
    assert not found, found


def test_the_state_check_finds_each_kind_of_state(tmp_path):
    source = tmp_path / "module.py"
    source.write_text(
        "import functools, itertools\n"
        "TABLE = {'a': 1}\n"  # a constant table: not state
        "TABLE['b'] = 2\n"  # still one: filled as the module is imported
        "_seen = {}\n"
        "_filled = {'a': 1}\n"
        "_ids = itertools.count()\n"
        "class Session: ...\n"
        "_default = Session()\n"
        "def f(key):\n"
        "    global _default\n"
        "    _filled[key] = next(_ids)\n"
        "@functools.lru_cache\n"
        "def g(): ...\n"
    )
    assert module_state(source) == ["global _default", "_seen", "_filled", "_ids", "_default", "g"]
