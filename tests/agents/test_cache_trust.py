"""The response cache against a real loopback server: an answer goes back only to the
tenant and key that asked for it, no secret is written, a wrong entry is a miss, and
nothing under the data folder is readable by other users."""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import cli
from tui_eval import Agent, Case, contains, evaluate
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.providers.anthropic import AnthropicProvider
from tui_eval.agents.providers.openai import OpenAIProvider

from .wire_server import Reply, WireServer, anthropic_text, openai_text

pytestmark = pytest.mark.anyio

KEY = "sk-cache-test-0123456789"


def home() -> Path:
    return Path(os.environ["TUI_EVAL_HOME"])


def cache_files() -> list[Path]:
    return list(home().glob("cache/responses/*/*.json"))


async def test_tenant_headers_are_part_of_the_key():
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok from p1")), Reply(body=openai_text("ok from p2")))
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
        case = [Case("hi", checks=[contains("ok")])]
        runs = []
        for project in ("p1", "p2", "p1"):
            options = ProviderOptions(headers={"OpenAI-Project": project})
            runs.append(await evaluate(agent, case, cache=True, provider=options))
    outputs = [report.samples[0].output for report in runs]
    # Today p2 got p1's stored answer.
    assert outputs == ["ok from p1", "ok from p2", "ok from p1"]
    assert len(server.requests) == 2 and runs[2].samples[0].cached


async def test_the_api_key_is_part_of_the_key_and_never_stored():
    with WireServer() as server:
        server.reply(
            Reply(body=openai_text(f"ok, your key is {KEY}")),
            Reply(body=openai_text("ok for the other key")),
        )
        mine = Agent(OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY))
        other = Agent(OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY + "x"))
        case = [Case("hi", checks=[contains("ok")])]
        await evaluate(mine, case, cache=True)
        second = await evaluate(other, case, cache=True)
        again = await evaluate(mine, case, cache=True)
    assert len(server.requests) == 2
    assert second.samples[0].output == "ok for the other key"
    assert again.samples[0].cached and again.samples[0].output == "ok, your key is ***"
    for path in home().rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("wrong", [{}, {"choices": []}, {"choices": [{"message": None}]}, []])
async def test_a_readable_but_wrong_entry_is_a_miss(wrong):
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")), Reply(body=openai_text("ok again")))
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
        case = [Case("hi", checks=[contains("ok")])]
        await evaluate(agent, case, cache=True)
        for path in cache_files():
            path.write_text(json.dumps(wrong))
        report = await evaluate(agent, case, cache=True)
        sample = report.samples[0]
        assert sample.status == "passed" and not sample.cached, sample.error
        assert sample.output == "ok again" and len(server.requests) == 2
        # The wrong entry was replaced by the good answer.
        again = await evaluate(agent, case, cache=True)
    assert again.samples[0].cached and again.samples[0].output == "ok again"


async def test_a_wrong_anthropic_entry_is_a_miss():
    with WireServer() as server:
        server.reply(Reply(body=anthropic_text("ok")), Reply(body=anthropic_text("ok again")))
        agent = Agent(AnthropicProvider("claude-test", base_url=server.url, api_key=KEY))
        case = [Case("hi", checks=[contains("ok")])]
        await evaluate(agent, case, cache=True)
        for path in cache_files():
            path.write_text(json.dumps({"content": "not blocks"}))
        report = await evaluate(agent, case, cache=True)
    assert report.samples[0].status == "passed" and not report.samples[0].cached
    assert len(server.requests) == 2


