"""`SuiteSet`: the suites a front-end has loaded, reloaded after their files are edited."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import sniffio

from tui_eval.suites import LoadError, LoadResult, Suite, load_suites
from tui_eval.suites.discovery import SUITE_SUFFIXES, is_suite_file, not_a_suite_file, real_path


@dataclass(kw_only=True)
class SuiteSet:
    """Loaded suites that follow their files' edits.

    Attributes:
        loaded: the suites found (and the files that failed to load).
        edit_errors: suite files whose latest edit does not load (the previous version
            stays in use), with the error.
        reloaded: suites reloaded after an edit and not yet run since.
    """

    loaded: LoadResult
    edit_errors: dict[Path, LoadError] = field(default_factory=dict)
    reloaded: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._contents: dict[Path, str | None] = {}
        """Each edited file's content hash: saving it again unchanged is not an edit."""
        self._folders: dict[Path, Path] = {}
        """Each suite folder (links followed) as the user named it, for new files' names."""
        for path in self._files():
            self._folders.setdefault(real_path(path.parent), path.parent)
        self._real_folders: dict[str, Path] = {}
        """Imported modules' folders with links followed, resolved once: a framework agent
        has thousands of modules, and each reload looks at every one."""
        self._places: dict[str, int] = {}
        """Where the suites of gone files were listed: a rename takes the same place."""

    def _files(self) -> list[Path]:
        """The suite files loaded, and those that failed to load."""
        files = [s.path for s in self.loaded.suites if s.path is not None]
        return files + [e.path for e in self.loaded.errors]

    def _as_named(self, key: Path) -> Path:
        """The file `key` (absolute, links followed) as the user named its folder."""
        folder = self._folders.get(key.parent)
        return key if folder is None else folder / key.name

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
        folders = {real_path(f.parent) if f.suffix else real_path(f) for f in self._files()}
        return sorted(f for f in folders if f.exists())

    def reload(self, changed: set[Path]) -> Reload:
        """Reload the suite files affected by `changed` files.

        A gone file takes its suites with it. A changed suite file is loaded again, and so
        is every suite file beside a changed helper module; only the suites that changed
        or import a changed helper count as reloaded. A file whose new version does not
        load keeps its previous suites, with the error in `edit_errors`.
        """
        result = Reload()
        self._drop_gone(changed, result)
        known = {_identity(path): path for path in self._files()}
        edited = {key for key in map(_identity, changed) if _is_edit(key) and self._new(key)}
        helpers = {
            p for p in edited if p not in known and p.suffix == ".py" and not is_suite_file(p)
        }
        files = {known[p] for p in edited if p in known}
        files |= {
            self._as_named(p)
            for p in edited - helpers
            if p not in known and os.path.lexists(p) and is_suite_file(p)
        }
        helper_folders = {p.parent for p in helpers}
        files |= {path for key, path in known.items() if key.parent in helper_folders}
        for file in sorted(files, key=str):
            fresh, imported = _load_with_imports(file, self._real_folders)
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
        for name in list(result.removed):
            if self.suite(name) is not None:  # defined again (a rename): not gone
                del result.removed[name]
        self.reloaded |= result.names
        return result

    def _drop_gone(self, changed: set[Path], result: Reload) -> None:
        """Forget the suites (and `changed` files' load errors) of files no longer there."""
        changed_keys = {_identity(path) for path in changed}
        gone = {
            path
            for path in self._files()
            if not os.path.lexists(path)
            and (_identity(path) in changed_keys or any(s.path == path for s in self.loaded.suites))
        }
        if not gone:
            return
        for place, suite in enumerate(self.loaded.suites):
            if suite.path in gone:
                result.removed[suite.name] = suite.path
                self._places[suite.name] = place
                self.reloaded.discard(suite.name)
        self.loaded.suites = [s for s in self.loaded.suites if s.path not in gone]
        self.loaded.errors = [e for e in self.loaded.errors if e.path not in gone]
        for path in gone:
            self.edit_errors.pop(path, None)

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
        """Put `file`'s new suites where its old ones (or a gone file's of a name) were."""
        self._folders.setdefault(real_path(file.parent), file.parent)
        old = [i for i, s in enumerate(self.loaded.suites) if s.path == file]
        places = [self._places.pop(s.name) for s in suites if s.name in self._places]
        at = old[0] if old else min(places, default=len(self.loaded.suites))
        kept = [s for s in self.loaded.suites if s.path != file]
        self.loaded.suites = kept[:at] + suites + kept[at:]


