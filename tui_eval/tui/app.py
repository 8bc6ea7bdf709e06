"""`TuiEvalApp`: thin — it runs sessions in workers and answers its screens' messages."""

from __future__ import annotations

import os
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

import anyio
from textual import on
from textual.app import App
from textual.binding import Binding
from textual.notifications import Notification, Notify, SeverityLevel
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from tui_eval.report.baselines import BaselineStore
from tui_eval.report.report import Report
from tui_eval.run.state import Clock
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import EmptySelection
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.service.suite_run import ResumeError
from tui_eval.service.suite_set import file_changes
from tui_eval.suites import LoadResult, Suite, load_suites
from tui_eval.tui.messages import (
    ResumeRun,
    RunEnded,
    ShowReport,
    StartSession,
    SuiteFilesChanged,
    SuitesReloaded,
    WatchRerun,
)
from tui_eval.tui.screens.help import HelpScreen, screen_keys
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.suites import SuitesScreen
from tui_eval.tui.workspace import Workspace
from tui_eval.util.home import data_root

KEYMAP_ENV = "TUI_EVAL_KEYMAP"
"""A TOML file of `binding-id = "keys"` lines (default: `keymap.toml` in the data folder)."""


def user_keymap() -> tuple[dict[str, str], str]:
    """The user's keymap (binding id → keys) and what was wrong with its file ("" if nothing)."""
    named = os.environ.get(KEYMAP_ENV)
    path = Path(named) if named else data_root() / "keymap.toml"
    try:
        keymap = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, f"{path}: no such keymap file" if named else ""
    except (OSError, ValueError) as exc:  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        return {}, f"{path}: {exc}"
    wrong = [name for name, keys in keymap.items() if not isinstance(keys, str)]
    if wrong:
        return {}, f'{path}: {", ".join(wrong)}: keys are a string, such as accept = "y"'
    return keymap, ""


