"""The CLI as a user runs it, but in this process.

A subprocess per call costs ~0.8 s of CPU just to import the package, more than most of
what the tests check; only tests about a process (kill, signals, locks, start-up) spawn
one. This runs `tui_eval.cli.main` with the given working folder, environment, stdout and
stderr, and gives back what a subprocess would: the exit code and the two streams.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


class _Stream(io.StringIO):
    """A captured stream that says it is not a terminal, as a pipe would."""

    def isatty(self) -> bool:
        return False


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60) -> Completed:
    """Run `tui-eval ARGS` in this process; `timeout` is accepted for the subprocess
    signature's sake (the run's own budgets bound it)."""
    del timeout
    from tui_eval.cli import main

    out, err = _Stream(), _Stream()
    saved_env, saved_cwd, saved_argv = dict(os.environ), Path.cwd(), sys.argv
    os.environ.update(env or {})
    os.chdir(cwd)
    sys.argv = ["tui-eval", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = (
                    exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
                )
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Completed(code, out.getvalue(), err.getvalue())
