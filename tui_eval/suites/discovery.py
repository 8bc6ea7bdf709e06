"""Finding and loading suites, pytest-style: files and folders, each error kept to its file."""

from __future__ import annotations

import errno
import functools
import hashlib
import importlib.util
import stat
import sys
import sysconfig
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tui_eval.core.cases import Case
from tui_eval.suites.declarative import SuiteFileError, load_jsonl_suite, load_yaml_suite
from tui_eval.suites.suite import Suite
from tui_eval.util.secrets import redact

SUITE_SUFFIXES = (".py", ".yaml", ".yml", ".jsonl")
SKIP_DIRS = {"__baselines__", "__pycache__", "node_modules", "venv", "site-packages"}


@dataclass(slots=True)
class LoadError:
    """A suite file that could not be loaded, and why."""

    path: Path
    message: str
    detail: str = ""

    def __str__(self) -> str:
        return self.message


@dataclass(slots=True)
class LoadResult:
    """Every suite found, and every file that failed to load."""

    suites: list[Suite] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)


def find_suite_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[LoadError]]:
    """Expand files and folders into candidate suite files, in a stable order: regular files
    only (a FIFO named `x.yaml` would block forever), each folder walked once (link loops)."""
    files: list[Path] = []
    errors: list[LoadError] = []
    visited: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(_walk(path, visited))
        elif path.exists() and not path.is_file():
            errors.append(LoadError(path, f"{path}: not a regular file (a FIFO or device?)"))
        elif path.is_file():
            if path.suffix in SUITE_SUFFIXES:
                files.append(path)
            else:
                errors.append(
                    LoadError(
                        path, f"{path}: not a suite file (expected {', '.join(SUITE_SUFFIXES)})"
                    )
                )
        else:
            errors.append(LoadError(path, f"{path}: no such file or folder"))
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values()), errors


def _walk(folder: Path, visited: set[Path]) -> Iterator[Path]:
    try:
        real = folder.resolve()
        entries = sorted(folder.iterdir())
    except (OSError, RuntimeError):  # unreadable, or a symlink loop
        return
    if real in visited:
        return
    visited.add(real)
    for entry in entries:
        if (entry.name.startswith((".", "_")) and entry.is_dir()) or entry.name in SKIP_DIRS:
            continue
        if entry.is_dir():
            yield from _walk(entry, visited)
        elif entry.is_file() and is_suite_file(entry):  # never a FIFO, socket or device
            yield entry


def is_suite_file(path: Path) -> bool:
    """Whether discovery loads `path` from a folder (Python files named `_*` are helpers)."""
    if path.suffix in (".yaml", ".yml", ".jsonl"):
        return True
    return path.suffix == ".py" and not path.name.startswith("_") and _mentions_suite(path)


def not_a_suite_file(path: Path) -> str | None:
    """Why `path`, though there, is no readable suite file (a folder, a FIFO...), or None."""
    try:
        mode = path.stat().st_mode
    except RuntimeError:
        return f"{path}: a symbolic link loop, not a suite file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path}: a symbolic link loop, not a suite file"
        return None if not path.is_symlink() else f"{path}: a link to nothing ({exc.strerror})"
    if stat.S_ISDIR(mode):
        return f"{path}: a folder now, not a suite file"
    if not stat.S_ISREG(mode):
        return f"{path}: not a regular file (a FIFO or device?)"
    return None


def _mentions_suite(path: Path) -> bool:
    try:
        return "Suite" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True


