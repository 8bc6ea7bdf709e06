"""The evaluator-style API (`AccuracyEval`, `TrajectoryEval`, `PerformanceEval`): presets
over `evaluate()`; an example is a `Case`, an evaluator one check on it.

Example:
    >>> dataset = EvalDataset([EvalExample("6 * 7?", expected="42")], name="qa")
    >>> report = await AccuracyEval().run(client, dataset)  # doctest: +SKIP
    >>> report.assert_pass_rate(0.9)  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, overload

from tui_eval.agents.messages import RunResult
from tui_eval.checks.base import CheckResult
from tui_eval.checks.matchers import tool_sequence
from tui_eval.core.cases import Case, name_from_input
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.run.runner import evaluate
from tui_eval.util.text import one_line, value_text


@dataclass(slots=True)
class EvalExample:
    """One example: an input, and what an evaluator should find.

    Attributes:
        input: the message sent to the agent.
        expected: the expected answer (for `AccuracyEval`).
        expected_tools: the expected tool names (for `TrajectoryEval`); `[]` means none.
        metadata: carried into the results, for filtering and grouping.
    """

    input: str
    expected: Any = None
    expected_tools: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class EvalDataset:
    """A named collection of examples: `len()`, iteration and indexing work as on a list."""

    def __init__(self, examples: Iterable[EvalExample] = (), name: str = "dataset") -> None:
        self.examples = list(examples)
        self.name = name

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[EvalExample]:
        return iter(self.examples)

    @overload
    def __getitem__(self, index: int) -> EvalExample: ...
    @overload
    def __getitem__(self, index: slice) -> list[EvalExample]: ...
    def __getitem__(self, index: int | slice) -> EvalExample | list[EvalExample]:
        return self.examples[index]

    def __repr__(self) -> str:
        return f"EvalDataset({self.name!r}, {len(self.examples)} examples)"

    def to_cases(self, check_for: Any, *, samples: int = 1) -> list[Case]:
        """One `Case` per example, named by its input (numbered when inputs repeat)."""
        seen: Counter[str] = Counter()
        cases = []
        for example in self.examples:
            base = name_from_input(example.input)
            seen[base] += 1
            name = base if seen[base] == 1 else f"{base} #{seen[base]}"
            cases.append(
                Case(
                    example.input,
                    checks=[check_for(example)],
                    name=name,
                    samples=samples,
                    metadata=dict(example.metadata),
                    expected=example.expected,
                    expected_tools=example.expected_tools,
                )
            )
        return cases


@dataclass(slots=True)
class EvalResult:
    """One example's outcome.

    Attributes:
        actual: what the evaluator compared (the output; the tool names; the latency).
        score: the check's score (the total token count for `PerformanceEval`, when known).
        reason: why it failed ("" when it passed).
    """

    example: EvalExample
    passed: bool
    actual: Any
    score: float | None
    latency_ms: float
    reason: str = ""


@dataclass(slots=True, repr=False)
class EvalReport(Report):
    """The report every evaluator returns: a `Report` with `results` per example, and the
    `evaluator`'s and `dataset`'s names."""

    evaluator: str = ""
    dataset: str = ""

    @classmethod
    def from_report(cls, report: Report, *, evaluator: str, dataset: str) -> EvalReport:
        """Wrap a plain report with the evaluator's view."""
        values = {f.name: getattr(report, f.name) for f in fields(Report)}
        return cls(**values, evaluator=evaluator, dataset=dataset)

    @property
    def results(self) -> list[EvalResult]:
        """One `EvalResult` per example, in dataset order."""
        return [_result_of(case) for case in self.cases if case.samples]

    @property
    def avg_score(self) -> float | None:
        """The mean of the examples' scores, None when nothing was scored."""
        scores = [r.score for r in self.results if r.score is not None]
        return sum(scores) / len(scores) if scores else None

    def summary(self) -> str:
        """A readable multi-line summary naming the evaluator, the dataset and each failure."""
        results = self.results
        passed = sum(1 for r in results if r.passed)
        head = (
            f"{self.evaluator or 'eval'} on {self.dataset or self.name}: {passed}/{len(results)} passed "
            f"({self.pass_rate:.0%}) · avg latency {self.avg_latency_ms:,.0f} ms"
        )
        avg = self.avg_score
        if avg is not None:
            head += f" · avg score {avg:,.2f}" if avg <= 1 else f" · avg tokens {avg:,.0f}"
        if self.cancelled:
            head += " · cancelled"
        lines = [head]
        for result in results:
            if not result.passed:
                lines.append(f"  ✗ {one_line(result.example.input, 60)} — {result.reason}")
        return "\n".join(lines)


