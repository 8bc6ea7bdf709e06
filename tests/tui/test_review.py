"""Baseline review on the Diff screen, as with `cargo insta review`: decide case by case,
undo, and write every decision at once."""

from __future__ import annotations

import pytest

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.baselines import BaselineStatus
from tui_eval.report.report import Report
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import plan_run
from tui_eval.service.store import RunHistory
from tui_eval.service.suite_run import SuiteRun
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.prompt import ConfirmScreen
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.side_by_side import SideBySideScreen

from .test_app import screen_text, wait_until_done
from .test_debug_loop import baseline_cases, kitchen

pytestmark = pytest.mark.anyio


def baseline_file(tmp_path):
    return tmp_path / "__baselines__" / "kitchen.json"


def cases_on_disk(tmp_path) -> dict[str, CaseResult]:
    """Each baseline case as stored, by name."""
    return {case.name: case for case in Report.load(baseline_file(tmp_path)).cases}


async def open_review(tmp_path, wrong=("a", "b")):
    """A baseline where only `c` fails plus a case `gone` the suite lost; then a run where
    `wrong` fail — so a, b regressed, c improved, gone removed. Returns the app, not started."""
    baseline_file(tmp_path).parent.mkdir(exist_ok=True)
    # The baseline as `s` saves a finished run (through the SuiteRun an app run is), without
    # an app: how it gets there is the Run screen's tests' concern, not the review's.
    first = SuiteRun.start(
        plan_run(kitchen(tmp_path, wrong=("c",)), RunRequest()),
        history=RunHistory(tmp_path),
        invocation="t",
    )
    await first.run()
    assert first.baseline_store.save(first.report, first.coverage).status is BaselineStatus.SAVED
    base = Report.load(baseline_file(tmp_path))
    base.cases.append(CaseResult("gone", [SampleResult("gone", 0, "passed")], planned=1))
    base.save(baseline_file(tmp_path))
    return make_app(suites=[kitchen(tmp_path, wrong=wrong)], history=RunHistory(tmp_path))


async def compare(pilot, app) -> DiffScreen:
    await pilot.press("enter")
    await wait_until_done(pilot, app.screen)
    await pilot.press("c")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, DiffScreen)
    return screen


def title(screen: DiffScreen) -> str:
    return str(screen.query_one("#screen-title").render())


def status(screen: DiffScreen) -> str:
    return str(screen.query_one("#review-status").render())


async def test_accept_reject_skip_undo_then_write_changes_exactly_the_accepted_case(tmp_path):
    app = await open_review(tmp_path)
    before = cases_on_disk(tmp_path)
    before_bytes = baseline_file(tmp_path).read_bytes()
    async with app.run_test(size=(120, 40)) as pilot:
        diff = await compare(pilot, app)
        assert diff._names == ["a", "b", "c", "gone"]
        assert "2 regressed" in title(diff) and "4 of 4 pending" in status(diff)
        await pilot.press("a")  # a regression: asked first
        assert isinstance(app.screen, ConfirmScreen) and "regression of 'a'" in app.screen.question
        await pilot.press("y")
        await pilot.pause()
        # The header recomputes: `a` accepted is no regression any more.
        assert "1 regressed" in title(diff) and "3 of 4 pending" in status(diff)
        await pilot.press("k")  # the cursor moved on to `b`: rejected (the baseline kept)
        await pilot.press("s")  # `c`: skipped
        await pilot.pause()
        assert diff.review.decisions == {
            "a": diff.review.decisions["a"],
            "b": diff.review.decisions["b"],
            "c": diff.review.decisions["c"],
        }
        assert "1 of 4 pending" in status(diff) and "1 skipped" in status(diff)
        await pilot.press("u")  # undo the skip of `c`
        await pilot.pause()
        assert "c" not in diff.review.decisions and "2 of 4 pending" in status(diff)
        # Nothing is written before `w`.
        assert baseline_file(tmp_path).read_bytes() == before_bytes
        await pilot.press("w")
        await pilot.pause()
        assert "1 written" in status(diff)
        await pilot.press("q")  # nothing left unwritten: leaves without asking
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
    after = cases_on_disk(tmp_path)
    assert set(after) == set(before)  # `gone` kept: its removal was not accepted
    assert baseline_cases(tmp_path)["a"] is False  # the accepted change
    assert {name: case for name, case in after.items() if name != "a"} == {
        name: case for name, case in before.items() if name != "a"
    }


async def test_a_declined_regression_stays_pending_and_past_runs_compare_read_only(tmp_path):
    app = await open_review(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        diff = await compare(pilot, app)
        assert "a Accept" in screen_text(app)
        # Without a baseline file (History's compare of two runs), the review keys are not
        # offered.
        report = diff.current
        assert report is not None
        app.push_screen(DiffScreen(diff.diff, report, diff.baseline, title="two runs"))
        await pilot.pause()
        shown = screen_text(app)
        assert "a Accept" not in shown and "review:" not in shown
        await pilot.press("q")
        assert app.screen is diff
        await pilot.press("a", "n")
        await pilot.pause()
        assert diff.review.decisions == {} and "2 regressed" in title(diff)
        # `A` names the regressions among the cases it would accept, and asks once.
        await pilot.press("A")
        question = app.screen.question
        assert "2 of them regressions ('a', 'b')" in question
        await pilot.press("y")
        await pilot.pause()
        assert "0 regressed" in title(diff) and "0 of 4 pending" in status(diff)


async def test_leaving_with_unwritten_decisions_asks(tmp_path):
    app = await open_review(tmp_path)
    before_bytes = baseline_file(tmp_path).read_bytes()
    async with app.run_test(size=(120, 40)) as pilot:
        diff = await compare(pilot, app)
        await pilot.press("down", "down", "a")  # `c` improved: accepted without a question
        await pilot.pause()
        assert "1 to accept" in status(diff)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "not written" in app.screen.question
        await pilot.press("n")  # stay
        assert app.screen is diff
        await pilot.press("escape", "y")  # leave, dropping the decision
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
    assert baseline_file(tmp_path).read_bytes() == before_bytes


async def test_side_by_side_decides_and_opens_the_next_pending_case(tmp_path):
    app = await open_review(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        diff = await compare(pilot, app)
        await pilot.press("enter")
        side = app.screen
        assert isinstance(side, SideBySideScreen) and side.case_name == "a"
        await pilot.press("k")
        await pilot.pause()
        following = app.screen
        assert isinstance(following, SideBySideScreen) and following.case_name == "b"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is diff and diff.review.decisions.keys() == {"a"}
