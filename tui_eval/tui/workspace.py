"""`Workspace`: what every screen of one app session shares — its suites, run history,
launch request and runs. Plain Python, no widgets: screens get it as a constructor argument
("attributes down") and ask the app for things with messages ("messages up")."""

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
    """The state one app session shares between its screens: its suites (the `SuiteSet`
    it is, with `loaded`, `edit_errors` and `reloaded`) and what follows.

    Attributes:
        history: where runs are journaled (None keeps nothing on disk).
        clock: the monotonic clock screens measure elapsed time with.
        request: the request the app was launched with (`tui-eval run --filter ...`).
        sessions: the latest full run of each suite started in this session, by suite name.
        watching: suites in watch mode (an edit reruns them), wherever the user is.
        runtime: what every run of the session shares (its rate limiters, idle workers).
        invocation: the id of every run the session starts (resumed together).
    """

    history: RunHistory | None
    clock: Clock
    request: RunRequest = field(default_factory=RunRequest)
    sessions: dict[str, RunSession] = field(default_factory=dict)
    watching: set[str] = field(default_factory=set)
    runtime: Runtime = field(default_factory=Runtime)
    invocation: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def new_session(
        self,
        suite: Suite,
        request: RunRequest | None = None,
        *,
        title: str = "",
        baseline: Report | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> RunSession:
        """A run of `suite` with the launch request (or `request`), not yet started.

        A run of the launch request is the suite's current run (the Suites screen shows
        it); a rerun of some cases or with more samples is not. `baseline` and `on_event`
        go to `RunSession.start` (the Diff screen's decide run).

        Raises:
            EmptySelection: the request selects no case.
            PlanError: the request's kind of run cannot start (a decide run without a baseline).
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
        """A new run of the current version of suite `name`, its failing cases first (the
        watch mode's rerun); None when the suite is gone.

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