def _result_of(case: CaseResult) -> EvalResult:
    sample: SampleResult = case.samples[0]
    example = EvalExample(case.input, case.expected, case.expected_tools, dict(case.metadata))
    check = sample.checks[0] if sample.checks else None
    kind = check.name if check is not None else ""
    run = sample.run
    score = check.score if check is not None else None
    actual: Any
    if kind == "trajectory":
        actual = str(run.tool_names if run is not None else [])
    elif kind == "latency":
        actual = round(sample.latency_ms, 1)
        tokens = run.usage.total_tokens if run is not None else 0
        score = float(tokens) if tokens else None
    else:
        actual = value_text(run.output) if run is not None else None
    return EvalResult(
        example, sample.passed, actual, score, sample.latency_ms, sample.first_failure
    )


# -- checks the evaluators put on each example -----------------------------------------
@dataclass(eq=False, slots=True)
class _AccuracyCheck:
    expected: Any
    exact_match: bool
    name: str = "accuracy"

    def __call__(self, run: RunResult) -> CheckResult:
        if self.expected is None:
            return CheckResult(
                self.name, False, 0.0, "example has no `expected` answer (AccuracyEval needs one)"
            )
        actual = value_text(run.output)
        expected = value_text(self.expected)
        if self.exact_match:
            ok = actual.strip().casefold() == expected.strip().casefold()
            how = "equal to (ignoring case)"
        else:
            ok = expected in actual
            how = "to contain"
        if ok:
            return CheckResult(self.name, True, 1.0, "")
        return CheckResult(
            self.name,
            False,
            0.0,
            f"expected output {how} {one_line(expected, 80)!r}, got {one_line(actual, 80)!r}",
        )


@dataclass(eq=False, slots=True)
class _TrajectoryCheck:
    expected_tools: list[str] | None
    strict_order: bool
    name: str = "trajectory"

    def __call__(self, run: RunResult) -> CheckResult:
        if self.expected_tools is None:
            return CheckResult(
                self.name, False, 0.0, "example has no `expected_tools` (TrajectoryEval needs them)"
            )
        outcome = tool_sequence(self.expected_tools, self.strict_order)(run)
        return CheckResult(self.name, outcome.passed, outcome.score, outcome.reason)


@dataclass(eq=False, slots=True)
class _LatencyCheck:
    max_latency_ms: float | None
    name: str = "latency"

    def __call__(self, run: RunResult) -> CheckResult:
        if self.max_latency_ms is None or run.latency_ms <= self.max_latency_ms:
            return CheckResult(self.name, True, 1.0, "")
        return CheckResult(
            self.name,
            False,
            0.0,
            f"took {run.latency_ms:,.0f} ms, over the limit of {self.max_latency_ms:,.0f} ms",
        )


class _Evaluator:
    name: str

    def check_for(self, example: EvalExample) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    async def run(
        self,
        agent_client: Any,
        dataset: EvalDataset | Sequence[EvalExample],
        *,
        concurrency: int = 4,
    ) -> EvalReport:
        """Run every example of `dataset` through the agent and judge it.

        Args:
            agent_client: an `AgentTestClient`, an `Agent`, an async callable `f(message)`,
                a zero-arg factory, or any object with an async `run(message)`.
            concurrency: how many examples run at once.
        """
        data = dataset if isinstance(dataset, EvalDataset) else EvalDataset(dataset)
        report = await evaluate(
            agent_client,
            data.to_cases(self.check_for),
            concurrency=concurrency,
            name=f"{self.name}:{data.name}",
        )
        return EvalReport.from_report(report, evaluator=self.name, dataset=data.name)


class AccuracyEval(_Evaluator):
    """Does the output match the expected answer?

    Args:
        exact_match: compare the whole output with `expected` (ignoring case and surrounding
            whitespace) instead of looking for it as a substring.
        name: the label for the report.
    """

    def __init__(self, exact_match: bool = False, name: str = "accuracy") -> None:
        self.exact_match = exact_match
        self.name = name

    def check_for(self, example: EvalExample) -> _AccuracyCheck:
        """The check this evaluator puts on the example's case."""
        return _AccuracyCheck(example.expected, self.exact_match)


class TrajectoryEval(_Evaluator):
    """Did the agent call the expected tools?

    Args:
        strict_order: True needs exactly `expected_tools` in order; False compares the sets.
            `expected_tools=[]` means no tool may be called.
        name: the label for the report.
    """

    def __init__(self, strict_order: bool = True, name: str = "trajectory") -> None:
        self.strict_order = strict_order
        self.name = name

    def check_for(self, example: EvalExample) -> _TrajectoryCheck:
        """The check this evaluator puts on the example's case."""
        return _TrajectoryCheck(example.expected_tools, self.strict_order)


class PerformanceEval(_Evaluator):
    """How long does the agent take? A sample passes when its latency is within the limit.

    Args:
        max_latency_ms: the limit per example; None collects latency without enforcing one.
        name: the label for the report.
    """

    def __init__(self, max_latency_ms: float | None = None, name: str = "latency") -> None:
        self.max_latency_ms = max_latency_ms
        self.name = name

    def check_for(self, example: EvalExample) -> _LatencyCheck:
        """The check this evaluator puts on the example's case."""
        return _LatencyCheck(self.max_latency_ms)
