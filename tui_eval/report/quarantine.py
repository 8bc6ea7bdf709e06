"""Quarantined cases: flaky cases that still run and show, but do not gate.

Kept in `<suite folder>/__baselines__/quarantine.json`, for git like the baselines. A case
gates again the day after `until`, or after `release_after` passing full runs in a row."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Literal

import pydantic
import pydantic.dataclasses

from tui_eval.report.report import Report
from tui_eval.util.atomic import atomic_write_bytes, folder_lock
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import validation_message

FILE_NAME = "quarantine.json"
SCHEMA_VERSION = 1
METADATA_KEY = "quarantined"
"""Where a run's report names its quarantined cases: `{case: reason}`."""


class QuarantineFileError(TuiEvalError, ValueError):
    """A quarantine file cannot be read; the message names the file and the place."""


@pydantic.dataclasses.dataclass(frozen=True, config=pydantic.ConfigDict(extra="forbid"))
class Quarantine:
    """One quarantined case: why, since and until when, and the passing runs in a row that
    lift it (`release_after`) and that it has had (`passing_runs`)."""

    reason: str
    since: dt.date
    until: dt.date | None = None
    release_after: pydantic.PositiveInt | None = None
    passing_runs: pydantic.NonNegativeInt = 0

    def active(self, today: dt.date) -> bool:
        """Whether it still holds on `today`."""
        return self.until is None or today <= self.until


class QuarantineFile(pydantic.BaseModel):
    """A quarantine file: each suite's quarantined cases, by case name."""

    model_config = pydantic.ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    suites: dict[str, dict[str, Quarantine]] = {}


def quarantine_path(baseline_path: Path) -> Path:
    """The quarantine file of the suites whose baselines live beside `baseline_path`."""
    return baseline_path.parent / FILE_NAME


def read_all(path: Path) -> dict[str, dict[str, Quarantine]]:
    """Every suite's quarantined cases in the file (none when it does not exist).

    Raises:
        QuarantineFileError: the file is not a quarantine file (the message says where).
    """
    try:
        return QuarantineFile.model_validate_json(path.read_bytes()).suites
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise QuarantineFileError(f"{path}: {exc.strerror or exc}") from None
    except pydantic.ValidationError as exc:
        raise QuarantineFileError(f"{path}: {validation_message(exc)}") from None


def read(path: Path, suite: str) -> dict[str, Quarantine]:
    """The quarantined cases of `suite` (by case name)."""
    return read_all(path).get(suite, {})


def _write(path: Path, everything: dict[str, dict[str, Quarantine]]) -> None:
    suites = {suite: dict(sorted(cases.items())) for suite, cases in everything.items() if cases}
    if not suites:
        path.unlink(missing_ok=True)
        return
    data = QuarantineFile(suites=suites).model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)
    atomic_write_bytes(path, (text + "\n").encode())


def put(path: Path, suite: str, case: str, quarantine: Quarantine) -> None:
    """Quarantine `case` of `suite`, under the folder's lock so writers keep each other's."""
    with folder_lock(path.parent):
        everything = read_all(path)
        everything.setdefault(suite, {})[case] = quarantine
        _write(path, everything)


def release(path: Path, suite: str, case: str) -> bool:
    """Lift the quarantine of `case`; whether there was one."""
    if not path.exists():
        return False
    with folder_lock(path.parent):
        everything = read_all(path)
        if everything.get(suite, {}).pop(case, None) is None:
            return False
        _write(path, everything)
        return True


def apply_to(report: Report, path: Path, suite: str, today: dt.date, *, count: bool) -> list[str]:
    """Mark the quarantined cases of `report` (`metadata["quarantined"]`) and, if `count`,
    move each one's count of passing runs; returns one line per quarantine ended.

    Raises:
        QuarantineFileError: the file cannot be read.
    """
    if not path.exists():  # nothing quarantined: no folder made, no lock taken
        return []
    with folder_lock(path.parent):
        everything = read_all(path)
        mine = everything.get(suite, {})
        if not mine:
            return []
        by_name = {case.name: case for case in report.cases}
        notes: list[str] = []
        marked: dict[str, str] = {}
        before = dict(mine)
        for name, quarantine in sorted(mine.items()):
            if not quarantine.active(today):
                del mine[name]
                notes.append(f"{name}: quarantine ended on {quarantine.until}; it gates again")
                continue
            case = by_name.get(name)
            if case is None:
                continue
            marked[name] = quarantine.reason or "quarantined"
            if not count or quarantine.release_after is None:
                continue
            passing = quarantine.passing_runs + 1 if case.complete and case.passed else 0
            if passing >= quarantine.release_after:
                del mine[name]
                notes.append(
                    f"{name}: released from quarantine after {passing} passing run(s) in a "
                    "row; it gates again from the next run"
                )
            else:
                mine[name] = dataclasses.replace(quarantine, passing_runs=passing)
        if mine != before:
            _write(path, everything)
    if marked:
        report.metadata = {**report.metadata, METADATA_KEY: marked}
    return notes


def quarantined(report: Report) -> dict[str, str]:
    """The report's quarantined cases and their reasons."""
    found = report.metadata.get(METADATA_KEY) or {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