class TuiEvalApp(App[int]):
    """The tui-eval terminal app, built by `make_app()` (whose Args describe its state)."""

    CSS_PATH = "app.tcss"
    TITLE = "tui-eval"
    BINDINGS = [
        # The one `?` of the app: the footer shows it last, on every screen.
        Binding("question_mark", "help", "Help", tooltip="Every key of this screen", id="help"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="quit-now"),
    ]
    WATCH_SETTLE_SECONDS = 0.3
    """A watched suite reruns this long after the last save of a burst."""
    MAX_NOTIFICATIONS = 2
    """Older notifications make way for new ones instead of piling up over the table."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        report: Report | None = None,
        autorun: bool = False,
        watch_files: bool = True,
        watch_all: bool = False,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.report = report
        self.autorun = autorun
        self.watch_files = watch_files
        """Watch the suites' folders and reload what changes (off for saved reports)."""
        self.watch_all = watch_all
        """Run every suite in watch mode, showing the first (`tui-eval --watch PATH`)."""
        self._recent_notifications: list[Notification] = []
        self._runs_by_worker: dict[Worker[Report], str] = {}
        """The suite of each run under way."""
        self._watch_timers: dict[str, Timer] = {}
        self._watch_after: set[str] = set()
        """Watched suites edited while they ran: rerun once when the run ends."""
        self._stop_watching = anyio.Event()
        self.files_watched = anyio.Event()
        """Set once edits of the suites' files are seen (the file watcher is up)."""

    def on_mount(self) -> None:
        keymap, problem = user_keymap()
        self.set_keymap(keymap)
        if problem:
            self.notify(f"keys not remapped: {problem}", severity="error")
        if self.report is not None:
            self._show_report(ShowReport(self.report, f"{self.report.name} (saved report)"))
            return
        self.push_screen(SuitesScreen(self.workspace))
        if self.autorun:
            self.call_after_refresh(self.run_all)
        if self.watch_files and self.workspace.watched_folders():
            self.run_worker(self._watch_suite_files(), name="watch suites", group="watch")

    async def _watch_suite_files(self) -> None:
        folders = self.workspace.watched_folders()
        changes = file_changes(folders, stop=self._stop_watching, ready=self.files_watched)
        async for paths in changes:
            self.post_message(SuiteFilesChanged(paths))

    @on(SuiteFilesChanged)
    def _files_changed(self, message: SuiteFilesChanged) -> None:
        result = self.workspace.reload(message.paths)
        if result.names:
            self.notify(f"reloaded {', '.join(sorted(result.names))} after an edit", timeout=3)
        for error in result.errors:
            kept = error.path in self.workspace.edit_errors
            suffix = " (the previous version stays in use)" if kept else ""
            self.notify(f"{error.message}{suffix}", severity="error")
        for name, path in sorted(result.removed.items()):
            self.workspace.watching.discard(name)
            self.notify(f"{name}: {path} is gone (deleted or renamed): its suite is removed")
        if result.names or result.errors or result.removed:
            for screen in self.screen_stack:
                screen.post_message(SuitesReloaded(result.names))
        for name in result.names & self.workspace.watching:
            # A burst of saves (an editor writing several files) starts one rerun.
            pending = self._watch_timers.pop(name, None)
            if pending is not None:
                pending.stop()
            self._watch_timers[name] = self.set_timer(
                self.WATCH_SETTLE_SECONDS, lambda name=name: self._watch_rerun(name)
            )

    def _watch_rerun(self, name: str) -> None:
        """Rerun watched suite `name`, failing cases first (once when a run still going ends)."""
        self._watch_timers.pop(name, None)
        previous = self.workspace.sessions.get(name)
        if previous is not None and previous.state.running:
            self._watch_after.add(name)
            return
        try:
            session = self.workspace.watch_rerun(name)
        except EmptySelection as exc:
            self.notify(str(exc), severity="warning")
            return
        if session is None:
            return
        self.start(session, show=False)
        for screen in self.screen_stack:
            screen.post_message(WatchRerun(session, previous))

    def run_all(self) -> None:
        """Start every runnable suite and show the first (`tui-eval run PATH` on a terminal)."""
        runnable = [s for s in self.workspace.loaded.suites if not s.skip]
        if self.watch_all:  # a save reruns whichever suite it touches
            self.workspace.watching |= {suite.name for suite in runnable}
        for position, suite in enumerate(runnable):
            try:
                session = self.workspace.new_session(suite)
            except EmptySelection as exc:
                self.notify(str(exc), severity="warning")
                continue
            self.start(session, show=position == 0, watch=self.watch_all and position == 0)

    def start(self, session: RunSession, *, show: bool, watch: bool = False) -> None:
        """Run `session` in a worker of the app (so it outlives any screen)."""
        worker = self.run_worker(
            session.run(), name=f"run {session.title}", group="runs", exit_on_error=False
        )
        self._runs_by_worker[worker] = session.state.name
        if show:
            self.push_screen(RunScreen(session, self.workspace, watching=watch))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A run that could not run (Ray unreachable, say) says why, not just "cancelled"."""
        worker = event.worker
        if worker.is_finished and worker in self._runs_by_worker:
            name = self._runs_by_worker.pop(worker)
            for screen in self.screen_stack:  # its journal is finished: in the history now
                screen.post_message(RunEnded(name))
            if name in self._watch_after:
                self._watch_after.discard(name)
                self._watch_rerun(name)
        if event.state is WorkerState.ERROR and worker.group == "runs":
            error = worker.error
            self.notify(
                f"{worker.name}: {type(error).__name__}: {error}", severity="error", markup=False
            )

    @on(StartSession)
    def _start_session(self, message: StartSession) -> None:
        self.start(message.session, show=message.show)

    @on(ResumeRun)
    def _resume(self, message: ResumeRun) -> None:
        if self.workspace.history is None:
            self.notify("this session keeps no run history", severity="warning")
            return
        try:
            session = RunSession.resume(
                message.record,
                clock=self.workspace.clock,
                history=self.workspace.history,
                runtime=self.workspace.runtime,
            )
        except ResumeError as exc:
            self.notify(str(exc), severity="warning")
            return
        if not message.record.request.is_partial:
            # It finishes the suite's interrupted run: it is the suite's run now.
            self.workspace.sessions[message.record.suite] = session
        self.start(session, show=True)

    @on(ShowReport)
    def _show_report(self, message: ShowReport) -> None:
        report = message.report
        suite = self.workspace.suite(report.name)
        suite_path = report.metadata.get("suite_path")
        if suite is None and suite_path:  # not loaded now: its file's default place
            suite = Suite(report.name, path=Path(str(suite_path)))
        baseline = BaselineStore.for_suite(suite) if suite is not None else None
        session = RunSession.for_report(
            report, clock=self.workspace.clock, baseline=baseline, title=message.title
        )
        self.push_screen(RunScreen(session, self.workspace))

    def action_help(self) -> None:
        """Show every key of the current screen (`?`)."""
        if isinstance(self.screen, HelpScreen):
            return
        title = self.screen.TITLE or type(self.screen).__name__.removesuffix("Screen")
        self.push_screen(HelpScreen(title, screen_keys(self.screen)))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Show it, never as markup (it quotes model output); the last `MAX_NOTIFICATIONS` stay."""
        notification = Notification(
            message,
            title,
            severity,
            self.NOTIFICATION_TIMEOUT if timeout is None else timeout,
            markup=False,
        )
        recent = self._recent_notifications
        recent.append(notification)
        if len(recent) > self.MAX_NOTIFICATIONS:
            del recent[0]
            self.clear_notifications()  # the oldest makes way; the others are shown again
            for kept in recent[:-1]:
                self.post_message(Notify(kept))
        self.post_message(Notify(notification))

    @on(Notify)
    def _only_recent(self, event: Notify) -> None:
        # Runs before App's own handler (a subclass's handlers come first): a notification
        # that already made way for newer ones is not shown at all.
        if event.notification not in self._recent_notifications:
            event.prevent_default()

    def on_unmount(self) -> None:
        self._stop_watching.set()
        for session in self.workspace.sessions.values():
            session.cancel()


