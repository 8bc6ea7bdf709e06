"""Text from untrusted values, written once so every output has the same rules: sanitising,
one-line forms, value as text, pydantic validation errors in words."""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python
from rich.cells import cell_len, set_cell_size

ELLIPSIS = "…"

# C0 controls (but tab and newline) become their visible "control pictures" (ESC → ␛);
# DEL → ␡ and C1 controls become U+FFFD. Nothing reaches a terminal as a control code.
_VISIBLE = {c: 0x2400 + c for c in range(32) if c not in (9, 10)}
_VISIBLE[0x7F] = 0x2421
_VISIBLE.update({c: 0xFFFD for c in range(0x80, 0xA0)})


def sanitize(text: str) -> str:
    """Control characters (not tabs or newlines) as visible stand-ins."""
    return text.translate(_VISIBLE)


def value_text(value: Any, *, pretty: bool = False) -> str:
    """A value as text: strings as themselves, None as "", anything else as JSON (`pretty`:
    indented; what JSON cannot hold as its `repr`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(
            to_jsonable_python(value, fallback=repr),
            ensure_ascii=False,
            indent=2 if pretty else None,
        )
    except (TypeError, ValueError):
        return repr(value)


CIRCULAR = "<circular reference>"


def json_safe(value: Any) -> Any:
    """`value` in a form JSON holds, losing little: lone surrogates escaped, bytes as repr, a
    container holding itself cut with `CIRCULAR`, other objects as JSON form or repr."""
    return _json_safe(value, set())


def _json_safe(value: Any, seen: set[int]) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return repr(bytes(value))
    if id(value) in seen:
        return CIRCULAR
    if isinstance(value, dict):
        seen.add(id(value))
        safe = {str(_json_safe(k, seen)): _json_safe(v, seen) for k, v in value.items()}
        seen.discard(id(value))
        return safe
    if isinstance(value, (list, tuple, set, frozenset)):
        seen.add(id(value))
        items = [_json_safe(item, seen) for item in value]
        seen.discard(id(value))
        return items
    try:
        converted = to_jsonable_python(value, fallback=repr)
    except (ValueError, TypeError, RecursionError):
        return _json_safe(repr(value), seen)
    if converted is value:
        return repr(value)
    seen.add(id(value))
    safe = _json_safe(converted, seen)
    seen.discard(id(value))
    return safe


XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 cannot carry, whatever the escaping (kept out of Markdown cells too)."""


def markdown_cell(text: str, limit: int = 120) -> str:
    """`text` as one Markdown table cell line: `limit` characters, XML-safe, escaped."""
    flat = cut(" ".join(XML_INVALID.sub("", text).split()), limit)
    for ch in "\\`*_[]<>|":
        flat = flat.replace(ch, "\\" + ch)
    return flat


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless it is one: `1,200 samples`."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def pad_cells(text: str, cells: int) -> str:
    """One sanitised line padded or cut to exactly `cells` terminal cells (CJK count two)."""
    text = " ".join(sanitize(text).split())
    if cell_len(text) > cells:
        return set_cell_size(text, cells - 1) + ELLIPSIS
    return set_cell_size(text, cells)


def one_line(value: Any, limit: int = 120) -> str:
    """One sanitised line of at most `limit` characters: whitespace runs become one space.

    Example:
        >>> one_line("a\\n  b\\x1b[31m", 20)
        'a b␛[31m'
    """
    raw = value_text(value)
    if len(raw) > limit * 4:  # never scan a 10 MB output to show 120 characters of it
        raw = raw[: limit * 4]
    return cut(" ".join(sanitize(raw).split()), limit)


def validation_message(exc: pydantic.ValidationError, *, every: bool = False) -> str:
    """A pydantic error in words (`field 'cases.0.samples': ...`): the deepest, or `every`."""
    errors = exc.errors() if every else [_most_specific(exc)]
    parts = []
    for error in errors:
        where = ".".join(_location(error["loc"]))
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"field {where!r}: {message}" if where else message)
    return "; ".join(parts)


def validation_error_at(exc: pydantic.ValidationError) -> tuple[list[str], str]:
    """The most specific error of `exc`: its location and message (`validation_message`)."""
    error = _most_specific(exc)
    return _location(error["loc"]), error["msg"].removeprefix("Value error, ")


def _most_specific(exc: pydantic.ValidationError) -> Any:
    return max(exc.errors(), key=lambda e: len(_location(e["loc"])))


_TYPE_LABEL = re.compile(
    r"^[a-z]+\[.*\]$|^(str|int|float|bool|dict|list|none|literal\[.*\])$|_arguments$"
)


def _location(loc: tuple[int | str, ...]) -> list[str]:
    """`loc` without a union's member labels (`str`, `contains_arguments`) or repeated tags."""
    parts: list[str] = []
    for part in loc:
        text = str(part)
        if _TYPE_LABEL.search(text) or (parts and parts[-1] == text):
            continue
        parts.append(text)
    return parts
