"""The app's flow through `SuiteRun`: baselines that keep what a run did not cover, runs of
the code as edited, watch and resume that survive navigation, nothing kept alive for good."""

from __future__ import annotations

import contextlib
import gc
import json
import shutil
import weakref
from collections import Counter
from pathlib import Path

import anyio
import pytest
from textual.timer import Timer

from tui_eval import Case, Suite, contains
from tui_eval.report.report import Report
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import TuiEvalApp, make_app
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.suites import SuitesScreen

pytestmark = pytest.mark.anyio

# What these tests wait for is a state of the app, never a length of time: each wait polls
# the state the next step needs, with a timeout far beyond what a loaded machine takes.


def stand_in(path):
    """`path`, written as a stand-in file for a suite built in the test. The app watches a
    suite's folder and drops a suite whose file is gone when any change there is reported
    (the runs' journals, written beside it, are one): a path that never existed made the
    suite vanish whenever that report came before the test's next key."""
    path.write_text("# a suite built in the test stands for this file\n", encoding="utf-8")
    return path


async def wait_for(pilot, condition, timeout: float = 20) -> None:
    """Until `condition()` holds; then until the app and the current screen have handled
    the messages already posted (what the change that made it hold sent them)."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
        await pilot.pause(0)


async def wait_until_done(pilot, screen: RunScreen, timeout: float = 20) -> None:
    """Until `screen`'s run has ended, every run's worker has returned (journals finished,
    what the app does when a run ends done) and `screen`, when shown, has shown the end."""
    app = pilot.app

    def done() -> bool:
        if screen.session.state.running:
            return False
        if any(worker.group == "runs" and not worker.is_finished for worker in app.workers):
            return False
        return screen._finished_seen or not screen.is_current

    await wait_for(pilot, done, timeout)


async def run_and_save_baseline(pilot, app) -> None:
    """Run the suite under the cursor, then `w` on its Run screen."""
    await pilot.press("enter")
    await wait_until_done(pilot, app.screen)
    await pilot.press("w")
    await pilot.pause()


class FileWatch:
    """The app's file watcher as a test sees it: when it is up, and when the app has
    handled every change made so far in a folder (the watcher reports changes in order,
    so once a marker file written after them is handled, so are they)."""

    def __init__(self, app: TuiEvalApp) -> None:
        self.app = app
        self.handled: set[str] = set()
        """The names of the changed files the app has reloaded after."""
        self._markers = 0
        reload = app.workspace.reload

        def recording(changed: set[Path]):
            self.handled |= {path.name for path in changed}
            return reload(changed)

        app.workspace.reload = recording  # type: ignore[method-assign]

    async def up(self) -> None:
        """Until an edit of the suites' files would be seen."""
        with anyio.fail_after(20):
            await self.app.files_watched.wait()

    async def caught_up(self, pilot, folder: Path) -> None:
        """Until the app has handled every change made in `folder` so far."""
        self._markers += 1
        marker = folder / f"caught-up-{self._markers}.txt"  # not a suite file: no edit
        marker.write_text("")
        await wait_for(pilot, lambda: marker.name in self.handled)


