"""`tui-eval import inspect`: Inspect datasets and eval logs as suites (README: "Agents from
other frameworks, traces and datasets"). Each sample is a case (`target` as `expected`, `id`
as its name), checked as Inspect would: multiple choice by its choices in the input (as
`multiple_choice()` shows them) and a `choice` check, another target by an `includes()`-like
`contains`, or as an eval log's own `choice` or `includes` scorer says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_eval.checks.choice import choice_letter
from tui_eval.importers.inspect_files import InspectSource, Record, read_source
from tui_eval.importers.writing import ImportedSuite, ImportSourceError
from tui_eval.util.text import one_line

_UNSUPPORTED = ("files", "setup", "sandbox")
_ROLES = ("system", "user", "assistant", "tool")
_ATTACHMENT = "attachment://"

SINGLE_ANSWER = (
    "Answer this multiple choice question. {reply} 'ANSWER: $LETTER' (without quotes), "
    "where LETTER is one of {letters}.{think}\n\n{question}\n\n{choices}"
)
MULTIPLE_ANSWER = (
    "Answer this multiple choice question; more than one answer may be correct. {reply} "
    "'ANSWER: $LETTERS' (without quotes), where LETTERS is one or more of {letters}."
    "{think}\n\n{question}\n\n{choices}"
)


def suite_from_inspect(source: Path) -> ImportedSuite:
    """The suite an Inspect dataset or eval log describes.

    Raises:
        ImportSourceError: the file is none of the formats, or a sample cannot be imported.
    """
    read = read_source(source)
    if not read.records:
        raise ImportSourceError(f"{source}: no samples")
    scoring = _Scoring.of(read)
    converter = _Converter(scoring)
    converter.describe(read)
    for record in read.records:
        converter.imported.cases.append(converter.case(record))
    return converter.imported


@dataclass(slots=True)
class _Scoring:
    """How the source's samples were (or, for a dataset, are usually) answered and scored."""

    choice: bool = True
    """Multiple-choice samples get a `choice` check (and their choices in the input)."""
    includes_ignore_case: bool | None = True
    """Other targets get an `includes()`-like check (None: no check)."""
    multiple: bool | None = None
    cot: bool = False
    template: str | None = None
    shuffle: bool = False

    @staticmethod
    def of(read: InspectSource) -> _Scoring:
        if not read.is_log:
            return _Scoring()
        names = {name.removeprefix("inspect_ai/"): options for name, options in read.scorers}
        scoring = _Scoring(choice="choice" in names, includes_ignore_case=None)
        if "includes" in names:
            scoring.includes_ignore_case = bool(names["includes"].get("ignore_case", True))
        for solver, params in read.solvers:
            if solver.removeprefix("inspect_ai/") == "multiple_choice":
                multiple = params.get("multiple_correct")
                scoring.multiple = multiple if isinstance(multiple, bool) else None
                scoring.cot = bool(params.get("cot"))
                template = params.get("template")
                scoring.template = template if isinstance(template, str) else None
                scoring.shuffle = bool(params.get("shuffle"))
        return scoring


