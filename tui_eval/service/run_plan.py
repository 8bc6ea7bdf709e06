"""Planning a suite run before anything runs or is journaled: `plan_run()` selects the
cases, combines the settings and gets what the kind of run needs, or says why it cannot."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui_eval.agents.sources import samples_independent
from tui_eval.core.cases import fingerprint
from tui_eval.core.settings import Executor, RaySpec, RunSettings
from tui_eval.report.baselines import BaselineStatus, BaselineStore
from tui_eval.report.exporters import suite_parts
from tui_eval.report.report import Report, ReportFileError
from tui_eval.service.request import ABRun, DecideRun, PlainRun, RecheckRun, RunRequest
from tui_eval.service.store import RunHistory
from tui_eval.suites import Suite
from tui_eval.util.errors import TuiEvalError

_COMMANDS = {"decide": "--decide", "ab": "tui-eval ab", "recheck": "tui-eval recheck"}


class EmptySelection(TuiEvalError, ValueError):
    """The request selects none of the suite's cases."""


class PlanError(TuiEvalError, ValueError):
    """A run cannot start as asked (no baseline to decide against, say)."""


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A suite run as planned: everything it needs, checked, before it starts.

    Attributes:
        suite: the suite with only the cases the request selects, at their sample counts.
        request: what was asked (journaled).
        settings: the request's settings over the suite's, with the executor built.
        metadata: what its reports record beside the settings (a shard's plan).
        baseline: a decide run's baseline.
        agents: an A/B run's two agents, A then B.
        rechecked: a recheck's saved report (the part of it this suite rechecks).
    """

    suite: Suite
    request: RunRequest
    settings: RunSettings
    metadata: dict[str, object] = field(default_factory=dict)
    baseline: Report | None = None
    agents: tuple[Any, Any] | None = None
    rechecked: Report | None = None


def plan_run(
    suite: Suite,
    request: RunRequest,
    *,
    rechecked: Report | None = None,
    baseline: Report | None = None,
) -> RunPlan:
    """Plan a run of `suite` as `request` asks.

    `rechecked` and `baseline` override the report files the request names.

    Raises:
        EmptySelection: the request selects no case.
        PlanError: what the kind of run needs cannot be had.
        ExecutorError: the executor cannot start (Ray missing, a suite without a file).
    """
    selected = select(suite, request)
    kind = request.kind
    settings = suite.settings.over(request.settings)
    if not isinstance(kind, PlainRun) and (settings.executor is not None or settings.fail_fast):
        what = "--fail-fast" if settings.fail_fast else "--executor ray"
        raise PlanError(f"{what} goes with plain runs, not with {_COMMANDS[kind.kind]}")
    settings = settings.replace(
        samples=None,
        executor=_executor(selected, settings.executor),
        parallel_samples=settings.parallel_samples
        and all(samples_independent(selected.agent, case.model) for case in selected.cases),
    )
    plan = RunPlan(selected, request, settings, shard_metadata(suite, request))
    if isinstance(kind, DecideRun):
        return dataclasses.replace(plan, baseline=baseline or _baseline(selected, request, kind))
    if isinstance(kind, ABRun):
        try:
            agents = (agent_for(selected, kind.a), agent_for(selected, kind.b))
        except (ValueError, ImportError) as exc:
            raise PlanError(str(exc)) from None
        return dataclasses.replace(plan, agents=agents)
    if isinstance(kind, RecheckRun):
        return dataclasses.replace(plan, rechecked=_rechecked(selected, kind, rechecked))
    return plan


def _baseline(suite: Suite, request: RunRequest, kind: DecideRun) -> Report:
    """The report a decide run compares with: the one its kind names, else the baseline."""
    if kind.against is not None:
        return _decided_against(kind.against)
    read = BaselineStore.for_suite(suite, request.baseline).read()
    if read.baseline is None:
        if read.status is BaselineStatus.MISSING:
            raise PlanError(
                f"--decide compares with a baseline; {suite.name!r} has none at {read.path}"
            )
        raise PlanError(read.message)
    return read.baseline


def _rechecked(suite: Suite, kind: RecheckRun, rechecked: Report | None) -> Report:
    """The saved report a recheck checks, with some of the suite's cases."""
    if rechecked is None:
        try:
            saved = Report.load(kind.report)
        except ReportFileError as exc:
            raise PlanError(str(exc)) from None
        rechecked = recheck_part(saved, suite.name, only_suite=True)
    labels = {case.label for case in suite.cases}
    if rechecked is None or not any(c.name in labels for c in rechecked.cases):
        count = len(rechecked.cases) if rechecked is not None else 0
        raise PlanError(
            f"none of the {count:,} cases of {shown_path(kind.report)} is in suite "
            f"{suite.name!r} ({suite.path}); nothing to recheck"
        )
    return rechecked


def last_failed(suite: Suite, history: RunHistory) -> tuple[str, ...] | None:
    """The cases of `suite` that failed in its last run (`--last-failed`; None: no run)."""
    names = {case.label for case in suite.cases}
    for record in history.runs():
        if (
            record.suite != suite.name
            or record.problem
            or not isinstance(record.request.kind, PlainRun)
        ):
            continue
        try:
            report = record.load_report()
        except (ReportFileError, OSError, ValueError):
            continue
        return tuple(c.name for c in report.cases if not c.passed and c.name in names)
    return None


def _decided_against(path: str) -> Report:
    """The report a decide run compares with instead of the baseline file."""
    if not Path(path).exists():
        raise PlanError(
            f"the decision compares with the report {path} (an earlier run's), which no "
            "longer exists; start a new decide run"
        )
    try:
        return Report.load(path)
    except ReportFileError as exc:
        raise PlanError(str(exc)) from None


def shown_path(path: str) -> str:
    """A path as the user would type it here: relative to the working folder if inside."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def recheck_part(report: Report, suite: str, *, only_suite: bool = False) -> Report | None:
    """The part of `report` that suite `suite` rechecks: its own cases, or (`only_suite`)
    the whole report when it holds one suite's cases under another name."""
    parts = suite_parts(report)
    if suite in parts:
        return parts[suite]
    if only_suite and len(parts) == 1:
        (part,) = parts.values()
        return dataclasses.replace(part, name=suite)
    return None


def definitions(suite: Suite) -> dict[str, str]:
    """Each case's definition fingerprint, by name (what a journal records)."""
    return {case.label: fingerprint(case) for case in suite.cases}


def changed_definitions(recorded: Mapping[str, str], suite: Suite) -> str:
    """How the suite's cases differ from the fingerprints a run recorded ("" if they do not)."""
    if not recorded:
        return ""
    now = definitions(suite)
    changed = sorted(name for name in recorded.keys() & now.keys() if recorded[name] != now[name])
    added = sorted(now.keys() - recorded.keys())
    removed = sorted(recorded.keys() - now.keys())
    parts = []
    for what, names in (("changed", changed), ("added", added), ("removed", removed)):
        if names:
            shown = ", ".join(repr(n) for n in names[:5]) + (" …" if len(names) > 5 else "")
            parts.append(f"{len(names)} case(s) {what}: {shown}")
    return "; ".join(parts)


def agent_for(suite: Suite, spec: str) -> object:
    """The suite's agent with model `spec` (`openai:gpt-4o-mini`), or the agent that
    `module:attribute` names.

    Raises:
        ValueError: the spec names neither.
    """
    from tui_eval.agents.agent import Agent
    from tui_eval.agents.providers import known_prefixes
    from tui_eval.suites.declarative import SuiteFileError, import_reference

    prefix, sep, _ = spec.partition(":")
    if not sep:
        raise ValueError(f"{spec!r} is neither a model spec (openai:MODEL) nor module:attribute")
    if prefix in known_prefixes():
        if not isinstance(suite.agent, Agent):
            raise ValueError(
                f"suite {suite.name!r}: a model spec needs an Agent to clone; give "
                "module:attribute agents instead"
            )
        return suite.agent.clone(model=spec)
    try:
        return import_reference(spec, suite.path or Path("."))
    except SuiteFileError as exc:
        raise ValueError(str(exc)) from None


def shard_metadata(suite: Suite, request: RunRequest) -> dict[str, object]:
    """What a shard's report records so `tui-eval merge` can tell a missing shard or case."""
    if request.shard is None:
        return {}
    return {
        "shards": [list(request.shard)],
        "planned_cases": {suite.name: [case.label for case in suite.cases]},
    }


def select(suite: Suite, request: RunRequest) -> Suite:
    """The suite with only the cases `request` select, at their sample counts.

    Raises:
        EmptySelection: no case is selected.
    """
    selected = suite.select(
        filter=request.filter, samples=request.settings.samples, names=request.cases
    )
    if not selected.cases:
        what = f"--filter {request.filter!r}" if request.filter else "the requested cases"
        raise EmptySelection(f"no case of {suite.name!r} matches {what}")
    return selected


def _executor(suite: Suite, spec: Executor | RaySpec | None) -> Executor | None:
    """The executor `spec` says (None: this process); a `RaySpec` is built for the suite.

    Raises:
        ExecutorError: Ray is not installed, or the suite has no file for workers to load.
    """
    if not isinstance(spec, RaySpec):
        return spec
    from tui_eval.core.settings import ExecutorError
    from tui_eval.run.ray_executor import RayExecutor

    if suite.path is None:
        raise ExecutorError(
            f"suite {suite.name!r} was defined in code, not loaded from a file: Ray workers "
            "load suites from files"
        )
    return RayExecutor(
        suite.path, suite.name, address=spec.address, workers=spec.workers, env=suite.required_env
    )
