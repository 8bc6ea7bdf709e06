"""Messages screens send up to the app (start a run, show a report, resume a run), and
the app's news for its screens (suite files changed, suites reloaded, a run ended);
`start_run`, the one way a screen starts a run."""

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
    """Watch mode started `session`, a rerun of `previous` after an edit (sent to every
    screen: the Run screen showing `previous` follows it)."""

    session: RunSession
    previous: RunSession | None


@dataclass
class RunEnded(Message):
    """A run of the suite `suite` ended and its journal is finished: the history has it
    (sent to every screen; the Failures screen reads its flaky cases again)."""

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
    """Ask the app to run `suite` (with `request`, else the launch request) in a worker,
    shown if `show`; None, said in a notification, when the request selects no case."""
    try:
        session = workspace.new_session(suite, request, title=title)
    except EmptySelection as exc:
        screen.notify(str(exc), severity="warning")
        return None
    screen.post_message(StartSession(session, show=show))
    return session


def suite_to_rerun(screen: Widget, workspace: Workspace, session: RunSession) -> Suite | None:
    """The suite of `session` as it is now (reloaded after an edit); None, said in a
    notification, for a saved report or a suite whose file is gone."""
    if session.suite is None:
        screen.notify("a saved report has no agent to rerun: open its suite", severity="warning")
        return None
    suite = workspace.suite(session.state.name)
    if suite is None:
        screen.notify("the suite is no longer loaded: its file is gone", severity="warning")
    return suite
