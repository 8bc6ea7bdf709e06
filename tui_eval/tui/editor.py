"""`e`: open a suite file in the user's editor at a case, with the app suspended meanwhile."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from textual.app import App, SuspendNotSupported

from tui_eval.util.errors import TuiEvalError


def case_line(path: Path, name: str) -> int:
    """The 1-based line of `path` where case `name` (up to any "…" cut) is written, else 1."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 1
    needle = name.split("…")[0].strip()
    if not needle:
        return 1
    escaped = json.dumps(needle, ensure_ascii=False)[1:-1]  # as JSON and Python write it
    for number, line in enumerate(lines, 1):
        if needle in line or escaped in line:
            return number
    return 1


OPTIONS_END = frozenset({"vi", "vim", "nvim", "gvim", "view", "nano"})
"""Editors known to read `--` as the end of their options."""


class EditorError(TuiEvalError):
    """`$VISUAL`/`$EDITOR` does not hold a command line (an unclosed quote, only blanks)."""


def editor_command(path: Path, line: int) -> list[str]:
    """`$VISUAL`, else `$EDITOR`, else `vi`, opening `path` at `line`: an absolute path, after
    `--` where the editor reads it, so no file name can reach the editor as an option.

    Raises:
        EditorError: the variable is not a command line.
    """
    variable, value = next(
        ((name, os.environ[name]) for name in ("VISUAL", "EDITOR") if os.environ.get(name)),
        ("", "vi"),
    )
    try:
        editor = shlex.split(value)
    except ValueError as exc:
        raise EditorError(f"${variable} is not a command line ({exc}): {value!r}") from None
    if not editor:
        raise EditorError(f"${variable} is blank: set it to your editor's command")
    file = os.path.abspath(path)  # never starts with "-" or "+"
    program = Path(editor[0]).name
    if program in ("code", "code-insiders", "codium", "cursor"):
        return [*editor, "--goto", f"{file}:{line}"]
    if program in ("subl", "zed"):
        return [*editor, f"{file}:{line}"]
    if program in OPTIONS_END:
        return [*editor, f"+{line}", "--", file]
    return [*editor, f"+{line}", file]  # emacs, micro, helix...


def edit_case(app: App[object], path: Path, name: str) -> None:
    """Open `path` at case `name` in the editor, the app suspended until it exits."""
    try:
        command = editor_command(path, case_line(path, name))
    except EditorError as exc:
        app.notify(f"cannot start the editor: {exc}", severity="error")
        return
    try:
        try:
            with app.suspend():
                subprocess.run(command, check=False)
        except SuspendNotSupported:
            if not app.is_headless:
                app.notify(
                    f"this terminal cannot hand over to an editor: open {path} yourself",
                    severity="warning",
                )
                return
            subprocess.run(command, check=False)  # tests: no terminal to hand over
    except OSError as exc:
        app.notify(f"cannot start the editor {command[0]!r}: {exc}", severity="error")
