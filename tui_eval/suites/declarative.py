"""Declarative suites: YAML (and JSONL for large datasets) validated with pydantic; the format
is README's "Suites" and the generated `suite.schema.json`."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from tui_eval.agents.adapters.otlp import TraceFileError
from tui_eval.agents.agent import Agent
from tui_eval.agents.http.cache import CacheMode
from tui_eval.agents.http.options import ProviderOptions
from tui_eval.agents.messages import Usage
from tui_eval.agents.providers.scripted import ScriptedProvider, ScriptStep, call, text
from tui_eval.agents.state import is_sqlite
from tui_eval.agents.users import ScriptedUser, SimulatedUser, User
from tui_eval.checks.registry import CheckSpec, CheckSpecError, build_check
from tui_eval.core.cases import Case
from tui_eval.core.settings import Count, Dollars
from tui_eval.suites.recorded import recorded_cases
from tui_eval.suites.suite import Suite
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import validation_error_at, validation_message
from tui_eval.util.yaml_files import load_yaml

SCHEMA_VERSION = 1


class SuiteFileError(TuiEvalError, ValueError):
    """A declarative suite is invalid; the message names the file, the case and the field."""


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class ScriptStepSpec(_Strict):
    """One scripted model response: a tool call or a final text."""

    call: str | None = None
    args: dict[str, Any] = {}
    text: str | None = None
    delay: float = pydantic.Field(0.0, ge=0, description="simulated latency in seconds")
    input_tokens: int | None = None
    output_tokens: int | None = None

    @pydantic.model_validator(mode="after")
    def _one_kind(self) -> ScriptStepSpec:
        if (self.call is None) == (self.text is None):
            raise ValueError("a script step needs exactly one of `call` or `text`")
        return self


class UserSpec(_Strict):
    """The user of a conversation: scripted `lines`, or a model following `instructions`."""

    lines: list[str] | None = pydantic.Field(
        None, description="what a scripted user says after the case's input, in order"
    )
    instructions: str | None = pydantic.Field(
        None, description="who a simulated user is and what it wants (a model plays it)"
    )
    model: str | None = pydantic.Field(None, description="the simulated user's model spec")
    max_turns: int | None = pydantic.Field(None, ge=1, description="turn limit (default 20)")

    @pydantic.model_validator(mode="after")
    def _one_kind(self) -> UserSpec:
        if (self.lines is None) == (self.instructions is None):
            raise ValueError("a user has either `lines` (scripted) or `instructions` (simulated)")
        if self.lines is not None and self.model is not None:
            raise ValueError("a scripted user (`lines`) takes no `model`")
        return self


class CaseSpec(_Strict):
    """One case of a declarative suite."""

    input: str | list[dict[str, Any]] | dict[str, Any] | None = pydantic.Field(
        None,
        description="a prompt, a conversation (a list of {role, content}), or a structured "
        "value (a mapping) passed to the agent function as it is; with a `user`, its first "
        "message (optional: without it the user opens)",
    )
    user: list[str] | UserSpec | None = pydantic.Field(
        None,
        description="a conversation's user: a list of lines (scripted), or "
        "{instructions, model, max_turns} (simulated) or {lines, max_turns}",
    )
    state: dict[str, Any] | str | None = pydantic.Field(
        None,
        description="the environment state the tools read and change, fresh per sample: a "
        "mapping, or an SQLite file beside the suite (.db, .sqlite, .sqlite3)",
    )
    name: str | None = None
    checks: list[CheckSpec] = []
    samples: int = pydantic.Field(1, ge=1)
    pass_threshold: float = pydantic.Field(1.0, ge=0, le=1)
    timeout: float | None = pydantic.Field(None, gt=0)
    max_turns: int | None = pydantic.Field(
        None, ge=1, description="the most model responses a run may take (default: the agent's)"
    )
    model: str | None = None
    script: list[ScriptStepSpec] | None = pydantic.Field(
        None,
        description="scripted model responses for this case (offline); replayed fresh for every sample",
    )
    context: Any = None
    metadata: dict[str, Any] = {}
    expected: Any = None
    expected_tools: list[str] | None = None

    @pydantic.model_validator(mode="after")
    def _has_input(self) -> CaseSpec:
        if self.input is None and self.user is None:
            raise ValueError("a case needs an `input` (or a `user` who opens the conversation)")
        return self


class SuiteSettings(_Strict):
    """Suite-level settings of a declarative suite."""

    schema_version: Literal[1] = 1
    name: str | None = None
    description: str = ""
    agent: str | None = pydantic.Field(
        None, description="module:attribute of an agent or agent factory"
    )
    recorded: str | None = pydantic.Field(
        None,
        description="an OTLP JSON trace file (beside the suite) to evaluate instead of an "
        "agent: each trace is one sample of the case with its first user message as input, "
        "or named by its `tui_eval.case` attribute",
    )
    model: str | None = pydantic.Field(
        None, description="a provider spec such as openai:gpt-4o-mini"
    )
    instructions: str | None = None
    concurrency: Count | None = pydantic.Field(
        None, description="cases at once (default: `RunSettings.concurrency`, 4)"
    )
    judge_model: str | None = pydantic.Field(
        None,
        description="default model for llm_judge checks: a spec such as openai:gpt-4o-mini, "
        "or python:MODULE:ATTRIBUTE for a provider defined in code (e.g. an offline ScriptedProvider)",
    )
    baseline: str | None = None
    provider: ProviderOptions | None = pydantic.Field(
        None,
        description="options for every HTTP provider of the suite's runs: timeout, "
        "retry_budget, max_retries, rpm, tpm, base_url, headers",
    )
    max_cost: Dollars | None = pydantic.Field(
        None, description="dollars; a run starts no new sample once this is spent"
    )
    cache: CacheMode | None = pydantic.Field(
        None,
        description="replay stored model responses (keyed by request and sample index); "
        "default off",
    )

    count_user_faults: bool | None = pydantic.Field(
        None,
        description="count the conversations a user simulator failed in pass rates, decide "
        "and the exit code; by default they are left out, and every summary says how many",
    )

    @pydantic.field_validator("cache", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        # YAML reads a bare `on`/`off` (and yes/no) as booleans.
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value

    token_limit: int | None = pydantic.Field(
        None, ge=1, description="the most tokens one sample's agent run may use (with `model`)"
    )
    checks: list[CheckSpec] = pydantic.Field(
        [], description="checks every case must meet, besides its own"
    )
    skip_unless_env: list[str] = pydantic.Field(
        [], description="skip the suite (with a message) unless these environment variables are set"
    )


class SuiteSpec(SuiteSettings):
    """A whole YAML suite file."""

    cases: list[CaseSpec] = pydantic.Field(min_length=1)


def json_schema() -> dict[str, Any]:
    """The JSON schema of YAML suite files, for editors."""
    schema = SuiteSpec.model_json_schema()
    schema["title"] = "tui-eval suite"
    return schema


# -- loading -------------------------------------------------------------------------
def load_yaml_suite(path: Path) -> Suite:
    """Load and validate a YAML suite. Raises `SuiteFileError` naming file, case and field."""
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteFileError(f"{path}{where}: invalid YAML: {problem}") from None
    if not isinstance(raw, dict):
        raise SuiteFileError(f"{path}: a suite file must be a mapping with a `cases` list")
    spec = _validate(SuiteSpec, raw, path, raw.get("cases"))
    return _build(spec, spec.cases, path)


def load_jsonl_suite(path: Path) -> Suite:
    """Load a JSONL suite: one case per line, optionally after a `{"suite": {...}}` line."""
    settings = SuiteSettings()
    cases: list[CaseSpec] = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except ValueError as exc:
                raise SuiteFileError(f"{path}:{lineno}: not valid JSON: {exc}") from None
            if isinstance(raw, dict) and set(raw) == {"suite"}:
                settings = _validate(
                    SuiteSettings, raw["suite"], path, None, prefix=f"line {lineno}: suite"
                )
                continue
            try:
                cases.append(CaseSpec.model_validate(raw))
            except pydantic.ValidationError as exc:
                name = raw.get("name") if isinstance(raw, dict) else None
                label = f"line {lineno}" + (f" ({name!r})" if name else "")
                raise SuiteFileError(f"{path}: {label}: {validation_message(exc)}") from None
    if not cases:
        raise SuiteFileError(f"{path}: no cases (one JSON object per line)")
    return _build(settings, cases, path)


def _validate(model: type[Any], raw: Any, path: Path, raw_cases: Any, prefix: str = "") -> Any:
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        loc, message = validation_error_at(exc)
        where = prefix
        if len(loc) >= 2 and loc[0] == "cases" and loc[1].isdigit():
            index = int(loc[1])
            case = raw_cases[index] if isinstance(raw_cases, list) else None
            name = case.get("name") if isinstance(case, dict) else None
            where = f"case {index + 1}" + (f" ({name!r})" if name else "")
            loc = loc[2:]
        field_path = ".".join(loc)
        head = f"{path}: {where}: " if where else f"{path}: "
        field_part = f"field {field_path!r}: " if field_path else ""
        raise SuiteFileError(f"{head}{field_part}{message}") from None


def _build(settings: SuiteSettings, specs: list[CaseSpec], path: Path) -> Suite:
    import os
    import sys

    folder = str(path.parent.resolve())
    if folder not in sys.path:  # `agent:` and `python:` model references live beside the suite
        sys.path.insert(0, folder)

    name = settings.name or path.stem
    missing = [var for var in settings.skip_unless_env if not os.environ.get(var)]
    skip = f"skipped: set {', '.join(missing)} to run it" if missing else None
    agent = _agent(settings, specs, path) if skip is None and not settings.recorded else None
    try:
        shared = _checks(settings.checks, settings)
    except SuiteFileError as exc:
        raise SuiteFileError(f"{path}: suite {exc}") from None
    cases = []
    for index, spec in enumerate(specs):
        label = f"case {index + 1}" + (f" ({spec.name!r})" if spec.name else "")
        try:
            cases.append(_case(spec, settings, path))
        except (SuiteFileError, ValueError, TypeError) as exc:
            raise SuiteFileError(f"{path}: {label}: {exc}") from None
    if settings.recorded:
        if settings.agent or settings.model:
            raise SuiteFileError(f"{path}: give `recorded` or an agent (`agent`/`model`), not both")
        try:
            cases, agent = recorded_cases(cases, path.parent / settings.recorded)
        except TraceFileError as exc:
            raise SuiteFileError(f"{path}: field 'recorded': {exc}") from None
    return Suite(
        name,
        agent=agent,
        cases=cases,
        concurrency=settings.concurrency,
        baseline=settings.baseline,
        provider=settings.provider,
        max_cost=settings.max_cost,
        cache=settings.cache,
        count_user_faults=settings.count_user_faults,
        skip=skip,
        required_env=list(settings.skip_unless_env),
        path=path,
        description=settings.description,
        checks=shared,
    )


def _agent(settings: SuiteSettings, specs: list[CaseSpec], path: Path) -> Any:
    if settings.agent and settings.model:
        raise SuiteFileError(f"{path}: give either `agent` or `model`, not both")
    if settings.agent:
        return import_reference(settings.agent, path)
    if settings.model:
        return Agent(
            settings.model, instructions=settings.instructions, token_limit=settings.token_limit
        )
    if all(spec.script is not None or spec.model is not None for spec in specs):
        # Every case brings its own model: the agent is only cloned per case.
        return Agent(ScriptedProvider(name="no-model"), instructions=settings.instructions)
    raise SuiteFileError(
        f"{path}: no agent: set `agent: module:attribute` or `model: PROVIDER:MODEL` "
        "(or give every case a `script` or `model`)"
    )


def import_reference(reference: str, path: Path) -> Any:
    """Import `module:attribute` (the suite's folder is importable)."""
    import sys

    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise SuiteFileError(f"{path}: field 'agent': expected module:attribute, got {reference!r}")
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SuiteFileError(
            f"{path}: field 'agent': cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise SuiteFileError(
                f"{path}: field 'agent': {module_name!r} has no attribute {attr!r}"
            )
        target = getattr(target, part)
    return target


def _user(spec: list[str] | UserSpec | None) -> User | None:
    if spec is None:
        return None
    if isinstance(spec, list):
        return ScriptedUser(spec)
    if spec.lines is not None:
        return ScriptedUser(spec.lines, max_turns=spec.max_turns)
    assert spec.instructions is not None
    return SimulatedUser(spec.instructions, model=spec.model, max_turns=spec.max_turns)


def _state(state: dict[str, Any] | str | None, path: Path) -> Any:
    """A mapping as it is; a database file relative to the suite file."""
    if not isinstance(state, str):
        return state
    if not is_sqlite(state):
        raise SuiteFileError(
            f"field 'state': {state!r} is not an SQLite file (.db, .sqlite, .sqlite3); "
            "give a mapping for a state of plain data"
        )
    database = (path.parent / state).resolve()
    if not database.is_file():
        raise SuiteFileError(f"field 'state': no database {state!r} beside {path.name}")
    return database


def _case(spec: CaseSpec, settings: SuiteSettings, path: Path) -> Case:
    from tui_eval.agents.messages import Message

    checks = _checks(spec.checks, settings)
    model: Any = spec.model
    if spec.script is not None:
        if spec.model is not None:
            raise SuiteFileError("give either `script` or `model`, not both")
        model = ScriptedProvider.factory([_step(step) for step in spec.script])
    case_input: Any = spec.input
    if isinstance(case_input, list):
        case_input = [Message(m.get("role", "user"), m.get("content")) for m in case_input]
    return Case(
        case_input,
        user=_user(spec.user),
        state=_state(spec.state, path),
        checks=checks,
        name=spec.name,
        samples=spec.samples,
        pass_threshold=spec.pass_threshold,
        context=spec.context,
        max_turns=spec.max_turns,
        model=model,
        timeout=spec.timeout,
        metadata=dict(spec.metadata),
        expected=spec.expected,
        expected_tools=spec.expected_tools,
    )


def _checks(specs: list[Any], settings: SuiteSettings) -> list[Any]:
    defaults = {"llm_judge": {"model": settings.judge_model}} if settings.judge_model else {}
    checks = []
    for index, check in enumerate(specs):
        try:
            checks.append(build_check(check, defaults=defaults))
        except CheckSpecError as exc:
            raise SuiteFileError(f"field 'checks[{index}]': {exc}") from None
    return checks


def _step(step: ScriptStepSpec) -> ScriptStep:
    usage = None
    if step.input_tokens is not None or step.output_tokens is not None:
        usage = Usage(step.input_tokens or 0, step.output_tokens or 0, 1)
    if step.call is not None:
        return call(step.call, step.args, usage=usage, delay=step.delay)
    return text(step.text or "", usage=usage, delay=step.delay)


if __name__ == "__main__":  # regenerate the shipped schema: python -m tui_eval.suites.declarative
    target = Path(__file__).with_name("suite.schema.json")
    target.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {target}")
