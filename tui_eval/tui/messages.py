"""Messages screens send up to the app (start a run, show a report, resume a run), and
the app's news for its screens (suite files changed, suites reloaded, a run ended)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from tui_eval.report.report import Report
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunRecord


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
