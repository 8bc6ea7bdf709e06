"""The Failures screen: modes live while the run streams, their samples, the Run filter,
and `Q` on the Case screen."""

from __future__ import annotations

import anyio
import pytest

from tui_eval import Case, Suite, contains, evaluate
from tui_eval.report.baselines import BaselineStore
from tui_eval.report.quarantine import quarantine_path, read
from tui_eval.service.flaky import CaseHistory, RunOutcome
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.case import CaseScreen
from tui_eval.tui.screens.failures import FailuresScreen
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.widgets.case_table import CaseTable

from .test_app import screen_text
from .test_app_flow import stand_in, wait_for, wait_until_done

pytestmark = pytest.mark.anyio


def two_modes_suite(tmp_path, gate: anyio.Event) -> Suite:
    """Cases 0-3 answer wrong numbers, 4-5 raise, 6-7 pass; case 7 waits for `gate`."""

    async def agent(question: str) -> str:
        i = int(question.split()[-1])
        if i == 7:
            await gate.wait()
        if i < 4:
            return f"total {i * 13}"
        if i < 6:
            raise KeyError(f"order-{i}")
        return "ok"

    suite = Suite(
        "modes",
        agent=agent,
        cases=[Case(f"q {i}", name=f"c{i}", checks=[contains("ok")]) for i in range(8)],
        concurrency=8,
    )
    suite.path = stand_in(tmp_path / "modes_suite.py")
    return suite


async def test_failures_screen_groups_live_and_walks_a_modes_samples(tmp_path):
    gate = anyio.Event()
    suite = two_modes_suite(tmp_path, gate)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        await wait_for(pilot, lambda: run_screen.session.state.samples_done == 7)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.modes) == 2)  # live: the run still goes
        assert run_screen.session.state.running
        by_where = {m.signature.where: m for m in screen.modes}
        assert by_where["contains"].cases == ["c0", "c1", "c2", "c3"]
        assert by_where["KeyError"].cases == ["c4", "c5"]
        gate.set()
        # (The Run screen under this one is not drawn: wait for the run, not for it.)
        await wait_for(pilot, lambda: not run_screen.session.state.running)
        await wait_for(pilot, lambda: "live" not in str(screen.query_one("#screen-title").render()))
        # enter opens the first mode's first sample; n walks the mode's samples only.
        first = screen.modes[0]
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SampleScreen))
        sample_screen = app.screen
        seen = []
        for _ in range(first.count):
            case = sample_screen.session.state.cases[sample_screen.case_index]
            seen.append(case.name)
            await pilot.press("n")
            await pilot.pause()
        assert sorted(seen) == sorted(first.cases)
        await pilot.press("q")
        # f shows only the mode's cases on the Run screen.
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen is run_screen)
        table = run_screen.query_one(CaseTable)
        shown = [run_screen.session.state.cases[i].name for i in table.order]
        assert shown == first.cases


async def test_failures_opened_during_a_run_compare_with_the_baseline(tmp_path):
    """The baseline failed c0-c3 the same way and raised nowhere: while the run still goes,
    the KeyError mode is new and listed first, the wrong numbers the same (at 80×24)."""
    gate = anyio.Event()
    suite = two_modes_suite(tmp_path, gate)

    async def before(question: str) -> str:
        i = int(question.split()[-1])
        return f"total {i * 13}" if i < 4 else "ok"

    baseline = await evaluate(before, suite.cases, name="modes")
    assert BaselineStore(suite.baseline_path).save(baseline).path == suite.baseline_path
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        await wait_for(pilot, lambda: run_screen.session.state.samples_done == 7)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.modes) == 2)
        assert run_screen.session.state.running
        assert [(m.signature.where, m.change) for m in screen.modes] == [
            ("KeyError", "new"),
            ("contains", "same"),
        ]
        title = screen_text(app).splitlines()[0]  # at 80 columns, "live" is not cut off
        assert "live" in title and "1 new" in title
        gate.set()
        await wait_for(pilot, lambda: not run_screen.session.state.running)


async def test_flaky_cases_show_their_pass_rate_run_by_run(tmp_path):
    gate = anyio.Event()
    gate.set()
    suite = two_modes_suite(tmp_path, gate)
    report = await evaluate(suite.agent, suite.cases)
    rates = [(1, 1), (0, 1), (1, 1), (0, 1), (0, 1)]
    runs = [RunOutcome(f"r{i}", float(i), p, n, p == n) for i, (p, n) in enumerate(rates)]
    app = make_app(suites=[])
    async with app.run_test(size=(120, 40)) as pilot:
        session = RunSession.for_report(report, clock=lambda: 0.0, title="modes")
        await app.push_screen(FailuresScreen(session, flaky=lambda: [CaseHistory("c6", runs)]))
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        shown = str(app.screen.query_one("#flaky").render())
        assert "c6" in shown and "100% · 0% · 100% · 0% · 0%" in shown and "3 flip(s)" in shown


