"""Which imported modules a reload forgets: the per-folder shortcut gives exactly what
resolving every module's own file gives, links included."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from tui_eval.service.suite_set import _folder_of_module, _forget_modules
from tui_eval.suites.discovery import real_path


def _import(name: str, path: Path) -> None:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def test_each_modules_folder_is_the_folder_of_its_resolved_file(tmp_path, monkeypatch):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "helper.py").write_text("X = 1\n")
    (suites / "linked_target.py").write_text("X = 2\n")
    (tmp_path / "via_link").symlink_to(suites, target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "alias.py").symlink_to(suites / "linked_target.py")
    (elsewhere / "other.py").write_text("X = 3\n")
    (elsewhere / "points_away.py").symlink_to(elsewhere / "other.py")
    (suites / "away.py").symlink_to(elsewhere / "other.py")
    monkeypatch.chdir(tmp_path)
    names = {
        "_ws_helper_via_link": tmp_path / "via_link" / "helper.py",
        "_ws_alias": elsewhere / "alias.py",
        "_ws_other": elsewhere / "other.py",
        "_ws_points_away": elsewhere / "points_away.py",
        "_ws_away": suites / "away.py",
        "_ws_relative": Path("suites") / "helper.py",
    }
    for name, path in names.items():
        monkeypatch.delitem(sys.modules, name, raising=False)
        _import(name, path)

    seen: dict[str, Path] = {}
    for module in list(sys.modules.values()):
        location = getattr(module, "__file__", None)
        if location:
            assert _folder_of_module(location, seen) == real_path(Path(location)).parent, location

    _forget_modules({real_path(suites)}, {})
    forgotten = {name for name in names if name not in sys.modules}
    assert forgotten == {"_ws_helper_via_link", "_ws_alias", "_ws_relative"}
