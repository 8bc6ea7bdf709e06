"""The label queue: which judged outputs of a run a person should label first.

A label helps most where the judge's call is closest (a score near its threshold), where a
case is flaky (its samples disagree), and where there is no label yet. The fault reviewer
is a judge too: each failed conversation is queued for a label of who failed it (the user,
the agent or the environment). Headless: the app's label screens show what this module
orders, and labelling writes through `LabelStore`.
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tui_eval.agents.messages import Conversation
from tui_eval.calibration.labels import Label, LabelRecord, LabelStore, label_key, new_label
from tui_eval.checks.base import CheckResult
from tui_eval.checks.faults import FAULT_CHECK, Fault, Party
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


@dataclass(frozen=True, slots=True)
class FaultItem:
    """One failed conversation of a run, to be labelled with who failed it.

    Attributes:
        case_index: the case's position in the run.
        sample_index: the sample's position in its case.
        case: the case's name.
        sample: the sample, with the agent's run.
        fault: who the run blamed and what decided it (`by`: the rules or the reviewer);
            hidden until labelled, in blind mode.
        conversation: the conversation the label is about (the sample's).
        flaky: the case's samples disagree (some passed, some failed).
    """

    case_index: int
    sample_index: int
    case: str
    sample: SampleResult
    fault: Fault
    conversation: Conversation
    flaky: bool = False

    @property
    def output(self) -> Any:
        """The agent's final output."""
        return self.sample.output

    @property
    def key(self) -> tuple[str, str, str]:
        """The label's identity in the labels file."""
        return label_key(self.case, FAULT_CHECK, self.output, self.conversation)

    def label(self, party: Party, *, note: str | None = None) -> LabelRecord:
        """A fault label of this conversation (with its run and the failed checks the
        reviewer reads), by the current user, now."""
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


def is_judged(check: CheckResult) -> bool:
    """Whether a check's verdict came from a judge (it has a threshold or jurors)."""
    return check.threshold is not None or check.verdicts is not None


def judged_items(cases: Sequence[CaseResult]) -> list[LabelItem]:
    """Every judged check of every finished sample with an output, in run order."""
    items: list[LabelItem] = []
    for case_index, case in enumerate(cases):
        flaky = _flaky(case)
        for sample_index, sample in enumerate(case.samples):
            if sample.run is None or sample.status not in ("passed", "failed"):
                continue
            for check in sample.checks:
                if is_judged(check):
                    items.append(
                        LabelItem(case_index, sample_index, case.name, check, sample, flaky)
                    )
    return items


def fault_items(cases: Sequence[CaseResult]) -> list[FaultItem]:
    """Every failed conversation with a fault, in run order.

    Only samples whose checks ran and failed: an error or a timeout is always the rules'
    to blame (the agent, the user or a model raised; the clock ran out), never the
    reviewer's, so a label of it would not tell how far the reviewer is right.
    """
    items: list[FaultItem] = []
    for case_index, case in enumerate(cases):
        flaky = _flaky(case)
        for sample_index, sample in enumerate(case.samples):
            run, fault = sample.run, sample.fault
            if (
                sample.status != "failed"
                or fault is None
                or run is None
                or run.conversation is None
            ):
                continue
            items.append(
                FaultItem(
                    case_index, sample_index, case.name, sample, fault, run.conversation, flaky
                )
            )
    return items


def _flaky(case: CaseResult) -> bool:
    """Whether the case's finished samples disagree (some passed, some failed)."""
    return len({s.passed for s in case.samples if s.status in ("passed", "failed")}) > 1


def label_queue(cases: Sequence[CaseResult], store: LabelStore) -> list[QueueItem]:
    """The judged outputs and failed conversations of a run, the most useful to label first.

    Unlabelled before labelled; then flaky cases first; then the judges' outputs, the
    closest calls (a score nearest its threshold) first; then the faults the reviewer
    decided, and last those the rules decided (a label of those does not measure the
    reviewer); ties keep run order.
    """
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
    """How many of a run's judged outputs, and of its failed conversations, carry a label.

    Attributes:
        labelled: judged outputs labelled.
        total: judged outputs.
        faults_labelled: failed conversations whose fault is labelled.
        faults: failed conversations.
    """

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
