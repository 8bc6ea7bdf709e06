"""The app, driven with Pilot as a user drives it."""

from __future__ import annotations

import anyio
import pytest

from tui_eval import Case, Suite, contains
from tui_eval.core.settings import RunSettings
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.case import CaseScreen
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.case_table import CaseTable

from .test_app_flow import run_and_save_baseline

pytestmark = pytest.mark.anyio


async def wait_until_done(pilot, screen: RunScreen, timeout: float = 20) -> None:
    """Until the run has ended and, if `screen` is shown, it has drawn the end: the frame
    after the run's end applies the last results and the keys of a finished run."""
    with anyio.fail_after(timeout):
        while screen.session.state.running or (
            screen.is_current and screen._was_running is not False
        ):
            await pilot.pause(0.02)
    await pilot.pause()  # what that frame posted (the keys, a toast) is handled


def screen_text(app) -> str:
    """What the terminal shows of the current screen, as plain lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def table_rows(screen: RunScreen) -> dict[str, str]:
    """Case name → status cell, in table order."""
    return {cells[1].plain: cells[0].plain for cells in screen.query_one(CaseTable).rows()}


async def test_runs_example_suite_walks_its_failures_and_finds_the_judge_reasoning(
    example_suites, tmp_path
):
    app = make_app([str(example_suites / "calculator.py")], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until_done(pilot, screen)
        rows = table_rows(screen)
        assert rows == {
            "What is 2 + 3?": "✓ passed",
            "23.4 * 91 等于多少？": "✓ passed",
            "two-step arithmetic": "✓ passed",
            "division by zero": "✗ failed",
            "structured receipt": "✓ passed",
            "explain to a child": "✗ failed",
            "rounding (flaky)": "✓ passed",
            "slow tool (timeout)": "✗ failed",
        }
        # `n` and `p` walk the failing samples (one test with the rest: one run of the suite).
        failing = screen.session.state.failing_samples()
        assert len(failing) == 6
        await pilot.press("n")
        walking = app.screen
        assert isinstance(walking, SampleScreen)
        seen = [(walking.case_index, walking.sample_index)]
        for _ in range(len(failing)):
            await pilot.press("n")
            seen.append((walking.case_index, walking.sample_index))
        assert seen[: len(failing)] == failing and seen[-1] == failing[0]  # wraps around
        await pilot.press("p")
        assert (walking.case_index, walking.sample_index) == failing[-1]
        await pilot.press("q")
        assert app.screen is screen
        await pilot.press("f")
        assert set(table_rows(screen)) == {
            "division by zero",
            "explain to a child",
            "slow tool (timeout)",
        }
        # Open the judge case, then its first failing sample: the Checks tab shows the reasoning.
        table = screen.query_one(CaseTable)
        table.move_cursor(row=list(table_rows(screen)).index("explain to a child"))
        await pilot.press("enter")
        assert isinstance(app.screen, CaseScreen)
        await pilot.press("down")
        await pilot.press("enter")
        sample_screen = app.screen
        assert isinstance(sample_screen, SampleScreen)
        assert sample_screen.sample.status == "failed"
        checks = str(sample_screen.query_one("#checks-body").render())
        assert "llm_judge" in checks and "does not explain multiplication as equal groups" in checks


def echo_suite(path, wrong: str = "") -> Suite:
    async def agent(question: str) -> str:
        return "nope" if question == wrong else f"ok {question}"

    suite = Suite(
        "echo", agent=agent, cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(4)]
    )
    suite.path = path / "echo_suite.py"
    return suite


async def test_untrusted_output_is_shown_literally(tmp_path):
    outputs = {
        "markup": "[bold red]x[/] and [link=http://evil]click[/link]",
        "ansi": "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 title",
        "huge": "A" * 10_000_000,
    }

    async def agent(question: str) -> str:
        return outputs[question]

    suite = Suite(
        "untrusted", agent=agent, cases=[Case(name, checks=[contains("zzz")]) for name in outputs]
    )
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("n")
        screen = app.screen
        bodies = {}
        for _ in range(3):
            await pilot.press("1")
            rendered = screen.query_one("#output-body").render()
            bodies[screen.sample.case_name] = (
                rendered.plain if hasattr(rendered, "plain") else str(rendered)
            )
            await pilot.press("n")
        assert bodies["markup"] == outputs["markup"]
        assert "\x1b" not in bodies["ansi"] and "␛[31mred␛[0m" in bodies["ansi"]
        # `t` renders the output as Markdown instead; escapes stay visible there too.
        while screen.sample.case_name != "ansi":
            await pilot.press("n")
        await pilot.press("t")
        markdown = screen.query_one("#output-markdown")
        assert markdown.display and "\x1b" not in markdown.source
        await pilot.press("t")
        assert not markdown.display
        assert len(bodies["huge"]) < 30_000 and "more characters — press v" in bodies["huge"]
        # The first failure column shows the markup literally too.
        await pilot.press("q")
        cells = table_rows(app.screen)
        assert "markup" in cells
        # `v` opens the whole text.
        await pilot.press("n", "n", "n", "v")
        full = app.screen.query_one("#full-text")
        assert len(full.text) == 10_000_000


async def test_every_keypress_is_handled_while_streaming(tmp_path):
    """Keys are handled while a run keeps the event loop busy, not queued until it ends.

    Nothing here depends on how fast the machine is: the agent itself sends a key every
    500 samples (as a terminal would on a keypress), and the run's last samples keep the
    loop busy (yielding, never sleeping) until every key has been handled. A key queued
    until the run ends would never be handled: the guard's timeout fails the test.
    """
    from textual import events

    total = 10_000
    concurrency = 50
    sent_at = range(total // 5, total * 7 // 10 + 1, total // 20)
    calls = 0
    posted_at: list[int] = []
    handled_at: list[int] = []
    every_key_handled = anyio.Event()
    app = None

    async def agent(question: str) -> str:
        nonlocal calls
        calls += 1
        if calls in sent_at:
            posted_at.append(state.samples_done)
            key = events.Key("o", "o")  # what a terminal sends on a keypress
            key.set_sender(app)
            app._driver.send_message(key)
        if calls > total - concurrency:
            while not every_key_handled.is_set():  # busy, as a streaming run is
                await anyio.sleep(0)
        return question

    cases = [Case(f"case {i}", checks=[contains("case")], samples=5) for i in range(total // 5)]
    suite = Suite("big", agent=agent, cases=cases, concurrency=concurrency)
    app = make_app(suites=[suite], history=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        # The screen first, then the run, started directly: Pilot.press waits until the app
        # is idle, which here would be the end of the run.
        session = app.workspace.new_session(suite)
        state = session.state
        screen = RunScreen(session, app.workspace)
        await app.push_screen(screen)
        await pilot.pause()
        original = screen.action_sort

        def counting_sort() -> None:
            handled_at.append(state.samples_done)
            original()
            if len(handled_at) == len(sent_at):
                every_key_handled.set()

        screen.action_sort = counting_sort
        app.run_worker(session.run())
        await wait_until_done(pilot, screen, timeout=120)  # a guard, not a measure
        assert screen.session.report.passed and len(screen.session.report.samples) == total
    assert len(posted_at) == len(handled_at) == len(sent_at)
    assert all(done < total for done in handled_at)  # each while the run was going


async def test_history_opens_a_past_run_and_compares_two(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report
    from tui_eval.service.request import RunRequest
    from tui_eval.tui.screens.history import HistoryScreen

    history = RunHistory(tmp_path)

    def record(outcomes: str, started: float, options: RunRequest | None = None) -> None:
        cases = [
            CaseResult(
                f"q{i}", [SampleResult(f"q{i}", 0, "passed" if o == "p" else "failed")], planned=1
            )
            for i, o in enumerate(outcomes)
            if o != "-"
        ]
        journal = history.start("echo", "", invocation="t", request=options)
        journal.record.started_at = started
        journal.finish(Report("echo", cases, started_at=started, duration_s=1.0))

    record("ppp", 1000.0)
    record("pfp", 2000.0)
    app = make_app(suites=[], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen) and len(app.screen.records) == 2
        await pilot.press("enter")
        assert isinstance(app.screen, RunScreen) and app.screen.session.state.read_only
        assert table_rows(app.screen)["q1"] in ("✗ failed",)
        await pilot.press("q")
        await pilot.press("space", "down", "c")
        diff_screen = app.screen
        assert isinstance(diff_screen, DiffScreen)
        assert [c.name for c in diff_screen.diff.regressions] == ["q1"]
    # A rerun of q1 alone against the full run before it: the cases it did not run are not
    # "removed", they live in the other run.
    record("-p-", 3000.0, RunRequest(cases=["q1"]))
    app = make_app(suites=[], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h", "space", "down", "c")
        diff = app.screen.diff
        assert diff.removed == [] and [c.name for c in diff.improvements] == ["q1"]


async def test_history_resumes_an_interrupted_run(tmp_path):
    from tui_eval.service.store import RunHistory

    suite_file = tmp_path / "resumable.py"
    suite_file.write_text(
        "from tui_eval import Case, Suite, contains\n"
        "CALLS = []\n"
        "async def agent(q):\n"
        "    CALLS.append(q)\n"
        "    return 'ok ' + q\n"
        "suite = Suite('resumable', agent=agent, cases=[Case(f'q{i}', checks=[contains('ok')]) for i in range(5)])\n"
    )
    history = RunHistory(tmp_path)
    # An interrupted run: two samples journaled, no end marker.
    from tui_eval.core.results import SampleResult

    journal = history.start("resumable", str(suite_file), invocation="x")
    for name in ("q0", "q1"):
        journal.append(SampleResult(name, 0, "passed"))
    journal.close()
    app = make_app(suites=[], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h", "R")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until_done(pilot, screen)
        report = screen.session.report
        assert report is not None and report.passed and len(report.samples) == 5
    module = next(
        m
        for name, m in __import__("sys").modules.items()
        if name.startswith("tui_eval_suite_resumable")
    )
    assert sorted(module.CALLS) == ["q2", "q3", "q4"]
    assert RunHistory(tmp_path).runs()[0].status == "finished"


def test_baseline_status_follows_the_file(tmp_path):
    from tui_eval.report.report import Report
    from tui_eval.tui.screens.suites import baseline_status as shown

    seen = {}  # the Suites screen's own: what each file was when last read

    def baseline_status(path):
        return shown(path, seen)

    assert baseline_status(tmp_path / "none.json") == ("none", "dim")
    good = Report("r").save(tmp_path / "good.json")
    assert baseline_status(good)[0] == "saved"
    broken = tmp_path / "broken.json"
    broken.write_bytes(good.read_bytes()[:-10])
    assert baseline_status(broken)[0] == "corrupt"
    (tmp_path / "other.json").write_text("{}")
    assert baseline_status(tmp_path / "other.json")[0] == "corrupt"
    # Fixed on disk: the next look sees it (the cache is keyed by size and mtime).
    broken.write_bytes(good.read_bytes())
    assert baseline_status(broken)[0] == "saved"


def test_run_summaries_are_written_beside_reports(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report

    history = RunHistory(tmp_path)
    journal = history.start("s", "", invocation="i")
    journal.finish(
        Report(
            "s",
            [
                CaseResult(
                    "a",
                    [SampleResult("a", 0, "passed"), SampleResult("a", 1, "failed")],
                    pass_threshold=0.5,
                    planned=2,
                )
            ],
        )
    )
    record = history.runs()[0]
    assert record.summary_path.exists()
    summary = record.summary()
    assert (summary.cases_passed, summary.cases_total, summary.samples) == (1, 1, 2)
    assert summary.case_rates == {"a": (1, 2)}


async def test_clicking_a_column_header_sorts(tmp_path):
    async def agent(question: str) -> str:
        return "ok" if question in ("b", "c") else "no"

    suite = Suite(
        "sorting", agent=agent, cases=[Case(name, checks=[contains("ok")]) for name in "cab"]
    )
    app = make_app(suites=[suite], history=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        await wait_until_done(pilot, screen)
        table = screen.query_one(CaseTable)
        name_x = 1 + table._layout.widths[0] + 2  # the name column starts after status and a gap
        await pilot.click("#case-header", offset=(name_x + 1, 0))
        assert list(table_rows(screen)) == ["a", "b", "c"]
        await pilot.click("#case-header", offset=(name_x + 1, 0))
        assert list(table_rows(screen)) == ["c", "a", "b"]


async def test_app_started_filtered_run_resumes_only_its_cases(tmp_path):
    """Bug: the app journaled `options={}`, so finishing its filtered run ran the whole suite."""
    from tests.test_suite_run import calls, cli, simulate_kill, write_suite
    from tui_eval.service.request import RunRequest

    path = write_suite(tmp_path / "suites")
    history = RunHistory(tmp_path)
    options = RunRequest(filter="keep", settings=RunSettings(fail_fast=True))
    app = make_app([path], request=options, autorun=True, history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        with anyio.fail_after(20):  # the run starts on its own, then its screen opens
            while not isinstance(app.screen, RunScreen):
                await pilot.pause(0.02)
        await wait_until_done(pilot, app.screen)
        report = app.screen.session.report
        assert [c.name for c in report.cases] == ["keep-0", "keep-1", "bad-keep"]
        assert report.metadata["run_id"] == history.runs()[0].run_id
    assert history.runs()[0].request == options
    # Killed after one sample: `R` in History finishes it with the same options.
    simulate_kill(history, keep=1)
    (path.parent / "calls.log").unlink()
    app = make_app(suites=[], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h", "R")
        await wait_until_done(pilot, app.screen)
        assert [c.name for c in app.screen.session.report.cases] == [
            "keep-0",
            "keep-1",
            "bad-keep",
        ]
    assert calls(path.parent) == ["keep-1", "bad-keep"]
    # Killed again: `tui-eval resume` honours them too.
    simulate_kill(history, keep=0)
    (path.parent / "calls.log").unlink()
    result = cli("resume", cwd=tmp_path)
    assert calls(path.parent) == ["keep-0", "keep-1", "bad-keep"], result.stderr


async def test_s_never_replaces_a_corrupt_baseline(tmp_path):
    suite = echo_suite(tmp_path)
    baseline = tmp_path / "__baselines__" / "echo.json"
    baseline.parent.mkdir()
    baseline.write_text("{ corrupt")
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await run_and_save_baseline(pilot, app)
        assert any("corrupt" in n.message for n in app._notifications)
    assert baseline.read_text() == "{ corrupt"


async def test_a_run_cancelled_with_x_keeps_finished_samples_and_resumes_with_r(tmp_path):
    suite_file = tmp_path / "cancellable.py"
    slow, log = tmp_path / "slow.flag", tmp_path / "calls.log"
    slow.touch()
    suite_file.write_text(
        "import anyio\n"
        "from pathlib import Path\n"
        "from tui_eval import Case, Suite, contains\n"
        "HERE = Path(__file__).parent\n"
        "async def agent(q):\n"
        "    with (HERE / 'calls.log').open('a') as f:\n"
        "        f.write(q + '\\n')\n"
        "    if int(q[1:]) >= 3 and (HERE / 'slow.flag').exists():\n"
        "        await anyio.sleep(30)\n"
        "    return 'ok ' + q\n"
        "suite = Suite('cancellable', agent=agent, concurrency=1,"
        " cases=[Case(f'q{i}', checks=[contains('ok')]) for i in range(6)])\n"
    )
    history = RunHistory(tmp_path)
    app = make_app([suite_file], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        with anyio.fail_after(10):
            while screen.session.state.samples_done < 3:
                await pilot.pause(0.02)
        await pilot.press("x")
        await wait_until_done(pilot, screen)
        report = screen.session.report
        assert report is not None and report.cancelled
        assert [c.name for c in report.cases] == ["q0", "q1", "q2"]
        assert table_rows(screen)["q3"] == "· not run"
        # The partial run is in the history, marked cancelled — and it can be finished.
        assert RunHistory(tmp_path).runs()[0].status == "cancelled"
        assert RunHistory(tmp_path).runs()[0].resumable
        slow.unlink()
        log.unlink()
        await pilot.press("q", "h", "R")
        await pilot.pause()
        resumed = app.screen
        assert isinstance(resumed, RunScreen) and resumed is not screen, [
            n.message for n in app._notifications
        ]
        await wait_until_done(pilot, resumed)
        assert resumed.session.report.passed and len(resumed.session.report.samples) == 6
    assert log.read_text().split() == ["q3", "q4", "q5"]
    assert RunHistory(tmp_path).runs()[0].status == "finished"
