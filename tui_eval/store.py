"""Where things live on disk: baselines beside suites, run history and journals per project."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import pydantic

from tui_eval.report import CaseResult, Report, SampleResult

HOME_ENV = "TUI_EVAL_HOME"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def data_root() -> Path:
    """The root of tui-eval's local state: `$TUI_EVAL_HOME` or the platform's data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir("tui-eval"))


def project_dir(project_root: Path) -> Path:
    """The state folder of one project, keyed by its root path."""
    resolved = project_root.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    return data_root() / "projects" / f"{resolved.name or 'root'}-{digest}"


def find_project_root(start: Path | None = None) -> Path:
    """The nearest folder upward holding pyproject.toml, setup.cfg or .git; else `start`."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in ("pyproject.toml", "setup.cfg", ".git")):
            return folder
    return here


# -- baselines ----------------------------------------------------------------------------
def load_baseline(path: Path) -> Report | None:
    """The baseline at `path`, None when there is none.

    Raises:
        ReportFileError: the file exists but is corrupt (it is never silently replaced).
    """
    if not path.exists():
        return None
    return Report.load(path)


def save_baseline(path: Path, report: Report) -> Path:
    """Write `report` as the baseline at `path` (atomically)."""
    return report.save(path)


# -- run history and journals -------------------------------------------------------------
_SAMPLE = pydantic.TypeAdapter(SampleResult)


@dataclass(slots=True)
class RunSummary:
    """The few numbers lists of runs show, kept beside each report so that listing runs
    never parses whole reports (a 10,000-sample report is ~20 MB)."""

    cases_passed: int
    cases_total: int
    samples: int
    tokens: int
    case_rates: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per case: (passed samples, samples)."""

    @classmethod
    def of(cls, report: Report) -> RunSummary:
        """Summarise `report`."""
        return cls(
            report.n_passed,
            len(report.cases),
            sum(len(c.samples) for c in report.cases),
            report.usage.total_tokens,
            {c.name: (c.n_passed, len(c.samples)) for c in report.cases},
        )


_SUMMARY = pydantic.TypeAdapter(RunSummary)


@dataclass(slots=True)
class RunRecord:
    """One past run of a suite, as listed by `tui-eval history`."""

    run_id: str
    folder: Path
    suite: str
    suite_path: str
    started_at: float
    invocation: str
    finished: bool
    cancelled: bool
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def journal_path(self) -> Path:
        """The JSONL journal of the run's samples."""
        return self.folder / "journal.jsonl"

    @property
    def report_path(self) -> Path:
        """The run's full report (written when the run ends)."""
        return self.folder / "report.json"

    @property
    def status(self) -> str:
        """`finished`, `cancelled` or `interrupted` (killed: resumable)."""
        if not self.finished:
            return "interrupted"
        return "cancelled" if self.cancelled else "finished"

    @property
    def summary_path(self) -> Path:
        """The run's summary (written with the report)."""
        return self.folder / "summary.json"

    def summary(self) -> RunSummary:
        """The run's summary; computed from the report or journal when none was written."""
        try:
            return _SUMMARY.validate_json(self.summary_path.read_bytes())
        except (OSError, pydantic.ValidationError):
            return RunSummary.of(self.load_report())

    def load_report(self) -> Report:
        """The run's report; for an interrupted run, one rebuilt from its journal."""
        if self.report_path.exists():
            return Report.load(self.report_path)
        done = read_journal_samples(self.journal_path)
        cases = [CaseResult(name, samples, planned=len(samples)) for name, samples in done.items()]
        return Report(self.suite, cases, self.started_at, 0.0, cancelled=True)


def read_journal_samples(path: Path) -> dict[str, list[SampleResult]]:
    """The samples a journal recorded, by case name, in order. A torn last line is ignored."""
    done: dict[str, list[SampleResult]] = {}
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # the process died mid-write: that sample was in flight
            try:
                entry = json.loads(line)
            except ValueError:
                break
            if entry.get("t") == "sample":
                sample = _SAMPLE.validate_python(entry["sample"])
                done.setdefault(sample.case_name, []).append(sample)
    for samples in done.values():
        samples.sort(key=lambda s: s.index)
    return done


