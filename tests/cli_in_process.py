"""The CLI as a user runs it, but in this process.

A subprocess per call costs ~0.8 s of CPU just to import the package, more than most of
what the tests check; only tests about a process (kill, signals, locks, start-up) spawn
one. This runs `tui_eval.cli.commands.main` with the given working folder, environment, stdout and
stderr, and gives back what a subprocess would: the exit code and the two streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import sys
import threading
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
    signature's sake (the run's own budgets bound it).

    Called from a test that is itself async (an event loop runs in this thread), the CLI
    runs in a thread of its own and this call blocks until it ends, as a subprocess would.
    """
    del timeout
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(args, cwd, env)
    done: list[Completed | BaseException] = []

    def work() -> None:
        try:
            done.append(_run(args, cwd, env))
        except BaseException as error:  # handed to the caller below
            done.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def _run(args: tuple[str, ...], cwd: Path, env: dict[str, str] | None) -> Completed:
    from tui_eval.cli.commands import main

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
