"""The label queue: which judged outputs and failed conversations of a run to label first
(a label helps most where there is none yet, on flaky cases, and on the judge's close calls).
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tui_eval.agents.messages import Conversation
from tui_eval.calibration.labels import Label, LabelRecord, LabelStore, label_key, new_label
from tui_eval.checks.base import CheckResult
from tui_eval.checks.faults import FAULT_CHECK, Fault, Party
from tui_eval.core.results import CaseResult, SampleResult


@dataclass(frozen=True, slots=True)
class _Item:
    """A sample of a run to label; `flaky` when its case's samples disagree."""

    case_index: int
    sample_index: int
    case: str
    sample: SampleResult
    flaky: bool

    @property
    def output(self) -> Any:
        """The agent's output the label is about."""
        return self.sample.output


@dataclass(frozen=True, slots=True)
class LabelItem(_Item):
    """One judged output of a run to label, with the judge's verdict on it (`check`)."""

    check: CheckResult

    @property
    def key(self) -> tuple[str, str, str]:
        """The label's identity in the labels file."""
        return label_key(self.case, self.check.name, self.output)

    @property
    def margin(self) -> float:
        """How far the judge's score is from its bar (0: on it); juries by their vote."""
        check = self.check
        if check.score is not None and check.threshold is not None:
            return abs(check.score - check.threshold)
        if check.verdicts:
            passing = sum(v.passed for v in check.verdicts)
            return abs(passing / len(check.verdicts) - 0.5)
        return 1.0

    def label(self, value: Label, *, note: str | None = None) -> LabelRecord:
        """A label of this output, by the current user, now."""
        return new_label(
            self.case,
            self.check.name,
            self.output,
            value,
            run=self.sample.run,
            labeler=current_labeler(),
            note=note,
        )


@dataclass(frozen=True, slots=True)
class FaultItem(_Item):
    """One failed conversation of a run to label with who failed it (`fault`)."""

    fault: Fault
    conversation: Conversation

    @property
    def key(self) -> tuple[str, str, str]:
        """The label's identity in the labels file."""
        return label_key(self.case, FAULT_CHECK, self.output, self.conversation)

    def label(self, party: Party, *, note: str | None = None) -> LabelRecord:
        """A fault label of this conversation (with its run and checks), by the current user."""
        return new_label(
            self.case,
            FAULT_CHECK,
            self.output,
            party,
            run=self.sample.run,
            checks=self.sample.checks,
            labeler=current_labeler(),
            note=note,
        )


QueueItem: TypeAlias = LabelItem | FaultItem
"""What the label queue holds: a judged output, or a failed conversation's fault."""


def current_labeler() -> str | None:
    """Who is labelling: the login name (None when it cannot be told)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return None


_Where: TypeAlias = tuple[int, int, str, SampleResult, bool]


def _samples(cases: Sequence[CaseResult]) -> Iterator[tuple[_Where, SampleResult]]:
    """Every sample in run order, with the fields an item labelling it starts with."""
    for case_index, case in enumerate(cases):
        flaky = _flaky(case)
        for sample_index, sample in enumerate(case.samples):
            yield (case_index, sample_index, case.name, sample, flaky), sample


def judged_items(cases: Sequence[CaseResult]) -> list[LabelItem]:
    """Every judged check of every finished sample with an output, in run order."""
    return [
        LabelItem(*where, check)
        for where, sample in _samples(cases)
        if sample.run is not None and sample.status in ("passed", "failed")
        for check in sample.checks
        if check.threshold is not None or check.verdicts is not None  # a judge's
    ]


def fault_items(cases: Sequence[CaseResult]) -> list[FaultItem]:
    """Every failed conversation with a fault, in run order: only samples whose checks
    failed (the rules, not the reviewer, blame an error or a timeout)."""
    return [
        FaultItem(*where, sample.fault, sample.run.conversation)
        for where, sample in _samples(cases)
        if sample.status == "failed"
        and sample.fault is not None
        and sample.run is not None
        and sample.run.conversation is not None
    ]


def _flaky(case: CaseResult) -> bool:
    """Whether the case's finished samples disagree (some passed, some failed)."""
    return len({s.passed for s in case.samples if s.status in ("passed", "failed")}) > 1


def label_queue(cases: Sequence[CaseResult], store: LabelStore) -> list[QueueItem]:
    """A run's items, most useful first: unlabelled, flaky cases, the judges' closest calls,
    faults the reviewer decided, last those the rules decided; ties in run order."""
    items: list[QueueItem] = [*judged_items(cases), *fault_items(cases)]
    labelled = {record.key for record in store}

    def order(item: QueueItem) -> tuple[bool, bool, int, float]:
        if isinstance(item, LabelItem):
            return (item.key in labelled, not item.flaky, 0, round(item.margin, 6))
        by_rules = item.fault.by == "rule"
        return (item.key in labelled, not item.flaky, 2 if by_rules else 1, 0.0)

    return sorted(items, key=order)


@dataclass(frozen=True, slots=True)
class LabelProgress:
    """How many of a run's judged outputs (`total`) and faults are labelled."""

    labelled: int
    total: int
    faults_labelled: int = 0
    faults: int = 0

    def __str__(self) -> str:
        parts = []
        if self.total or not self.faults:
            parts.append(
                f"{self.labelled} of {self.total} judged sample{'s' * (self.total != 1)} labelled"
            )
        if self.faults:
            parts.append(
                f"{self.faults_labelled} of {self.faults} conversation "
                f"fault{'s' * (self.faults != 1)} labelled"
            )
        return " · ".join(parts)


def label_progress(items: Sequence[QueueItem], store: LabelStore) -> LabelProgress:
    """Labelled outputs and conversations among `items`."""
    labelled = {record.key for record in store}
    judged = [item for item in items if isinstance(item, LabelItem)]
    faults = [item for item in items if isinstance(item, FaultItem)]
    return LabelProgress(
        sum(item.key in labelled for item in judged),
        len(judged),
        sum(item.key in labelled for item in faults),
        len(faults),
    )
