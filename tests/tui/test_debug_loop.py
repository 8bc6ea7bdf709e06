"""The app as a debugging loop: reopen, rerun, reload, watch, merge, review, compare samples."""

from __future__ import annotations

import re

import anyio
import pytest

from tui_eval import Case, Suite, contains
from tui_eval.service.request import DecideRun, RunRequest
from tui_eval.service.store import RunHistory, read_journal_samples
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.suites import SuitesScreen

from .test_app import screen_text
from .test_app_flow import (
    FileWatch,
    TimerTicks,
    run_and_save_baseline,
    stand_in,
    wait_for,
    wait_until_done,
)

pytestmark = pytest.mark.anyio


def gated_suite(gate: anyio.Event, name: str = "gated", cases: int = 8) -> Suite:
    """Cases q0-q3 answer at once; the rest wait for `gate` (a run that stays live)."""

    async def agent(question: str) -> str:
        if int(question[1:]) >= 4:
            await gate.wait()
        return "ok " + question

    return Suite(
        name,
        agent=agent,
        concurrency=2,
        cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(cases)],
    )


async def test_back_to_suites_mid_run_and_enter_reopens_the_live_run(tmp_path, monkeypatch):
    gate = anyio.Event()
    suite = gated_suite(gate)
    ticks = TimerTicks(monkeypatch)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        first = app.screen
        assert isinstance(first, RunScreen)
        await wait_for(pilot, lambda: first.session.state.samples_done >= 2)
        await pilot.press("q")
        assert isinstance(app.screen, SuitesScreen)
        await pilot.press("enter")
        # The four cases the gate lets through end while the reopened screen follows.
        await wait_for(pilot, lambda: first.session.state.samples_done >= 4)
        await ticks.settled(pilot)  # a frame of the reopened screen since
        again = app.screen
        assert isinstance(again, RunScreen) and again.session is first.session
        assert again.session.state.running and again.session.state.samples_done == 4
        gate.set()
        await wait_until_done(pilot, again)
        assert again.session.report is not None and not again.session.report.cancelled
        # Finished: enter still opens that run (it does not start another)...
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, SuitesScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.session is first.session
        # ...and `r` starts a new one.
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, SuitesScreen))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.session is not first.session
        await wait_until_done(pilot, app.screen)


def kitchen(tmp_path, wrong: tuple[str, ...] = ()) -> Suite:
    async def agent(question: str) -> str:
        return "nope" if question in wrong else "ok " + question

    suite = Suite(
        "kitchen",
        agent=agent,
        cases=[Case(name, checks=[contains("ok")]) for name in ("a", "b", "c", "d", "e")],
    )
    suite.path = stand_in(tmp_path / "kitchen_suite.py")
    return suite


def baseline_cases(tmp_path) -> dict[str, bool]:
    from tui_eval.report.report import Report

    report = Report.load(tmp_path / "__baselines__" / "kitchen.json")
    return {case.name: case.passed for case in report.cases}


async def test_s_on_a_partial_run_merges_after_naming_the_cases(tmp_path):
    import os
    import stat

    app = make_app(suites=[kitchen(tmp_path, wrong=("b", "d"))], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await run_and_save_baseline(pilot, app)  # a full run, no baseline yet: saved at once
        assert baseline_cases(tmp_path) == dict(a=True, b=False, c=True, d=False, e=True)
        mode = stat.S_IMODE(os.stat(tmp_path / "__baselines__" / "kitchen.json").st_mode)
        assert mode == 0o644  # a file people commit, not a private one
    # The agent is fixed; a run of one case (a filter) is partial.
    partial = make_app(
        suites=[kitchen(tmp_path)], history=RunHistory(tmp_path), request=RunRequest(filter="b")
    )
    async with partial.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, partial.screen)
        await pilot.press("w")
        await pilot.pause()
        from tui_eval.tui.screens.prompt import ConfirmScreen

        confirm = partial.screen
        assert isinstance(confirm, ConfirmScreen)
        assert "Merge 1 case(s)" in confirm.question and "'b'" in confirm.question
        await pilot.press("n")  # refused: nothing changes
        assert baseline_cases(tmp_path)["b"] is False
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    # Merged: b updated, the other four kept (the file was not cut down to one case).
    assert baseline_cases(tmp_path) == dict(a=True, b=True, c=True, d=False, e=True)


