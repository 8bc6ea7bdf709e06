"""`Workspace`: what every screen of one app session shares — the suites, the run history,
the launch options and the runs started so far. Plain Python: no widgets in it.

Screens get it as a constructor argument ("attributes down") and ask the app to start,
show or resume things with messages ("messages up"); they never reach into the app.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tui_eval.report.report import Report
from tui_eval.run.events import Event
from tui_eval.run.state import Clock
from tui_eval.service.request import RunRequest
from tui_eval.service.session import RunSession
from tui_eval.service.store import RunHistory
from tui_eval.suites import LoadError, LoadResult, Suite, load_suites
from tui_eval.suites.discovery import SUITE_SUFFIXES, is_suite_file, not_a_suite_file
from tui_eval.suites.discovery import real_path as _real


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
        watching: suites in watch mode (an edit reruns them), wherever the user is.
    """

    loaded: LoadResult
    history: RunHistory | None
    clock: Clock
    options: RunRequest = field(default_factory=RunRequest)
    sessions: dict[str, RunSession] = field(default_factory=dict)
    edit_errors: dict[Path, LoadError] = field(default_factory=dict)
    reloaded: set[str] = field(default_factory=set)
    watching: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._contents: dict[Path, str | None] = {}
        """What each edited file held when last seen: saving it again unchanged (a burst
        of saves of one content) is not another edit."""

    def _new(self, key: Path) -> bool:
        """Whether the file `key` holds something else than when last seen."""
        try:
            content: str | None = hashlib.sha256(key.read_bytes()).hexdigest()
        except OSError:  # gone, a folder, a link loop: its load says what it is
            content = None
        if key in self._contents and self._contents[key] == content and content is not None:
            return False
        self._contents[key] = content
        return True

    def suite(self, name: str) -> Suite | None:
        """The current version of the suite called `name`."""
        return next((s for s in self.loaded.suites if s.name == name), None)

    def watched_folders(self) -> list[Path]:
        """The folders holding the suites' files (their helper modules live there too)."""
        files = [s.path for s in self.loaded.suites if s.path is not None]
        files += [e.path for e in self.loaded.errors]
        folders = {_real(f.parent) if f.suffix else _real(f) for f in files}
        return sorted(f for f in folders if f.exists())

    def reload(self, changed: set[Path]) -> Reload:
        """Reload the suite files affected by `changed` files.

        A suite file that changed is loaded again, and so is every suite file of a folder
        where a helper module changed (its helpers are imported afresh); only the suites
        that changed or import a changed helper count as reloaded. Baselines, labels,
        caches and other files are not edits. A file whose new version does not load keeps
        its previous suites in use, with the error in `edit_errors`.
        """
        known = {_identity(s.path): s.path for s in self.loaded.suites if s.path is not None}
        known |= {_identity(e.path): e.path for e in self.loaded.errors}
        edited = {key for key in map(_identity, changed) if _is_edit(key) and self._new(key)}
        if not edited:
            return Reload()
        helpers = {
            p for p in edited if p not in known and p.suffix == ".py" and not is_suite_file(p)
        }
        files = {known[p] for p in edited if p in known}
        files |= {
            p
            for p in edited - helpers
            if p not in known and os.path.lexists(p) and is_suite_file(p)
        }
        helper_folders = {p.parent for p in helpers}
        files |= {path for key, path in known.items() if key.parent in helper_folders}
        result = Reload()
        for file in sorted(files, key=str):
            fresh, imported = _load_with_imports(file)
            if not fresh.suites and not fresh.errors:
                continue
            error = fresh.errors[0] if fresh.errors else self._name_taken(file, fresh.suites)
            if error is not None:
                result.errors.append(error)
                if any(s.path == file for s in self.loaded.suites):
                    self.edit_errors[file] = error  # the last good version stays in use
                else:
                    self.loaded.errors = [e for e in self.loaded.errors if e.path != file]
                    self.loaded.errors.append(error)
                continue
            self.edit_errors.pop(file, None)
            self.loaded.errors = [e for e in self.loaded.errors if e.path != file]
            self._replace(file, fresh.suites)
            if _identity(file) in edited or imported & helpers:
                result.names |= {s.name for s in fresh.suites}
        self.reloaded |= result.names
        return result

    def _name_taken(self, file: Path, suites: list[Suite]) -> LoadError | None:
        """Two files defining one suite name would be two rows with one key: an error."""
        for suite in suites:
            other = self.suite(suite.name)
            if other is not None and other.path is not None and other.path != file:
                return LoadError(
                    file, f"{file}: suite name {suite.name!r} is also used by {other.path}"
                )
        return None

    def _replace(self, file: Path, suites: list[Suite]) -> None:
        old = [i for i, s in enumerate(self.loaded.suites) if s.path == file]
        at = old[0] if old else len(self.loaded.suites)
        kept = [s for s in self.loaded.suites if s.path != file]
        self.loaded.suites = kept[:at] + suites + kept[at:]

    def new_session(
        self,
        suite: Suite,
        options: RunRequest | None = None,
        *,
        title: str = "",
        baseline: Report | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> RunSession:
        """A run of `suite` with the launch options (or `options`), not yet started.

        A run of the launch options is the suite's current run (the Suites screen shows
        it); a rerun of some cases or with more samples is not. `baseline` and `on_event`
        go to `RunSession.start` (the Diff screen's decide run).

        Raises:
            EmptySelection: the options select no case.
            PlanError: the options' mode cannot run (a decide run without a baseline).
        """
        session = RunSession.start(
            suite,
            options or self.options,
            clock=self.clock,
            history=self.history,
            title=title,
            baseline=baseline,
            on_event=on_event,
        )
        if options is None:
            self.sessions[suite.name] = session
            self.reloaded.discard(suite.name)  # this run is of the code as edited
        return session

    def watch_rerun(self, name: str) -> RunSession | None:
        """A new run of the current version of suite `name`, its failing cases first (the
        watch mode's rerun); None when the suite is gone.

        Raises:
            EmptySelection: the options select no case.
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

    def rerun_options(self, cases: tuple[str, ...], **settings: object) -> RunRequest:
        """A rerun of `cases` with the launch settings (and `settings` over them: samples...)."""
        return self.options.rerun(cases, **settings)


@dataclass
class Reload:
    """What a reload after an edit did.

    Attributes:
        names: the suites reloaded (their file, or a helper they import, changed).
        errors: the files whose new version does not load.
    """

    names: set[str] = field(default_factory=set)
    errors: list[LoadError] = field(default_factory=list)


NOT_EDITS = {"__baselines__", "__labels__", "__pycache__", ".git"}
"""Folders whose files the app or tools write: a change there is not an edit of a suite."""


def _identity(path: Path) -> Path:
    """One name per file, however it was given (relative, absolute, through a linked
    folder); the file itself is not followed, so a link loop is still its own name."""
    return _real(path.parent) / path.name


def _is_edit(path: Path) -> bool:
    if any(part in NOT_EDITS for part in path.parts):
        return False
    return path.suffix in SUITE_SUFFIXES and not path.name.startswith(".")


def _load_with_imports(file: Path) -> tuple[LoadResult, set[Path]]:
    """Load one suite file with its folder's modules imported afresh; also returns the
    files of the modules of that folder it imported (the helpers it depends on)."""
    folder = _real(file.parent)
    _forget_modules({folder})
    before = set(sys.modules)
    problem = not_a_suite_file(file)
    if problem is not None:
        return LoadResult(errors=[LoadError(file, problem)]), set()
    fresh = load_suites([file])
    imported = set()
    for name in set(sys.modules) - before:
        location = getattr(sys.modules.get(name), "__file__", None)
        if location and _folder_of_module(location) == folder:
            imported.add(_identity(Path(location)))
    return fresh, imported


def _forget_modules(folders: set[Path]) -> None:
    """Drop imported modules that live in `folders`, so the next import reads the edit."""
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None)
        if location and _folder_of_module(location) in folders:
            del sys.modules[name]


def _folder_of_module(location: str) -> Path:
    """The folder of a module's file, links followed; absolute folders resolved once per
    process, relative ones each time (their meaning follows the working folder)."""
    if os.path.isabs(location):
        return _real_folder(location, _REAL_FOLDERS)
    return _real(Path(location)).parent


_REAL_FOLDERS: dict[str, Path] = {}
"""The absolute folders of imported modules with their links followed, resolved once per
process: an agent built on a framework has thousands of modules (LangGraph with its OpenAI
client: ~1,700), and each reload after a save resolved all their folders again (40 ms of
CPU with four frameworks loaded; 22 ms now, most of it checking which files are links).
A folder replaced by a link while the app runs is seen after a restart."""


def _real_folder(location: str, seen: dict[str, Path]) -> Path:
    """`_real(Path(location)).parent`, resolving each folder once (`seen` keeps them). A
    file that is itself a link is followed, as `_real` would."""
    if os.path.islink(location):
        return _real(Path(location)).parent
    folder = os.path.dirname(location)
    real = seen.get(folder)
    if real is None:
        real = seen[folder] = _real(Path(folder))
    return real
