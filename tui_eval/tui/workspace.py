"""`Workspace`: what every screen of one app session shares — the suites, the run history,
the launch options and the runs started so far. Plain Python: no widgets in it.

Screens get it as a constructor argument ("attributes down") and ask the app to start,
show or resume things with messages ("messages up"); they never reach into the app.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tui_eval.options import RunOptions
from tui_eval.store import RunHistory
from tui_eval.suites import LoadError, LoadResult, Suite, load_suites
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
        edit_errors: suite files whose latest edit does not load (the previous version of
            their suites stays in use), with the error.
        reloaded: suites reloaded after an edit and not yet run since.
    """

    loaded: LoadResult
    history: RunHistory | None
    clock: Clock
    options: RunOptions = field(default_factory=RunOptions)
    sessions: dict[str, RunSession] = field(default_factory=dict)
    edit_errors: dict[Path, LoadError] = field(default_factory=dict)
    reloaded: set[str] = field(default_factory=set)

    def suite(self, name: str) -> Suite | None:
        """The current version of the suite called `name`."""
        return next((s for s in self.loaded.suites if s.name == name), None)

    def watched_folders(self) -> list[Path]:
        """The folders holding the suites' files (their helper modules live there too)."""
        files = [s.path for s in self.loaded.suites if s.path is not None]
        files += [e.path for e in self.loaded.errors]
        folders = {f.resolve().parent if f.suffix else f.resolve() for f in files}
        return sorted(f for f in folders if f.exists())

    def reload(self, changed: set[Path]) -> set[str]:
        """Reload the suite files affected by `changed` files; returns the suites reloaded.

        A change to any Python module in a suite's folder reloads the suites of that folder
        (their helpers are imported afresh). A file whose new version does not load keeps
        its previous suites in use, with the error in `edit_errors`.
        """
        folders = {p.resolve().parent for p in changed}
        files = sorted(
            {
                s.path
                for s in self.loaded.suites
                if s.path is not None and s.path.resolve().parent in folders
            }
            | {e.path for e in self.loaded.errors if e.path.resolve().parent in folders}
            | {p for p in changed if p.suffix in (".py", ".yaml", ".yml", ".jsonl") and p.exists()}
        )
        _forget_modules(folders)
        reloaded: set[str] = set()
        for file in files:
            fresh = load_suites([file])
            if not fresh.suites and not fresh.errors:
                continue  # not a suite file (a helper module)
            if fresh.errors:
                previous = [s for s in self.loaded.suites if s.path == file]
                if previous:  # keep the last good version in use
                    self.edit_errors[file] = fresh.errors[0]
                    continue
                self.loaded.errors = [e for e in self.loaded.errors if e.path != file]
                self.loaded.errors.extend(fresh.errors)
                continue
            self.edit_errors.pop(file, None)
            self.loaded.errors = [e for e in self.loaded.errors if e.path != file]
            self._replace(file, fresh.suites)
            reloaded |= {s.name for s in fresh.suites}
        self.reloaded |= reloaded
        return reloaded

    def _replace(self, file: Path, suites: list[Suite]) -> None:
        old = [i for i, s in enumerate(self.loaded.suites) if s.path == file]
        at = old[0] if old else len(self.loaded.suites)
        kept = [s for s in self.loaded.suites if s.path != file]
        self.loaded.suites = kept[:at] + suites + kept[at:]

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


def _forget_modules(folders: set[Path]) -> None:
    """Drop imported modules that live in `folders`, so the next import reads the edit."""
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None)
        if location and Path(location).resolve().parent in folders:
            del sys.modules[name]
