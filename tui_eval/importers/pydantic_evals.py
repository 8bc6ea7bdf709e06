"""`tui-eval import pydantic-evals`: cases and their evaluators as checks, dataset-level ones
as the suite's `checks`. An `LLMJudge` with only a `score` becomes a judge at threshold 0
(it never fails a sample)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tui_eval.agents.providers import known_prefixes
from tui_eval.importers.writing import ImportedSuite, ImportSourceError
from tui_eval.util.text import one_line
from tui_eval.util.yaml_files import load_yaml


def suite_from_dataset(source: Path) -> ImportedSuite:
    """The suite a pydantic-evals dataset file describes.

    Raises:
        ImportSourceError: the file cannot be read, is not a dataset, or has a wrong shape.
    """
    raw = _read(source)
    if not isinstance(raw, Mapping) or not isinstance(raw.get("cases"), list):
        raise ImportSourceError(f"{source}: not a pydantic-evals dataset: expected a `cases` list")
    converter = _Converter(source)
    imported = converter.imported
    if raw.get("name"):
        imported.settings["name"] = str(raw["name"])
    shared = converter.checks(raw, "evaluators", "dataset evaluators", "")
    if shared:
        imported.settings["checks"] = shared
    for index, spec in enumerate(converter.listed(raw, "report_evaluators", "")):
        imported.unmapped.append(
            f"report_evaluators[{index}]: {one_line(spec, 80)} (no per-report checks)"
        )
    for index, case in enumerate(raw["cases"]):
        imported.cases.append(converter.case(index, case))
    converter.finish()
    return imported


def _read(source: Path) -> Any:
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImportSourceError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ImportSourceError(
            f"{source}: not text: expected a pydantic-evals dataset in YAML or JSON"
        ) from None
    if source.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ImportSourceError(f"{source}: not valid JSON: {exc}") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ImportSourceError(f"{source}{where}: not valid YAML: {problem}") from None


_PARAMETERS = {
    "Equals": ("value",),
    "Contains": ("value", "case_sensitive", "as_strings"),
    "IsInstance": ("type_name",),
    "MaxDuration": ("seconds",),
    "LLMJudge": ("rubric", "model", "include_input", "score", "assertion"),
    "EqualsExpected": (),
}


class _Converter:
    """One dataset's conversion: its cases and checks, and what it could not carry over."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.imported = ImportedSuite()
        self.uncallable: dict[str, list[str]] = {}  # judge model -> where it was named
        self.judges_without_model = 0

    def listed(self, raw: Mapping[str, Any], key: str, where: str) -> list[Any]:
        """`raw[key]` as a list (none when absent); anything else is an error here."""
        value = raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ImportSourceError(
                f"{self.source}: {where}{key}: expected a list, got {one_line(value, 60)}"
            )
        return value

    def checks(self, raw: Mapping[str, Any], key: str, label: str, where: str) -> list[Any]:
        """The checks `raw[key]`'s evaluators become (those with a tui-eval form)."""
        return [
            check
            for index, spec in enumerate(self.listed(raw, key, where))
            if (check := self.check(spec, f"{label}[{index}]")) is not None
        ]

    def case(self, index: int, case: Any) -> dict[str, Any]:
        """One dataset case as a suite case."""
        label = f"case {index + 1}" + (
            f" ({case.get('name')!r})" if isinstance(case, Mapping) and case.get("name") else ""
        )
        if not isinstance(case, Mapping):
            raise ImportSourceError(f"{self.source}: {label}: a case must be a mapping")
        inputs = case.get("inputs")
        if isinstance(inputs, list):
            raise ImportSourceError(
                f"{self.source}: {label}: list inputs have no tui-eval form (a list is a "
                "conversation); wrap them in a mapping"
            )
        entry: dict[str, Any] = {"input": inputs if inputs is not None else ""}
        if case.get("name"):
            entry["name"] = str(case["name"])
        if case.get("expected_output") is not None:
            entry["expected"] = case["expected_output"]
        metadata = case.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ImportSourceError(
                f"{self.source}: {label}: metadata: expected a mapping, "
                f"got {one_line(metadata, 60)}"
            )
        if metadata:
            entry["metadata"] = dict(metadata)
        checks = self.checks(case, "evaluators", f"{label} evaluators", f"{label}: ")
        if checks:
            entry["checks"] = checks
        return entry

    def check(self, spec: Any, where: str) -> dict[str, Any] | None:
        """One evaluator spec as a check; None (and a note) when it has no tui-eval form."""
        unmapped = self.imported.unmapped
        parts = _parts(spec)
        if parts is None:
            unmapped.append(f"{where}: {one_line(spec, 80)} is not an evaluator spec")
            return None
        name, args, kwargs = parts
        known = _PARAMETERS.get(name)
        if known is None:
            unmapped.append(f"{where}: {name} (no tui-eval check; write one as a Python check)")
            return None
        for position, value in enumerate(args):
            if position < len(known):
                kwargs.setdefault(known[position], value)
        kwargs.pop("evaluation_name", None)
        extra = sorted(set(kwargs) - set(known))
        if extra:
            unmapped.append(f"{where}: {name} options {', '.join(extra)} (ignored)")
        if name == "EqualsExpected":
            return {"equals_expected": True}
        if name == "Equals":
            return {"equals": kwargs.get("value")}
        if name == "Contains":
            value = kwargs.get("value")
            if isinstance(value, Mapping):
                return {"matches": dict(value)}
            if not isinstance(value, str):  # `as_strings` or not, a str is compared
                value = str(value)
            if kwargs.get("case_sensitive", True) is False:
                return {"contains": {"value": value, "ignore_case": True}}
            return {"contains": value}
        if name == "IsInstance":
            return {"is_instance": str(kwargs.get("type_name"))}
        if name == "MaxDuration":
            seconds = kwargs.get("seconds")
            try:
                return {"max_latency": float(seconds) * 1000}  # type: ignore[arg-type]
            except (TypeError, ValueError):
                unmapped.append(f"{where}: MaxDuration({seconds!r}) is not a number of seconds")
                return None
        return self.judge(kwargs, where)

    def judge(self, options: dict[str, Any], where: str) -> dict[str, Any] | None:
        """An `LLMJudge` as an `llm_judge`: gating with its assertion, a score without."""
        score = self._output(options, "score", False, where)
        assertion = self._output(options, "assertion", {"include_reason": True}, where)
        if score is False and assertion is False:
            self.imported.unmapped.append(
                f"{where}: LLMJudge with `score` and `assertion` both off reports nothing"
            )
            return None
        judge: dict[str, Any] = {"rubric": str(options.get("rubric") or "")}
        model = options.get("model")
        if model:
            spec = str(model)
            prefix, sep, rest = spec.partition(":")
            if sep and rest and prefix in known_prefixes():
                judge["model"] = spec
            else:
                self.uncallable.setdefault(spec, []).append(where)
        else:
            self.judges_without_model += 1
        if assertion is False:
            judge["threshold"] = 0.0  # a score that never fails a sample
        output = assertion if assertion is not False else score
        if isinstance(output, Mapping) and output.get("evaluation_name"):
            judge["name"] = str(output["evaluation_name"])
        return {"llm_judge": judge}

    def _output(self, options: dict[str, Any], key: str, default: Any, where: str) -> Any:
        value = options.get(key, default)
        if value is None:
            return default
        if value is not False and not isinstance(value, Mapping):
            raise ImportSourceError(
                f"{self.source}: {where}: LLMJudge `{key}` must be false or a mapping "
                f"(include_reason, evaluation_name), got {one_line(value, 60)}"
            )
        return value

    def finish(self) -> None:
        """Say what the suite needs set before its judges can run."""
        reasons = []
        if self.uncallable:
            named = "; ".join(
                f"{model!r} ({', '.join(places)})" for model, places in self.uncallable.items()
            )
            reasons.append(
                f"the dataset's judge model {named} is not one tui-eval can call (a model spec "
                f"starts with {', '.join(known_prefixes())}), so those judges were written "
                "without a model"
            )
        if self.judges_without_model:
            reasons.append(
                f"{self.judges_without_model} judge(s) named no model (pydantic-evals used its "
                "default judge)"
            )
        if reasons:
            self.imported.needs.append(
                "Set `judge_model: PROVIDER:MODEL` in this suite (or $TUI_EVAL_JUDGE_MODEL) "
                f"for its llm_judge checks: {'; '.join(reasons)}."
            )


def _parts(spec: Any) -> tuple[str, list[Any], dict[str, Any]] | None:
    """An evaluator spec's name, args and kwargs from `Name`, `{Name: arg}`, `{Name: {k: v}}`."""
    if isinstance(spec, str):
        return spec, [], {}
    if isinstance(spec, Mapping) and len(spec) == 1:
        ((name, value),) = spec.items()
        if value is None:
            return str(name), [], {}
        if isinstance(value, Mapping):
            return str(name), [], dict(value)
        if isinstance(value, list) and str(name) not in ("Equals", "Contains"):
            return str(name), list(value), {}
        return str(name), [value], {}
    return None
