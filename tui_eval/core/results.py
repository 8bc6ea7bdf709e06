"""What a run produced, sample by sample and case by case: `SampleResult`, `CaseResult`.

Kept below `tui_eval.report.report` so `stored_values` and `diff` import these without a cycle."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Annotated, Any, Literal

import pydantic

from tui_eval.agents.messages import RunResult, Usage
from tui_eval.checks.base import CheckResult
from tui_eval.checks.faults import Fault
from tui_eval.stats.proportions import (
    pass_at_k,
    pass_hat_k,
    percentile,
)

SampleStatus = Literal["passed", "failed", "error", "timeout", "cancelled"]


@dataclass(slots=True)
class SampleResult:
    """One run of one case, with the outcome of every check.

    Attributes:
        case_name: the case this sample belongs to.
        index: the sample's number within its case (0-based).
        status: `passed`, `failed` (a check failed), `error` (the agent raised),
            `timeout`, or `cancelled`.
        checks: every check's result.
        run: the agent's `RunResult` (for errors, the trajectory up to the failure, if known).
        usage: the agent's usage plus the judge's.
        judge_usage: the part of `usage` spent by judging checks.
        latency_ms: wall time of the agent run.
        cost: `price(usage)` when the run was priced.
        error: what went wrong for `error` and `timeout` samples.
        traceback: the agent's traceback for `error` samples.
        cached: every model response of the sample came from the response cache.
        fault: who failed a conversation (`Case(user=...)`), with the turn and a reason.
        excluded: left out of the case's pass rate and verdict: a failure the user
            simulator caused (unless `RunSettings.count_user_faults`).
    """

    case_name: str
    index: int
    status: SampleStatus
    _: KW_ONLY
    checks: list[CheckResult] = field(default_factory=list)
    run: RunResult | None = None
    usage: Usage = field(default_factory=Usage)
    judge_usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    cost: float | None = None
    error: str | None = None
    traceback: str | None = None
    cached: bool = False
    fault: Fault | None = None
    excluded: bool = False

    def __repr__(self) -> str:
        # Short on purpose: reports hold thousands of these, and debuggers, tracebacks
        # and asyncio's handler bookkeeping format them.
        return f"<SampleResult {self.case_name!r} #{self.index} {self.status}>"

    @property
    def passed(self) -> bool:
        """Whether every check passed and the run finished without error."""
        return self.status == "passed"

    @property
    def output(self) -> Any:
        """The agent's final output (None when the run failed)."""
        return self.run.output if self.run is not None else None

    @property
    def score(self) -> float | None:
        """The mean check score, None without scored checks."""
        scores = [c.score for c in self.checks if c.score is not None]
        return sum(scores) / len(scores) if scores else None

    @property
    def first_failure(self) -> str:
        """A one-line reason this sample failed ("" when it passed)."""
        if self.status == "timeout":
            return f"timeout: {self.error}"
        if self.status == "error":
            return f"error: {self.error}"
        if self.status == "cancelled":
            return "cancelled"
        for check in self.checks:
            if not check.passed:
                score = ""
                if check.score_text:  # a judge: the score against the bar it missed
                    score = f" ({check.score_text})"
                elif check.score is not None and check.score not in (0.0, 1.0):
                    score = f" (score {check.score:.2f})"
                return (
                    f"{check.name}{score} — {check.reason}"
                    if check.reason
                    else f"{check.name}{score}"
                )
        return ""


@dataclass(slots=True)
class CaseResult:
    """All samples of one case.

    Attributes:
        name: the case name (the key `compare()` matches on).
        samples: the finished samples, in order.
        pass_threshold: the fraction of passing samples the case needs.
        planned: how many samples were asked for (more than `len(samples)` in a cancelled run).
        input: the case's input as text.
        expected / expected_tools / metadata: carried from the `Case`.
        suite: the case's suite (with `name`, the key when a report spans suites).
        fingerprint: a hash of the case's definition, so a comparison can tell a changed
            case from a regressed one ("" when unknown).
        definition: the `Case` itself, while its run is in memory (never saved).
    """

    name: str
    samples: list[SampleResult] = field(default_factory=list)
    _: KW_ONLY
    pass_threshold: float = 1.0
    planned: int = 0
    input: str = ""
    expected: Any = None
    expected_tools: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    suite: str = ""
    fingerprint: str = ""
    definition: Annotated[Any, pydantic.Field(exclude=True)] = field(
        default=None, repr=False, compare=False
    )

    def definition_fingerprint(self) -> str:
        """`fingerprint`, computed from `definition` (once) when it was not recorded yet."""
        if not self.fingerprint and self.definition is not None:
            from tui_eval.core.cases import fingerprint

            self.fingerprint = fingerprint(self.definition)
        return self.fingerprint

    def __repr__(self) -> str:
        return (
            f"<CaseResult {self.name!r} {self.samples_passed}/{len(self.samples)} samples passed"
            f" · passed={self.passed}>"
        )

    @property
    def samples_passed(self) -> int:
        """How many samples passed."""
        return sum(1 for s in self.samples if s.status == "passed")

    @property
    def counted(self) -> int:
        """How many samples count towards the pass rate (all but the `excluded` ones)."""
        return len(self.samples) - self.left_out

    @property
    def left_out(self) -> int:
        """How many samples are left out of the pass rate (the user simulator's fault)."""
        return sum(1 for s in self.samples if s.excluded)

    @property
    def pass_rate(self) -> float:
        """The fraction of counted samples that passed (0.0 with none)."""
        counted = self.counted
        return self.samples_passed / counted if counted else 0.0

    @property
    def passed(self) -> bool:
        """Whether enough counted samples passed to meet `pass_threshold`."""
        return self.counted > 0 and self.pass_rate >= self.pass_threshold - 1e-12

    @property
    def undecided(self) -> bool:
        """Whether every sample was left out (untested: the case neither passes nor gates)."""
        return bool(self.samples) and self.counted == 0

    @property
    def complete(self) -> bool:
        """Whether every planned sample finished."""
        return len(self.samples) >= self.planned

    def pass_at_k(self, k: int) -> float:
        """Unbiased pass@k: the chance that at least one of k samples passes.

        Raises:
            ValueError: k > number of counted samples (or k < 1).
        """
        return pass_at_k(self.counted, self.samples_passed, k)

    def pass_hat_k(self, k: int) -> float:
        """Unbiased pass^k: the chance that k samples *all* pass (reliability).

        Raises:
            ValueError: k > number of counted samples (or k < 1).
        """
        return pass_hat_k(self.counted, self.samples_passed, k)

    @property
    def usage(self) -> Usage:
        """Summed usage of the case's samples (judge included)."""
        total = Usage()
        for sample in self.samples:
            total = total + sample.usage
        return total

    @property
    def mean_score(self) -> float | None:
        """The mean of the samples' scores."""
        scores = [s for sample in self.samples if (s := sample.score) is not None]
        return sum(scores) / len(scores) if scores else None

    @property
    def latency_p50_ms(self) -> float:
        """Median sample latency."""
        return percentile([s.latency_ms for s in self.samples], 50)

    @property
    def first_failure(self) -> str:
        """The first failing counted sample's reason, else any failing one's ("" if none)."""
        failing = [s for s in self.samples if not s.passed]
        first = next((s for s in failing if not s.excluded), failing[0] if failing else None)
        return first.first_failure if first is not None else ""
