"""Why a run fails: its failed samples grouped into failure modes, compared with a baseline.

A failed sample's *signature* is the failing check (or error type), its reason with what
varies masked, and the first tool call where it departs from its case's passing samples.
Samples with one signature form a *mode*, across cases, with no model. Against a baseline
each mode is `new`, `grown`, `shrunk`, `gone` or `same`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from tui_eval.core.results import SampleResult
from tui_eval.report.left_out import WHY, left_out_note
from tui_eval.report.report import Report
from tui_eval.util.text import markdown_cell, one_line

LEFT_OUT = "left out"
"""The kind of signature of a sample left out of the pass rates (the user simulator's fault)."""

Change = Literal["new", "grown", "shrunk", "gone", "same"]
CHANGE_ORDER: dict[Change, int] = {"new": 0, "grown": 1, "same": 2, "shrunk": 3, "gone": 4}
"""New modes first everywhere; then what got worse, what stayed, what got better."""

# What varies between two reports of one problem, masked in this order (quoted text first,
# so a number inside a quote goes with its quote). A single quote opens a quote only where
# no word goes on before it: "doesn't" and "the user's" hold apostrophes, not quotes.
_QUOTED = re.compile(
    r"(?<!\w)'[^\n]{0,400}?'(?!\w)|\"[^\"\n]{0,400}\"|`[^`\n]{0,400}`|«[^»\n]{0,400}»"
    r"|“[^”\n]{0,400}”|(?<!\w)‘[^\n]{0,400}?’(?!\w)"
)
_PATH = re.compile(r"(?:[A-Za-z]:\\|~?/)[\w.\-]+(?:[\\/][\w.\-]+)+")
_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
# (The lookahead lets the scan leave at once a word no id starts like: a third faster.)
_ID = re.compile(
    r"\b(?=[0-9a-fimr])(?:[0-9a-f]{8}(?:(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]*)"
    r"|0x[0-9a-f]+|(?:call|run|id|req|msg|chatcmpl|resp)[_-][\w-]{4,})\b",
    re.IGNORECASE,
)
# A number ends where its digits do, whatever follows ("40Z", "4o", "12sec"); a unit of
# seconds goes with it when the word ends there.
_NUMBER = re.compile(r"[-+]?\$?\d[\d,_]*(?:\.\d+)?(?:e[-+]?\d+)?%?(?:(?:ms|s)\b)?(?!\d)|[-+]?\.\d+")
_SPACE = re.compile(r"\s+")
_PATTERN_LIMIT = 160


def mask(text: str) -> str:
    """`text` with what varies masked ("expected 'Paris', got 'Lyon' after 3 calls" →
    "expected ‹…›, got ‹…› after # calls")."""
    if "'" in text or '"' in text or "`" in text or "«" in text or "“" in text or "‘" in text:
        text = _QUOTED.sub("‹…›", text)
    if "/" in text or "\\" in text:
        text = _PATH.sub("‹path›", text)
    if "-" in text:
        text = _TIME.sub("‹time›", text)
    text = _NUMBER.sub("#", _ID.sub("‹id›", text))
    if "  " in text or "\n" in text or "\t" in text or "\r" in text:
        text = _SPACE.sub(" ", text)
    return text.strip()[:_PATTERN_LIMIT]


@dataclass(frozen=True, slots=True)
class Signature:
    """What a failed sample's failure looks like, with what varies masked.

    Attributes:
        kind: `failed` (a check), `error`, `timeout`, or `left out`.
        where: the failing check's name, or the error's type (for `left out`: why).
        pattern: the reason or message, masked (for `left out`: the fault's reason).
        departure: the first tool call where the sample leaves its case's passing samples.
    """

    kind: str
    where: str
    pattern: str
    departure: str = ""

    def __str__(self) -> str:
        head = f"{self.where}: {self.pattern}" if self.pattern else self.where
        if self.kind not in ("failed", self.where):  # "timeout: …", not "timeout · timeout: …"
            head = f"{self.kind} · {head}"
        return f"{head} · {self.departure}" if self.departure else head


@dataclass(slots=True)
class FailureMode:
    """Failed samples that share a signature, in this run and in the baseline.

    Attributes:
        samples: (case name, sample index) of each failed sample of the run, in run order.
        example: one of their reasons in full (one line), to read.
        baseline_samples, baseline_cases: the baseline's samples and cases in this mode.
        change: how the mode moved since the baseline (`same` when none was given).
        total, baseline_total: each run's samples.
    """

    signature: Signature
    samples: list[tuple[str, int]] = field(default_factory=list)
    example: str = ""
    baseline_samples: int = 0
    baseline_cases: list[str] = field(default_factory=list)
    change: Change = "same"
    total: int = 0
    baseline_total: int = 0

    @property
    def count(self) -> int:
        """Failed samples of the run in this mode."""
        return len(self.samples)

    @property
    def cases(self) -> list[str]:
        """The run's cases with a sample in this mode, in run order."""
        return list(dict.fromkeys(name for name, _ in self.samples))

    def to_dict(self) -> dict[str, object]:
        """The mode as plain JSON values (`tui-eval failures --json`)."""
        return {
            "signature": str(self.signature),
            "kind": self.signature.kind,
            "where": self.signature.where,
            "pattern": self.signature.pattern,
            "departure": self.signature.departure,
            "change": self.change,
            "samples": self.count,
            "cases": self.cases,
            "baseline_samples": self.baseline_samples,
            "baseline_cases": self.baseline_cases,
            "example": self.example,
            "sample_refs": [{"case": case, "index": index} for case, index in self.samples],
        }


def _sign(
    sample: SampleResult, passing: Sequence[SampleResult], masked: Callable[[str], str]
) -> Signature:
    """A failed sample's signature (`passing`: its case's passing samples)."""
    if sample.excluded:  # the user simulator's failure: apart from the agent's
        reason = sample.fault.reason if sample.fault is not None else ""
        return Signature(LEFT_OUT, WHY, masked(reason))
    if sample.status in ("error", "timeout"):
        error = sample.error or ""
        kind, sep, message = error.partition(": ")
        if sample.status == "timeout" or not sep or not kind.isidentifier():
            kind, message = sample.status, error
        return Signature(sample.status, kind, masked(message), _departure(sample, passing))
    failing = next((c for c in sample.checks if not c.passed), None)
    if failing is None:  # failed with every check passing: a status set elsewhere
        return Signature("failed", sample.status, "", _departure(sample, passing))
    return Signature("failed", failing.name, masked(failing.reason), _departure(sample, passing))


def _example(sample: SampleResult) -> str:
    if sample.excluded and sample.fault is not None:
        return one_line(str(sample.fault), 300)
    if sample.error:
        return one_line(sample.error, 300)
    failing = next((c for c in sample.checks if not c.passed), None)
    reason = failing.reason if failing is not None else sample.status
    return one_line(reason, 300)


def _departure(sample: SampleResult, passing: Sequence[SampleResult]) -> str:
    """The first tool call at which `sample` leaves every passing sample of its case."""
    if not passing:
        return ""
    calls = sample.run.tool_calls if sample.run is not None else []
    trails = [s.run.tool_calls if s.run is not None else [] for s in passing]
    for position in range(max([len(calls), *map(len, trails)])):
        mine = calls[position] if position < len(calls) else None
        theirs = [t[position] if position < len(t) else None for t in trails]
        if any(_same_call(mine, other) for other in theirs):
            continue
        expected = sorted({c.name for c in theirs if c is not None}) or ["no call"]
        got = mine.name if mine is not None else "no call"
        if mine is not None and got in expected:
            keys = sorted(
                {
                    key
                    for other in theirs
                    if other is not None and other.name == got
                    for key in mine.arguments.keys() | other.arguments.keys()
                    if mine.arguments.get(key) != other.arguments.get(key)
                }
            )
            return f"leaves at call {position + 1}: {got}({', '.join(keys)}) differs"
        return f"leaves at call {position + 1}: {got} (passing: {', '.join(expected)})"
    return ""


def _same_call(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a.name == b.name and a.arguments == b.arguments)  # type: ignore[attr-defined]


def _sign_report(report: Report) -> dict[Signature, FailureMode]:
    memo: dict[str, str] = {}  # each distinct reason is masked once

    def masked(text: str) -> str:
        if text not in memo:
            memo[text] = mask(text)
        return memo[text]

    modes: dict[Signature, FailureMode] = {}
    total = len(report.samples)
    for case in report.cases:
        passing = [s for s in case.samples if s.passed]
        for sample in case.samples:
            if sample.passed or sample.status == "cancelled":
                continue
            signature = _sign(sample, passing, masked)
            if signature not in modes:
                modes[signature] = FailureMode(signature, example=_example(sample), total=total)
            modes[signature].samples.append((case.name, sample.index))
    return modes


def failure_modes(report: Report, baseline: Report | None = None) -> list[FailureMode]:
    """The failure modes of `report` (with a `baseline`: how each moved), in `CHANGE_ORDER`,
    most samples first; only the baseline cases `report` ran are compared."""
    current = _sign_report(report)
    if baseline is not None:
        held = {case.name for case in report.cases if case.samples}
        baseline = replace(baseline, cases=[c for c in baseline.cases if c.name in held])
        before = _sign_report(baseline)
        base_total = len(baseline.samples)
        for signature, old in before.items():
            mode = current.get(signature)
            if mode is None:
                mode = current[signature] = FailureMode(
                    signature, example=old.example, total=len(report.samples)
                )
            mode.baseline_samples = old.count
            mode.baseline_cases = old.cases
        for mode in current.values():
            mode.baseline_total = base_total
            mode.change = _change(mode)
    return sorted(
        current.values(), key=lambda m: (CHANGE_ORDER[m.change], -m.count, str(m.signature))
    )


def _change(mode: FailureMode) -> Change:
    if mode.baseline_samples == 0:
        return "new"
    if mode.count == 0:
        return "gone"
    # By share of each run's samples (cross-multiplied: exact for any two run sizes), when
    # the count moved the same way: "grown 2 (2)" would read as nonsense, and while a run
    # still goes its share of the samples done so far moves with every sample.
    now = mode.count * max(1, mode.baseline_total)
    then = mode.baseline_samples * max(1, mode.total)
    if now > then and mode.count > mode.baseline_samples:
        return "grown"
    if now < then and mode.count < mode.baseline_samples:
        return "shrunk"
    return "same"


def left_out(modes: Iterable[FailureMode]) -> int:
    """How many samples of the run the `left out` modes hold."""
    return sum(mode.count for mode in modes if mode.signature.kind == LEFT_OUT)


def markdown(modes: Sequence[FailureMode], *, limit: int = 20) -> str:
    """The modes as a Markdown table, new first (a CI job summary's section)."""
    shown = [m for m in modes if m.count or m.change == "gone"]
    if not shown:
        return "No failures.\n"
    compared = any(m.change != "same" or m.baseline_samples for m in shown)
    head = "| change | samples | cases | failure |" if compared else "| samples | cases | failure |"
    rule = "|---|---:|---:|---|" if compared else "|---:|---:|---|"
    lines = [head, rule]
    for mode in shown[:limit]:
        samples = f"{mode.count} (was {mode.baseline_samples})" if compared else str(mode.count)
        cells = [samples, str(len(mode.cases)), markdown_cell(str(mode.signature), 200)]
        if compared:
            cells.insert(0, f"**{mode.change}**" if mode.change == "new" else mode.change)
        lines.append("| " + " | ".join(cells) + " |")
    if len(shown) > limit:
        lines.append(f"\n…and {len(shown) - limit} more mode(s).")
    apart = left_out(modes)
    if apart:
        lines.append(
            f"\n{left_out_note(apart)}: its modes are marked *left out*, and are not in "
            "the pass rates."
        )
    return "\n".join(lines) + "\n"
