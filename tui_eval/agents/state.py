"""Environment state: what a case's tools read and change (plain data, a pydantic model, or
an SQLite file), a fresh copy per sample, read as plain data after every turn and compared
by value (`25 == 25.0`, but `True` is not `1`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import decimal
import fnmatch
import json
import math
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pydantic

from tui_eval.agents.http.context import current_sample
from tui_eval.agents.messages import StateChange
from tui_eval.util.errors import TuiEvalError

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


class StateError(TuiEvalError, ValueError):
    """A case's state cannot be copied or read (the message names what and why)."""


def is_sqlite(state: Any) -> bool:
    """Whether `state` names an SQLite database file."""
    return isinstance(state, (str, Path)) and str(state).lower().endswith(SQLITE_SUFFIXES)


@dataclasses.dataclass(slots=True)
class Environment:
    """One sample's copy of a case's state.

    Attributes:
        live: what the tools get and change: the copied data or model, or the `Path` of
            the copied database.
    """

    live: Any
    _folder: str | None = None

    @classmethod
    def fresh(cls, template: Any, *, case: str = "") -> Environment:
        """A sample's own copy of `template` (else `StateError`, saying why)."""
        where = f"case {case!r}: " if case else ""
        if is_sqlite(template):
            source = Path(template)
            if not source.is_file():
                raise StateError(f"{where}state database {str(source)!r} does not exist")
            folder = tempfile.mkdtemp(prefix="tui-eval-state-")
            target = Path(folder) / source.name
            try:
                shutil.copyfile(source, target)
                _tables(target)  # refuse a file that is not a database now, not mid-run
            except (OSError, sqlite3.DatabaseError) as exc:
                shutil.rmtree(folder, ignore_errors=True)
                raise StateError(
                    f"{where}state {str(source)!r} is not an SQLite database: {exc}"
                ) from None
            return cls(target, folder)
        if isinstance(template, pydantic.BaseModel):
            return cls(template.model_copy(deep=True))
        try:
            return cls(copy.deepcopy(template))
        except Exception as exc:
            raise StateError(
                f"{where}state of type {type(template).__name__} cannot be copied for each "
                f"sample: {exc}"
            ) from None

    def snapshot(self) -> Any:
        """The state now, as plain data (a database as `{table: [row, ...]}`)."""
        return snapshot(self.live)

    def close(self) -> None:
        """Remove the sample's database copy (data and models need nothing)."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def current_state() -> Any:
    """The environment state of the sample running in this task (None without one), for
    tools of frameworks that do not hand them tui-eval's run context.

    Example:
        >>> def cancel_order(order_id: str) -> str:
        ...     state = current_state()
        ...     state["orders"][order_id]["status"] = "cancelled"
        ...     return "cancelled"
    """
    sample = current_sample()
    return sample.state if sample is not None else None


def snapshot(value: Any) -> Any:
    """`value` as plain data: dicts, lists, strings, numbers, bools and None."""
    if is_sqlite(value):
        return _database(Path(value))
    if isinstance(value, dict):
        try:  # the common case, in C: a state of plain data, read after every turn
            return json.loads(json.dumps(value, default=_plain_part, check_circular=False))
        except (TypeError, ValueError, RecursionError):
            pass  # keys JSON cannot hold: the general way below
    return _plain(value)


def _plain_part(value: Any) -> Any:
    """A value JSON has no form for (a model, a set, a dataclass), as plain data."""
    plain = _plain(value)
    if plain is value:
        raise TypeError(f"no plain form for {type(value).__name__}")
    return plain


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, pydantic.BaseModel):
        return _plain(value.model_dump(mode="python"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _tables(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        ).fetchall()
    return [str(row[0]) for row in rows]


def _database(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every table of the database, rows as dicts in rowid order."""
    tables: dict[str, list[dict[str, Any]]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        for table in _tables(path):
            quoted = '"' + table.replace('"', '""') + '"'
            try:
                cursor = db.execute(f"SELECT * FROM {quoted} ORDER BY rowid")
            except sqlite3.OperationalError:  # WITHOUT ROWID
                cursor = db.execute(f"SELECT * FROM {quoted}")
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, (_plain(v) for v in row), strict=True)) for row in cursor]
            tables[table] = rows
    return tables


# -- comparing states by value -------------------------------------------------------------

_MISSING = object()
_SEGMENT = re.compile(r"[^.\[\]]+|\[[^\]]*\]")


def same_value(a: Any, b: Any) -> bool:
    """Whether two plain values are equal by value (NaN equals NaN; a bool is no number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def path_segments(path: str) -> tuple[str, ...]:
    """`orders[0].status` or `orders.0.status` → `("orders", "0", "status")`."""
    return tuple(s.strip("[]") for s in _SEGMENT.findall(path))


def _join(path: tuple[str, ...]) -> str:
    text = ""
    for segment in path:
        text += f"[{segment}]" if segment.isdigit() else (f".{segment}" if text else segment)
    return text


def _ignored(path: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    """Whether `path` is, or lies under, a path an `ignore` pattern names (`*`, `**`)."""
    return any(_matches(path, pattern) for pattern in patterns)


def _matches(path: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    if not pattern:
        return True  # the pattern named a prefix of path: everything under it
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(path[i:], rest) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], head) and _matches(path[1:], rest)


def differences(
    before: Any, after: Any, *, ignore: Sequence[str] = (), path: tuple[str, ...] = ()
) -> list[StateChange]:
    """What changed from `before` to `after`, by value, skipping the paths `ignore` names."""
    patterns = [path_segments(p) for p in ignore]
    changes: list[StateChange] = []
    _diff(before, after, path, patterns, changes)
    return changes


def _diff(
    before: Any,
    after: Any,
    path: tuple[str, ...],
    patterns: Sequence[tuple[str, ...]],
    changes: list[StateChange],
) -> None:
    if patterns and _ignored(path, patterns):
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            old, new = before.get(key, _MISSING), after.get(key, _MISSING)
            _diff(old, new, (*path, str(key)), patterns, changes)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else _MISSING
            new = after[index] if index < len(after) else _MISSING
            _diff(old, new, (*path, str(index)), patterns, changes)
        return
    where = _join(path) or "(state)"
    if before is _MISSING:
        changes.append(StateChange(where, None, after, "added"))
    elif after is _MISSING:
        changes.append(StateChange(where, before, None, "removed"))
    elif not same_value(before, after):
        changes.append(StateChange(where, before, after))
