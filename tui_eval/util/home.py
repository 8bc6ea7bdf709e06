"""Where tui-eval keeps its local state: `$TUI_EVAL_HOME`, else the platform's data folder."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import platformdirs

HOME_ENV = "TUI_EVAL_HOME"


def data_root() -> Path:
    """The root of tui-eval's local state: `$TUI_EVAL_HOME` or the platform's data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir("tui-eval"))


def in_data_root(path: Path) -> bool:
    """Whether `path` is inside the data root (and so must be its owner's only)."""
    root = os.path.abspath(data_root())
    return os.path.abspath(path).startswith(root.rstrip(os.sep) + os.sep)


def private_subfolder(name: str) -> Path:
    """`data_root()/name` (`projects`, `cache`), created or tightened to owner-only (0700)
    so what an older tui-eval left readable is not; the root itself may be one's own choice,
    so it is left as it is."""
    folder = data_root() / name
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    mode = folder.stat().st_mode
    if mode & 0o077:
        with contextlib.suppress(OSError):  # not ours to change: leave it
            os.chmod(folder, stat.S_IMODE(mode) & 0o700)
    return folder
