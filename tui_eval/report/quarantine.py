"""Quarantined cases: flaky cases that still run and show, but do not gate.

A quarantine lives in `<suite folder>/__baselines__/quarantine.json`, beside the baselines
and made for git like them (indented, keys sorted, no timestamps that change per run):

    {"schema_version": 1, "suites": {"calculator": {"explain to a child": {
        "reason": "flaky judge", "since": "2026-12-02", "until": "2026-12-31",
        "release_after": 3, "passing_runs": 1}}}}

A quarantined case does not fail the run (`--fail-on failures` or `regressions`): the
run's report names it in `metadata["quarantined"]` with its reason, JUnit marks it skipped,
and the summaries list it. It gates again the day after `until`, or once it has passed
`release_after` full runs in a row (each finished run that passes it counts one; a failing
one starts the count again); either way the file loses it and the run says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tui_eval.report.report import Report
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.home import private_subfolder

FILE_NAME = "quarantine.json"
SCHEMA_VERSION = 1
METADATA_KEY = "quarantined"
"""Where a run's report names its quarantined cases: `{case: reason}`."""


class QuarantineFileError(TuiEvalError, ValueError):
    """A quarantine file cannot be read; the message names the file and the place."""


@dataclass(frozen=True, slots=True)
class Quarantine:
    """One quarantined case.

    Attributes:
        reason: why it is quarantined (shown in JUnit and the summaries).
        since: the day it was quarantined.
        until: the last day it is quarantined (None: until released).
        release_after: passing runs in a row that lift it (None: never by itself).
        passing_runs: passing runs in a row so far.
    """

    reason: str
    since: dt.date
    until: dt.date | None = None
    release_after: int | None = None
    passing_runs: int = 0

    def active(self, today: dt.date) -> bool:
        """Whether it still holds on `today`."""
        return self.until is None or today <= self.until

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"reason": self.reason, "since": self.since.isoformat()}
        if self.until is not None:
            data["until"] = self.until.isoformat()
        if self.release_after is not None:
            data["release_after"] = self.release_after
            data["passing_runs"] = self.passing_runs
        return data

    @classmethod
    def from_json(cls, data: object, where: str) -> Quarantine:
        if not isinstance(data, dict):
            raise QuarantineFileError(f"{where}: expected an object, got {type(data).__name__}")
        try:
            until = data.get("until")
            release_after = data.get("release_after")
            passing = data.get("passing_runs", 0)
            if release_after is not None and (
                not isinstance(release_after, int) or release_after < 1
            ):
                raise ValueError(f"release_after must be a whole number ≥ 1, got {release_after!r}")
            if not isinstance(passing, int) or passing < 0:
                raise ValueError(f"passing_runs must be a whole number ≥ 0, got {passing!r}")
            return cls(
                reason=str(data.get("reason") or ""),
                since=dt.date.fromisoformat(str(data["since"])),
                until=dt.date.fromisoformat(str(until)) if until is not None else None,
                release_after=release_after,
                passing_runs=passing,
            )
        except KeyError as exc:
            raise QuarantineFileError(f"{where}: missing {exc.args[0]!r}") from None
        except (ValueError, TypeError) as exc:
            raise QuarantineFileError(f"{where}: {exc}") from None


def quarantine_path(baseline_path: Path) -> Path:
    """The quarantine file of the suites whose baselines live beside `baseline_path`."""
    return baseline_path.parent / FILE_NAME


def read_all(path: Path) -> dict[str, dict[str, Quarantine]]:
    """Every suite's quarantined cases in the file (none when it does not exist).

    Raises:
        QuarantineFileError: the file is not a quarantine file (the message says where).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise QuarantineFileError(f"{path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise QuarantineFileError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("suites", {}), dict):
        raise QuarantineFileError(f'{path}: expected {{"schema_version": 1, "suites": {{...}}}}')
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise QuarantineFileError(
            f"{path}: schema_version {version!r}; this tui-eval reads {SCHEMA_VERSION}"
        )
    found: dict[str, dict[str, Quarantine]] = {}
    for suite, cases in data.get("suites", {}).items():
        if not isinstance(cases, dict):
            raise QuarantineFileError(f"{path}: suites.{suite}: expected an object of cases")
        found[suite] = {
            case: Quarantine.from_json(entry, f"{path}: suites.{suite}.{case}")
            for case, entry in cases.items()
        }
    return found


def read(path: Path, suite: str) -> dict[str, Quarantine]:
    """The quarantined cases of `suite` (by case name)."""
    return read_all(path).get(suite, {})


def _write(path: Path, everything: dict[str, dict[str, Quarantine]]) -> None:
    suites = {
        suite: {case: q.to_json() for case, q in sorted(cases.items())}
        for suite, cases in sorted(everything.items())
        if cases
    }
    if not suites:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    data = {"schema_version": SCHEMA_VERSION, "suites": suites}
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    atomic_write_bytes(path, text.encode())


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the file's lock while it is read, changed and written (two runs, or a run and
    `tui-eval quarantine`, never erase each other's change). The lock file lives in
    tui-eval's own data folder, not beside the quarantine file: nothing for git to see."""
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    lock = private_subfolder("locks") / f"quarantine-{name}.lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        with contextlib.suppress(ImportError):
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def put(path: Path, suite: str, case: str, quarantine: Quarantine) -> None:
    """Quarantine `case` of `suite` (replacing an earlier quarantine of it)."""
    with _locked(path):
        everything = read_all(path)
        everything.setdefault(suite, {})[case] = quarantine
        _write(path, everything)


def release(path: Path, suite: str, case: str) -> bool:
    """Lift the quarantine of `case`; whether there was one."""
    with _locked(path):
        everything = read_all(path)
        if everything.get(suite, {}).pop(case, None) is None:
            return False
        _write(path, everything)
        return True


def apply_to(report: Report, path: Path, suite: str, today: dt.date, *, count: bool) -> list[str]:
    """Mark the quarantined cases of `report` (`metadata["quarantined"]`: this run does not
    gate on them) and, when the run `count`s (a finished run), move each one's count of
    passing runs in a row. A quarantine past its `until` ends before this run is judged; one
    that reached `release_after` ends after it. Returns what the run should say (one line
    per quarantine ended).

    Raises:
        QuarantineFileError: the file cannot be read.
    """
    with _locked(path):
        everything = read_all(path)
        mine = everything.get(suite, {})
        if not mine:
            return []
        by_name = {case.name: case for case in report.cases}
        notes: list[str] = []
        marked: dict[str, str] = {}
        changed = False
        for name, quarantine in sorted(mine.items()):
            if not quarantine.active(today):
                del mine[name]
                changed = True
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
            changed = changed or passing != quarantine.passing_runs or name not in mine
        if changed:
            _write(path, everything)
    if marked:
        report.metadata = {**report.metadata, METADATA_KEY: marked}
    return notes


def quarantined(report: Report) -> dict[str, str]:
    """The report's quarantined cases and their reasons."""
    found = report.metadata.get(METADATA_KEY) or {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


__all__ = [
    "FILE_NAME",
    "METADATA_KEY",
    "Quarantine",
    "QuarantineFileError",
    "apply_to",
    "put",
    "quarantine_path",
    "quarantined",
    "read",
    "read_all",
    "release",
]