async def test_full_run_asks_before_dropping_baseline_cases_then_compares_unchanged(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report
    from tui_eval.tui.screens.diff import DiffScreen

    (tmp_path / "__baselines__").mkdir()
    extra = CaseResult("retired", [SampleResult("retired", 0, "passed")], planned=1)
    Report("kitchen", [extra]).save(tmp_path / "__baselines__" / "kitchen.json")
    app = make_app(suites=[kitchen(tmp_path)], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("w")
        await pilot.pause()
        assert "lacks, which would be dropped: 'retired'" in app.screen.question
        await pilot.press("escape")
        assert "retired" in baseline_cases(tmp_path)
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("enter")  # the default button is Yes
        await pilot.pause()
        assert set(baseline_cases(tmp_path)) == {"a", "b", "c", "d", "e"}
        # Compared with the baseline it was just saved as, the run has changed nothing.
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        message = str(app.screen.query_one("#no-changes").render())
        assert message == "no changes (5 cases unchanged)"


EDITABLE = """
from tui_eval import Case, Suite, contains
from helper_answers import ANSWER

async def agent(question: str) -> str:
    return ANSWER + " " + question

suite = Suite("editable", agent=agent, cases=[Case(f"q{i}", checks=[contains("right")]) for i in range(3)])
"""


def editable(tmp_path, answer: str = "wrong"):
    folder = tmp_path / "suites"
    folder.mkdir(exist_ok=True)
    (folder / "helper_answers.py").write_text(f"ANSWER = {answer!r}\n")
    path = folder / "editable_suite.py"
    if not path.exists():
        path.write_text(EDITABLE)
    return folder


async def test_an_edit_is_reloaded_and_the_next_run_uses_it(tmp_path):
    folder = editable(tmp_path)
    app = make_app([folder], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        assert not app.screen.session.report.passed
        await pilot.press("q")
        await FileWatch(app).up()
        editable(tmp_path, answer="right")  # an edit to a helper module beside the suite
        await wait_for(pilot, lambda: "editable" in app.workspace.reloaded)
        suites = app.screen
        assert "reloaded" in suites.query_one("#suites").get_cell("editable", "status").plain
        await pilot.press("r")
        await wait_until_done(pilot, app.screen)
        assert app.screen.session.report.passed
        # A syntax error mid-edit: shown inline, the previous version stays usable.
        await pilot.press("q")
        (folder / "editable_suite.py").write_text("from tui_eval import Suite\nsuite = Suite(\n")
        await wait_for(pilot, lambda: bool(app.workspace.edit_errors))
        errors = str(app.screen.query_one("#load-errors").render())
        assert "syntax error" in errors and "previous version stays in use" in errors
        await pilot.press("r")
        await wait_until_done(pilot, app.screen)
        assert app.screen.session.report.passed


class SettleTimers:
    """The app's watch-settle timers, held until the test fires them: when a burst of
    saves counts as over is the test's decision, not the machine's speed."""

    DELAY = 987.5  # the app's settle time while this stands in for its timers

    def __init__(self, app) -> None:
        self.live: list = []
        self.created = 0
        set_timer = app.set_timer
        app.WATCH_SETTLE_SECONDS = self.DELAY

        def fake_set_timer(delay, callback=None, **kwargs):
            if delay != self.DELAY:
                return set_timer(delay, callback, **kwargs)
            self.created += 1
            timers = self

            class Held:
                def stop(self) -> None:
                    timers.live.remove(entry)

            entry = (Held(), callback)
            self.live.append(entry)
            return entry[0]

        app.set_timer = fake_set_timer

    def fire(self) -> None:
        live, self.live = self.live, []
        for _, callback in live:
            callback()


async def test_watch_reruns_once_for_a_burst_of_saves_and_shows_what_changed(tmp_path):
    from tui_eval.tui.messages import SuiteFilesChanged

    folder = editable(tmp_path, answer="right")
    app = make_app([folder], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        timers = SettleTimers(app)
        await pilot.press("enter")
        first = app.screen
        await wait_until_done(pilot, first)
        await pilot.press("ctrl+r")
        assert first.watching
        for i in range(5):  # an editor saving several times in a row
            editable(tmp_path, answer=f"wrong {i}")
            app.post_message(SuiteFilesChanged({folder / "helper_answers.py"}))
            await pilot.pause()
        await wait_for(pilot, lambda: timers.created >= 5)  # five edits, five restarted waits
        assert len(timers.live) == 1 and app.screen is first  # one pending rerun, not started
        timers.fire()  # the burst is over
        await wait_for(pilot, lambda: app.screen is not first)
        rerun = app.screen
        assert isinstance(rerun, RunScreen) and rerun.watching and rerun.previous is first.session
        await wait_until_done(pilot, rerun)
        timers.fire()  # saves the watcher reported late: the same suite, no new edit
        await pilot.pause()
        assert app.screen is rerun and rerun.reruns_started == 1
        diff = rerun.since_previous
        assert diff is not None and [c.name for c in diff.regressions] == ["q0", "q1", "q2"]
        assert "3 regressed" in str(rerun.query_one("#run-notes").render())
        await pilot.press("p")
        from tui_eval.tui.screens.diff import DiffScreen

        assert isinstance(app.screen, DiffScreen)


async def test_m_samples_run_concurrently_for_a_factory_agent_and_open(tmp_path, monkeypatch):
    from tui_eval.stats.proportions import wilson_interval
    from tui_eval.tui.screens.case import CaseScreen
    from tui_eval.tui.screens.prompt import Prompt
    from tui_eval.tui.screens.sample import SampleScreen

    running = 0
    most = 0
    count = 0

    def make_agent():  # a zero-arg factory: a fresh agent for every sample
        async def agent(question: str) -> str:
            nonlocal running, most, count
            running += 1
            most = max(most, running)
            count += 1
            await anyio.sleep(0.05)
            running -= 1
            return "ok" if count % 3 else "no"

        return agent

    suite = Suite(
        "flaky",
        agent=make_agent,
        concurrency=4,
        cases=[Case("coin", checks=[contains("ok")], samples=2, pass_threshold=0.5)],
    )
    ticks = TimerTicks(monkeypatch)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        assert most == 1  # a normal run keeps the seed's rule: a case's samples one by one
        await pilot.press("enter")
        case_screen = app.screen
        assert isinstance(case_screen, CaseScreen)
        await pilot.press("m")  # asks how many, saying where they go
        assert isinstance(app.screen, Prompt)
        assert "more samples" in app.screen.question and "added" in app.screen.question
        await pilot.press(*["backspace"] * 4, "1", "2", "enter")
        await wait_for(
            pilot, lambda: case_screen.rerun is not None and case_screen.rerun.report is not None
        )
        await ticks.settled(pilot)  # the Case screen has shown the rerun's end
        assert most == 4  # the suite's concurrency
        # The new pass rate and its 95% (Wilson) interval, beside the old.
        line = str(case_screen.query_one("#rerun").render())
        passed = int(re.search(r"rerun: (\d+)/12 ", line).group(1))
        low, high = wilson_interval(passed, 12)
        assert f"rerun: {passed}/12 = {passed / 12:.0%} (95% CI {low:.0%}–{high:.0%})" in line
        assert "before: 2/2 = 100%" in line
        labels = [str(row[0]) for row in case_screen._rows()]
        assert labels == ["1", "2", *[f"m{i}" for i in range(1, 13)]]
        table = case_screen.query_one("#samples")
        assert table.row_count == 14
        table.move_cursor(row=5)  # m4
        await pilot.press("enter")
        opened = app.screen
        assert isinstance(opened, SampleScreen)
        assert opened.session is case_screen.rerun and opened.sample.index == 3


async def test_d_opens_a_failing_sample_beside_the_closest_passing_one(tmp_path):
    from tui_eval import Agent
    from tui_eval.testing import ScriptedProvider, call, text
    from tui_eval.tui.screens.sample import SampleScreen
    from tui_eval.tui.screens.side_by_side import SideBySideScreen

    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    scripts = iter(
        [
            [call("add", {"a": 2, "b": 3}), text("2 + 3 = 5")],  # passes
            [call("add", {"a": 2, "b": 4}), text("2 + 4 = 6")],  # wrong argument: fails
            [text("five, roughly")],  # no tool at all: passes? no — fails contains
            [call("add", {"a": 2, "b": 3}), text("2 + 3 = 5")],
        ]
    )
    agent = Agent(ScriptedProvider(name="unused"), tools=[add])
    case = Case(
        "2 + 3?",
        checks=[contains("5")],
        samples=4,
        pass_threshold=0.5,
        model=lambda: ScriptedProvider(next(scripts)),
    )
    app = make_app(suites=[Suite("pairs", agent=agent, cases=[case])], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("n")
        sample_screen = app.screen
        assert isinstance(sample_screen, SampleScreen) and sample_screen.sample.index == 1
        await pilot.press("d")
        pair = app.screen
        assert isinstance(pair, SideBySideScreen)
        assert pair.after.index in (0, 3)
        assert pair.divergence.where == "trajectory" and pair.divergence.line == 0
        assert pair.divergence.description == "tool call 1: add: b=4 vs 3"
        assert "first divergence: tool call 1: add: b=4 vs 3" in screen_text(app)


async def test_v_on_a_huge_output_scrolls_and_searches(tmp_path):
    from tui_eval.tui.screens.full_text import FullTextScreen
    from tui_eval.tui.widgets.long_text import LongText

    text = ("line of text\n" * 200_000) + "the \x1b[31mneedle\x1b[0m at the end"
    app = make_app(suites=[])
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(FullTextScreen(text, title="huge"))
        await pilot.pause()
        view = app.screen.query_one(LongText)
        assert view.row_count == 200_001
        await pilot.press("end")
        await pilot.pause()
        assert view.scroll_offset.y == view.max_scroll_y > 0
        await pilot.press("home", "slash", *"needle", "enter")
        await pilot.pause()
        assert view.match == (text.index("needle"), text.index("needle") + 6)
        assert view.row_of(view.match[0]) == 200_000
        rendered = "".join(
            s.text for s in view.render_line(view.row_of(view.match[0]) - int(view.scroll_offset.y))
        )
        assert "needle" in rendered and "\x1b" not in rendered and "␛[31m" in rendered


async def test_question_mark_lists_the_keys_of_every_screen(tmp_path):
    from tui_eval.tui.screens.help import HelpScreen

    app = make_app(suites=[kitchen(tmp_path)], history=RunHistory(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = {keys: what for keys, what, _ in help_screen.keys}
        assert keys["r"] == "New run" and keys["*"] == "Run all" and keys["q / escape"] == "Quit"
        assert ("?", "Every key of this screen", "help") in help_screen.keys  # the app's `?`
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("question_mark")
        ids = {binding_id: keys for keys, _, binding_id in app.screen.keys}
        assert ids["write"] == "w" and ids["watch"] == "ctrl+r" and "cancel" not in ids  # done
        await pilot.press("q")
        assert isinstance(app.screen, RunScreen)


async def test_notifications_do_not_pile_up(tmp_path):
    app = make_app(suites=[kitchen(tmp_path)], history=RunHistory(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        for number in range(6):
            app.notify(f"message {number} [bold]not markup[/]")
        await pilot.pause()
        shown = [n.message for n in app._notifications]
        assert shown == ["message 4 [bold]not markup[/]", "message 5 [bold]not markup[/]"]


async def test_watch_flag_starts_the_suite_in_watch_mode(tmp_path):
    folder = editable(tmp_path, answer="right")
    app = make_app([folder], history=RunHistory(tmp_path), watch=True)
    app.WATCH_SETTLE_SECONDS = 0.01  # rerun at once: this test is not about bursts of saves
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await pilot.pause()
        screen = app.screen
        assert screen.watching and "watching the suite's files" in str(
            screen.query_one("#run-notes").render()
        )
        await wait_until_done(pilot, screen)
        await FileWatch(app).up()
        editable(tmp_path, answer="wrong")
        await wait_for(pilot, lambda: app.screen is not screen, timeout=20)
        assert app.screen.watching and app.screen.previous is screen.session


async def test_watch_flag_watches_every_suite_not_only_the_first(tmp_path):
    folder = editable(tmp_path, answer="right")
    (folder / "other_suite.py").write_text(
        "from tui_eval import Case, Suite, contains\n"
        "async def agent(q):\n    return 'yes'\n"
        "suite = Suite('other', agent=agent, cases=[Case('q', checks=[contains('yes')])])\n"
    )
    app = make_app([folder], history=RunHistory(tmp_path), watch=True)
    app.WATCH_SETTLE_SECONDS = 0.01
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        names = [s.name for s in app.workspace.loaded.suites]
        assert app.screen.session.state.name == names[0]  # the first is shown
        assert app.workspace.watching == set(names)
        await wait_for(
            pilot, lambda: all(not s.state.running for s in app.workspace.sessions.values())
        )
        second = names[1]
        first_run = app.workspace.sessions[second]
        await FileWatch(app).up()
        path = app.workspace.suite(second).path
        path.write_text(path.read_text() + "\n# edited\n")
        await wait_for(pilot, lambda: app.workspace.sessions[second] is not first_run, timeout=20)


async def test_m_on_the_diff_samples_changed_cases_until_decided(tmp_path):
    import random

    from tui_eval.tui.screens.diff import DiffScreen

    rate = {"p": 1.0}
    rng = random.Random(11)

    async def agent(question: str) -> str:
        return "ok" if rng.random() < rate["p"] else "no"

    suite = Suite(
        "coin",
        agent=agent,
        cases=[Case("q", checks=[contains("ok")], samples=10, pass_threshold=0.8)],
    )
    suite.path = stand_in(tmp_path / "coin_suite.py")
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await run_and_save_baseline(pilot, app)
        rate["p"] = 0.3
        first = app.screen
        # q, then r once the Suites screen is back (pressed together on a busy machine, r
        # could reach the Run screen before q had closed it).
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, SuitesScreen))
        await pilot.press("r")
        # The new run's screen opens once the app has handled the Suites screen's request.
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen is not first)
        await wait_until_done(pilot, app.screen)
        await pilot.press("c")
        diff_screen = app.screen
        assert isinstance(diff_screen, DiffScreen)
        await pilot.press("m")
        # A decision samples in rounds and calibrates its test in a thread: on a loaded
        # machine that takes a while; the timeout only ends a stuck test.
        await wait_for(
            pilot,
            lambda: diff_screen.deciding is False and diff_screen.diff.changes[0].decided,
            timeout=180,
        )
        (change,) = diff_screen.diff.changes
        assert change.label == "regression"
        # Every sample drawn streamed into the row while it ran.
        assert diff_screen.samples_drawn["q"] >= 10
        # The rounds went through the suite-run layer: a decide run, journaled, against the
        # baseline file the diff was made with.
        record = app.workspace.history.runs()[0]
        assert (
            isinstance(record.request.kind, DecideRun)
            and record.request.cases == ("q",)
            and record.finished
        )
        assert record.request.baseline == str(diff_screen.baseline_path)
        journaled = read_journal_samples(record.journal_path)
        assert len(journaled["q"]) == diff_screen.samples_drawn["q"]


async def test_m_on_the_since_previous_diff_decides_against_the_previous_run(tmp_path):
    from tui_eval.tui.screens.diff import DiffScreen

    answer = {"text": "ok"}

    async def agent(question: str) -> str:
        return answer["text"]

    suite = Suite(
        "flip", agent=agent, cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(3)]
    )
    suite.path = stand_in(tmp_path / "flip_suite.py")
    history = RunHistory(tmp_path)
    app = make_app(suites=[suite], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        first = app.screen
        await wait_until_done(pilot, first)
        answer["text"] = "no"
        app._watch_rerun("flip")  # what a save of a watched suite does, without the watcher
        await wait_for(pilot, lambda: app.screen is not first)
        rerun = app.screen
        await wait_until_done(pilot, rerun)
        await wait_for(pilot, lambda: rerun.since_previous is not None)
        await pilot.press("p")
        diff_screen = app.screen
        assert isinstance(diff_screen, DiffScreen) and diff_screen.baseline_path is None
        await pilot.press("m")
        await wait_for(
            pilot, lambda: diff_screen.samples_drawn and not diff_screen.deciding, timeout=180
        )
        # No baseline file exists: the decision is against the previous run's report,
        # and its rounds are journaled like any run.
        assert not rerun.session.suite.baseline_path.exists()
        # (one passed sample a case there; failing every sample until the test crosses is
        # a regression even against that one: p(1 − p)^t is small for every rate p)
        assert {c.name: c.label for c in diff_screen.diff.changes} == dict.fromkeys(
            ["q0", "q1", "q2"], "regression"
        )
        record = history.runs()[0]
        assert (
            isinstance(record.request.kind, DecideRun)
            and record.request.baseline is None
            and record.finished
        )
        # What it decided against is journaled, so a resume compares with the same report.
        assert first.session.service.journal is not None
        previous_file = first.session.service.journal.record.report_path
        assert record.request.kind.against == str(previous_file) and previous_file.exists()
