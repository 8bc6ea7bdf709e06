"""One base class for every exception tui-eval defines, and one table of exit codes."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import tui_eval
from tui_eval.cli.exit_codes import EXIT_FAILED, EXIT_USAGE, exit_code_for
from tui_eval.report.report import ReportFileError
from tui_eval.run.sample_runner import error_text
from tui_eval.util.errors import TuiEvalError

CLI = Path(tui_eval.__file__).parent / "cli"


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for module_info in pkgutil.walk_packages(tui_eval.__path__, "tui_eval."):
        if module_info.name.endswith("__main__"):
            continue  # it runs the CLI
        module = importlib.import_module(module_info.name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        ]
    return found


def test_every_exception_tui_eval_defines_derives_from_one_base() -> None:
    classes = _exception_classes()
    assert len(classes) > 30  # the walk found them
    assert [c.__qualname__ for c in classes if not issubclass(c, TuiEvalError)] == []
    assert tui_eval.TuiEvalError is TuiEvalError


def test_errors_that_replaced_a_builtin_are_still_caught_as_it() -> None:
    with pytest.raises(ValueError):  # users' `except ValueError` keeps working
        raise ReportFileError("report.json: not a report")


def test_the_cli_maps_errors_to_exit_codes_only_through_the_table() -> None:
    assert exit_code_for(ReportFileError("x")) == EXIT_USAGE
    assert exit_code_for(RuntimeError("unexpected")) == EXIT_USAGE
    assert exit_code_for(KeyboardInterrupt()) == EXIT_FAILED
    for path in CLI.glob("*.py"):
        for handler in ast.walk(ast.parse(path.read_text())):
            if not isinstance(handler, ast.ExceptHandler):
                continue
            returned = [
                node.value.id
                for node in ast.walk(handler)
                if isinstance(node, ast.Return)
                and isinstance(node.value, ast.Name)
                and node.value.id.startswith("EXIT_")
            ]
            assert returned == [], f"{path.name}:{handler.lineno} maps an error by itself"


def test_a_sample_error_names_our_error_inside_an_sdks_by_its_type() -> None:
    class Ours(TuiEvalError):  # defined outside tui_eval: the type says it is ours
        pass

    try:
        try:
            raise Ours("header 'x' cannot be sent")
        except Ours as inner:
            raise ConnectionError("Connection error.") from inner
    except ConnectionError as exc:
        assert error_text(exc) == (
            "ConnectionError: Connection error. (caused by Ours: header 'x' cannot be sent)"
        )
