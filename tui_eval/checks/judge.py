"""`llm_judge`: a check whose verdict comes from another model, reading a rubric."""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

import anyio
import pydantic

from tui_eval.agents.agent import Agent, AgentRunError
from tui_eval.agents.messages import Message, RunResult, Usage
from tui_eval.agents.providers import ModelLike, python_target, resolve_model
from tui_eval.agents.providers.base import Provider
from tui_eval.checks.base import CheckResult, Declared, JudgeVerdict
from tui_eval.util.errors import TuiEvalError
from tui_eval.util.text import one_line, value_text

JUDGE_MODEL_ENV = "TUI_EVAL_JUDGE_MODEL"
MAX_JUDGED_CHARS = 20_000
DEFAULT_NAME = "llm_judge"
"""The name of a judge given none (`name=`); several in one case are told apart by rubric."""
RUBRIC_IN_NAME = 40
"""How much of its rubric names an unnamed judge that shares a case with another."""

JUDGE_INSTRUCTIONS = """\
You are a strict, fair evaluator of an AI agent's answer. Read the rubric, the task the
agent was given, and the agent's answer. Decide how well the answer meets the rubric.

Reply with only a JSON object, no prose around it:
{"score": <number from 0.0 (fails the rubric) to 1.0 (fully meets it)>,
 "reasoning": "<one or two sentences naming what the answer did or did not do>"}
"""


PYTHON_SPEC = "python:"


class Verdict(pydantic.BaseModel):
    """A judge's verdict: a score in 0..1 and the reasoning behind it."""

    model_config = pydantic.ConfigDict(extra="ignore")

    score: float = pydantic.Field(ge=0.0, le=1.0, strict=True)  # never `true`
    reasoning: str


class JudgeConfigError(TuiEvalError, RuntimeError):
    """No judge model was given and `$TUI_EVAL_JUDGE_MODEL` is not set."""


Aggregate = Literal["majority", "mean", "min"]
AGGREGATES: tuple[Aggregate, ...] = ("majority", "mean", "min")


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """One judge's answer; `verdict` None (no valid verdict or model): `reasoning` says why."""

    judge: str
    verdict: Verdict | None
    reasoning: str
    usage: Usage