class TimerTicks:
    """Counts the ticks of every Textual timer, so a test can wait until each timer still
    going has ticked since a moment: a screen that stops its timer once nothing changes
    has stopped it by then, and one that keeps it going is caught."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ticks: Counter[Timer] = Counter()
        tick = Timer._tick

        async def counting(timer: Timer, **kwargs) -> None:
            await tick(timer, **kwargs)  # the callback runs to its end in here
            self.ticks[timer] += 1

        monkeypatch.setattr(Timer, "_tick", counting)

    async def settled(self, pilot) -> None:
        """Until every timer of the app and its screens that still fires has ticked again."""
        since = Counter(self.ticks)
        await wait_for(
            pilot, lambda: all(self.ticks[t] > since[t] for t in live_timer_objects(pilot.app))
        )


def switchable(tmp_path, wrong: set[str]) -> Suite:
    """Cases a-e; those named in `wrong` (a set the test may change) fail."""

    async def agent(question: str) -> str:
        return "nope" if question in wrong else "ok " + question

    suite = Suite(
        "kitchen",
        agent=agent,
        cases=[Case(name, checks=[contains("ok")]) for name in ("a", "b", "c", "d", "e")],
    )
    suite.path = stand_in(tmp_path / "kitchen_suite.py")
    return suite


def baseline_of(tmp_path, name: str = "kitchen") -> dict[str, bool]:
    report = Report.load(tmp_path / "__baselines__" / f"{name}.json")
    return {case.name: case.passed for case in report.cases}


async def test_rerun_compare_accept_all_keeps_the_cases_the_rerun_did_not_cover(tmp_path):
    from tui_eval.tui.screens.diff import DiffScreen

    wrong = {"b", "d"}
    app = make_app(suites=[switchable(tmp_path, wrong)], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("w")
        await pilot.pause()
        assert baseline_of(tmp_path) == dict(a=True, b=False, c=True, d=False, e=True)
        wrong.clear()  # the agent is fixed
        await pilot.press("r")  # rerun the two failing cases
        await wait_for(pilot, lambda: app.screen.session.title.endswith("rerun of 2 failing"))
        await wait_until_done(pilot, app.screen)
        await pilot.press("c")
        diff = app.screen
        assert isinstance(diff, DiffScreen)
        assert diff.diff.removed == []  # a, c, e were not run, not removed
        assert sorted(c.name for c in diff.diff.improvements) == ["b", "d"]
        await pilot.press("A", "w")  # accept every pending case, then write the decisions
        await pilot.pause()
    assert baseline_of(tmp_path) == dict(a=True, b=True, c=True, d=True, e=True)


async def test_closed_run_screens_and_their_runs_are_freed(tmp_path):
    # What the process holds from before the test (garbage included) is set aside, so each
    # collection below walks only what this test made (a full one walked ~700,000 objects,
    # ~0.3 s each). A product that froze its screens the same way keeps them alive, and
    # fails this test.
    gc.freeze()
    try:
        await closed_run_screens_and_their_runs_are_freed(tmp_path)
    finally:
        gc.unfreeze()


async def closed_run_screens_and_their_runs_are_freed(tmp_path):
    app = make_app(suites=[switchable(tmp_path, set())], history=RunHistory(tmp_path))
    screens: list[weakref.ref[RunScreen]] = []
    sessions: list[weakref.ref[RunSession]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(6):
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RunScreen)
            await wait_until_done(pilot, screen)
            screens.append(weakref.ref(screen))
            assert screen.session.report is not None
            sessions.append(weakref.ref(screen.session))  # it holds the run's report
            del screen
            await pilot.press("q")
            assert isinstance(app.screen, SuitesScreen)
        # Their removal done (a screen still being removed is still referenced).
        await wait_for(pilot, lambda: all(ref() is None or ref()._closed for ref in screens))

        def alive() -> list[weakref.ref[RunScreen]]:
            gc.collect()
            return [ref for ref in screens if ref() is not None]

        # A closed screen's last messages may still be in flight: it must be freed once
        # they are handled, not held for good (a leak waits out the timeout and fails).
        with contextlib.suppress(TimeoutError):
            await wait_for(pilot, lambda: not alive(), timeout=10)
        # The latest run stays (Suites shows it; enter reopens it); its screens do not.
        assert alive() == []
        assert [ref() is not None for ref in sessions] == [False] * 5 + [True]


async def test_the_app_started_from_a_relative_path_survives_an_edit(
    example_suites, tmp_path, monkeypatch
):
    """`tui-eval suites/` as the README says, then an edit of a suite file."""
    shutil.copytree(example_suites, tmp_path / "suites")
    monkeypatch.chdir(tmp_path)
    app = make_app(["suites/"], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        watch = FileWatch(app)
        names = [s.name for s in app.workspace.loaded.suites]
        assert "geography" in names
        await watch.up()
        geography = tmp_path / "suites" / "geography.yaml"
        geography.write_text(geography.read_text().replace("Paris", "Lyon", 1))
        await wait_for(pilot, lambda: "geography" in app.workspace.reloaded)
        await watch.caught_up(pilot, tmp_path / "suites")  # the edit's every change handled
        assert [s.name for s in app.workspace.loaded.suites] == names  # loaded once each
        table = app.screen.query_one("#suites")
        assert table.row_count == len(names)
        # Only the edited suite is marked, not every suite of the folder.
        assert app.workspace.reloaded == {"geography"}


EDITABLE = """
from tui_eval import Case, Suite, contains
from helper_answers import ANSWER

async def agent(question: str) -> str:
    return ANSWER + " " + question

