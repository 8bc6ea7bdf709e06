"""`tui-eval import inspect DATASET.jsonl -o SUITE.yaml`.

Inspect samples, one JSON object a line: `input` (a string or chat messages), `target` (a
string, or a list of acceptable answers), `id`, `metadata`. The target becomes the case's
`expected` and a check like Inspect's `includes()` scorer: `contains` ignoring case, or
`any_of` those for a list target. `choices`, `files`, `setup` and `sandbox` have no
tui-eval form and are listed as not imported (choices are kept in the metadata).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui_eval.importers.writing import ImportedSuite, ImportError_

_UNSUPPORTED = ("files", "setup", "sandbox")


def suite_from_samples(source: Path) -> ImportedSuite:
    """The suite an Inspect JSONL dataset describes."""
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ImportError_(f"{source}: cannot read: {exc.strerror or exc}") from None
    imported = ImportedSuite()
    names: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            raise ImportError_(f"{source}:{lineno}: not valid JSON: {exc}") from None
        if not isinstance(sample, Mapping) or "input" not in sample:
            raise ImportError_(f"{source}:{lineno}: an Inspect sample needs an `input`")
        case: dict[str, Any] = {"input": _input(sample["input"], f"{source}:{lineno}")}
        if sample.get("id") is not None:
            name = str(sample["id"])
            if name in names:
                raise ImportError_(f"{source}:{lineno}: duplicate id {name!r}")
            names.add(name)
            case["name"] = name
        metadata = dict(sample.get("metadata") or {})
        if sample.get("choices"):
            metadata["choices"] = sample["choices"]
            imported.unmapped.append(
                f"line {lineno}: choices (multiple choice has no tui-eval solver; kept in metadata)"
            )
        for key in _UNSUPPORTED:
            if sample.get(key):
                imported.unmapped.append(f"line {lineno}: {key}")
        if metadata:
            case["metadata"] = metadata
        target = sample.get("target")
        if isinstance(target, list) and len(target) == 1:
            target = target[0]
        if isinstance(target, list) and target:
            case["expected"] = [str(t) for t in target]
            case["checks"] = [
                {"any_of": [{"contains": {"value": str(t), "ignore_case": True}} for t in target]}
            ]
        elif target not in (None, "", []):
            case["expected"] = str(target)
            case["checks"] = [{"contains": {"value": str(target), "ignore_case": True}}]
        imported.cases.append(case)
    if not imported.cases:
        raise ImportError_(f"{source}: no samples (one JSON object per line)")
    return imported


def _input(raw: Any, where: str) -> Any:
    """A string input as itself; chat messages as a conversation of role/content."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        messages = []
        for message in raw:
            if not isinstance(message, Mapping):
                raise ImportError_(f"{where}: input messages must be objects")
            content = message.get("content")
            if isinstance(content, list):  # content blocks: keep their text
                content = "".join(
                    str(block.get("text", "")) for block in content if isinstance(block, Mapping)
                )
            messages.append({"role": str(message.get("role") or "user"), "content": content})
        return messages
    raise ImportError_(f"{where}: `input` must be a string or a list of chat messages")
