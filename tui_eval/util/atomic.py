"""Atomic file writes (readers see the old file or the new one, never half) and
`folder_lock` (one writer at a time for a read-merge-write)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
FSYNC_VARIABLE = "TUI_EVAL_FSYNC"
"""Each write is fsynced before the rename (surviving a machine crash) unless this is `0`."""


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
    """Write `data` through a temp file beside `path`, fsync and `os.replace`: ordinary
    permissions (baselines are shared), or 0600 in 0700 folders if `private`."""
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
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if os.environ.get(FSYNC_VARIABLE) != "0":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def open_private(path: Path, mode: str) -> int:
    """Open `path` (`"ab"` or `"a+b"`) as an owner-only file (0600, even if it was wider)."""
    flags = os.O_CREAT | os.O_APPEND | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    fd = os.open(path, flags, PRIVATE_FILE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, PRIVATE_FILE)
    return fd


@contextlib.contextmanager
def folder_lock(folder: Path, *, private: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on `folder` (created if missing) while the block runs: `flock`
    on the folder itself (no lock file beside committed files; released if the process
    dies). Without `fcntl` (Windows) the block runs unlocked."""
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
