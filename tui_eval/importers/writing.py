"""The suite an importer builds, validated as a declarative suite and written as YAML."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import yaml

from tui_eval.suites.declarative import SuiteSpec
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import sanitize, validation_message


class ImportSourceError(TuiEvalError, ValueError):
    """The source cannot be imported; the message names the file and the place."""


@dataclass
class ImportedSuite:
    """A suite file's content, before it is written.

    Attributes:
        settings: suite-level keys (name, agent, recorded, checks...).
        unmapped: what the source held that has no tui-eval form, one line each.
        needs: what to set before the suite runs (a judge model tui-eval cannot call...).
    """

    settings: dict[str, Any] = field(default_factory=dict)
    cases: list[dict[str, Any]] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)


class _Dumper(yaml.SafeDumper):
    """The safe dumper, writing text of several lines as a block (`|`) a person can read."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def write_suite(imported: ImportedSuite, target: Path) -> None:
    """Validate `imported` as a YAML suite and write it (atomically) to `target`."""
    document = {**imported.settings, "cases": imported.cases}
    try:
        SuiteSpec.model_validate(document)
    except pydantic.ValidationError as exc:
        raise ImportSourceError(
            f"the imported suite does not validate: {validation_message(exc)}"
        ) from None
    header = ["# Written by `tui-eval import`; edit freely."]
    if (
        not imported.settings.get("agent")
        and not imported.settings.get("model")
        and not imported.settings.get("recorded")
    ):
        header.append("# Set `agent: module:attribute` (or `model: PROVIDER:MODEL`) to run it.")
    for need in imported.needs:
        header += [
            f"# {line}"
            for line in textwrap.wrap(need, 96, break_long_words=False, break_on_hyphens=False)
        ]
    if imported.unmapped:
        header.append("# Not imported (no tui-eval form; add checks by hand):")
        header += [f"#   - {sanitize(' '.join(note.split()))}" for note in imported.unmapped]
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, ("\n".join(header) + "\n" + body).encode())
