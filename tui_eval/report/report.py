"""`Report`: the results of one run, its file (`ReportFile`) and its printed summary."""

from __future__ import annotations

import json
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, Self, TypeVar

import pydantic
from rich.cells import cell_len

from tui_eval.agents.messages import Usage
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.diff import Diff, compare_reports
from tui_eval.report.left_out import (
    case_count,
    counted_note,
    counted_user_faults,
    first_fault,
    left_out_note,
    undecided_note,
)
from tui_eval.report.stored_values import (
    output_once,
    output_twice,
    restore_output,
    storable_case,
)
from tui_eval.stats.proportions import (
    clustered_rate_interval,
    wilson_interval,
)
from tui_eval.util.atomic import atomic_write_bytes
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.home import in_data_root
from tui_eval.util.text import counted, one_line, pad_cells, validation_message

SCHEMA_VERSION = 1
REPORT_KIND: Literal["tui-eval-report"] = "tui-eval-report"


class ReportFileError(TuiEvalError, ValueError):
    """A report or baseline file could not be read; the message names the file."""


@dataclass(slots=True)
class Report:
    """The results of one evaluation run: `print(report)` gives the summary, `report.passed`
    is for asserting in CI.

    Attributes:
        name: the run's name (the suite's, usually).
        cases: one `CaseResult` per case, in case order.
        started_at: when the run started (Unix time); duration_s: its wall time.
        cancelled: whether the run was stopped before every sample finished.
        priced: whether samples carry a cost.
        metadata: free-form facts about the run (suite file, git commit...).
        stopped: why the run stopped early on its own (budget or time budget).
    """

    name: str = "eval"
    cases: list[CaseResult] = field(default_factory=list)
    _: KW_ONLY
    started_at: float = 0.0
    duration_s: float = 0.0
    cancelled: bool = False
    priced: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None

    def __repr__(self) -> str:
        samples = sum(len(case.samples) for case in self.cases)
        return (
            f"<{type(self).__name__} {self.name!r} {len(self.cases):,} cases · "
            f"{counted(samples, 'sample')} · passed={self.passed}>"
        )

    # -- numbers (samples left out, `report.left_out`, are in no rate or verdict) -------
    @property
    def passed(self) -> bool:
        """Every case passed (or is undecided) and the run was not cancelled."""
        return not self.cancelled and all(case.passed or case.undecided for case in self.cases)

    @property
    def cases_passed(self) -> int:
        """How many cases passed."""
        return sum(1 for case in self.cases if case.passed)

    @property
    def cases_undecided(self) -> int:
        """How many cases have no verdict: every sample was left out."""
        return sum(1 for case in self.cases if case.undecided)

    @property
    def cases_decided(self) -> int:
        """How many cases have a verdict (all but the undecided ones)."""
        return len(self.cases) - self.cases_undecided

    @property
    def samples_left_out(self) -> int:
        """How many samples are left out of the pass rates (the user simulator's fault)."""
        return sum(case.left_out for case in self.cases)

    @property
    def pass_rate(self) -> float:
        """The fraction of cases with a verdict that passed."""
        decided = self.cases_decided
        return self.cases_passed / decided if decided else 0.0

    @property
    def pass_rate_ci(self) -> tuple[float, float]:
        """The 95% (Wilson) interval of `pass_rate`, the share of cases that passed."""
        return wilson_interval(self.cases_passed, self.cases_decided)

    @property
    def sample_pass_rate(self) -> float:
        """The mean of the cases' sample pass rates (each case weighs the same)."""
        rates = [case.pass_rate for case in self.cases if case.counted]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def sample_pass_rate_ci(self) -> tuple[float, float]:
        """The 95% interval of `sample_pass_rate`, clustered by case (samples are not i.i.d.)."""
        cases = [case for case in self.cases if case.counted]
        return clustered_rate_interval(
            [case.pass_rate for case in cases], [case.counted for case in cases]
        )

    def pass_hat_k(self, k: int) -> float:
        """The mean over cases (with at least k counted samples) of their pass^k.

        Raises:
            ValueError: no case has k counted samples (or k < 1).
        """
        eligible = [case for case in self.cases if case.counted >= k >= 1]
        if not eligible:
            raise ValueError(f"pass^k needs cases with at least k={k} samples; none has")
        return sum(case.pass_hat_k(k) for case in eligible) / len(eligible)

    @property
    def samples(self) -> list[SampleResult]:
        """Every finished sample, case by case."""
        return [sample for case in self.cases for sample in case.samples]

    @property
    def usage(self) -> Usage:
        """Summed usage of every sample (judges included)."""
        return sum((sample.usage for case in self.cases for sample in case.samples), Usage())

    @property
    def cost(self) -> float | None:
        """The summed cost, None when the run was not priced."""
        if not self.priced:
            return None
        return sum(s.cost or 0.0 for case in self.cases for s in case.samples)

    @property
    def unpriced_samples(self) -> int:
        """In a priced report, the samples that called a model yet have no cost."""
        if not self.priced:
            return 0
        return sum(1 for s in self.samples if s.cost is None and s.usage.requests)

    @property
    def avg_latency_ms(self) -> float:
        """The mean sample latency."""
        samples = self.samples
        return sum(s.latency_ms for s in samples) / len(samples) if samples else 0.0

    @property
    def avg_score(self) -> float | None:
        """The mean sample score, None when nothing was scored."""
        scores = [s for sample in self.samples if (s := sample.score) is not None]
        return sum(scores) / len(scores) if scores else None

    # -- text ----------------------------------------------------------------------
    def header(self) -> str:
        """The summary's first line: it says how many samples were left out, and why."""
        n = self.cases_decided
        samples = sum(len(case.samples) for case in self.cases)
        parts = [f"eval: {self.cases_passed}/{n} cases passed ({self.pass_rate:.0%})"]
        undecided = self.cases_undecided
        if undecided:
            parts.append(f"{counted(undecided, 'case')} undecided")
        parts.append(counted(samples, "sample"))
        left_out = self.samples_left_out
        if left_out:
            parts.append(left_out_note(left_out))
        kept = counted_user_faults(self.samples)
        if kept:
            parts.append(counted_note(kept))
        parts += [counted(self.usage.total_tokens, "token"), f"{self.duration_s:.1f}s"]
        cost = self.cost
        if cost is not None:
            parts.append(f"${cost:.4f}")
            unpriced = self.unpriced_samples
            if unpriced:
                parts.append(f"{counted(unpriced, 'sample')} unpriced")
        if n:
            low, high = self.pass_rate_ci
            parts.append(f"95% CI {low:.0%}–{high:.0%}".replace("%–", "–"))
        cached = sum(1 for sample in self.samples if sample.cached)
        if cached:
            parts.append(f"{cached:,} cached")
        line = " · ".join(parts)
        if self.stopped:
            return f"{line} · stopped: {self.stopped}"
        return line + " · cancelled" if self.cancelled else line

    def __str__(self) -> str:
        return render_summary(self)

    def summary(self) -> str:
        """The printable summary (the same as `str(report)`)."""
        return render_summary(self)

    def assert_pass_rate(self, min_pass_rate: float) -> None:
        """Raise `AssertionError` naming the failing cases when the pass rate is too low."""
        if self.pass_rate + 1e-12 >= min_pass_rate:
            return
        failing = [c for c in self.cases if not c.passed and not c.undecided]
        lines = [
            f"pass rate {self.pass_rate:.0%} is below {min_pass_rate:.0%} "
            f"({self.cases_passed}/{len(self.cases)} passed); failing:"
        ]
        lines += [f"  ✗ {c.name}: {c.first_failure or 'no samples finished'}" for c in failing[:20]]
        if len(failing) > 20:
            lines.append(f"  … and {len(failing) - 20} more")
        raise AssertionError("\n".join(lines))

    # -- files ---------------------------------------------------------------------
    @classmethod
    def file_model(cls) -> type[ReportFile[Any]]:
        """The pydantic model of a file holding this class of report (`ReportFile[cls]`)."""
        model = _FILE_MODELS.get(cls)
        if model is None:
            model = _FILE_MODELS[cls] = ReportFile[cls]  # type: ignore[valid-type]
        return model

    def to_json(self) -> bytes:
        """The report as the JSON document `save()` writes."""
        for case in self.cases:
            case.definition_fingerprint()
        report = self
        if any(output_twice(s) for case in self.cases for s in case.samples):
            cases = [replace(c, samples=[output_once(s) for s in c.samples]) for c in self.cases]
            report = replace(self, cases=cases)
        try:
            document = self.file_model().model_construct(report=report)
            return document.model_dump_json(fallback=repr).encode()
        except (ValueError, TypeError, RecursionError):  # pydantic-core's serialization errors
            safe = replace(report, cases=[storable_case(case) for case in report.cases])
            return self.file_model().model_construct(report=safe).model_dump_json().encode()

    def save(self, path: str | Path) -> Path:
        """Write the report atomically as JSON; values that are not JSON are stored as their repr."""
        target = Path(path)
        atomic_write_bytes(target, self.to_json(), private=in_data_root(target))
        return target

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str = "<report>") -> Self:
        """Parse a saved report. Raises `ReportFileError` naming `source` when it cannot."""
        model = cls.file_model()
        try:
            document = model.model_validate_json(data)
        except pydantic.ValidationError as exc:
            raise _report_file_error(data, source, exc) from None
        report: Self = document.report
        for case in report.cases:
            for sample in case.samples:
                restore_output(sample)
        return report

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a report written by `save()`.

        Raises:
            ReportFileError: the file is missing, truncated, not a report, or from a newer schema.
        """
        target = Path(path)
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise ReportFileError(f"{target}: cannot read report: {exc.strerror or exc}") from None
        return cls.from_json(data, source=str(target))

    def compare(self, baseline: Report, *, count_user_faults: bool | None = None) -> Diff:
        """Match cases by name against `baseline`, both read under one `count_user_faults`.

        Raises:
            ValueError: either report has two cases with the same name.
        """
        return compare_reports(self, baseline, count_user_faults=count_user_faults)


ReportT = TypeVar("ReportT", bound=Report)


class ReportFile(pydantic.BaseModel, Generic[ReportT]):
    """A report file, `{"kind": "tui-eval-report", "schema_version": N, "report": {...}}`."""

    kind: Literal["tui-eval-report"] = REPORT_KIND
    schema_version: Annotated[int, pydantic.Field(ge=1, le=SCHEMA_VERSION)] = SCHEMA_VERSION
    report: ReportT


_FILE_MODELS: dict[type[Report], type[ReportFile[Any]]] = {}
"""`ReportFile[cls]` by report class: pydantic does not keep them, and each costs ~10 ms."""


def _report_file_error(
    data: bytes | str, source: str, exc: pydantic.ValidationError
) -> ReportFileError:
    """Say what is wrong with a file that did not validate as a report."""
    try:
        document = json.loads(data)
    except RecursionError:
        return ReportFileError(f"{source}: not a report: JSON nested too deeply to read")
    except ValueError as parse_error:
        return ReportFileError(f"{source}: not valid JSON (truncated or corrupt?): {parse_error}")
    if not isinstance(document, dict) or document.get("kind") != REPORT_KIND:
        return ReportFileError(f'{source}: not a tui-eval report (no "kind": "{REPORT_KIND}")')
    version = document.get("schema_version")
    if not isinstance(version, int):
        return ReportFileError(f"{source}: report has no integer schema_version")
    if version > SCHEMA_VERSION:
        return ReportFileError(
            f"{source}: written by a newer tui-eval (schema_version {version}; "
            f"this version reads up to {SCHEMA_VERSION}); upgrade tui-eval to read it"
        )
    return ReportFileError(f"{source}: invalid report: {validation_message(exc)}")


# -- the summary --------------------------------------------------------------------
NAME_CELLS = 40


def render_summary(report: Report, *, max_passing: int | None = None) -> str:
    """The seed's summary: a header, then one line per case with its first failure.

    Args:
        max_passing: list at most this many passing cases (failures are always listed).
    """
    lines = [report.header()]
    shown = report.cases
    hidden = 0
    if max_passing is not None:
        passing = [c for c in report.cases if c.passed]
        if len(passing) > max_passing:
            keep = {id(c) for c in passing[:max_passing]}
            shown = [c for c in report.cases if not c.passed or id(c) in keep]
            hidden = len(passing) - max_passing
    width = min(max((cell_len(one_line(c.name, 200)) for c in shown), default=0), NAME_CELLS)
    counts = [case_count(c) for c in shown]
    count_width = max((len(x) for x in counts), default=0)
    for case, count in zip(shown, counts, strict=True):
        mark = "✓" if case.passed else "?" if case.undecided else "✗"
        line = f"  {mark} {pad_cells(case.name, width)}  {count.ljust(count_width)}"
        if case.undecided:
            line += f"  {undecided_note(case)} — {first_fault(case)}"
        elif not case.passed:
            reason = case.first_failure or "no samples finished"
            line += f"  {one_line(reason, 160)}"
        if not case.complete:
            line += f"  (of {case.planned} planned)"
        lines.append(line.rstrip())
    if hidden:
        lines.append(f"  … and {hidden:,} more passing cases")
    return "\n".join(lines)
