"""Suite files renamed or deleted while the app is open: a file gone is a file whose suites
go, a renamed file loads under its new name, and messages name files as the user did."""

from __future__ import annotations

import pytest

from tui_eval.service.store import RunHistory
from tui_eval.service.suite_set import SuiteSet
from tui_eval.suites import load_suites
from tui_eval.tui.app import make_app

from .test_app import screen_text
from .test_app_flow import FileWatch, suite_folder, wait_for

pytestmark = pytest.mark.anyio


def rows(app) -> list[str]:
    """The suite names of the Suites screen's rows, in order."""
    from tui_eval.tui.widgets.table import Table

    table = app.screen.query_one(Table)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_a_deleted_suite_file_takes_its_row_with_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite_folder(tmp_path)
    app = make_app(["suites"], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await FileWatch(app).up()
        assert rows(app) == ["editable", "plain"]
        (tmp_path / "suites" / "plain_suite.py").unlink()
        await wait_for(pilot, lambda: rows(app) == ["editable"])
        assert app.workspace.suite("plain") is None
        assert not app.workspace.edit_errors and not app.workspace.loaded.errors
        shown = screen_text(app)
        assert "no such file" not in shown and "previous version" not in shown
        messages = " ".join(n.message for n in app._recent_notifications)
        assert "plain" in messages and "suites/plain_suite.py" in messages
        assert str(tmp_path) not in messages  # named as the user named the folder


async def test_a_renamed_suite_file_loads_under_its_new_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite_folder(tmp_path)
    app = make_app(["suites"], history=RunHistory(tmp_path / "home"))
    async with app.run_test(size=(120, 40)) as pilot:
        await FileWatch(app).up()
        folder = tmp_path / "suites"
        (folder / "editable_suite.py").rename(folder / "zz_suite.py")
        await wait_for(
            pilot,
            lambda: (
                (suite := app.workspace.suite("editable")) is not None
                and suite.path is not None
                and suite.path.name == "zz_suite.py"
            ),
        )
        assert rows(app) == ["editable", "plain"]  # one row, where it was
        assert not app.workspace.edit_errors and not app.workspace.loaded.errors
        assert "also used by" not in screen_text(app)
        suite = app.workspace.suite("editable")
        assert suite is not None and str(suite.path) == "suites/zz_suite.py"


def test_a_rename_seen_in_two_batches_in_either_order_keeps_one_suite(tmp_path, monkeypatch):
    """The watcher may report the new name before the old one is gone, or after."""
    monkeypatch.chdir(tmp_path)
    folder = suite_folder(tmp_path)
    for new_first in (True, False):
        suites = SuiteSet(loaded=load_suites(["suites"]))
        old, new = folder / "plain_suite.py", folder / f"moved_{new_first}_suite.py"
        if not old.exists():
            (folder / "renamed.tmp").rename(old)
        old.rename(new)
        batches = [{new}, {old}] if new_first else [{old}, {new}]
        for batch in batches:
            result = suites.reload(batch)
            assert not result.errors, [e.message for e in result.errors]
        assert [s.name for s in suites.loaded.suites] == ["editable", "plain"]
        assert suites.suite("plain").path.name == new.name  # type: ignore[union-attr]
        new.rename(folder / "renamed.tmp")


def test_an_edit_error_of_a_deleted_file_goes_with_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = suite_folder(tmp_path)
    suites = SuiteSet(loaded=load_suites(["suites"]))
    broken = folder / "plain_suite.py"
    broken.write_text("this is not python\n")
    assert suites.reload({broken}).errors  # the previous version stays in use
    assert suites.edit_errors
    broken.unlink()
    result = suites.reload({broken})
    assert set(result.removed) == {"plain"} and not result.errors
    assert not suites.edit_errors and suites.suite("plain") is None
