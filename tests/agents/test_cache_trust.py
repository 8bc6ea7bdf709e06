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
    real_write = cache_module.atomic_write_bytes

    def held_write(path: Path, data: bytes, **options: Any) -> None:
        writing.set()
        held_the_loop.append(not release.wait(timeout=10))  # a stuck guard, not a wait
        real_write(path, data, **options)

    monkeypatch.setattr(cache_module, "atomic_write_bytes", held_write)
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


def key_of(index: int) -> str:
    return f"{index:064x}"


async def test_answers_and_streams_come_back_as_they_were_stored(tmp_path):
    """Puts side by side each return with their file in place; a read-only cache stores
    nothing; an entry that is not a JSON object (nor a stream) is a miss."""
    import anyio

    from tui_eval.agents.http.cache import ResponseCache

    cache = ResponseCache("on", tmp_path)
    async with anyio.create_task_group() as group:
        for index in range(8):
            group.start_soon(cache.put, key_of(index), {"n": index})
        group.start_soon(cache.put, key_of(8), b"data: {}\n\n")
    assert [await cache.get(key_of(index)) for index in range(8)] == [{"n": i} for i in range(8)]
    assert await cache.get(key_of(8)) == b"data: {}\n\n"
    (tmp_path / "00" / f"{key_of(9)}.json").write_text("[1, 2]")
    assert await cache.get(key_of(9)) is None and await cache.get(key_of(10)) is None
    assert (cache.hits, cache.misses) == (9, 2)
    read_only = ResponseCache("read-only", tmp_path)
    await read_only.put(key_of(11), {"n": 11})
    assert await read_only.get(key_of(11)) is None and await read_only.get(key_of(1)) == {"n": 1}


async def test_a_file_that_cannot_be_written_fails_its_put_alone(tmp_path):
    """The answer whose folder is a file gets the error, the others are in place, and no
    temp file is left behind."""
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
    assert all([await cache.get(key) == {"key": key} for key in keys[:-1]])
    assert not [path for path in tmp_path.rglob("*") if path.name.endswith(".tmp")]
