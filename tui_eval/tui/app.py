"""`TuiEvalApp`: thin — it loads suites, starts runs in workers and pushes screens."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from tui_eval.report import Diff, Report
from tui_eval.store import RunHistory, RunRecord
from tui_eval.suites import LoadResult, Suite, load_suites
from tui_eval.tui.session import RunSession
from tui_eval.tui.state import Clock


class TuiEvalApp(App[int]):
    """The tui-eval terminal app.

    Attributes:
        sessions: the latest run of each suite started from the app, by suite name.
        history: where runs are journaled (None keeps nothing on disk).
    """

    CSS_PATH = "app.tcss"
    TITLE = "tui-eval"
    BINDINGS = [Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]

    def __init__(
        self,
        *,
        loaded: LoadResult | None = None,
        report: Report | None = None,
        autorun: bool = False,
        history: RunHistory | None = None,
        clock: Clock = time.monotonic,
        concurrency: int | None = None,
        fail_fast: bool = False,
    ) -> None:
        super().__init__()
        self.loaded = loaded or LoadResult()
        self.report = report
        self.autorun = autorun
        self.history = history
        self.clock = clock
        self.concurrency = concurrency
        self.fail_fast = fail_fast
        self.sessions: dict[str, RunSession] = {}
        self.initial_session: RunSession | None = None
        """A session to show on start instead of the suites (demos and tests)."""
        self.initial_diff: tuple[Diff, Report, Report] | None = None
        """A diff to show on start (demos and tests)."""

    def on_mount(self) -> None:
        if self.report is not None:
            self.open_report(self.report, title=f"{self.report.name} (saved report)")
            return
        from tui_eval.tui.screens.suites import SuitesScreen

        self.push_screen(SuitesScreen(self.loaded))
        if self.initial_session is not None:
            from tui_eval.tui.screens.run import RunScreen

            self.push_screen(RunScreen(self.initial_session))
        if self.initial_diff is not None:
            from tui_eval.tui.screens.diff import DiffScreen

            diff, current, baseline = self.initial_diff
            self.push_screen(DiffScreen(diff, current, baseline, title="calculator"))
        if self.autorun:
            self.call_after_refresh(self.query_run_all)

    def query_run_all(self) -> None:
        """Start every runnable suite (for `tui-eval run PATH` without --headless)."""
        runnable = [s for s in self.loaded.suites if not s.skip]
        for suite in runnable[1:]:
            self.start_run(suite)
        if runnable:
            self.open_suite(runnable[0])

    # -- runs -------------------------------------------------------------------------
    def start_run(self, suite: Suite, *, title: str = "") -> RunSession:
        """Start running `suite` in a worker; the screens watch its `RunState`."""
        session = RunSession.for_suite(
            suite,
            clock=self.clock,
            history=self.history,
            concurrency=self.concurrency,
            fail_fast=self.fail_fast,
            title=title,
        )
        if not title:
            self.sessions[suite.name] = session
        self.run_worker(session.run(), name=f"run {suite.name}", group="runs", exit_on_error=False)
        return session

    def resume(self, record: RunRecord) -> str | None:
        """Finish an interrupted run from its journal; returns why it cannot, or None."""
        from tui_eval.store import read_journal_samples
        from tui_eval.tui.screens.run import RunScreen

        if self.history is None or record.finished:
            return "only an interrupted run can be resumed"
        loaded = load_suites([record.suite_path]) if record.suite_path else LoadResult()
        suite = next((s for s in loaded.suites if s.name == record.suite), None)
        if suite is None:
            return f"suite {record.suite!r} not found in {record.suite_path or 'its file'}"
        options = record.options
        suite = suite.select(filter=options.get("filter"), samples=options.get("samples"))
        session = RunSession.for_suite(
            suite,
            clock=self.clock,
            history=self.history,
            concurrency=options.get("concurrency") or self.concurrency,
            done=read_journal_samples(record.journal_path),
            journal=self.history.reopen(record),
            title=f"{suite.name} · resumed",
        )
        self.run_worker(
            session.run(), name=f"resume {record.run_id}", group="runs", exit_on_error=False
        )
        self.push_screen(RunScreen(session))
        return None

    def open_suite(self, suite: Suite) -> None:
        """Show the suite's current run, starting one if it is not running."""
        from tui_eval.tui.screens.run import RunScreen

        session = self.sessions.get(suite.name)
        if session is None or not session.state.running:
            session = self.start_run(suite)
        self.push_screen(RunScreen(session))

    def open_report(self, report: Report, *, title: str = "") -> None:
        """Show a saved report read-only."""
        from tui_eval.tui.screens.run import RunScreen

        baseline = None
        suite_path = report.metadata.get("suite_path")
        if suite_path:
            baseline = Path(suite_path).parent / "__baselines__" / f"{report.name}.json"
        self.push_screen(
            RunScreen(
                RunSession.for_report(report, clock=self.clock, baseline_path=baseline, title=title)
            )
        )

    def on_unmount(self) -> None:
        for session in self.sessions.values():
            session.cancel()


def make_app(
    paths: list[str] | None = None,
    *,
    report: Report | None = None,
    autorun: bool = False,
    history: RunHistory | None = None,
    clock: Clock = time.monotonic,
    concurrency: int | None = None,
    fail_fast: bool = False,
    filter: str | None = None,
    samples: int | None = None,
) -> TuiEvalApp:
    """Build the app — the one factory used by the CLI and by the tests."""
    loaded = None
    if report is None:
        loaded = load_suites(paths or ["suites"])
        if filter or samples:
            loaded.suites = [s.select(filter=filter, samples=samples) for s in loaded.suites]
    return TuiEvalApp(
        loaded=loaded,
        report=report,
        autorun=autorun,
        history=history,
        clock=clock,
        concurrency=concurrency,
        fail_fast=fail_fast,
    )


def run_app(
    paths: list[str], *, autorun: bool = False, options: argparse.Namespace | None = None
) -> int:
    """Run the app on a real terminal (the CLI's default command)."""
    app = make_app(
        paths,
        autorun=autorun,
        history=RunHistory(),
        concurrency=getattr(options, "concurrency", None),
        fail_fast=bool(getattr(options, "fail_fast", False)),
        filter=getattr(options, "filter", None),
        samples=getattr(options, "samples", None),
    )
    app.run()
    if autorun:
        # `tui-eval run` keeps its exit-code contract in the app too.
        reports = [session.report for session in app.sessions.values()]
        if any(report is None or not report.passed for report in reports):
            return 1
    return app.return_code or 0


def show_report(report: Report) -> int:
    """Open a saved report read-only (`tui-eval show REPORT`)."""
    app = make_app(report=report, history=RunHistory())
    app.run()
    return app.return_code or 0