suite = Suite("editable", agent=agent, cases=[Case(f"q{i}", checks=[contains("right")]) for i in range(3)])
"""

PLAIN = """
from tui_eval import Case, Suite, contains

async def agent(question: str) -> str:
    return "right " + question

suite = Suite("plain", agent=agent, cases=[Case("p", checks=[contains("right")])])
"""


def suite_folder(tmp_path, answer: str = "wrong"):
    """`editable` (imports helper_answers.py) and `plain` (imports no helper)."""
    folder = tmp_path / "suites"
    folder.mkdir(exist_ok=True)
    (folder / "helper_answers.py").write_text(f"ANSWER = {answer!r}\n")
    for name, text in (("editable_suite.py", EDITABLE), ("plain_suite.py", PLAIN)):
        if not (folder / name).exists():
            (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("replacement", ["folder", "link loop"])
async def test_a_suite_file_replaced_by_a_folder_or_a_link_loop_is_a_load_error(
    tmp_path, replacement
):
    folder = suite_folder(tmp_path)
    app = make_app([folder], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await FileWatch(app).up()
        path = folder / "plain_suite.py"
        path.unlink()
        if replacement == "folder":
            path.mkdir()
        else:
            path.symlink_to(path)
        await wait_for(pilot, lambda: bool(app.workspace.edit_errors))
        (error,) = app.workspace.edit_errors.values()
        word = "a folder now" if replacement == "folder" else "symbolic link loop"
        assert word in error.message
        shown = str(app.screen.query_one("#load-errors").render())
        assert word in shown and "previous version stays in use" in shown


async def test_a_helper_edit_marks_only_its_suites_s_is_no_edit_and_r_reruns_with_the_edit(
    tmp_path,
):
    folder = suite_folder(tmp_path)
    app = make_app([folder], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        watch = FileWatch(app)
        await pilot.press("enter")  # editable: the first row
        await wait_until_done(pilot, app.screen)
        assert not app.screen.session.report.passed
        await watch.up()
        await pilot.press("w")  # creates __baselines__/
        assert (folder / "__baselines__" / "editable.json").exists()
        await watch.caught_up(pilot, folder)  # the app has seen the save's every change
        assert app.workspace.reloaded == set()
        await pilot.press("q")
        suite_folder(tmp_path, answer="right")  # an edit of the helper module
        await wait_for(pilot, lambda: bool(app.workspace.reloaded))
        await watch.caught_up(pilot, folder)
        assert app.workspace.reloaded == {"editable"}
        # `r` on the finished run of the old code reruns its failing cases as edited.
        await pilot.press("enter")
        await pilot.press("r")
        await wait_for(pilot, lambda: "rerun" in app.screen.session.title)
        await wait_until_done(pilot, app.screen)
        assert app.screen.session.report.passed


async def test_watch_survives_leaving_the_run_and_reruns_while_the_user_is_elsewhere(tmp_path):
    folder = suite_folder(tmp_path, answer="right")
    app = make_app([folder], history=RunHistory(tmp_path / "home"))
    app.WATCH_SETTLE_SECONDS = 0.01  # rerun at once: this test is not about bursts of saves
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        first = app.screen
        await wait_until_done(pilot, first)
        await pilot.press("ctrl+r", "q")
        await FileWatch(app).up()
        await pilot.press("enter")
        back = app.screen
        assert isinstance(back, RunScreen) and back.watching
        suite_folder(tmp_path, answer="wrong")
        await wait_for(pilot, lambda: app.screen is not back)
        rerun = app.screen
        assert isinstance(rerun, RunScreen) and rerun.watching
        await wait_until_done(pilot, rerun)
        assert not rerun.session.report.passed
        await pilot.press("q")
        suite_folder(tmp_path, answer="right")  # edited while the Suites screen shows
        await wait_for(pilot, lambda: app.workspace.sessions["editable"] is not rerun.session)
        elsewhere = app.workspace.sessions["editable"]
        await wait_for(pilot, lambda: elsewhere.report is not None)
        assert elsewhere.report.passed
        await pilot.press("enter")
        assert app.screen.session is elsewhere and app.screen.watching


GATED = """
import anyio
from pathlib import Path
from tui_eval import Case, Suite, contains
HERE = Path(__file__).parent

async def agent(q):
    while int(q[1:]) >= 2 and (HERE / "gate.flag").exists():
        await anyio.sleep(0.02)
    return "ok " + q

suite = Suite("gated", agent=agent, concurrency=1,
              cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(5)])