def load_suites(paths: Iterable[str | Path]) -> LoadResult:
    """Load every suite under `paths`; a broken file is recorded and never stops the others."""
    files, errors = find_suite_files(paths)
    result = LoadResult(errors=errors)
    for file in files:
        try:
            suites = load_file(file)
        except SuiteFileError as exc:
            result.errors.append(LoadError(file, redact(str(exc))))
            continue
        except SystemExit as exc:  # sys.exit() at import time must not end the app or CLI
            result.errors.append(
                LoadError(file, f"{file}: the file called sys.exit({exc.code!r}) while importing")
            )
            continue
        except Exception as exc:  # a suite module that raised while importing
            result.errors.append(
                LoadError(
                    file,
                    redact(f"{file}: {type(exc).__name__}: {exc}"),
                    redact(traceback.format_exc()),
                )
            )
            continue
        for suite in suites:
            dupes = suite.duplicate_names()
            if dupes:
                result.errors.append(
                    LoadError(
                        file,
                        f"{file}: suite {suite.name!r}: duplicate case names {dupes[:5]}; give them distinct names",
                    )
                )
            else:
                result.suites.append(suite)
    names: dict[str, Path] = {}
    for suite in list(result.suites):
        if suite.name in names and suite.path != names[suite.name]:
            result.errors.append(
                LoadError(
                    suite.path or Path("."),
                    f"{suite.path}: suite name {suite.name!r} is also used by {names[suite.name]}",
                )
            )
            result.suites.remove(suite)
        else:
            names[suite.name] = suite.path or Path(".")
    return result


def load_file(path: Path) -> list[Suite]:
    """Load the suites of one file. Raises `SuiteFileError` (or what the module raised)."""
    import_from_folder_of(path)
    if path.suffix in (".yaml", ".yml"):
        return [load_yaml_suite(path)]
    if path.suffix == ".jsonl":
        return [load_jsonl_suite(path)]
    return load_python_suites(path)


def import_from_folder_of(path: Path) -> None:
    """Make `path`'s folder the first place imports look (`import helpers`: the one beside)."""
    folder = real_path(path).parent
    entry = str(folder)
    if sys.path[:1] != [entry]:
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    _forget_namesakes(folder)


def _forget_namesakes(folder: Path) -> None:
    """Drop modules named like one of `folder`'s but imported from elsewhere (not installed)."""
    try:
        names = {
            entry.stem if entry.suffix == ".py" else entry.name
            for entry in folder.iterdir()
            if entry.suffix == ".py" or (entry / "__init__.py").is_file()
        }
    except OSError:
        return
    for name in names:
        location = getattr(sys.modules.get(name), "__file__", None)
        if location is None:
            continue
        real = real_path(Path(location))
        home = real.parent.parent if real.name == "__init__.py" else real.parent
        if home == folder or any(real.is_relative_to(p) for p in _installed()):
            continue
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


@functools.cache
def _installed() -> tuple[Path, ...]:
    """The folders installed packages live in."""
    return tuple(
        real_path(Path(p)) for key, p in sysconfig.get_paths().items() if key.endswith("lib")
    )


def real_path(path: Path) -> Path:
    """`path` made absolute with its links followed, when they can be (a loop cannot)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def load_python_suites(path: Path) -> list[Suite]:
    """Import a Python file and collect its module-level `Suite` objects."""
    resolved = path.resolve()  # its folder is importable: `load_file` put it first
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    module_name = f"tui_eval_suite_{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise SuiteFileError(f"{path}: cannot import this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        raise SuiteFileError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    suites = []
    for value in vars(module).values():
        if isinstance(value, Suite) and value not in suites:
            if value.path is None:
                value.path = path
            suites.append(value)
    if not suites:
        raise SuiteFileError(
            f"{path}: no Suite defined (define `suite = Suite(name, agent=..., cases=[...])`)"
        )
    for suite in suites:
        problem = suite_problem(suite)
        if problem is not None:
            raise SuiteFileError(f"{path}: suite {suite.name!r}: {problem}")
    return suites


def suite_problem(suite: Suite) -> str | None:
    """What makes a suite defined in code unrunnable, in words; None if nothing does."""
    if not isinstance(suite.name, str) or not suite.name.strip():
        return "its name must be non-empty text"
    if not suite.cases:
        return "it has no cases"
    for index, case in enumerate(suite.cases):
        if not isinstance(case, Case):
            return f"cases[{index}] is a {type(case).__name__}, not a Case"
    if suite.agent is None and not suite.skip:
        return "it has no agent (Suite(name, agent=..., cases=[...]))"
    return None
