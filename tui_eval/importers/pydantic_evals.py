"""`tui-eval import pydantic-evals DATASET.yaml -o SUITE.yaml`.

A pydantic-evals dataset (YAML or JSON: `cases` with `name`, `inputs`, `expected_output`,
`metadata`, `evaluators`, plus dataset-level `evaluators`) as a tui-eval suite. Evaluators
become checks — `EqualsExpected` → `equals_expected`, `Equals` → `equals`, `Contains` →
`contains` (a mapping value → `matches`), `IsInstance` → `is_instance`, `MaxDuration` →
`max_latency`, `LLMJudge` → `llm_judge`; dataset-level ones become the suite's `checks`.
Any other evaluator (or option with no equivalent) is listed as not imported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tui_eval.importers.writing import ImportedSuite, ImportError_


def suite_from_dataset(source: Path) -> ImportedSuite:
    """The suite a pydantic-evals dataset file describes."""
    try:
        text = source.read_text(encoding="utf-8")
        raw = json.loads(text) if source.suffix == ".json" else yaml.safe_load(text)
    except OSError as exc:
        raise ImportError_(f"{source}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise ImportError_(f"{source}: not valid YAML/JSON: {exc}") from None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("cases"), list):
        raise ImportError_(f"{source}: not a pydantic-evals dataset: expected a `cases` list")
    imported = ImportedSuite()
    if raw.get("name"):
        imported.settings["name"] = str(raw["name"])
    shared = [
        check
        for index, spec in enumerate(raw.get("evaluators") or [])
        if (check := _check(spec, f"dataset evaluators[{index}]", imported.unmapped)) is not None
    ]
    if shared:
        imported.settings["checks"] = shared
    for index, spec in enumerate(raw.get("report_evaluators") or []):
        imported.unmapped.append(f"report_evaluators[{index}]: {spec!r} (no per-report checks)")
    for index, case in enumerate(raw["cases"]):
        label = f"case {index + 1}" + (
            f" ({case.get('name')!r})" if isinstance(case, Mapping) and case.get("name") else ""
        )
        if not isinstance(case, Mapping):
            raise ImportError_(f"{source}: {label}: a case must be a mapping")
        inputs = case.get("inputs")
        if isinstance(inputs, list):
            raise ImportError_(
                f"{source}: {label}: list inputs have no tui-eval form (a list is a "
                "conversation); wrap them in a mapping"
            )
        entry: dict[str, Any] = {"input": inputs if inputs is not None else ""}
        if case.get("name"):
            entry["name"] = str(case["name"])
        if case.get("expected_output") is not None:
            entry["expected"] = case["expected_output"]
        if case.get("metadata"):
            entry["metadata"] = dict(case["metadata"])
        checks = [
            check
            for position, spec in enumerate(case.get("evaluators") or [])
            if (check := _check(spec, f"{label} evaluators[{position}]", imported.unmapped))
            is not None
        ]
        if checks:
            entry["checks"] = checks
        imported.cases.append(entry)
    return imported


def _parts(spec: Any) -> tuple[str, list[Any], dict[str, Any]] | None:
    """An evaluator spec's name, positional and keyword arguments, in any of the forms
    pydantic-evals writes: `Name`, `{Name: argument}`, `{Name: {keyword: value}}`."""
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


_PARAMETERS = {
    "Equals": ("value",),
    "Contains": ("value", "case_sensitive", "as_strings"),
    "IsInstance": ("type_name",),
    "MaxDuration": ("seconds",),
    "LLMJudge": ("rubric", "model", "include_input"),
    "EqualsExpected": (),
}


def _check(spec: Any, where: str, unmapped: list[str]) -> dict[str, Any] | None:
    parts = _parts(spec)
    if parts is None:
        unmapped.append(f"{where}: {spec!r} is not an evaluator spec")
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
        if kwargs.get("as_strings") or not isinstance(value, str):
            value = str(value) if not isinstance(value, str) else value
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
    judge: dict[str, Any] = {"rubric": str(kwargs.get("rubric") or "")}
    if kwargs.get("model"):
        judge["model"] = str(kwargs["model"])
    return {"llm_judge": judge}
