"""`Workspace`: what the screens of one app session share, handed down to them (plain Python)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tui_eval.agents.http.context import Runtime
from tui_eval.report.report import Report
from tui_eval.run.events import Event
from tui_eval.run.state import Clock
from tui_eval.service.request import RunRequest
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.service.suite_set import SuiteSet
from tui_eval.suites import Suite


@dataclass(kw_only=True)
class Workspace(SuiteSet):
    """The state one app session's screens share: its suites (the `SuiteSet` it is) and runs."""

    history: RunHistory | None
    """Where runs are journaled (None keeps nothing on disk)."""
    clock: Clock
    """The monotonic clock screens measure elapsed time with."""
    request: RunRequest = field(default_factory=RunRequest)
    """The request the app was launched with (`tui-eval run --filter ...`)."""
    sessions: dict[str, RunSession] = field(default_factory=dict)
    """The latest full run of each suite started in this session, by suite name."""
    watching: set[str] = field(default_factory=set)
    """Suites in watch mode (an edit reruns them), wherever the user is."""
    runtime: Runtime = field(default_factory=Runtime)
    """What every run of the session shares (its rate limiters, idle workers)."""
    invocation: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """The id of every run the session starts (resumed together)."""

    def new_session(
        self,
        suite: Suite,
        request: RunRequest | None = None,
        *,
        title: str = "",
        baseline: Report | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> RunSession:
        """A run of `suite`, not yet started; without `request` it runs the launch request and
        becomes the suite's current run. `baseline` and `on_event` go to `RunSession.start`.

        Raises:
            EmptySelection: the request selects no case.
            PlanError: the kind of run cannot start (a decide run without a baseline).
        """
        session = RunSession.start(
            suite,
            request or self.request,
            clock=self.clock,
            history=self.history,
            invocation=self.invocation,
            runtime=self.runtime,
            title=title,
            baseline=baseline,
            on_event=on_event,
        )
        if request is None:
            self.sessions[suite.name] = session
            self.reloaded.discard(suite.name)  # this run is of the code as edited
        return session

    def watch_rerun(self, name: str) -> RunSession | None:
        """Watch mode's rerun of suite `name` as loaded now, failing cases first; None if gone.

        Raises:
            EmptySelection: the request selects no case.
        """
        suite = self.suite(name)
        if suite is None:
            return None
        current = self.sessions.get(name)
        failing = (
            {c.name for c in current.state.cases if c.samples and not c.passed}
            if current is not None
            else set()
        )
        ordered = sorted(suite.cases, key=lambda case: case.label not in failing)
        return self.new_session(replace(suite, cases=ordered))
