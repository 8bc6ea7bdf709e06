"""Samples left out of the verdicts: conversations the user simulator failed.

Such a sample says nothing about the agent, so by default it is left out of every rate,
verdict and exit code, never silently: every summary says how many, in the words defined
here. A report that counted them records it, so a comparison reads both alike."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.util.text import counted, one_line

WHY = "the user simulator's fault"
"""Why a sample is left out, as every summary says it."""

COUNT_USER_FAULTS = "count_user_faults"
"""The report metadata key of a run that counted its user faults (set only then)."""


class ReportLike(Protocol):
    """What the comparisons read of a `Report` (named by its shape to avoid a cycle)."""

    @property
    def name(self) -> str: ...
    @property
    def cases(self) -> list[CaseResult]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


def blamed_on_user(sample: SampleResult) -> bool:
    """Whether `sample` failed by the user simulator's fault (left out unless counted)."""
    fault = sample.fault
    return fault is not None and fault.party == "user" and sample.status != "passed"


def is_left_out(sample: SampleResult, *, count_user_faults: bool) -> bool:
    """Whether `sample` is left out under the setting `count_user_faults`."""
    return not count_user_faults and (sample.excluded or blamed_on_user(sample))


def counts_user_faults(report: ReportLike) -> bool:
    """Whether the run of `report` counted its user faults (metadata, else its samples)."""
    recorded = report.metadata.get(COUNT_USER_FAULTS)
    if isinstance(recorded, bool):
        return recorded
    return any(
        blamed_on_user(sample) and not sample.excluded
        for case in report.cases
        for sample in case.samples
    )


def counted_user_faults(samples: Iterable[SampleResult]) -> int:
    """How many of `samples` the user simulator failed yet count (`count_user_faults`)."""
    return sum(1 for sample in samples if blamed_on_user(sample) and not sample.excluded)


@dataclass(frozen=True, slots=True)
class Tally:
    """A case's samples under one setting of `count_user_faults`."""

    passed: int
    counted: int
    left_out: int
    threshold: float

    @property
    def rate(self) -> float:
        """The pass rate of the counted samples (0.0 with none)."""
        return self.passed / self.counted if self.counted else 0.0

    @property
    def verdict(self) -> bool:
        """Whether enough counted samples passed (False with none)."""
        return self.counted > 0 and self.rate >= self.threshold - 1e-12

    @property
    def undecided(self) -> bool:
        """Whether every sample was left out."""
        return self.counted == 0 and self.left_out > 0


def tally(case: CaseResult, *, count_user_faults: bool) -> Tally:
    """`case`'s samples counted as a run with `count_user_faults` counts them."""
    passed = kept = left = 0
    for sample in case.samples:
        if is_left_out(sample, count_user_faults=count_user_faults):
            left += 1
        else:
            kept += 1
            passed += sample.status == "passed"
    return Tally(passed, kept, left, case.pass_threshold)


def left_out_note(count: int) -> str:
    """`3 samples left out: the user simulator's fault`."""
    return f"{counted(count, 'sample')} left out: {WHY}"


def counted_note(count: int) -> str:
    """What a run that counts its user faults says of them."""
    return f"{counted(count, 'sample')} the user simulator failed are counted (count_user_faults)"


def sample_count(passed: int, total: int, left_out: int) -> str:
    """`2/4`, or `2/4 (1 left out)`: passed of counted, and the samples left out."""
    return f"{passed}/{total} ({left_out} left out)" if left_out else f"{passed}/{total}"


def case_count(case: CaseResult) -> str:
    """A case's `sample_count` as recorded."""
    return sample_count(case.samples_passed, case.counted, case.left_out)


def all_left_out(case: CaseResult) -> str:
    """`every sample left out (2 of 2): the user simulator's fault`."""
    n = len(case.samples)
    return f"every sample left out ({n} of {n}): {WHY}"


def undecided_note(case: CaseResult) -> str:
    """`undecided: every sample left out (2 of 2): the user simulator's fault`."""
    return f"undecided: {all_left_out(case)}"


def counted_failure(case: CaseResult) -> str:
    """The first counted failing sample's reason ("" when none failed)."""
    return next((s.first_failure for s in case.samples if not s.passed and not s.excluded), "")


def first_fault(case: CaseResult) -> str:
    """The first left-out sample's fault, on one line ("" when none was left out)."""
    sample = next((s for s in case.samples if s.excluded and s.fault is not None), None)
    return one_line(str(sample.fault), 200) if sample is not None else ""