class RunJournal:
    """Appends each finished sample of one run to its JSONL journal as it finishes."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        record.folder.mkdir(parents=True, exist_ok=True)
        self._handle = record.journal_path.open("ab")

    def write_header(self) -> None:
        """Record what is needed to resume the run."""
        r = self.record
        header = {
            "t": "header",
            "run_id": r.run_id,
            "suite": r.suite,
            "suite_path": r.suite_path,
            "started_at": r.started_at,
            "invocation": r.invocation,
            "options": r.options,
        }
        self._write(json.dumps(header).encode())

    def append(self, sample: SampleResult) -> None:
        """Journal one finished sample (flushed to the OS, so a killed process keeps it)."""
        self._write(b'{"t":"sample","sample":' + _SAMPLE.dump_json(sample, fallback=repr) + b"}")

    def finish(self, report: Report) -> None:
        """Write the run's report and mark the journal finished."""
        report.save(self.record.report_path)
        atomic_write_bytes(self.record.summary_path, _SUMMARY.dump_json(RunSummary.of(report)))
        self._write(json.dumps({"t": "end", "cancelled": report.cancelled}).encode())
        self.close()
        self.record.finished = True
        self.record.cancelled = report.cancelled

    def close(self) -> None:
        """Close the journal file."""
        if not self._handle.closed:
            self._handle.close()

    def _write(self, line: bytes) -> None:
        self._handle.write(line + b"\n")
        self._handle.flush()


class RunHistory:
    """The runs of one project, under `<data root>/projects/<project>/runs/`."""

    def __init__(self, project_root: Path | None = None) -> None:
        self.project_root = project_root or find_project_root()
        self.folder = project_dir(self.project_root) / "runs"

    def start(
        self, suite: str, suite_path: str, *, invocation: str, options: dict[str, Any]
    ) -> RunJournal:
        """Open the journal of a new run."""
        started = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in suite)[:40]
        run_id = f"{stamp}-{safe}-{uuid.uuid4().hex[:6]}"
        record = RunRecord(
            run_id,
            self.folder / run_id,
            suite,
            suite_path,
            started,
            invocation,
            False,
            False,
            options,
        )
        journal = RunJournal(record)
        journal.write_header()
        return journal

    def reopen(self, record: RunRecord) -> RunJournal:
        """Append to the journal of an interrupted run."""
        return RunJournal(record)

    def runs(self) -> list[RunRecord]:
        """Every recorded run, newest first (unreadable folders are skipped)."""
        if not self.folder.exists():
            return []
        records = [r for folder in self.folder.iterdir() if (r := _read_record(folder)) is not None]
        return sorted(records, key=lambda r: (r.started_at, r.run_id), reverse=True)

    def interrupted(self) -> list[RunRecord]:
        """The unfinished runs of the most recent invocation that left any."""
        unfinished = [r for r in self.runs() if not r.finished]
        if not unfinished:
            return []
        latest = unfinished[0].invocation
        return sorted((r for r in unfinished if r.invocation == latest), key=lambda r: r.started_at)


def _read_record(folder: Path) -> RunRecord | None:
    journal = folder / "journal.jsonl"
    try:
        with journal.open("rb") as handle:
            header = json.loads(handle.readline())
            finished, cancelled = False, False
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 200))
            tail = handle.read().splitlines()
    except (OSError, ValueError):
        return None
    if tail:
        try:
            last = json.loads(tail[-1])
            if last.get("t") == "end":
                finished, cancelled = True, bool(last.get("cancelled"))
        except ValueError:
            pass
    if header.get("t") != "header":
        return None
    return RunRecord(
        header["run_id"],
        folder,
        header["suite"],
        header.get("suite_path", ""),
        float(header.get("started_at", 0)),
        header.get("invocation", ""),
        finished,
        cancelled,
        header.get("options", {}),
    )