async def file_changes(
    folders: list[Path], *, stop: anyio.Event, ready: anyio.Event | None = None
) -> AsyncIterator[set[Path]]:
    """The files changed in `folders` (recursively), a batch per burst of saves, until
    `stop` is set. `ready` is set once edits are being kept (the folders are registered)."""
    from watchfiles import awatch

    # The watching thread cannot be interrupted, only asked to stop (stop_event) or to
    # come back empty-handed: a short timeout lets the caller quit at once.
    watching = awatch(
        *folders, debounce=400, step=50, recursive=True, rust_timeout=200, stop_event=stop
    )
    # awatch registers the folders (from then on every edit is kept for its next batch)
    # in the first step of the iteration, before that step first waits (for its thread):
    # a callback queued now runs once the folders are registered.
    if ready is not None:
        _call_soon(ready.set)
    async for batch in watching:
        yield {Path(path) for _, path in batch}


def _call_soon(callback: Callable[[], object]) -> None:
    """Run `callback` on this event loop as soon as the running task next waits."""
    if sniffio.current_async_library() == "trio":
        import trio

        trio.lowlevel.current_trio_token().run_sync_soon(callback)
    else:
        asyncio.get_running_loop().call_soon(callback)


@dataclass
class Reload:
    """What a reload after an edit did.

    Attributes:
        names: the suites reloaded.
        errors: the files whose new version does not load.
        removed: the suites whose file is gone, with that file.
    """

    names: set[str] = field(default_factory=set)
    errors: list[LoadError] = field(default_factory=list)
    removed: dict[str, Path] = field(default_factory=dict)


NOT_EDITS = {"__baselines__", "__labels__", "__pycache__", ".git"}
"""Folders whose files the app or tools write: a change there is not an edit of a suite."""


def _identity(path: Path) -> Path:
    """One name per file, however given; the file itself is not followed (a link loop)."""
    return real_path(path.parent) / path.name


def _is_edit(path: Path) -> bool:
    if any(part in NOT_EDITS for part in path.parts):
        return False
    return path.suffix in SUITE_SUFFIXES and not path.name.startswith(".")


def _load_with_imports(file: Path, seen: dict[str, Path]) -> tuple[LoadResult, set[Path]]:
    """Load one suite file with its folder's modules imported afresh; also returns the
    helper files of that folder it imported."""
    folder = real_path(file.parent)
    _forget_modules({folder}, seen)
    before = set(sys.modules)
    problem = not_a_suite_file(file)
    if problem is not None:
        return LoadResult(errors=[LoadError(file, problem)]), set()
    fresh = load_suites([file])
    imported = set()
    for name in set(sys.modules) - before:
        location = getattr(sys.modules.get(name), "__file__", None)
        if location and _folder_of_module(location, seen) == folder:
            imported.add(_identity(Path(location)))
    return fresh, imported


def _forget_modules(folders: set[Path], seen: dict[str, Path]) -> None:
    """Drop imported modules that live in `folders`, so the next import reads the edit."""
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None)
        if location and _folder_of_module(location, seen) in folders:
            del sys.modules[name]


def _folder_of_module(location: str, seen: dict[str, Path]) -> Path:
    """The folder of a module's file, links followed; only absolute folders are cached in
    `seen` (a relative one follows the working folder, a linked file may change)."""
    if not os.path.isabs(location) or os.path.islink(location):
        return real_path(Path(location)).parent
    folder = os.path.dirname(location)
    real = seen.get(folder)
    if real is None:
        real = seen[folder] = real_path(Path(folder))
    return real
