"""Atomic file writes: readers see the old file or the new one, never half of one; and
`folder_lock`, one writer at a time for a read-merge-write of a shared file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
FSYNC_VARIABLE = "TUI_EVAL_FSYNC"
"""Each write is fsynced before the rename (a crash of the machine leaves the old file or the
new one) unless this environment variable is `0`, as the tests set it."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def private_folder(folder: Path) -> None:
    """`mkdir -p folder`, where every folder it creates is its owner's only (0700)."""
    missing: list[Path] = []
    current = folder
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, PRIVATE_FOLDER)


def atomic_write_bytes(path: Path, data: bytes, *, private: bool = False) -> None:
    """Write `data` to `path` through a temp file, fsync and `os.replace`, with ordinary
    permissions (baselines and exports are shared), or 0600 in 0700 folders with `private`
    (what tui-eval keeps in its data folder)."""
    (error,) = atomic_write_all([(path, data)], private=private)
    if error is not None:
        raise error


def atomic_write_all(
    files: Sequence[tuple[Path, bytes]], *, private: bool = False
) -> list[OSError | None]:
    """`atomic_write_bytes` for several files at once: all written, then all fsynced (the
    file system commits them in fewer journal flushes), then each renamed into place; each
    is held open until then, so keep batches to tens of files. Returns per file None (in
    place) or the error that left it as it was; one file's error does not stop the others.
    """
    errors: list[OSError | None] = [None] * len(files)
    open_temps: dict[int, tuple[int, str]] = {}  # by the file's index: the fd and path
    try:
        for index, (path, data) in enumerate(files):
            try:
                open_temps[index] = _temp_file(path, data, private)
            except OSError as error:
                errors[index] = error
        if os.environ.get(FSYNC_VARIABLE) != "0":
            for index, (fd, _) in open_temps.items():
                try:
                    os.fsync(fd)
                except OSError as error:
                    errors[index] = error
        for index in list(open_temps):
            fd, tmp = open_temps.pop(index)
            try:
                os.close(fd)
                if errors[index] is None:
                    os.replace(tmp, files[index][0])
                    continue
            except OSError as error:
                errors[index] = error
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    finally:
        for fd, tmp in open_temps.values():  # left by an error that cut the batch short
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return errors


def _temp_file(path: Path, data: bytes, private: bool) -> tuple[int, str]:
    """A temp file beside `path` holding `data` with the mode `path` is to get, not yet
    fsynced: its open descriptor and its path."""
    if private:
        private_folder(path.parent)
        mode = PRIVATE_FILE
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd, tmp


def open_private(path: Path, mode: str) -> int:
    """Open `path` for appending (`"ab"`) or locking (`"a+b"`) as an owner-only file (0600,
    also when it existed with wider permissions); returns the descriptor."""
    flags = os.O_CREAT | os.O_APPEND | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    fd = os.open(path, flags, PRIVATE_FILE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, PRIVATE_FILE)
    return fd


@contextlib.contextmanager
def folder_lock(folder: Path, *, private: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on `folder` (created if missing) while the block runs, for a
    read-merge-write of a file there that several writers share. The lock is `flock` on the
    folder itself: no lock file beside committed files, and the OS releases it if the
    process dies. Without `fcntl` (Windows) the block runs unlocked.
    """
    if private:
        private_folder(folder)
    else:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases its lock
