"""`Workspace`: what every screen of one app session shares — the suites, the run history,
the launch options and the runs started so far. Plain Python: no widgets in it.

Screens get it as a constructor argument ("attributes down") and ask the app to start,
show or resume things with messages ("messages up"); they never reach into the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui_eval.options import RunOptions
from tui_eval.store import RunHistory
from tui_eval.suites import LoadResult, Suite
from tui_eval.tui.session import RunSession
from tui_eval.tui.state import Clock


@dataclass(kw_only=True)
class Workspace:
    """The state one app session shares between its screens.

    Attributes:
        loaded: the suites found (and the files that failed to load).
        history: where runs are journaled (None keeps nothing on disk).
        clock: the monotonic clock screens measure elapsed time with.
        options: the options the app was launched with (`tui-eval run --filter ...`).
        sessions: the latest full run of each suite started in this session, by suite name.
    """

    loaded: LoadResult
    history: RunHistory | None
    clock: Clock
    options: RunOptions = field(default_factory=RunOptions)
    sessions: dict[str, RunSession] = field(default_factory=dict)

    def new_session(
        self, suite: Suite, options: RunOptions | None = None, *, title: str = ""
    ) -> RunSession:
        """A run of `suite` with the launch options (or `options`), not yet started.

        A run of the launch options is the suite's current run (the Suites screen shows
        it); a rerun of some cases or with more samples is not.

        Raises:
            EmptySelection: the options select no case.
        """
        session = RunSession.start(
            suite, options or self.options, clock=self.clock, history=self.history, title=title
        )
        if options is None:
            self.sessions[suite.name] = session
        return session

    def rerun_options(self, **changes: object) -> RunOptions:
        """The launch options with `changes` (cases, samples...) for a rerun."""
        return self.options.model_copy(update=changes)