def test_nothing_under_the_data_folder_is_readable_by_others(tmp_path):
    with WireServer() as server:
        server.reply(*[Reply(body=openai_text("ok"))] * 4)
        suite = tmp_path / "private.py"
        suite.write_text(
            textwrap.dedent(
                f"""
                from tui_eval import Agent, Case, Suite, contains
                from tui_eval.agents.providers.openai import OpenAIProvider

                suite = Suite(
                    "private",
                    agent=Agent(OpenAIProvider("m", base_url="{server.url}/v1")),
                    cases=[Case("hi", checks=[contains("ok")], name="c", samples=2)],
                    cache="on",
                )
                """
            )
        )
        done = cli("run", "--headless", str(suite), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    found = list(home().rglob("*"))
    assert any(p.name.endswith(".jsonl") for p in found) and cache_files()
    for path in found:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {mode:o}"


async def test_folders_an_older_version_left_readable_are_tightened():
    for name in ("projects", "cache"):
        (home() / name).mkdir(mode=0o755)
        os.chmod(home() / name, 0o755)
        (home() / name / "old.json").write_text("{}")
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")))
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1"))
        await evaluate(agent, [Case("hi", checks=[contains("ok")])], cache=True)
    assert stat.S_IMODE((home() / "cache").stat().st_mode) == 0o700
    from tui_eval.service.request import RunRequest
    from tui_eval.service.store import RunHistory

    journal = RunHistory(home()).start("s", "s.py", invocation="test", request=RunRequest())
    journal.close()
    assert stat.S_IMODE((home() / "projects").stat().st_mode) == 0o700


async def test_a_cache_write_leaves_the_event_loop_free(monkeypatch):
    """Storing an answer (write, fsync, rename) runs beside the event loop, not on it: the
    loop goes on while a write is held, and the answer waits for its write."""
    import threading

    import anyio

    from tui_eval.agents.http import cache as cache_module

    writing, release = threading.Event(), threading.Event()
    held_the_loop = []
    real_write = cache_module.atomic_write_all

    def held_write(files: list[tuple[Path, bytes]], **options: Any) -> list[OSError | None]:
        writing.set()
        held_the_loop.append(not release.wait(timeout=10))  # a stuck guard, not a wait
        return real_write(files, **options)

    monkeypatch.setattr(cache_module, "atomic_write_all", held_write)
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")))
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY))
        reports = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                reports.append(
                    await evaluate(agent, [Case("hi", checks=[contains("ok")])], cache=True)
                )

            group.start_soon(run)
            await anyio.to_thread.run_sync(writing.wait, 10)
            assert not reports  # the sample's answer waits for its write
            release.set()  # from the loop, while the write is held
    assert held_the_loop == [False]
    assert reports[0].samples[0].passed and len(cache_files()) == 1


async def test_the_environment_is_read_for_secrets_once_per_cache_not_per_answer(monkeypatch):
    """Each stored answer had the whole environment scanned for secrets (about 50 µs for
    40 variables, on the event loop); a run's cache reads it once — and still stores no
    secret of the environment that a model echoes."""
    from tui_eval.agents.http import cache as cache_module

    echoed = "tok-from-the-environment-0123456789"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", echoed)
    reads = []
    real_read = cache_module.secret_values

    def counted() -> list[str]:
        reads.append(1)
        return real_read()

    monkeypatch.setattr(cache_module, "secret_values", counted)
    with WireServer() as server:
        server.reply(*[Reply(body=openai_text(f"ok, {echoed}"))] * 5)
        agent = Agent(OpenAIProvider("m", base_url=server.url + "/v1", api_key=KEY))
        case = [Case("hi", checks=[contains("ok")], samples=5)]
        report = await evaluate(agent, case, cache=True)
    assert all(sample.passed for sample in report.samples)
    assert len(cache_files()) == 5 and len(reads) == 1
    for path in cache_files():
        assert echoed not in path.read_text() and "ok, ***" in path.read_text()


