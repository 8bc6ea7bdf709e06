"""Where things live on disk: baselines beside suites, run history and journals per project."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import platformdirs

HOME_ENV = "TUI_EVAL_HOME"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def data_root() -> Path:
    """The root of tui-eval's local state: `$TUI_EVAL_HOME` or the platform's data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir("tui-eval"))


def project_dir(project_root: Path) -> Path:
    """The state folder of one project, keyed by its root path."""
    resolved = project_root.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    return data_root() / "projects" / f"{resolved.name or 'root'}-{digest}"