class _Converter:
    def __init__(self, scoring: _Scoring) -> None:
        self.scoring = scoring
        self.imported = ImportedSuite()
        self.names: set[str] = set()

    def describe(self, read: InspectSource) -> None:
        """Notes about the file as a whole (an eval log's run, a CSV's extra columns)."""
        notes = self.imported.unmapped
        for column in read.extra_columns:
            notes.append(
                f"column {column}: not a sample field (Inspect reads other columns only "
                "through a FieldSpec)"
            )
        if not read.is_log:
            return
        notes.append("the log's outputs and scores: the suite runs its samples again")
        if read.model:
            notes.append(f"model {read.model}: give the suite an `agent:` or `model:`")
        if read.epochs > 1:
            notes.append(
                f"epochs: {read.epochs} (each case runs once; set `samples:` to repeat it)"
            )
        for name, options in read.scorers:
            if name.removeprefix("inspect_ai/") not in ("choice", "includes"):
                shown = f" {one_line(options, 60)}" if options else ""
                notes.append(
                    f"scorer {name}{shown}: no tui-eval check scores as it does; add checks by "
                    "hand (each case keeps its target as `expected`)"
                )
        if not read.scorers:
            notes.append("the log names no scorer: add checks by hand")
        for solver, params in read.solvers:
            if solver.removeprefix("inspect_ai/") not in ("generate", "multiple_choice"):
                shown = f" {one_line(params, 60)}" if params else ""
                notes.append(f"solver {solver}{shown}")
        if self.scoring.shuffle:
            notes.append("multiple_choice(shuffle=True): the choices keep their order")

    def case(self, record: Record) -> dict[str, Any]:
        fields = record.fields
        raw_input = fields.get("input")
        if _missing(raw_input) or raw_input in ("", []):
            keys = ", ".join(str(key) for key in fields) or "none"
            raise ImportSourceError(
                f"{record.where}: an Inspect sample needs an `input` (its fields: {keys})"
            )
        case: dict[str, Any] = {"input": self.input(raw_input, record)}
        if not _missing(fields.get("id")) and fields.get("id") != "":
            name = str(fields["id"])
            if name in self.names:
                raise ImportSourceError(f"{record.where}: duplicate id {name!r}")
            self.names.add(name)
            case["name"] = name
        metadata = _metadata(fields.get("metadata"), record)
        target = _target(fields.get("target"))
        checks: list[dict[str, Any]] = []
        options = _choices(fields.get("choices"), record)
        if options:
            metadata["choices"] = options
            letters = _letters(target, len(options))
            if letters is None:
                self.imported.unmapped.append(
                    f"{record.label}: choices (the target {one_line(target, 40)!r} is not a "
                    "choice letter; kept in metadata)"
                )
            elif self.scoring.choice:
                case["input"] = self.ask(case["input"], options, letters, record)
                answer: Any = letters[0] if len(letters) == 1 else letters
                spec: dict[str, Any] = {"answer": answer, "options": len(options)}
                if self.scoring.multiple is not None and self.scoring.multiple != (
                    len(letters) > 1
                ):
                    spec["multiple"] = self.scoring.multiple
                checks.append({"choice": spec})
        for key in _UNSUPPORTED:
            if fields.get(key) and not _missing(fields.get(key)):
                self.imported.unmapped.append(f"{record.label}: {key}")
        if metadata:
            case["metadata"] = metadata
        if target not in ("", []):
            case["expected"] = target
            ignore_case = self.scoring.includes_ignore_case
            if not checks and ignore_case is not None:
                checks.append(_includes(target, ignore_case))
        if checks:
            case["checks"] = checks
        return case

    def input(self, raw: Any, record: Record) -> Any:
        """A string input as itself; chat messages as role/content, the rest listed."""
        if isinstance(raw, str):
            return _resolved(raw, record)
        if not isinstance(raw, list):
            raise ImportSourceError(
                f"{record.where}: `input` must be a string or a list of chat messages"
            )
        messages = []
        for position, message in enumerate(raw, 1):
            place = f"input message {position}"
            if not isinstance(message, Mapping):
                raise ImportSourceError(f"{record.where}: {place} must be an object")
            role = message.get("role")
            if role not in _ROLES:
                raise ImportSourceError(
                    f"{record.where}: {place}: role must be one of {', '.join(_ROLES)}, "
                    f"got {one_line(role, 30)!r}"
                )
            text, dropped = _content(message.get("content"), record)
            calls = message.get("tool_calls")
            if role == "assistant" and isinstance(calls, list) and calls:
                names = [
                    str(call.get("function") or "?") if isinstance(call, Mapping) else "?"
                    for call in calls
                ]
                dropped.append(f"tool call{'s' if len(names) > 1 else ''} {', '.join(names)}")
            if role == "tool":
                for key in ("tool_call_id", "function", "error"):
                    if message.get(key):
                        dropped.append(f"{key} {one_line(message[key], 60)!r}")
            if dropped:
                self.imported.unmapped.append(
                    f"{record.label}: {place} ({role}): {'; '.join(dropped)}"
                )
            messages.append({"role": role, "content": text})
        return messages

    def ask(self, question: Any, options: list[str], letters: list[str], record: Record) -> Any:
        """The input with its choices and how to answer, as `multiple_choice()` shows them."""
        if isinstance(question, str):
            return self.prompt(question, options, letters, record)
        last_user = max(
            (i for i, message in enumerate(question) if message["role"] == "user"), default=None
        )
        if last_user is None:
            raise ImportSourceError(
                f"{record.where}: a multiple-choice input needs a user message to ask"
            )
        asked = list(question)
        text = asked[last_user]["content"] or ""
        asked[last_user] = {"role": "user", "content": self.prompt(text, options, letters, record)}
        return asked

    def prompt(self, question: str, options: list[str], letters: list[str], record: Record) -> str:
        labels = [choice_letter(i) for i in range(len(options))]
        lettered = "\n".join(
            f"{label}) {option}" for label, option in zip(labels, options, strict=True)
        )
        multiple = self.scoring.multiple if self.scoring.multiple is not None else len(letters) > 1
        if self.scoring.template is not None:
            try:
                return self.scoring.template.format(
                    question=question, choices=lettered, letters=",".join(labels)
                )
            except (KeyError, IndexError, ValueError):
                self.imported.unmapped.append(
                    f"{record.label}: the log's multiple_choice template (it does not format "
                    "with question, choices and letters; the default is used)"
                )
        template = MULTIPLE_ANSWER if multiple else SINGLE_ANSWER
        return template.format(
            reply=(
                "The last line of your reply must be"
                if self.scoring.cot
                else "Your whole reply must be"
            ),
            think=" Think step by step before answering." if self.scoring.cot else "",
            letters=",".join(labels),
            question=question,
            choices=lettered,
        )


