"""`tui-eval --watch FOLDER` without a terminal (and `run --headless --watch`): every
suite runs, then a save reruns whichever suite it touches — not only the first."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SUITE = """
from tui_eval import Case, Suite, contains

async def agent(question: str) -> str:
    return "ANSWER"

suite = Suite("NAME", agent=agent, cases=[Case("q", checks=[contains("yes")])])
"""


def write(folder: Path, name: str, answer: str) -> Path:
    path = folder / f"{name}_suite.py"
    path.write_text(SUITE.replace("NAME", name).replace("ANSWER", answer, 1))
    return path


class Lines:
    """A process's stdout, line by line, waited for without guessing how long things take."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def until(self, text: str) -> None:
        while True:
            try:
                line = self._lines.get(timeout=300)  # a stuck process, not a slow one
            except queue.Empty:
                raise AssertionError(f"no {text!r} in {self.seen}") from None
            if line is None:
                raise AssertionError(f"exited before {text!r}: {self.seen}")
            self.seen.append(line)
            if text in line:
                return


@pytest.mark.parametrize("argv", [["--watch"], ["run", "--headless", "--watch"]])
def test_a_save_reruns_whichever_suite_it_touches(tmp_path, argv):
    folder = tmp_path / "suites"
    folder.mkdir()
    write(folder, "alpha", "yes")
    second = write(folder, "beta", "yes")
    env = {**os.environ, "TUI_EVAL_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval", *argv, "suites"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = Lines(proc)
    try:
        lines.until("watching")
        assert sum("1/1 cases passed" in line for line in lines.seen) == 2  # both ran
        # The second suite (not the first) is edited: it now fails, and only it reruns.
        second.write_text(second.read_text().replace('return "yes"', 'return "no"'))
        lines.until("beta: reloaded after an edit")
        lines.until("0/1 cases passed")
        assert not any("alpha: reloaded" in line for line in lines.seen)
        (folder / "alpha_suite.py").unlink()  # a suite deleted while watched says so
        lines.until("alpha: its file is gone; no longer watched")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"Ctrl+C did not end the watch: {lines.seen}") from None
    # Ctrl+C ends the watch; the exit code is that of each suite's latest run.
    assert proc.returncode == 1, lines.seen


def test_watch_does_not_write_ci_files(tmp_path):
    from tests.cli_in_process import cli

    result = cli("run", "suites", "--watch", "--junit", "j.xml", cwd=tmp_path)
    assert result.returncode == 2 and "--watch" in result.stderr
