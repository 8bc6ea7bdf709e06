"""Every Python snippet of the README runs as pasted: as a script of its own, offline.

Each ```python block is run as `__main__` in a fresh namespace and an empty folder, with
no API key in the environment and every connection beyond this machine refused, so a
snippet that needs a key, the network, a name it never defines or a top-level `await`
fails here as it would for a reader.

A snippet that cannot run as pasted says so in an HTML comment on the line before it,
`<!-- not run: why -->`; keep that rare (what a snippet needs is better made offline with
the scripted provider). A snippet whose first line names a file (`# suites/support.py`)
is also written there and loaded as a suite file.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lazy import xdist_group

README = Path(__file__).resolve().parents[1] / "README.md"

NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>[^>]*?)\s*-->")
FILE_LINE = re.compile(r"#\s*(?P<path>[\w./-]+\.py)\s*$")

FRAMEWORKS = {"agents", "langgraph", "langchain_core", "langchain_openai", "pydantic_ai"}
"""A snippet importing a framework runs on the worker of the adapters' tests (their
`xdist_group`, from `tests.lazy`), which imports it anyway."""
OPTIONAL = {*FRAMEWORKS, "opentelemetry"}
"""Packages of the optional extras: a snippet needing one that is not installed is skipped."""


@dataclass(frozen=True)
class Snippet:
    line: int
    """The line of README.md the code starts on."""
    code: str
    not_run: str | None
    """Why it is not run (its `<!-- not run: ... -->` comment), else None."""


def snippets(text: str) -> list[Snippet]:
    """The ```python blocks of a Markdown text."""
    found = []
    lines = text.splitlines()
    inside: list[str] | None = None
    start = 0
    for number, line in enumerate(lines, 1):
        if inside is None:
            if line.strip() == "```python":
                inside, start = [], number + 1
            continue
        if line.strip() == "```":
            before = next(
                (lines[i].strip() for i in range(start - 3, -1, -1) if lines[i].strip()), ""
            )
            marked = NOT_RUN.fullmatch(before)
            found.append(Snippet(start, "\n".join(inside) + "\n", marked and marked["why"]))
            inside = None
            continue
        inside.append(line)
    return found


def _param(snippet: Snippet) -> object:
    imported = set(re.findall(r"^\s*(?:from|import)\s+(\w+)", snippet.code, re.MULTILINE))
    group = xdist_group(imported & FRAMEWORKS)
    marks = [pytest.mark.xdist_group(group)] if group else []
    return pytest.param(snippet, id=f"README.md:{snippet.line}", marks=marks)


SNIPPETS = snippets(README.read_text(encoding="utf-8"))


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key or judge model from the environment; connections only to this machine."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_KEY", "_TOKEN")) or name == "TUI_EVAL_JUDGE_MODEL":
            monkeypatch.delenv(name)
    connect = socket.socket.connect

    def local_only(sock: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else ""
        if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in (
            "127.0.0.1",
            "::1",
            "localhost",
        ):
            raise OSError(f"the README test is offline: no connection to {address}")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)


@pytest.mark.parametrize("snippet", [_param(s) for s in SNIPPETS])
def test_readme_snippet_runs_as_pasted(snippet: Snippet, tmp_path, monkeypatch, offline):
    if snippet.not_run is not None:
        pytest.skip(f"marked not run: {snippet.not_run}")
    monkeypatch.chdir(tmp_path)
    first = snippet.code.splitlines()[0]
    named = FILE_LINE.fullmatch(first.strip())
    code = compile(snippet.code, f"README.md:{snippet.line}", "exec")  # no top-level await
    try:
        exec(code, {"__name__": "__main__"})
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"needs {exc.name} (an optional extra), as tests.lazy skips")
    if named is not None:
        from tui_eval.suites import load_suites

        file = tmp_path / named["path"]
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(snippet.code, encoding="utf-8")
        loaded = load_suites([str(file)])
        assert loaded.suites and not loaded.errors, loaded.errors


def test_the_readme_has_snippets_and_few_are_not_run():
    assert len(SNIPPETS) >= 5
    not_run = [s for s in SNIPPETS if s.not_run is not None]
    assert len(not_run) <= 1, [f"README.md:{s.line}: {s.not_run}" for s in not_run]
    assert all(s.not_run for s in not_run)  # each says why


def test_snippets_are_found_with_their_marks():
    text = "a\n\n<!-- not run: needs a GPU -->\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
    first, second = snippets(text)
    assert (first.line, first.code, first.not_run) == (5, "x = 1\n", "needs a GPU")
    assert (second.line, second.code, second.not_run) == (9, "y = 2\n", None)


def test_the_functions_the_readme_says_take_settings_import_from_the_package_root():
    import tui_eval

    text = " ".join(README.read_text(encoding="utf-8").split())
    sentence = re.search(r"is the one settings object (.*?) take", text)
    assert sentence is not None
    names = re.findall(r"`(\w+)`", sentence[1])
    assert "recheck" in names
    for name in names:
        assert callable(getattr(tui_eval, name)), name
        assert name in tui_eval.__all__