class llm_judge:
    """Judge the output against a rubric with another model, or with a jury of models.

    The judge runs at temperature 0; a reply that is not a valid `Verdict` fails the check.

    Args:
        rubric: what a good answer does, in plain words.
        model: a provider, a spec string or a zero-arg factory (default
            `$TUI_EVAL_JUDGE_MODEL`); a list makes a jury, each verdict kept.
        threshold: the lowest score that passes (a juror's, and a `mean`/`min` score's).
        aggregate: how a jury decides: more than half pass (`"majority"`), the mean score
            (`"mean"`) or every score (`"min"`) reaches the threshold.
    """

    is_async = True

    def __init__(
        self,
        rubric: str,
        *,
        model: Annotated[
            ModelLike | Sequence[ModelLike] | None, Declared("str | list[str] | None")
        ] = None,
        threshold: Annotated[float, pydantic.Field(ge=0, le=1)] = 0.7,
        aggregate: Aggregate = "majority",
        name: str = DEFAULT_NAME,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"llm_judge threshold must be within 0..1, got {threshold}")
        if aggregate not in AGGREGATES:
            raise ValueError(
                f"llm_judge aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}"
            )
        self.rubric = rubric
        self.model = _judges(model)
        self.threshold = threshold
        self.aggregate: Aggregate = aggregate
        self.name = name
        self._shared: dict[int, Provider] = {}
        self._targets: dict[int, Any] = {}

    def __repr__(self) -> str:
        jury = f", {len(self.models)} judges, {self.aggregate}" if self.is_jury else ""
        return f"llm_judge({self.rubric!r}, threshold={self.threshold}{jury})"

    @property
    def is_jury(self) -> bool:
        """Whether several judges decide (`model` was a list)."""
        return isinstance(self.model, list)

    @property
    def models(self) -> list[ModelLike | None]:
        """The judge models (one, unless this is a jury)."""
        if isinstance(self.model, list):
            return list(self.model)
        return [self.model]

    @property
    def judge_names(self) -> list[str]:
        """A distinct display name for every judge, in order."""
        names: list[str] = []
        for model in self.models:
            base = _model_name(model)
            name, count = base, 2
            while name in names:
                name, count = f"{base}#{count}", count + 1
            names.append(name)
        return names

    def with_model(self, model: ModelLike | Sequence[ModelLike] | None) -> Self:
        """The same judge (rubric, threshold, aggregate, name), judged by `model` instead."""
        judge = copy.copy(self)
        judge.model = _judges(model)
        judge._shared, judge._targets = {}, {}
        return judge

    def named(self, name: str) -> Self:
        """The same judge under another name."""
        judge = self.with_model(self.model)
        judge.name = name
        return judge

    def resolve_models(self) -> None:
        """Resolve every judge model now, rather than fail each judgement later.

        Raises:
            JudgeConfigError: no model was given and `$TUI_EVAL_JUDGE_MODEL` is not set.
            ModelSpecError: a model spec cannot be resolved.
        """
        for position in range(len(self.models)):
            self._provider(position)

    def _provider(self, position: int = 0) -> Provider:
        model = self.models[position]
        if model is None:
            model = os.environ.get(JUDGE_MODEL_ENV)
        if model is None or model == "":
            raise JudgeConfigError(
                f"llm_judge needs a judge model: pass llm_judge(..., model=...) or set ${JUDGE_MODEL_ENV}"
            )
        if isinstance(model, str) and model.startswith(PYTHON_SPEC):
            # What the reference names decides, as for a model passed in code: a factory
            # (a suite's offline scripted judge) builds a fresh provider per judgement.
            if position not in self._targets:
                self._targets[position] = python_target(model.removeprefix(PYTHON_SPEC))
            model = self._targets[position]
        if callable(model) and not hasattr(model, "complete"):
            return resolve_model(model)  # a factory: a fresh provider per judgement
        shared = self._shared.get(position)
        if shared is None:
            shared = self._shared[position] = resolve_model(model)
        return shared

    def prompt(self, run: RunResult) -> str:
        """The user message the judge reads."""
        task = next((m.content for m in run.messages if m.role == "user" and m.content), None)
        answer = value_text(run.output)
        if len(answer) > MAX_JUDGED_CHARS:
            answer = (
                answer[:MAX_JUDGED_CHARS]
                + f"\n[… {len(answer) - MAX_JUDGED_CHARS:,} more characters cut]"
            )
        parts = [f"<rubric>\n{self.rubric}\n</rubric>"]
        if task:
            parts.append(f"<task>\n{task}\n</task>")
        parts.append(f"<answer>\n{answer}\n</answer>")
        return "\n\n".join(parts)

    async def _answer(self, position: int, prompt: str) -> JudgeAnswer:
        """One judge's answer (a None verdict and why, when it gave none)."""
        name = self.judge_names[position]
        try:
            provider = self._provider(position)
        except (JudgeConfigError, ValueError) as exc:
            return JudgeAnswer(name, None, str(exc), Usage())
        try:
            result = await ask_judge(provider, JUDGE_INSTRUCTIONS, Verdict, "judge", prompt)
        except AgentRunError as exc:
            usage = exc.partial.usage if exc.partial is not None else Usage()
            return JudgeAnswer(name, None, f"judge reply is not a valid verdict: {exc}", usage)
        verdict: Verdict = result.output
        return JudgeAnswer(name, verdict, verdict.reasoning, result.usage)

    async def answers(self, run: RunResult) -> list[JudgeAnswer]:
        """Every judge's answer on `run`, in order (a jury's asked concurrently)."""
        prompt = self.prompt(run)
        if not self.is_jury:
            return [await self._answer(0, prompt)]
        answers: list[JudgeAnswer | None] = [None] * len(self.models)

        async def ask(position: int) -> None:
            answers[position] = await self._answer(position, prompt)

        async with anyio.create_task_group() as group:
            for position in range(len(self.models)):
                group.start_soon(ask, position)
        return [answer for answer in answers if answer is not None]

    async def __call__(self, run: RunResult) -> CheckResult:
        return self.decide(await self.answers(run))

    def decide(self, answers: Sequence[JudgeAnswer]) -> CheckResult:
        """The check's result from the judges' answers (a judge without a verdict fails)."""
        if not self.is_jury:
            (answer,) = answers
            score = answer.verdict.score if answer.verdict is not None else 0.0
            return CheckResult(
                self.name,
                answer.verdict is not None and score >= self.threshold,
                score,
                answer.reasoning,
                answer.usage if answer.verdict is not None else answer.usage or None,
                threshold=self.threshold,
            )
        verdicts = [
            JudgeVerdict(
                answer.judge,
                answer.verdict is not None and answer.verdict.score >= self.threshold,
                answer.verdict.score if answer.verdict is not None else None,
                answer.reasoning,
            )
            for answer in answers
        ]
        usage = sum((answer.usage for answer in answers), Usage())
        scores = [v.score if v.score is not None else 0.0 for v in verdicts]
        passing = sum(v.passed for v in verdicts)
        threshold: float | None = self.threshold
        score = min(scores) if self.aggregate == "min" else sum(scores) / len(scores)
        passed = score >= self.threshold
        if self.aggregate == "majority":
            passed = passing * 2 > len(verdicts)
            threshold = None  # decided by votes, not by the mean score
        listed = "; ".join(
            f"{v.judge}: {'pass' if v.passed else 'fail'}"
            + (f" {v.score:.2f}" if v.score is not None else "")
            + (f" — {v.reasoning}" if v.reasoning else "")
            for v in verdicts
        )
        reason = f"{passing} of {len(verdicts)} judges passed ({self.aggregate}): {listed}"
        return CheckResult(
            self.name, passed, score, reason, usage, threshold=threshold, verdicts=verdicts
        )


