"""The label queue: which judged outputs of a run a person should label first.

A label helps most where the judge's call is closest (a score near its threshold), where a
case is flaky (its samples disagree), and where there is no label yet. Headless: the app's
label screens show what this module orders, and labelling writes through `LabelStore`.
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tui_eval.calibration.labels import Label, LabelRecord, LabelStore, label_key, new_label
from tui_eval.checks.base import CheckResult
from tui_eval.report.report import CaseResult, SampleResult


@dataclass(frozen=True, slots=True)
class LabelItem:
    """One judged output of a run: a sample's judged check, to be labelled.

    Attributes:
        case_index: the case's position in the run.
        sample_index: the sample's position in its case.
        case: the case's name.
        check: the judge's verdict on this sample (hidden until labelled, in blind mode).
        sample: the sample, with the agent's run and output.
        flaky: the case's samples disagree (some passed, some failed).
    """

    case_index: int
    sample_index: int
    case: str
    check: CheckResult
    sample: SampleResult
    flaky: bool = False

    @property
    def output(self) -> Any:
        """The agent's output the label is about."""
        return self.sample.output

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


def current_labeler() -> str | None:
    """Who is labelling: the login name (None when it cannot be told)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return None


def is_judged(check: CheckResult) -> bool:
    """Whether a check's verdict came from a judge (it has a threshold or jurors)."""
    return check.threshold is not None or check.verdicts is not None


def judged_items(cases: Sequence[CaseResult]) -> list[LabelItem]:
    """Every judged check of every finished sample with an output, in run order."""
    items: list[LabelItem] = []
    for case_index, case in enumerate(cases):
        statuses = {s.passed for s in case.samples if s.status in ("passed", "failed")}
        flaky = len(statuses) > 1
        for sample_index, sample in enumerate(case.samples):
            if sample.run is None or sample.status not in ("passed", "failed"):
                continue
            for check in sample.checks:
                if is_judged(check):
                    items.append(
                        LabelItem(case_index, sample_index, case.name, check, sample, flaky)
                    )
    return items


def label_queue(cases: Sequence[CaseResult], store: LabelStore) -> list[LabelItem]:
    """The judged outputs of a run, the most useful to label first.

    Unlabelled before labelled; then flaky cases first; then the judge's closest calls (a
    score nearest its threshold); ties keep run order.
    """
    items = judged_items(cases)
    labelled = {record.key for record in store}
    return sorted(
        items,
        key=lambda item: (item.key in labelled, not item.flaky, round(item.margin, 6)),
    )


@dataclass(frozen=True, slots=True)
class LabelProgress:
    """How many of a run's judged outputs carry a label."""

    labelled: int
    total: int

    def __str__(self) -> str:
        return f"{self.labelled} of {self.total} judged sample{'s' * (self.total != 1)} labelled"


def label_progress(items: Sequence[LabelItem], store: LabelStore) -> LabelProgress:
    """Labelled outputs among `items`."""
    labelled = {record.key for record in store}
    return LabelProgress(sum(item.key in labelled for item in items), len(items))


__all__ = [
    "LabelItem",
    "LabelProgress",
    "current_labeler",
    "is_judged",
    "judged_items",
    "label_progress",
    "label_queue",
]