def make_app(
    paths: Sequence[str | Path] | None = None,
    *,
    suites: Sequence[Suite] | None = None,
    report: Report | None = None,
    request: RunRequest | None = None,
    autorun: bool = False,
    history: RunHistory | None = None,
    clock: Clock = time.monotonic,
    watch: bool = False,
) -> TuiEvalApp:
    """Build the app — the one factory used by the CLI, the tests and the scripts.

    Args:
        paths: suite files or folders to load (default `./suites`).
        suites: suites already built in code (instead of `paths`).
        report: open this saved report read-only instead of the suites.
        request: the run request every run of this session starts with.
        autorun: start every suite at once.
        history: where runs are journaled (None keeps nothing on disk).
        clock: a monotonic clock (frozen in snapshot tests).
        watch: start every suite and rerun the first whenever its files change.
    """
    if suites is not None:
        loaded = LoadResult(suites=list(suites))
    elif report is not None:
        loaded = LoadResult()
    else:
        loaded = load_suites([str(p) for p in paths or ["suites"]])
    workspace = Workspace(
        loaded=loaded, history=history, clock=clock, request=request or RunRequest()
    )
    return TuiEvalApp(
        workspace,
        report=report,
        autorun=autorun or watch,
        watch_files=report is None,
        watch_all=watch,
    )


def run_app(
    paths: list[str], *, request: RunRequest, autorun: bool = False, watch: bool = False
) -> int:
    """Run the app on a real terminal (the CLI's default command)."""
    app = make_app(paths, request=request, autorun=autorun, history=RunHistory(), watch=watch)
    app.run()
    stopped = [
        name
        for name, session in app.workspace.sessions.items()
        if session.report is None or session.report.cancelled
    ]
    if stopped:
        print(
            f"interrupted: {', '.join(stopped)}; `tui-eval resume` (or R in History) "
            "finishes the runs, keeping their finished samples",
            file=sys.stderr,
        )
    if autorun:
        # `tui-eval run` keeps its exit-code contract in the app too.
        reports = [session.report for session in app.workspace.sessions.values()]
        if any(report is None or not report.passed for report in reports):
            return 1
    return app.return_code or 0


def show_report(report: Report) -> int:
    """Open a saved report read-only (`tui-eval show REPORT`)."""
    app = make_app(report=report, history=RunHistory())
    app.run()
    return app.return_code or 0