async def ask_judge(
    model: ModelLike, instructions: str, output_type: type[Any], name: str, prompt: str
) -> RunResult:
    """One reply of `model` as a judge at temperature 0, validated as `output_type`."""
    agent = Agent(
        model,
        instructions=instructions,
        output_type=output_type,
        max_turns=1,
        name=name,
        settings={"temperature": 0},
    )
    return await agent.run([Message("user", prompt)])


def _judges(model: ModelLike | Sequence[ModelLike] | None) -> ModelLike | list[ModelLike] | None:
    """One judge model as it is; a jury (a list or tuple) as a list of at least one."""
    if not isinstance(model, (list, tuple)):
        return model  # type: ignore[return-value]
    if not model:
        raise ValueError("llm_judge model=[...] needs at least one judge")
    return list(model)


def _model_name(model: ModelLike | None) -> str:
    """A judge's name for people: its spec string, else its provider's name."""
    if model is None:
        return os.environ.get(JUDGE_MODEL_ENV) or "judge"
    if isinstance(model, str):
        return model
    spec_model, provider = getattr(model, "model", None), getattr(model, "provider_name", None)
    if isinstance(spec_model, str) and isinstance(provider, str):
        return f"{provider}:{spec_model}"  # an HTTP provider, named as its spec would be
    name = getattr(model, "name", None) or getattr(model, "__name__", None)
    return str(name) if name else type(model).__name__


def name_unnamed_judges(checks: Sequence[Any]) -> list[Any]:
    """A case's checks, each unnamed `llm_judge` (copied) named after its rubric when the
    case has several (`llm_judge[Polite, names the capital]`, a short hash when two start
    alike): a name never depends on position, so a label never moves to another judge."""
    unnamed = [
        i for i, c in enumerate(checks) if isinstance(c, llm_judge) and c.name == DEFAULT_NAME
    ]
    if len(unnamed) < 2:
        return list(checks)
    named = list(checks)
    names = {i: _rubric_name(checks[i].rubric) for i in unnamed}
    for level in (1, 2):
        clashing = [i for i in unnamed if list(names.values()).count(names[i]) > 1]
        for i in clashing:
            judge: llm_judge = checks[i]
            what = (
                judge.rubric
                if level == 1
                else repr((judge.rubric, judge.judge_names, judge.threshold, judge.aggregate))
            )
            names[i] = _rubric_name(judge.rubric, hashlib.sha256(what.encode()).hexdigest()[:6])
    seen: dict[str, int] = {}
    for i in unnamed:
        count = seen[names[i]] = seen.get(names[i], 0) + 1
        # Judges alike in every respect: which is which does not matter.
        name = names[i] if count == 1 else f"{names[i][:-1]} #{count}]"
        named[i] = checks[i].named(name)
    return named


def _rubric_name(rubric: str, digest: str = "") -> str:
    shown = one_line(rubric, RUBRIC_IN_NAME) if rubric.strip() else "no rubric"
    return f"{DEFAULT_NAME}[{shown}{' ' + digest if digest else ''}]"


def verdict_reply(score: float, reasoning: str) -> str:
    """The JSON text of a verdict, for scripting a judge offline."""
    return Verdict.model_construct(score=score, reasoning=reasoning).model_dump_json()