class HeldWrites:
    """The cache's file writes, the first `holds` calls (batches) each held until its
    `release` is set (from the loop), any file whose name holds one of `failing` failing
    with `OSError`."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, failing: tuple[str, ...] = (), holds: int = 1
    ) -> None:
        import threading

        from tui_eval.agents.http import cache as cache_module

        self.writings = [threading.Event() for _ in range(holds)]
        self.releases = [threading.Event() for _ in range(holds)]
        self.writing, self.release = self.writings[0], self.releases[0]
        self.calls = 0
        self.failing = failing
        self.real_write = cache_module.atomic_write_all
        monkeypatch.setattr(cache_module, "atomic_write_all", self.write)

    def write(self, files: list[tuple[Path, bytes]], **options: Any) -> list[OSError | None]:
        call, self.calls = self.calls, self.calls + 1
        if call < len(self.writings):
            self.writings[call].set()
            self.releases[call].wait(timeout=10)  # a stuck guard, not a wait
        failed = [any(name in path.name for name in self.failing) for path, _ in files]
        kept = [file for file, no in zip(files, failed, strict=True) if not no]
        written = iter(self.real_write(kept, **options))
        return [OSError(28, "No space left on device") if no else next(written) for no in failed]

    async def first_held(self, call: int = 0) -> None:
        """Return once the first write (or the `call`th) is held in its worker thread."""
        import anyio.to_thread

        await anyio.to_thread.run_sync(self.writings[call].wait, 10)


def key_of(index: int) -> str:
    return f"{index:064x}"


async def test_answers_that_arrive_during_a_write_are_stored_together(tmp_path, monkeypatch):
    """Each answer was handed to a worker thread of its own and back (about 100 µs of CPU an
    answer besides the write); those that arrive while one is being written now go to the
    worker together — and each put still returns only once its own file is in place."""
    import anyio
    import anyio.to_thread

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch)
    real_run_sync = anyio.to_thread.run_sync
    hand_offs = []

    async def counted(func: Any, *args: Any, **options: Any) -> Any:
        hand_offs.append(func)
        return await real_run_sync(func, *args, **options)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    cache = ResponseCache("on", tmp_path)
    in_place: dict[int, bool] = {}

    async def put(index: int) -> None:
        await cache.put(key_of(index), {"n": index, "echo": KEY}, [KEY])
        in_place[index] = cache.get(key_of(index)) == {"n": index, "echo": "***"}

    async with anyio.create_task_group() as group:
        group.start_soon(put, 0)
        await real_run_sync(held.writing.wait, 10)
        for index in range(1, 6):
            group.start_soon(put, index)
        await anyio.wait_all_tasks_blocked()
        held.release.set()
    assert in_place == {index: True for index in range(6)}
    assert len(hand_offs) == 2  # the held answer's, then the five that waited for it


async def test_an_error_storing_one_answer_of_a_batch_reaches_only_its_put(tmp_path, monkeypatch):
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch, failing=(key_of(2),))
    cache = ResponseCache("on", tmp_path)
    outcomes: dict[int, str] = {}

    async def put(index: int) -> None:
        try:
            await cache.put(key_of(index), {"n": index})
        except OSError as error:
            outcomes[index] = error.strerror or ""
        else:
            outcomes[index] = "stored" if cache.get(key_of(index)) == {"n": index} else "missing"

    async with anyio.create_task_group() as group:
        group.start_soon(put, 0)
        await held.first_held()
        for index in range(1, 5):
            group.start_soon(put, index)
        await anyio.wait_all_tasks_blocked()
        held.release.set()
    assert outcomes == {
        0: "stored",
        1: "stored",
        2: "No space left on device",
        3: "stored",
        4: "stored",
    }


async def test_cancelled_puts_leave_the_others_stored(tmp_path, monkeypatch):
    """A put cancelled while its answer is being written (the write goes on), and one
    cancelled while it waits for that write: the answers queued behind them are still
    stored and their puts return."""
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch)
    cache = ResponseCache("on", tmp_path)
    scopes = {index: anyio.CancelScope() for index in range(4)}
    returned: list[int] = []

    async def put(index: int) -> None:
        with scopes[index]:
            await cache.put(key_of(index), {"n": index})
            returned.append(index)

    with anyio.fail_after(20):  # a stuck guard: a lost turn to write would hang here
        async with anyio.create_task_group() as group:
            group.start_soon(put, 0)
            await held.first_held()
            for index in range(1, 4):
                group.start_soon(put, index)
            await anyio.wait_all_tasks_blocked()
            scopes[0].cancel()  # the put whose write is held
            scopes[1].cancel()  # the first put waiting behind it
            await anyio.wait_all_tasks_blocked()
            held.release.set()
    assert {2, 3} <= set(returned)
    for index in (0, 2, 3):
        assert cache.get(key_of(index)) == {"n": index}


async def test_a_file_that_cannot_be_written_fails_its_put_alone(tmp_path):
    """A batch on the real file system: the answer whose folder is a file gets the error,
    the others of its batch are in place, and no temp file is left behind."""
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    cache = ResponseCache("on", tmp_path)
    (tmp_path / "ff").write_text("in the way")  # where keys starting "ff" keep their files
    keys = [key_of(index) for index in range(4)] + ["ff" + key_of(0)[2:]]
    failed: list[str] = []

    async def put(key: str) -> None:
        try:
            await cache.put(key, {"key": key})
        except OSError:
            failed.append(key)

    async with anyio.create_task_group() as group:
        for key in keys:
            group.start_soon(put, key)
    assert failed == [keys[-1]]
    assert all(cache.get(key) == {"key": key} for key in keys[:-1])
    assert not [path for path in tmp_path.rglob("*") if path.name.endswith(".tmp")]


async def test_the_puts_of_a_batch_go_on_one_loop_turn_apart(tmp_path, monkeypatch):
    """Woken all at once, the requests of a batch each took their next step in the same
    turn of the event loop (at 200 conversations in flight, 32 steps held the loop
    ~16 ms); each put now wakes the next as it goes on."""
    import anyio
    import anyio.lowlevel

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch)
    cache = ResponseCache("on", tmp_path)
    turn = 0
    went_on: dict[int, int] = {}

    async def count_turns() -> None:
        nonlocal turn
        while True:
            turn += 1
            await anyio.lowlevel.checkpoint()

    async def put(index: int) -> None:
        await cache.put(key_of(index), {"n": index})
        went_on[index] = turn

    async with anyio.create_task_group() as group:
        group.start_soon(put, 0)
        await held.first_held()
        async with anyio.create_task_group() as puts:
            for index in range(1, 6):
                puts.start_soon(put, index)
            await anyio.wait_all_tasks_blocked()
            group.start_soon(count_turns)
            held.release.set()
        group.cancel_scope.cancel()
    assert len(went_on) == 6
    batch = [went_on[index] for index in range(1, 6)]
    assert len(set(batch)) == 5, went_on  # five turns, not one


async def test_a_put_cancelled_while_its_batch_is_written_passes_its_wake_on(tmp_path, monkeypatch):
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch, holds=2)
    cache = ResponseCache("on", tmp_path)
    cancel_two = anyio.CancelScope()
    returned: list[int] = []

    async def put(index: int) -> None:
        with cancel_two if index == 2 else anyio.CancelScope():
            await cache.put(key_of(index), {"n": index})
            returned.append(index)

    with anyio.fail_after(20):  # a stuck guard: a lost wake would hang here
        async with anyio.create_task_group() as group:
            group.start_soon(put, 0)
            await held.first_held()
            for index in (1, 2, 3):
                group.start_soon(put, index)
            await anyio.wait_all_tasks_blocked()
            held.releases[0].set()
            await held.first_held(1)  # the batch of 1, 2 and 3
            cancel_two.cancel()
            await anyio.wait_all_tasks_blocked()
            held.releases[1].set()
    assert sorted(returned) == [0, 1, 3]
    assert all(cache.get(key_of(index)) == {"n": index} for index in range(4))


async def test_a_writer_cancelled_before_its_thread_hands_its_turn_to_a_put_still_there(
    tmp_path, monkeypatch
):
    """The put whose turn it was to write, cancelled before its worker thread started, put
    the rest of its batch back in the queue — a put of that batch already cancelled among
    them — and handed the turn to the first: a put gone, so no write ever ran again on that
    loop, and every later put (the next run's too, with the same cache) waited forever."""
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    held = HeldWrites(monkeypatch)
    cache = ResponseCache("on", tmp_path)
    first_stored, let_go = anyio.Event(), anyio.Event()
    scopes = {index: anyio.CancelScope() for index in (1, 2)}

    async def put(index: int) -> None:
        with scopes.get(index, anyio.CancelScope()):
            await cache.put(key_of(index), {"n": index})
        if index == 0:
            first_stored.set()

    async def hold_the_writes_thread() -> None:
        writes = cache._writes
        assert writes is not None
        holder = object()
        await writes.limiter.acquire_on_behalf_of(holder)  # next, once the first batch ends
        await let_go.wait()
        writes.limiter.release_on_behalf_of(holder)

    with anyio.fail_after(20):  # a stuck guard: a lost turn to write hangs here
        async with anyio.create_task_group() as group:
            group.start_soon(put, 0)
            await held.first_held()
            group.start_soon(hold_the_writes_thread)
            group.start_soon(put, 1)  # to write the next batch: 1 and 2
            group.start_soon(put, 2)
            await anyio.wait_all_tasks_blocked()
            held.release.set()
            await first_stored.wait()
            await anyio.wait_all_tasks_blocked()  # put 1 waits for the thread, 1 and 2 its batch
            scopes[2].cancel()
            await anyio.wait_all_tasks_blocked()
            scopes[1].cancel()
            await anyio.wait_all_tasks_blocked()
            let_go.set()
        await put(3)
    assert cache.get(key_of(3)) == {"n": 3}