"""


async def test_resume_leaves_no_stale_interrupted_state(tmp_path):
    suite_file = tmp_path / "gated_suite.py"
    suite_file.write_text(GATED)
    (tmp_path / "gate.flag").touch()
    app = make_app([suite_file], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        run = app.screen
        await wait_for(pilot, lambda: run.session.state.samples_done >= 2)
        await pilot.press("x")
        await wait_until_done(pilot, run)
        assert run.session.report.cancelled
        await pilot.press("q")
        (tmp_path / "gate.flag").unlink()
        await pilot.press("R")
        resumed = app.screen
        assert isinstance(resumed, RunScreen) and resumed.session is not run.session
        await wait_until_done(pilot, resumed)
        assert not resumed.session.report.cancelled
        await pilot.press("q")

        def status() -> str:
            return app.screen.query_one("#suites").get_cell("gated", "status").plain

        await wait_for(pilot, lambda: "5/5 passed" in status())  # Suites shows the run's end
        assert "interrupted" not in status()
        app._recent_notifications.clear()
        await pilot.press("enter")  # the resumed run, not the cancelled one
        again = app.screen
        assert again.session is resumed.session
        await wait_for(pilot, lambda: again._finished_seen)  # it has shown the run's end
        assert app._recent_notifications == []  # its end is not announced again


async def test_e_opens_the_suite_file_at_the_case_and_r_reruns_just_that_case(
    tmp_path, monkeypatch
):
    import sys

    from tui_eval.tui.screens.case import CaseScreen

    folder = suite_folder(tmp_path)
    opened = tmp_path / "editor-args.json"
    editor = tmp_path / "editor.py"
    editor.write_text(
        f"import json, sys\nopen({str(opened)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    monkeypatch.setenv("VISUAL", f"{sys.executable} {editor}")
    app = make_app([folder], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        watch = FileWatch(app)
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("down", "enter")  # case q1
        assert isinstance(app.screen, CaseScreen) and app.screen.case.name == "q1"
        await pilot.press("e")
        await wait_for(pilot, opened.exists)
        # Its name is built in code (f"q{i}"), not written: the file opens at its top.
        assert json.loads(opened.read_text())[-2:] == ["+1", str(folder / "editable_suite.py")]
        await watch.up()
        suite_folder(tmp_path, answer="right")
        await wait_for(pilot, lambda: "editable" in app.workspace.reloaded)
        await pilot.press("r")
        rerun = app.screen
        assert isinstance(rerun, RunScreen)
        await wait_until_done(pilot, rerun)
        assert [c.name for c in rerun.session.report.cases] == ["q1"]
        assert rerun.session.report.passed  # the code as edited


def test_case_line_finds_a_yaml_case_by_its_name(tmp_path, monkeypatch):
    from tui_eval.tui.editor import case_line, editor_command

    monkeypatch.setenv("VISUAL", "vim")

    path = tmp_path / "s.yaml"
    path.write_text('cases:\n  - input: "Capital of France?"\n  - input: 首都は？\n')
    assert case_line(path, "首都は？") == 3
    assert case_line(path, "Capital of France?") == 2
    assert case_line(path, "missing") == 1
    assert editor_command(path, 3)[-3:] == ["+3", "--", str(path)]


def live_timer_objects(app) -> list[Timer]:
    """The app's and its screens' timers that still fire (neither paused nor stopped)."""
    return [timer for _, timer in _live_timers(app)]


def live_timers(app) -> list[str]:
    """The app's and its screens' timers that still fire, by owner and name."""
    return [f"{type(owner).__name__}:{timer.name}" for owner, timer in _live_timers(app)]


def _live_timers(app) -> list[tuple[object, Timer]]:
    owners = [app, *app.screen_stack]
    for screen in app.screen_stack:
        owners.extend(screen.walk_children())
    return [
        (owner, timer)
        for owner in owners
        for timer in list(owner._timers)
        if timer._task is not None and timer._active.is_set()
    ]


async def test_more_samples_stay_with_the_case_and_finished_screens_stop_their_timers(
    tmp_path, monkeypatch
):
    """Idle CPU: nothing repaints on a timer once a run and its reruns have ended. A case's
    "more samples" rerun stays with the case (and reaches its latency chart) when its
    screen closes."""
    from tui_eval.tui.screens.case import CaseScreen
    from tui_eval.tui.widgets.latency_chart import LatencyChart

    ticks = TimerTicks(monkeypatch)
    app = make_app(suites=[switchable(tmp_path, {"b"})], history=RunHistory(tmp_path), watch=False)
    app.watch_files = False  # the file watcher is a thread, not a timer; kept out here
    async with app.run_test(size=(120, 40)) as pilot:
        await ticks.settled(pilot)
        assert live_timers(app) == []  # Suites, nothing running
        await pilot.press("enter")
        run = app.screen
        await wait_until_done(pilot, run)
        await ticks.settled(pilot)
        assert isinstance(run, RunScreen) and live_timers(app) == []
        await pilot.press("down", "enter")
        case_screen = app.screen
        assert isinstance(case_screen, CaseScreen)
        await pilot.press("m", *["backspace"] * 4, "3", "enter")
        await wait_for(
            pilot, lambda: case_screen.rerun is not None and case_screen.rerun.report is not None
        )
        await ticks.settled(pilot)
        assert live_timers(app) == []
        assert [str(row[0]) for row in case_screen._rows()] == ["1", "m1", "m2", "m3"]
        await pilot.press("q", "enter")  # leave the case, open it again
        again = app.screen
        assert isinstance(again, CaseScreen) and again is not case_screen
        assert again.case.name == "b"
        await wait_for(pilot, lambda: again.is_mounted)
        labels = [str(row[0]) for row in again._rows()]
        assert labels == ["1", "m1", "m2", "m3"]
        assert len(again.query_one("#latency", LatencyChart).samples) == 4
        await ticks.settled(pilot)
        assert live_timers(app) == []
        await pilot.press("q", "q")
        await ticks.settled(pilot)
        assert isinstance(app.screen, SuitesScreen) and live_timers(app) == []
        assert "4/5 passed" in app.screen.query_one("#suites").get_cell("kitchen", "status").plain


async def test_the_error_tab_shows_a_tool_that_raised(tmp_path):
    from tui_eval import Agent, no_error
    from tui_eval.testing import ScriptedProvider, call, text
    from tui_eval.tui.screens.sample import SampleScreen

    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    agent = Agent(
        ScriptedProvider.factory([call("divide", {"a": 1, "b": 0}), text("cannot")]),
        tools=[divide],
    )
    suite = Suite("tools", agent=agent, cases=[Case("1/0?", checks=[no_error()])])
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        await pilot.press("n")
        assert isinstance(app.screen, SampleScreen)
        shown = str(app.screen.query_one("#error-body").render())
        assert "no error" not in shown
        assert "divide" in shown and "division by zero" in shown


async def test_a_cancelled_run_says_how_many_cases_never_ran(tmp_path):
    gate = anyio.Event()

    async def agent(question: str) -> str:
        if int(question[1:]) >= 5:
            await gate.wait()
        return "ok"

    suite = Suite(
        "gated",
        agent=agent,
        concurrency=1,
        cases=[Case(f"q{i}", checks=[contains("ok")]) for i in range(8)],
    )
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        run = app.screen
        await wait_for(pilot, lambda: run.session.state.samples_done >= 5)
        await pilot.press("x")
        await wait_until_done(pilot, run)
        messages = [n.message for n in app._notifications]
        assert not any("5/5 cases passed" in m for m in messages), messages
        assert any("5/8 cases ran" in m and "cancelled" in m for m in messages), messages


@pytest.mark.parametrize("keys", [("escape", "escape"), ("q", "q")])
async def test_leaving_the_app_mid_run_asks_first(tmp_path, keys):
    from tui_eval.tui.screens.prompt import ConfirmScreen

    gate = anyio.Event()

    async def agent(question: str) -> str:
        await gate.wait()
        return "ok"

    suite = Suite("slow", agent=agent, cases=[Case("q", checks=[contains("ok")])])
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        run = app.screen
        await pilot.press(*keys)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "still running" in app.screen.question
        await pilot.press("n")  # stay
        await pilot.pause()
        assert app.is_running and run.session.state.running
        gate.set()
        await wait_until_done(pilot, run)


async def test_the_interrupted_status_fits_the_suites_table_at_120_columns(tmp_path):
    from tui_eval.tui.screens.suites import INTERRUPTED

    app = make_app(suites=[switchable(tmp_path, set())], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        (status,) = [c for c in screen.query_one("#suites").shown_columns if c.key == "status"]
        assert status.width >= len(INTERRUPTED)
