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
from tui_eval.cli.commands import request_from_args
from tui_eval.core.settings import RaySpec, SettingKeywords, settings_problem
from tui_eval.run.evaluation import Evaluation
from tui_eval.run.runner import recheck
from tui_eval.service.request import DecideRun, PlainRun, RunRequest
from tui_eval.suites.declarative import SuiteSettings
from tui_eval.suites.suite import SUITE_SETTINGS

FIELDS = RunSettings.model_fields
FRONT_ENDS = [evaluate, evaluate_iter, recheck, decide, compare_agents]


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda f: f.__name__)
def test_front_ends_take_every_setting_as_a_keyword_from_the_one_model(front_end):
    params = inspect.signature(front_end).parameters
    assert "settings" in params and not set(params) & set(FIELDS)  # no copy of a setting
    (given,) = [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert "Unpack[SettingKeywords]" in str(given.annotation)


def test_the_setting_keywords_are_the_models_fields_each_optional():
    keywords = typing.get_type_hints(SettingKeywords)
    assert keywords.keys() == FIELDS.keys()
    for name, field_type in typing.get_type_hints(RunSettings).items():
        plain = {
            typing.get_args(t)[0] if typing.get_origin(t) is typing.Annotated else t
            for t in _union(field_type) | {type(None)}
        }
        plain.discard(RaySpec)  # a suite run's executor: `evaluate` takes an Executor
        assert _union(keywords[name]) == plain, name


@pytest.mark.anyio
async def test_a_keyword_sets_its_setting_over_settings():
    seen = []
    report = await evaluate(
        lambda q: "ok",
        [tui_eval.Case("q", name="a")],
        settings=RunSettings(concurrency=2, max_cost=5.0),
        concurrency=1,
        price=lambda usage: seen.append(usage) or 0.5,
    )
    assert report.cost == 0.5 and len(seen) == 1


def _union(tp: object) -> set[object]:
    return set(typing.get_args(tp)) if typing.get_origin(tp) in (typing.Union, _UnionType) else {tp}


_UnionType = type(int | None)


def test_the_engine_takes_settings_only():
    params = inspect.signature(Evaluation.__init__).parameters
    assert "settings" in params and not set(params) & set(FIELDS)


def test_a_suite_holds_its_settings_as_run_settings_and_its_keywords_fold_into_them():
    keywords = inspect.signature(Suite).parameters
    for name in SUITE_SETTINGS:
        assert name in FIELDS and keywords[name].default is None, f"Suite({name}=...)"
        if name in SuiteSettings.model_fields:
            assert SuiteSettings.model_fields[name].default is None, f"YAML {name}"
    assert Suite("s").settings == RunSettings()
    suite = Suite("s", concurrency=8, settings=RunSettings(max_cost=1.0))
    assert suite.settings.given() == {"concurrency": 8, "max_cost": 1.0}
    assert suite.concurrency == 8 and suite.price is None  # read back from `settings`
    copy = dataclasses.replace(suite, cases=[])
    assert copy.settings == suite.settings
    with pytest.raises(ValueError, match="suite 's': concurrency must be at least 1, got 0"):
        Suite("s", concurrency=0)


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
    request = RunRequest(
        kind=DecideRun(against="r.json"),
        settings=RunSettings(concurrency=3, executor=RaySpec(workers=2)),
    )
    again = RunRequest.model_validate_json(request.model_dump_json())
    assert again == request
    assert again.settings.given() == {"concurrency": 3, "executor": RaySpec(workers=2)}
    assert RunRequest.model_validate({"filter": "x"}).kind == PlainRun()


def test_no_argparse_outside_the_cli():
    root = Path(tui_eval.__file__).parent
    users = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "import argparse" in path.read_text() and path.parts[-2] != "cli"
    )
    assert users == [], users
