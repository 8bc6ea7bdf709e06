"""Where things live on disk: run history and journals per project (baselines: `report.baselines`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Literal

import pydantic

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.report.stored_values import output_once, restore_output, storable_sample
from tui_eval.service.request import Exports, RunRequest
from tui_eval.util.atomic import atomic_write_bytes, open_private, private_folder
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.home import data_root, in_data_root, private_subfolder

JOURNAL_SCHEMA_VERSION = 5
"""The journal line version this tui-eval reads and writes; a journal of another is listed
in the history with a message, never resumed."""


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


# -- run history and journals -------------------------------------------------------------
class JournalFileError(TuiEvalError, ValueError):
    """A journal cannot be read (another version of tui-eval wrote it); names the file."""


class _JournalLine(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    schema_version: int = JOURNAL_SCHEMA_VERSION


class JournalHeader(_JournalLine):
    """The first line of a journal: what is needed to list and to resume the run."""

    kind: Literal["header"] = "header"
    run_id: str
    suite: str
    suite_path: str = ""
    started_at: float = 0.0
    invocation: str = ""
    request: RunRequest = RunRequest()
    """What the run was asked to do."""
    definitions: dict[str, str] = {}
    """Each case's fingerprint at the start (a resume refuses a case changed since)."""
    exports: Exports = Exports()
    """The report files its invocation writes at the end (a resume writes them too)."""


class JournalSample(_JournalLine):
    """One finished sample."""

    kind: Literal["sample"] = "sample"
    sample: SampleResult
    arm: Literal["a"] | None = None
    """`"a"`: a sample of agent A of an A/B run (`tui-eval ab`)."""


class JournalEnd(_JournalLine):
    """The last line of a run that ended (finished or cancelled): nothing to resume."""

    kind: Literal["end"] = "end"
    cancelled: bool = False


JournalLine = Annotated[
    JournalHeader | JournalSample | JournalEnd, pydantic.Field(discriminator="kind")
]
_LINE: pydantic.TypeAdapter[JournalHeader | JournalSample | JournalEnd] = pydantic.TypeAdapter(
    JournalLine
)


def parse_journal_line(
    line: bytes, source: Path
) -> JournalHeader | JournalSample | JournalEnd | None:
    """One journal line as its model; None for a line that is not one (garbage, torn).

    Raises:
        JournalFileError: the line was written by another version's schema.
    """
    try:
        entry = _LINE.validate_json(line)
    except pydantic.ValidationError:
        try:
            raw = json.loads(line)
        except ValueError:
            return None
        # Version 1's lines were keyed by "t", without a version.
        version = (
            raw.get("schema_version", 1 if "t" in raw else None) if isinstance(raw, dict) else None
        )
        if not isinstance(version, int) or version == JOURNAL_SCHEMA_VERSION:
            return None
    else:
        version = entry.schema_version
        if version == JOURNAL_SCHEMA_VERSION:
            return entry
    if version > JOURNAL_SCHEMA_VERSION:
        raise JournalFileError(
            f"{source}: written by a newer tui-eval (journal schema_version {version}; this "
            f"version reads up to {JOURNAL_SCHEMA_VERSION}); upgrade tui-eval to resume it"
        )
    raise JournalFileError(
        f"{source}: written by an earlier tui-eval (journal schema_version {version}; this "
        f"version reads {JOURNAL_SCHEMA_VERSION}); its run cannot be resumed: start it again"
    )


