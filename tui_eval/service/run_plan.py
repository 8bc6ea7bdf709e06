"""What a suite run needs before it starts: its mode, its settings, the cases it selects,
and what its mode needs beside them (a baseline to decide against, two agents to A/B, a
saved report to recheck), checked before anything runs or is journaled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui_eval.agents.sources import samples_independent
from tui_eval.core.cases import fingerprint
from tui_eval.core.settings import Executor, RunSettings
from tui_eval.report.baselines import BaselineStatus, BaselineStore
from tui_eval.report.exporters import suite_parts
from tui_eval.report.report import Report, ReportFileError
from tui_eval.service.request import ABRun, DecideRun, Mode, RecheckRun, RunRequest
from tui_eval.service.store import RunHistory
from tui_eval.suites import Suite
from tui_eval.util.errors import TuiEvalError

_MODE_FLAGS = {
    "run": "run",
    "decide": "--decide",
    "ab": "tui-eval ab",
    "recheck": "tui-eval recheck",
}


class EmptySelection(TuiEvalError, ValueError):
    """The run's options select none of the suite's cases."""


class PlanError(TuiEvalError, ValueError):
    """A run cannot start as asked (no baseline to decide against, an A/B agent that
    cannot be built, a report to recheck that has none of the suite's cases)."""


def last_failed(suite: Suite, history: RunHistory) -> tuple[str, ...] | None:
    """The cases of `suite` that did not pass in its last run (`--last-failed`, like
    pytest's `--lf`); None when it has no readable run yet. A case gone from the suite is
    left out."""
    names = {case.label for case in suite.cases}
    for record in history.runs():
        if record.suite != suite.name or record.problem or record.options.mode != "run":
            continue
        try:
            report = record.load_report()
        except (ReportFileError, OSError, ValueError):
            continue
        return tuple(c.name for c in report.cases if not c.passed and c.name in names)
    return None


def run_settings(suite: Suite, options: RunRequest) -> RunSettings:
    """How the samples of `suite` run under `options`: the request's settings over the
    suite's (over `RunSettings`' defaults), with the executor it asks for. The sample count
    is not among them: `select()` gave the cases theirs."""
    settings = suite.settings.over(options.settings)
    return settings.replace(
        samples=None,
        executor=_executor(suite, options) if options.mode == "run" else None,
        parallel_samples=settings.parallel_samples
        and all(samples_independent(suite.agent, case.model) for case in suite.cases),
    )


def prepare(
    suite: Suite, options: RunRequest, rechecked: Report | None, baseline: Report | None = None
) -> dict[str, Any]:
    """What a run of this mode needs beside its suite (a baseline, two agents, a report).

    A decide run compares with `baseline` when given (a report the caller holds, such as
    the previous run's), else with the report file `options.decide_against` names, else
    with the baseline file of the options or the suite.

    Raises:
        PlanError: it cannot be had.
    """
    mode, kind = options.mode, options.kind
    if mode != "run" and (options.executor == "ray" or options.settings.fail_fast):
        what = "--executor ray" if options.executor == "ray" else "--fail-fast"
        raise PlanError(f"{what} goes with plain runs, not with {_MODE_FLAGS[mode]}")
    if isinstance(kind, DecideRun):
        if baseline is not None:
            return {"baseline": baseline}
        if kind.against is not None:
            return {"baseline": _decided_against(kind.against)}
        read = BaselineStore.for_suite(suite, options.baseline).read()
        if read.baseline is None:
            if read.status is BaselineStatus.MISSING:
                raise PlanError(
                    f"--decide compares with a baseline; {suite.name!r} has none at {read.path}"
                )
            raise PlanError(read.message)
        return {"baseline": read.baseline}
    if isinstance(kind, ABRun):
        try:
            return {"agents": (agent_for(suite, kind.a), agent_for(suite, kind.b))}
        except (ValueError, ImportError) as exc:
            raise PlanError(str(exc)) from None
    if isinstance(kind, RecheckRun):
        if rechecked is None:
            try:
                saved = Report.load(kind.report)
            except ReportFileError as exc:
                raise PlanError(str(exc)) from None
            rechecked = recheck_part(saved, suite.name, only_suite=True)
        if rechecked is None or not any(c.name in _labels(suite) for c in rechecked.cases):
            count = len(rechecked.cases) if rechecked is not None else 0
            raise PlanError(
                f"none of the {count:,} cases of {shown_path(kind.report)} is in suite "
                f"{suite.name!r} ({suite.path}); nothing to recheck"
            )
        return {"rechecked": rechecked}
    return {}


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


def _labels(suite: Suite) -> set[str]:
    return {case.label for case in suite.cases}


def recheck_parts(report: Report) -> dict[str, Report]:
    """A saved report split by suite (a report of several suites, `run suites/ --json`,
    is rechecked suite by suite), each part with its cases' plain names."""
    return suite_parts(report)


def recheck_part(report: Report, suite: str, *, only_suite: bool = False) -> Report | None:
    """The part of `report` that suite `suite` rechecks: its own cases, or (`only_suite`)
    the whole report when it holds one suite's cases under another name."""
    parts = recheck_parts(report)
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
    """How the suite's cases differ from the fingerprints a run recorded ("" when they do
    not, or when the run recorded none: a journal older than version 3)."""
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
    `module:attribute` names (importable from the suite's folder).

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


def shard_metadata(suite: Suite, options: RunRequest) -> dict[str, object]:
    """What a shard's report records so `tui-eval merge` can tell a missing shard or case."""
    if options.shard is None:
        return {}
    return {
        "shards": [list(options.shard)],
        "planned_cases": {suite.name: [case.label for case in suite.cases]},
    }


def select(suite: Suite, options: RunRequest) -> Suite:
    """The suite with only the cases `options` select, at their sample counts.

    Raises:
        EmptySelection: no case is selected.
    """
    selected = suite.select(
        filter=options.filter, samples=options.settings.samples, names=options.cases
    )
    if not selected.cases:
        what = f"--filter {options.filter!r}" if options.filter else "the requested cases"
        raise EmptySelection(f"no case of {suite.name!r} matches {what}")
    return selected


def _executor(suite: Suite, options: RunRequest) -> Executor | None:
    """The executor `options` ask for (None: this process).

    Raises:
        ExecutorError: Ray is not installed, or the suite has no file for workers to load.
    """
    if options.executor != "ray":
        return None
    from tui_eval.run.ray_executor import ExecutorError, RayExecutor

    if suite.path is None:
        raise ExecutorError(
            f"suite {suite.name!r} was defined in code, not loaded from a file: Ray workers "
            "load suites from files"
        )
    return RayExecutor(
        suite.path,
        suite.name,
        address=options.ray_address,
        workers=options.ray_workers,
        env=suite.required_env,
    )


__all__ = [
    "EmptySelection",
    "Mode",
    "PlanError",
    "agent_for",
    "changed_definitions",
    "definitions",
    "last_failed",
    "prepare",
    "recheck_part",
    "recheck_parts",
    "run_settings",
    "select",
    "shard_metadata",
    "shown_path",
]