async def test_F_then_f_shows_every_case_again_whichever_mode_was_shown(tmp_path):
    """The Run screen says "(F, f: all)": Failures opens on the mode shown, so f lifts it."""
    gate = anyio.Event()
    gate.set()
    suite = two_modes_suite(tmp_path, gate)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        await wait_until_done(pilot, run_screen)
        table = run_screen.query_one(CaseTable)
        for key in ("F", "down", "f"):  # the second mode's cases only
            await pilot.press(key)
            await pilot.pause()
        await wait_for(pilot, lambda: app.screen is run_screen)
        second = [run_screen.session.state.cases[i].name for i in table.order]
        assert len(second) < 8
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        assert app.screen.current_mode().cases == second
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen is run_screen)
        assert len(table.order) == 8


async def test_q_on_the_case_screen_quarantines_and_releases(tmp_path):
    gate = anyio.Event()
    gate.set()
    suite = two_modes_suite(tmp_path, gate)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_until_done(pilot, app.screen)
        await pilot.press("enter")  # the first case, c0 (failing)
        await wait_for(pilot, lambda: isinstance(app.screen, CaseScreen))
        await pilot.press("Q")
        await pilot.pause()
        await pilot.press(*"judge flips")
        await pilot.press("enter")
        path = quarantine_path(suite.baseline_path)
        await wait_for(pilot, lambda: "c0" in read(path, "modes"))
        assert read(path, "modes")["c0"].reason == "judge flips"
        await pilot.press("Q")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: not path.exists())


async def test_walking_a_modes_samples_the_footer_says_n_walks_the_mode(tmp_path):
    from tui_eval.tui.widgets.footer import KeyFooter

    def footer(app) -> list[str]:
        return [
            f"{k.display} {k.description}".strip() for k in app.screen.query_one(KeyFooter).shown
        ]

    gate = anyio.Event()
    gate.set()
    suite = two_modes_suite(tmp_path, gate)
    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_until_done(pilot, app.screen)
        await pilot.press("n")  # from the Run screen: every failing sample of the run
        await wait_for(pilot, lambda: isinstance(app.screen, SampleScreen))
        await wait_for(pilot, lambda: "n Next fail" in footer(app))
        await pilot.press("q", "F")
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        await pilot.press("enter")  # a mode's samples
        await wait_for(pilot, lambda: isinstance(app.screen, SampleScreen))
        await wait_for(pilot, lambda: "n Next in mode" in footer(app))
        assert "n Next fail" not in footer(app) and "p Prev in mode" in footer(app)


async def test_the_flaky_list_follows_the_runs_recorded_while_failures_is_open(tmp_path):
    """`c6` passed, then failed: two runs, one flip, not flaky yet. The third run (passing
    again) is going when Failures opens; once it is recorded, `c6` is flaky, and the screen
    says so without being opened again."""
    from tui_eval.service.request import RunRequest
    from tui_eval.service.run_plan import plan_run
    from tui_eval.service.suite_run import SuiteRun

    history = RunHistory(tmp_path)
    opened = anyio.Event()
    opened.set()
    suite = two_modes_suite(tmp_path, opened)
    plain_agent = suite.agent
    now = {"c6 passes": True, "hold case 7": False}
    third = anyio.Event()  # what the third run's case 7 waits for

    async def agent(question: str) -> str:
        if question == "q 6" and not now["c6 passes"]:
            return "no"
        if question == "q 7" and now["hold case 7"]:
            await third.wait()
        return await plain_agent(question)

    suite.agent = agent
    for c6_passes in (True, False):
        now["c6 passes"] = c6_passes
        await SuiteRun.start(plan_run(suite, RunRequest()), history=history, invocation="t").run()
    now.update({"c6 passes": True, "hold case 7": True})
    app = make_app(suites=[suite], history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run_screen = app.screen
        await wait_for(pilot, lambda: run_screen.session.state.samples_done == 7)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, FailuresScreen))
        screen = app.screen
        assert not screen.flaky and not screen.query_one("#flaky").display
        third.set()
        # (The Run screen under this one is not drawn: wait for the run, not for it.)
        await wait_for(pilot, lambda: not run_screen.session.state.running)
        await wait_for(pilot, lambda: [past.case for past in screen.flaky] == ["c6"])
        await wait_for(pilot, lambda: "c6" in str(screen.query_one("#flaky").render()))
        assert screen.query_one("#flaky").display
