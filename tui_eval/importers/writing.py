"""The suite an importer builds, validated as a declarative suite and written as YAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import yaml

from tui_eval.suites.declarative import SuiteSpec
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.text import validation_message


class ImportError_(ValueError):
    """The source cannot be imported; the message names the file and the place."""


@dataclass
class ImportedSuite:
    """A suite file's content, before it is written.

    Attributes:
        settings: suite-level keys (name, agent, recorded, checks...).
        cases: the cases as YAML mappings.
        unmapped: what the source held that has no tui-eval form, one line each.
    """

    settings: dict[str, Any] = field(default_factory=dict)
    cases: list[dict[str, Any]] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)


def write_suite(imported: ImportedSuite, target: Path) -> None:
    """Validate `imported` as a YAML suite and write it (atomically) to `target`."""
    document = {**imported.settings, "cases": imported.cases}
    try:
        SuiteSpec.model_validate(document)
    except pydantic.ValidationError as exc:
        raise ImportError_(
            f"the imported suite does not validate: {validation_message(exc)}"
        ) from None
    header = ["# Written by `tui-eval import`; edit freely."]
    if (
        not imported.settings.get("agent")
        and not imported.settings.get("model")
        and not imported.settings.get("recorded")
    ):
        header.append("# Set `agent: module:attribute` (or `model: PROVIDER:MODEL`) to run it.")
    if imported.unmapped:
        header.append("# Not imported (no tui-eval form; add checks by hand):")
        header += [f"#   - {' '.join(note.split())}" for note in imported.unmapped]
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, ("\n".join(header) + "\n" + body).encode())
