"""One settings model: each run setting is defined, defaulted and validated once, in
`RunSettings`; every front-end builds it and none has a default of its own."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import typing
from pathlib import Path

import pytest

import tui_eval
from tui_eval import RunSettings, Suite, compare_agents, decide, evaluate, evaluate_iter
from tui_eval.cli import commands
from tui_eval.cli.requests import request_from_args
from tui_eval.core.settings import settings_problem
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.runner import recheck
from tui_eval.service.request import DecideRun, PlainRun, RunRequest
from tui_eval.suites.declarative import SuiteSettings
from tui_eval.suites.suite import SUITE_SETTINGS

FIELDS = RunSettings.model_fields
FRONT_ENDS = [evaluate, evaluate_iter, recheck, decide, compare_agents]


def _union(tp: object) -> set[object]:
    return set(typing.get_args(tp)) if typing.get_origin(tp) in (typing.Union, _UnionType) else {tp}


_UnionType = type(int | None)


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda f: f.__name__)
def test_front_end_keywords_default_to_not_given_and_take_the_settings_type(front_end):
    hints = typing.get_type_hints(front_end, include_extras=False)
    params = inspect.signature(front_end).parameters
    assert "settings" in params
    shared = [name for name in params if name in FIELDS]
    assert shared  # the test reads something
    for name in shared:
        assert params[name].default is None, f"{front_end.__name__}({name}=...) has a default"
        field_type = typing.get_type_hints(RunSettings)[name]
        expected = _union(field_type) | {type(None)}
        # A keyword takes what the setting takes (Annotated constraints aside).
        plain = {
            typing.get_args(t)[0] if typing.get_origin(t) is typing.Annotated else t
            for t in expected
        }
        assert _union(hints[name]) == plain, (front_end.__name__, name)


def test_the_engine_takes_settings_only():
    params = inspect.signature(Evaluation.__init__).parameters
    assert "settings" in params and not set(params) & set(FIELDS)


def test_suites_and_suite_files_give_settings_but_default_none():
    suite_fields = {f.name: f for f in dataclasses.fields(Suite)}
    for name in SUITE_SETTINGS:
        assert name in FIELDS
        assert suite_fields[name].default is None, f"Suite.{name}"
        if name in SuiteSettings.model_fields:
            assert SuiteSettings.model_fields[name].default is None, f"YAML {name}"
    assert Suite("s").settings == RunSettings()
    assert Suite("s", concurrency=8).settings.given() == {"concurrency": 8}


def _parsed(*argv: str) -> argparse.Namespace:
    return commands._parser().parse_args(["run", *argv])


def test_the_cli_gives_no_setting_unless_a_flag_is_given():
    assert request_from_args(_parsed()).settings.given() == {}
    given = request_from_args(_parsed("--concurrency", "8", "--max-cost", "2.5", "--cache"))
    assert given.settings.given() == {"concurrency": 8, "max_cost": 2.5, "cache": "on"}
    assert RunRequest().settings.given() == {}


def test_the_cli_validates_a_setting_with_the_models_validator():
    with pytest.raises(ValueError) as raised:
        RunSettings(concurrency=0)
    expected = settings_problem(raised.value)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        _parsed("--concurrency", "0")
    assert expected == "concurrency must be at least 1, got 0" and expected in err.getvalue()


def test_the_cli_help_states_the_models_defaults():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        commands._parser().parse_args(["run", "--help"])
    assert f"(default {FIELDS['max_samples'].default})" in " ".join(out.getvalue().split())


def test_layers_combine_given_settings_only():
    suite = RunSettings(concurrency=2, max_cost=1.0)
    cli = RunSettings(max_cost=3.0)
    merged = RunSettings().over(suite, cli)
    assert (merged.concurrency, merged.max_cost, merged.cache) == (2, 3.0, "off")


def test_a_request_journals_its_kind_and_given_settings():
    request = RunRequest(kind=DecideRun(against="r.json"), settings=RunSettings(concurrency=3))
    again = RunRequest.model_validate_json(request.model_dump_json())
    assert again == request and again.settings.given() == {"concurrency": 3}
    assert RunRequest.model_validate({"filter": "x"}).kind == PlainRun()


def test_no_argparse_outside_the_cli():
    root = Path(tui_eval.__file__).parent
    users = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "import argparse" in path.read_text() and path.parts[-2] != "cli"
    )
    assert users == [], users
