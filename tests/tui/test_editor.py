"""`e` opens the editor: with arguments no file name can turn into options, and a broken
`$VISUAL`/`$EDITOR` is a notification, never a crash."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.editor import EditorError, editor_command
from tui_eval.tui.screens.case import CaseScreen

from .test_app_flow import wait_for, wait_until_done

pytestmark = pytest.mark.anyio

HOSTILE = "-c!touch PWNED.yaml"
"""A suite file whose name vim reads as `-c` followed by an Ex command running `touch`."""

SUITE = """\
name: hostile
cases:
  - input: hello
    script:
      - {text: "hello"}
    checks:
      - contains: hello
"""


def recording_vim(tmp_path: Path) -> tuple[str, Path]:
    """A `$VISUAL` called `vim` that writes the arguments it was given to a file (and
    edits nothing)."""
    record = tmp_path / "editor-args.json"
    script = tmp_path / "bin" / "vim"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    script.chmod(0o755)
    return str(script), record


async def open_case_and_press_e(app, pilot) -> None:
    await pilot.press("enter")  # run the suite
    await wait_until_done(pilot, app.screen)
    await pilot.press("enter")  # its case
    assert isinstance(app.screen, CaseScreen)
    await pilot.press("e")


async def test_a_file_name_that_looks_like_an_option_reaches_the_editor_as_a_file(
    tmp_path, monkeypatch
):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / HOSTILE).write_text(SUITE)
    visual, record = recording_vim(tmp_path)
    monkeypatch.setenv("VISUAL", visual)
    monkeypatch.chdir(folder)  # `tui-eval .`: the suite's path is relative
    app = make_app(["."], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_case_and_press_e(app, pilot)
        await wait_for(pilot, record.exists)
    arguments = json.loads(record.read_text())
    path = str(folder / HOSTILE)
    assert arguments[-2:] == ["--", path]  # a file name, after the end of options
    assert not any(a.startswith("-c") for a in arguments)
    assert not (folder / "PWNED.yaml").exists()


@pytest.mark.parametrize("editor", ["code --wait", "subl", "zed", "nano", "emacs -nw"])
def test_every_editor_gets_an_absolute_path(tmp_path, monkeypatch, editor):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VISUAL", editor)
    command = editor_command(Path(HOSTILE), 7)
    path = str(tmp_path / HOSTILE)
    assert any(argument.startswith(path) for argument in command)
    assert not any(argument.startswith("-c!") for argument in command)


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("VISUAL", 'vim "x', "VISUAL"),  # an unclosed quote
        ("VISUAL", "   ", "VISUAL"),  # set, but blank
        ("EDITOR", "'", "EDITOR"),
    ],
)
def test_a_malformed_editor_variable_is_an_error_that_names_it(monkeypatch, variable, value, said):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.setenv(variable, value)
    with pytest.raises(EditorError, match=rf"^\${said} "):
        editor_command(Path("s.yaml"), 1)


async def test_e_with_a_malformed_editor_variable_is_a_notification(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "s.yaml").write_text(SUITE)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.setenv("VISUAL", 'vim "x')  # an unclosed quote
    app = make_app([folder], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_case_and_press_e(app, pilot)
        await pilot.pause()
        assert isinstance(app.screen, CaseScreen)  # the app is still there
        messages = [n.message for n in app._recent_notifications]
        assert any("$VISUAL" in m and "editor" in m for m in messages), messages