@dataclass(slots=True)
class RunSummary:
    """The few numbers lists of runs show, kept beside each report so that listing runs
    never parses whole reports (~20 MB at 10,000 samples)."""

    cases_passed: int
    cases_total: int
    samples: int
    tokens: int
    case_rates: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per case: (passed samples, counted samples)."""
    resumed: bool = False
    """Whether the run was finished by a resume."""
    case_seconds: dict[str, float] = field(default_factory=dict)
    """Per case: the summed latency of its samples (what `--shard` balances on)."""
    samples_left_out: int = 0
    """Samples left out of the pass rates (the user simulator's fault)."""
    cases_undecided: int = 0
    """Cases whose every sample was left out (no verdict)."""

    @property
    def cases_decided(self) -> int:
        """The cases with a verdict: what `cases_passed` is out of."""
        return self.cases_total - self.cases_undecided

    def cases_text(self) -> str:
        """`4/5` (and ` ⊘1` when a case was undecided): passed of the decided cases."""
        undecided = f" ⊘{self.cases_undecided}" if self.cases_undecided else ""
        return f"{self.cases_passed}/{self.cases_decided}{undecided}"

    @classmethod
    def of(cls, report: Report) -> RunSummary:
        """Summarise `report`."""
        return cls(
            report.cases_passed,
            len(report.cases),
            sum(len(c.samples) for c in report.cases),
            report.usage.total_tokens,
            {c.name: (c.samples_passed, c.counted) for c in report.cases},
            bool(report.metadata.get("resumed")),
            {c.name: sum(s.latency_ms for s in c.samples) / 1000 for c in report.cases},
            report.samples_left_out,
            report.cases_undecided,
        )


_SUMMARY = pydantic.TypeAdapter(RunSummary)


class RunRecord(JournalHeader):
    """One past run of a suite (`tui-eval history`): its journal's header, folder and end."""

    folder: Path
    finished: bool = False
    cancelled: bool = False
    problem: str | None = None
    """Why this version cannot use the journal (another version wrote it)."""

    @property
    def journal_path(self) -> Path:
        """The JSONL journal of the run's samples."""
        return self.folder / "journal.jsonl"

    @property
    def report_path(self) -> Path:
        """The run's full report (written when the run ends)."""
        return self.folder / "report.json"

    @property
    def resumable(self) -> bool:
        """Whether `resume` can finish it: it was killed or cancelled before its end."""
        return not self.finished or self.cancelled

    @property
    def status(self) -> str:
        """`finished`, `cancelled` (resumable) or `interrupted` (killed: resumable)."""
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

    def header(self) -> JournalHeader:
        """The journal's header line for this record (credential headers left out)."""
        fields = {name: getattr(self, name) for name in JournalHeader.model_fields}
        return JournalHeader(**{**fields, "request": self.request.for_disk()})

    def load_report(self) -> Report:
        """The run's report; for an interrupted run, one rebuilt from its journal."""
        if self.report_path.exists():
            return Report.load(self.report_path)
        done = read_journal_samples(self.journal_path)
        cases = [CaseResult(name, samples, planned=len(samples)) for name, samples in done.items()]
        return Report(self.suite, cases, started_at=self.started_at, cancelled=True)


def read_journal_samples(path: Path, *, arm: str | None = None) -> dict[str, list[SampleResult]]:
    """The samples a journal recorded, by case name, in order (agent A's with `arm="a"`).

    A torn last line and non-journal lines are skipped; a sample recorded twice counts once.

    Raises:
        JournalFileError: another version of tui-eval wrote the journal.
    """
    done: dict[str, dict[int, SampleResult]] = {}
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # the process died mid-write: that sample was in flight
            entry = parse_journal_line(line, path)
            if isinstance(entry, JournalSample) and entry.arm == arm:
                sample = entry.sample
                restore_output(sample)
                done.setdefault(sample.case_name, {}).setdefault(sample.index, sample)
    return {name: [by_index[i] for i in sorted(by_index)] for name, by_index in done.items()}


class RunLockedError(TuiEvalError, RuntimeError):
    """Another process is running (or resuming) this run right now."""


class JournalWriteError(TuiEvalError, OSError):
    """The journal could not be written (disk full, a file-size limit...); names the path."""


class RunJournal:
    """Appends each finished sample of one run to its JSONL journal as it finishes.

    Opening it locks the run (released when it closes or the process dies), so two
    processes never run the same samples. A failed write is kept in `error`, not raised:
    the owner stops the run, and the journal stays resumable.

    Raises:
        RunLockedError: another process holds the run.
    """

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self.error: JournalWriteError | None = None
        if in_data_root(record.folder):
            private_subfolder("projects")  # a folder an older tui-eval left 0755 included
        private_folder(record.folder)  # the data folder is its owner's only (0700/0600)
        self._lock = _lock_run(record)
        self._handle = os.fdopen(open_private(record.journal_path, "a+b"), "a+b")
        if self._handle.seek(0, os.SEEK_END):
            self._handle.seek(-1, os.SEEK_END)
            if self._handle.read(1) != b"\n":  # a killed writer left half a line
                self._write(b"")  # ours start on a fresh one

    def append(self, sample: SampleResult, *, arm: Literal["a"] | None = None) -> None:
        """Journal one finished sample, flushed so a killed process keeps it."""
        sample = output_once(sample)
        try:
            data = JournalSample.model_construct(sample=sample, arm=arm).model_dump_json(
                fallback=repr
            )
        except (ValueError, TypeError, RecursionError):  # bytes, lone surrogates, cycles...
            data = JournalSample.model_construct(
                sample=storable_sample(sample), arm=arm
            ).model_dump_json()
        self._write(data.encode())

    def finish(self, report: Report) -> None:
        """Write the run's report and end the journal (finished, or cancelled: resumable);
        after a failed write, nothing more is written."""
        if self.error is None:
            try:
                report.save(self.record.report_path)
                atomic_write_bytes(
                    self.record.summary_path,
                    _SUMMARY.dump_json(RunSummary.of(report)),
                    private=True,
                )
            except OSError as exc:
                self.error = JournalWriteError(
                    exc.errno, f"cannot write {self.record.report_path}: {exc.strerror or exc}"
                )
            else:
                self._write(JournalEnd(cancelled=report.cancelled).model_dump_json().encode())
        self.close()
        if self.error is None:
            self.record.finished = True
            self.record.cancelled = report.cancelled

    def close(self) -> None:
        """Close the journal file and release the run."""
        if not self._handle.closed:
            with contextlib.suppress(OSError):  # its last write failed: recorded in `error`
                self._handle.close()
        self._lock.close()

    def write_header(self) -> None:
        """Record what listing and resuming the run need: its first line."""
        self._write(self.record.header().model_dump_json().encode())

    def _write(self, line: bytes) -> None:
        if self.error is not None or self._handle.closed:
            return
        try:
            self._handle.write(line + b"\n")
            self._handle.flush()
        except OSError as exc:
            self.error = JournalWriteError(
                exc.errno,
                f"cannot write the journal {self.record.journal_path}: {exc.strerror or exc}",
            )


def _lock_run(record: RunRecord) -> IO[bytes]:
    """Hold the run's lock file; the OS releases it if the process dies."""
    handle = os.fdopen(open_private(record.folder / "lock", "a+b"), "a+b")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise RunLockedError(
            f"run {record.run_id} is being run by another tui-eval process right now"
        ) from None
    return handle


class RunHistory:
    """The runs of one project, under `<data root>/projects/<project>/runs/`."""

    def __init__(self, project_root: Path | None = None) -> None:
        self.project_root = project_root or find_project_root()
        self.folder = project_dir(self.project_root) / "runs"

    def start(
        self,
        suite: str,
        suite_path: str,
        *,
        invocation: str,
        request: RunRequest | None = None,
        definitions: dict[str, str] | None = None,
        exports: Exports | None = None,
    ) -> RunJournal:
        """Open the journal of a new run (the arguments are `JournalHeader`'s)."""
        started = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in suite)[:40]
        run_id = f"{stamp}-{safe}-{uuid.uuid4().hex[:6]}"
        record = RunRecord(
            run_id=run_id,
            folder=self.folder / run_id,
            suite=suite,
            suite_path=suite_path,
            started_at=started,
            invocation=invocation,
            request=request or RunRequest(),
            definitions=dict(definitions or {}),
            exports=(exports or Exports()).absolute(),
        )
        journal = RunJournal(record)
        journal.write_header()
        return journal

    def runs(self) -> list[RunRecord]:
        """Every recorded run, newest first (unreadable folders are skipped)."""
        if not self.folder.exists():
            return []
        records = [r for folder in self.folder.iterdir() if (r := read_record(folder)) is not None]
        return sorted(records, key=lambda r: (r.started_at, r.run_id), reverse=True)

    def interrupted(self) -> list[RunRecord]:
        """The resumable runs of the most recent invocation that left any."""
        unfinished = [r for r in self.runs() if r.resumable]
        if not unfinished:
            return []
        latest = unfinished[0].invocation
        return sorted((r for r in unfinished if r.invocation == latest), key=lambda r: r.started_at)

    def invocation(self, invocation: str) -> list[RunRecord]:
        """Every run of one invocation (finished ones too), in the order it started them."""
        return sorted(
            (r for r in self.runs() if r.invocation == invocation), key=lambda r: r.started_at
        )


