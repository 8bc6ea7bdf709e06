"""Where tui-eval keeps its local state: `$TUI_EVAL_HOME`, else the platform's data folder."""

from __future__ import annotations

import os
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