def _missing(value: Any) -> bool:
    """None, or the NaN pandas and Hugging Face write for an empty cell."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _resolved(text: str, record: Record) -> str:
    """Text a log stored apart (`attachment://HASH`) as itself."""
    if text.startswith(_ATTACHMENT):
        stored = record.attachments.get(text.removeprefix(_ATTACHMENT))
        if isinstance(stored, str):
            return stored
    return text


def _content(raw: Any, record: Record) -> tuple[str, list[str]]:
    """A message's text (its text parts, one a line) and the kinds of part left out."""
    if _missing(raw):
        return "", []
    if isinstance(raw, str):
        return _resolved(raw, record), []
    if not isinstance(raw, list):
        return one_line(raw, 10_000), []
    texts: list[str] = []
    dropped: list[str] = []
    for part in raw:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(_resolved(part["text"], record))
            continue
        label = f"{kind} content" if isinstance(kind, str) else "a content part"
        if label not in dropped:
            dropped.append(label)
    return "\n".join(texts), dropped


def _metadata(raw: Any, record: Record) -> dict[str, Any]:
    """A sample's metadata: a mapping, or a JSON object in a string (as a CSV cell holds it)."""
    if _missing(raw) or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if not isinstance(raw, Mapping):
        raise ImportSourceError(
            f"{record.where}: metadata: not a mapping or a JSON object "
            f"({one_line(record.fields.get('metadata'), 60)!r})"
        )
    return dict(raw)


def _target(raw: Any) -> str | list[str]:
    if _missing(raw):
        return ""
    if isinstance(raw, list):
        targets = [str(item) for item in raw]
        return targets[0] if len(targets) == 1 else targets
    return str(raw)


def _choices(raw: Any, record: Record) -> list[str]:
    """Inspect's reading of `choices`: a list, or a string split at commas (else spaces)."""
    if _missing(raw):
        return []
    if isinstance(raw, list):
        return [str(option) for option in raw if str(option).strip()]
    if isinstance(raw, str):
        parts = raw.split(",")
        if len(parts) == 1:
            parts = raw.split()
        return [part.strip() for part in parts if part.strip()]
    if isinstance(raw, Mapping):
        raise ImportSourceError(f"{record.where}: choices: expected a list")
    return [str(raw)]


def _letters(target: str | list[str], options: int) -> list[str] | None:
    """The target's choice letters (as Inspect's `choice()` reads it), or None."""
    text = "".join(target) if isinstance(target, list) else target
    labels = {choice_letter(i) for i in range(options)}
    letters = list(dict.fromkeys(c.upper() for c in text if c not in ", "))
    if not letters or any(letter not in labels for letter in letters):
        return None
    return letters


def _includes(target: str | Sequence[str], ignore_case: bool) -> dict[str, Any]:
    def one(value: str) -> dict[str, Any]:
        return (
            {"contains": {"value": value, "ignore_case": True}}
            if ignore_case
            else {"contains": value}
        )

    if isinstance(target, str):
        return one(target)
    return {"any_of": [one(value) for value in target]}
