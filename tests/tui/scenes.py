"""Scenes of the app from deterministic demo data, for snapshot tests and screenshots.

The example calculator suite runs offline; its timings are then frozen so that every
screenshot of it is identical from run to run.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from textual.app import App
from textual.pilot import Pilot

from tui_eval.calibration.label_queue import judged_items
from tui_eval.calibration.labels import LabelStore, new_label
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.baselines import BaselineStore
from tui_eval.report.report import Report
from tui_eval.run.events import RunStarted, SampleFinished, SampleStateChanged
from tui_eval.run.runner import evaluate
from tui_eval.run.state import RunState
from tui_eval.service.flaky import CaseHistory, RunOutcome
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.suites import Suite, load_suites
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.widgets.case_table import CaseTable

STARTED_AT = 1_780_000_000.0  # a fixed moment, so dates on screen never change


def example_suite(folder: Path, name: str = "calculator") -> Suite:
    """Load one of the bundled example suites."""
    loaded = load_suites([folder])
    for suite in loaded.suites:
        if suite.name == name:
            return suite
    raise LookupError(f"no suite {name!r} in {folder}: {[e.message for e in loaded.errors]}")


def freeze(report: Report) -> Report:
    """Replace every measured time in `report` with a fixed one."""
    report.started_at = STARTED_AT
    report.duration_s = 3.2
    for ci, case in enumerate(report.cases):
        for sample in case.samples:
            latency = 120.0 + 45.0 * ((ci * 7 + sample.index * 3) % 9)
            if sample.status == "timeout":
                latency = 1000.0
                # The tests run the example suite faster (TUI_EVAL_EXAMPLE_PACE): show
                # the timeout it has at its normal pace.
                sample.error = "sample exceeded its timeout of 1s and was cancelled"
            sample.latency_ms = latency
            if sample.run is not None:
                sample.run.latency_ms = latency
                for call in sample.run.tool_calls:
                    call.latency_ms = 0.8
                    if call.error is None and sample.status == "timeout":
                        call.latency_ms = 1000.0
    report.metadata = {k: v for k, v in report.metadata.items() if k != "suite_path"}
    return report


_FROZEN: dict[Path, bytes] = {}


async def demo_report(folder: Path) -> Report:
    """The calculator example suite, run offline once per process, with frozen timings.

    Every call returns a fresh copy, so a scene may change its report freely.
    """
    if folder not in _FROZEN:
        suite = example_suite(folder)
        report = await evaluate(
            suite.agent,
            suite.cases,
            concurrency=suite.concurrency,
            price=suite.price,
            name=suite.name,
        )
        _FROZEN[folder] = freeze(report).to_json()
    return Report.from_json(_FROZEN[folder])


def demo_baseline(report: Report) -> Report:
    """A baseline the demo report regressed from (and improved on) — for the Diff screen."""
    baseline = copy.deepcopy(report)
    baseline.started_at = STARTED_AT - 86_400
    for case in baseline.cases:
        if case.name == "explain to a child":
            for sample in case.samples:
                sample.status = "passed"
                for check in sample.checks:
                    check.passed, check.score = True, 0.9
                    check.reason = "Correct, simple, and explains 6 groups of 7."
                if sample.run is not None:
                    sample.run.output = "6 * 7 is 42: imagine 6 groups of 7 sweets."
        if case.name == "rounding (flaky)":
            for sample in case.samples[:3]:
                sample.status = "failed"
    baseline.cases.append(
        CaseResult(
            "percentages (removed)", [SampleResult("percentages (removed)", 0, "passed")], planned=1
        )
    )
    return baseline


def demo_flaky_history() -> CaseHistory:
    """The flaky demo case over its last five runs (newest first), as the Failures screen
    lists it."""
    rates = [(3, 5), (2, 5), (4, 5), (2, 5), (3, 5)]
    return CaseHistory(
        "rounding (flaky)",
        [
            RunOutcome(f"run-{i}", STARTED_AT - i * 86_400, passed, total, passed / total >= 0.6)
            for i, (passed, total) in enumerate(rates)
        ],
    )


def live_state(report: Report, done: int) -> RunState:
    """A mid-run state: the first `done` samples finished, the next few in flight."""
    from tui_eval.core.cases import Case

    state = RunState(report.name, clock=lambda: 12.5)
    cases = [
        Case(c.name, name=c.name, samples=c.planned, pass_threshold=c.pass_threshold)
        for c in report.cases
    ]
    state.apply(RunStarted(report.name, cases, sum(c.samples for c in cases), STARTED_AT))
    state.started = 10.0
    finished = 0
    in_flight = 0
    for ci, case in enumerate(report.cases):
        for sample in case.samples:
            if finished < done:
                state.apply(SampleFinished(ci, sample))
                finished += 1
            elif in_flight < 3:
                state.apply(
                    SampleStateChanged(
                        ci, sample.index, ("running", "judging", "retrying")[in_flight]
                    )
                )
                in_flight += 1
                break
    return state


# -- scenes: the screens as screenshots and snapshot tests show them ------------------------
SCENES = (
    "suites",
    "run_live",
    "run_rate_limited",
    "run_done",
    "run_failing_only",
    "case",
    "sample_judge",
    "sample_trajectory",
    "diff",
    "failures",
    "side_by_side",
    "history",
    "label_queue",
    "calibration",
    "conversation",
    "conversation-side-by-side",
)


Setup = Callable[[Pilot[Any]], Awaitable[None]]


async def build_scene(name: str, folder: Path, home: Path) -> tuple[App[Any], Setup, list[str]]:
    """The app for scene `name`, what to do once it runs, and the keys that bring it to
    the screen to capture.

    Args:
        folder: the bundled `suites/` folder.
        home: an empty folder for this scene's run history.
    """
    report = await demo_report(folder)
    clock = lambda: 12.5  # noqa: E731 - a frozen clock

    async def nothing(pilot: Pilot[Any]) -> None:
        await pilot.pause()

    if name == "suites":
        loaded = load_suites([folder])
        for suite in loaded.suites:
            suite.path = Path("suites") / suite.path.name if suite.path else None
        return make_app(suites=loaded.suites, history=RunHistory(home), clock=clock), nothing, []
    if name == "history":
        history = RunHistory(home)
        for run_report, run_id in (
            (demo_baseline(report), "20260601-090000-calculator-a1b2c3"),
            (report, "20260602-090000-calculator-d4e5f6"),
        ):
            journal = history.start(run_report.name, "suites/calculator.py", invocation="demo")
            journal.record.started_at = run_report.started_at
            journal.finish(run_report)
            journal.record.folder.rename(journal.record.folder.with_name(run_id))
            _rewrite_header(journal.record.folder.with_name(run_id), run_id, run_report.started_at)
        return make_app(suites=[], history=history, clock=clock), nothing, ["h"]
    if name in ("run_live", "run_rate_limited"):
        app = make_app(suites=[], clock=clock)

        async def show_live(pilot: Pilot[Any]) -> None:
            state = live_state(report, 6)
            if name == "run_rate_limited":
                from tui_eval.agents.http.limits import LimitStatus
                from tui_eval.run.events import RunStatus

                limited = LimitStatus("https://api.openai.com/v1", True, 1.2, 96.0, 97.0, 12)
                state.apply(RunStatus([limited], 0.0123, 2.5))
                state.cost = 0.0123
            session = RunSession(state=state, title="calculator")
            await pilot.app.push_screen(RunScreen(session, app.workspace))
            await _table_focused(pilot)

        return app, show_live, []
    if name in ("diff", "side_by_side"):
        app = make_app(suites=[], clock=clock)
        baseline = demo_baseline(report)

        async def show_diff(pilot: Pilot[Any]) -> None:
            diff = report.compare(baseline)
            await pilot.app.push_screen(
                DiffScreen(
                    diff,
                    # A run in review: decisions go to a baseline file (none is written here).
                    RunSession.for_report(
                        report, clock=clock, baseline=BaselineStore(home / "calculator.json")
                    ),
                    baseline,
                    title="calculator",
                    baseline_path=home / "calculator.json",
                )
            )
            await pilot.pause()

        return app, show_diff, ["enter"] if name == "side_by_side" else []
    if name == "failures":
        from tui_eval.tui.screens.failures import FailuresScreen

        app = make_app(suites=[], clock=clock)
        baseline = demo_baseline(report)
        for case in baseline.cases:  # the baseline's rounding failures, as its check said them
            for sample in case.samples if case.name == "rounding (flaky)" else []:
                for check in sample.checks if sample.status == "failed" else []:
                    if check.passed:
                        check.passed, check.score = False, 0.0
                        check.reason = "expected '3' in output, got '2'"

        async def show_failures(pilot: Pilot[Any]) -> None:
            session = RunSession.for_report(report, clock=clock, title="calculator")
            await pilot.app.push_screen(
                FailuresScreen(session, baseline=baseline, flaky=lambda: [demo_flaky_history()])
            )
            await pilot.pause()

        return app, show_failures, []
    if name == "label_queue":
        from tui_eval.tui.screens.labels import LabelScreen

        app = make_app(report=report, clock=clock)
        suite = example_suite(folder)

        async def show_queue(pilot: Pilot[Any]) -> None:
            await pilot.pause()
            session = RunSession.for_report(report, clock=clock, title="calculator")
            await pilot.app.push_screen(LabelScreen(session, suite, store=_UnsavedLabels()))
            await pilot.pause()

        # Two labels given (the first judged 0.55, the closest call, comes first), the third
        # output shown blind.
        return app, show_queue, ["x", "y"]
    if name == "calibration":
        from tui_eval.tui.screens.calibration import CalibrationScreen

        app = make_app(report=report, clock=clock)
        suite = example_suite(folder)
        # The labels go beside a copy of the suite in `home`, never into `suites/`.
        suite.path = home / "suites" / "calculator.py"
        store = LabelStore.of(suite)
        for item in judged_items(report.cases):
            # The human passes "It is 42." (the judge's 0.55 fails it): one disagreement.
            human = "fail" if "42" not in str(item.output) else "pass"
            store.put(
                new_label(
                    item.case,
                    item.check.name,
                    item.output,
                    human,
                    run=item.sample.run,
                    labeler="ana",
                    labelled_at=STARTED_AT,
                )
            )

        async def show_calibration(pilot: Pilot[Any]) -> None:
            await pilot.pause()
            screen = CalibrationScreen(suite, title="calculator")
            await pilot.app.push_screen(screen)
            while screen.calibration is None and screen.error is None:
                await pilot.pause(0.05)
            await pilot.pause()

        return app, show_calibration, []
    if name in ("conversation", "conversation-side-by-side"):
        from tests.tui.conversation_demo import shop_report

        # The shop's first case, its second sample: the agent cancels the wrong order at
        # turn 3; `d` puts it beside the sample that cancelled the right one.
        app = make_app(report=await shop_report(), clock=clock)
        keys = ["enter", "down", "enter"] + (["d"] if name != "conversation" else [])
        return app, _table_focused, keys
    app = make_app(report=report, clock=clock)
    keys: list[str] = []
    setup = _table_focused
    if name == "run_failing_only":
        keys = ["f"]
        _keep_toasts(app)
    elif name in ("case", "sample_judge"):
        setup = _cursor_on_case(5)
        keys = ["enter"] + (["down", "enter"] if name == "sample_judge" else [])
    elif name == "sample_trajectory":
        setup = _cursor_on_case(3)
        keys = ["enter", "enter", "2"]
    return app, setup, keys


async def _table_focused(pilot: Pilot[Any]) -> None:
    """The Run screen as a user first sees it: its table focused (the table takes focus
    once mounted, after the first frames)."""
    await pilot.pause()
    with anyio.fail_after(20):
        while not isinstance(pilot.app.focused, CaseTable):
            await pilot.pause(0.01)
    await pilot.pause()


def _cursor_on_case(row: int) -> Setup:
    """The Run screen's cursor on case `row`, where that many presses of ↓ take it (each
    press costs the tests a wait for the app to be idle)."""

    async def setup(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        pilot.app.screen.query_one(CaseTable).move_cursor(row=row)
        await pilot.pause()

    return setup


class _UnsavedLabels(LabelStore):
    """Labels kept in memory only: a scene never writes a labels file."""

    def __init__(self) -> None:
        super().__init__(Path("suites/__labels__/calculator.jsonl"))

    def _write(self) -> None:
        pass


def _keep_toasts(app: App[Any]) -> None:
    """Toasts stay until the screenshot: a two-second one would be in it or not depending
    on how long a loaded machine takes between the key press and the capture."""
    notify = app.notify

    def lasting(*args: Any, **kwargs: Any) -> Any:
        kwargs["timeout"] = 3600
        return notify(*args, **kwargs)

    app.notify = lasting  # type: ignore[method-assign]


def _rewrite_header(folder: Path, run_id: str, started_at: float) -> None:
    import json

    journal = folder / "journal.jsonl"
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    header.update(run_id=run_id, started_at=started_at)
    journal.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