def read_record(folder: Path) -> RunRecord | None:
    """The run recorded in `folder`; None when its journal has no readable header.

    Raises:
        JournalFileError: another version of tui-eval wrote the journal.
    """
    journal = folder / "journal.jsonl"
    try:
        with journal.open("rb") as handle:
            first = handle.readline()
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 200))
            tail = handle.read().splitlines()
    except OSError:
        return None
    try:
        header = parse_journal_line(first, journal)
        last = parse_journal_line(tail[-1], journal) if tail else None
    except JournalFileError as exc:
        return _unreadable_record(folder, first, str(exc))
    if not isinstance(header, JournalHeader):
        return None
    return RunRecord(
        **dict(header),
        folder=folder,
        finished=isinstance(last, JournalEnd),
        cancelled=isinstance(last, JournalEnd) and last.cancelled,
    )


def _unreadable_record(folder: Path, first_line: bytes, problem: str) -> RunRecord | None:
    """A run whose journal another version wrote: listed, never resumed or read."""
    try:
        raw = json.loads(first_line)
        return RunRecord(
            run_id=str(raw.get("run_id", folder.name)),
            folder=folder,
            suite=str(raw.get("suite", "?")),
            suite_path=str(raw.get("suite_path", "")),
            started_at=float(raw.get("started_at", 0.0)),
            invocation=str(raw.get("invocation", "")),
            finished=(folder / "report.json").exists(),  # an ended run: nothing to resume
            problem=problem,
        )
    except (ValueError, TypeError, AttributeError):
        return None
