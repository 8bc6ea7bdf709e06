"""Messages between the app and its screens; `start_run`, the one way a screen starts a run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message
from textual.widget import Widget

from tui_eval.report.report import Report
from tui_eval.service.request import RunRequest
from tui_eval.service.run_plan import EmptySelection
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunRecord
from tui_eval.suites import Suite
from tui_eval.tui.workspace import Workspace


@dataclass
class StartSession(Message):
    """Run `session` in an app worker (it outlives the screen that asked); `show` opens it."""

    session: RunSession
    show: bool = True


@dataclass
class ShowReport(Message):
    """Open a saved report read-only."""

    report: Report
    title: str = ""


@dataclass
class ResumeRun(Message):
    """Finish the interrupted run `record` from its journal, and show it."""

    record: RunRecord


@dataclass
class SuiteFilesChanged(Message):
    """Files under the suites' folders changed on disk (from the app's watcher)."""

    paths: set[Path]


@dataclass
class SuitesReloaded(Message):
    """The app reloaded these suites after an edit (sent to every screen)."""

    names: set[str]


@dataclass
class WatchRerun(Message):
    """Watch mode started `session`, rerunning `previous` after an edit (sent to every screen)."""

    session: RunSession
    previous: RunSession | None


@dataclass
class RunEnded(Message):
    """A run of `suite` ended and its journal is in the history (sent to every screen)."""

    suite: str


def start_run(
    screen: Widget,
    workspace: Workspace,
    suite: Suite,
    request: RunRequest | None = None,
    *,
    title: str = "",
    show: bool = True,
) -> RunSession | None:
    """Ask the app to run `suite` (`request` or the launch request); None if it selects no case."""
    try:
        session = workspace.new_session(suite, request, title=title)
    except EmptySelection as exc:
        screen.notify(str(exc), severity="warning")
        return None
    screen.post_message(StartSession(session, show=show))
    return session


def suite_to_rerun(screen: Widget, workspace: Workspace, session: RunSession) -> Suite | None:
    """`session`'s suite as loaded now; None, with a notification, if it has none (or is gone)."""
    if session.suite is None:
        screen.notify("a saved report has no agent to rerun: open its suite", severity="warning")
        return None
    suite = workspace.suite(session.state.name)
    if suite is None:
        screen.notify("the suite is no longer loaded: its file is gone", severity="warning")
    return suite
