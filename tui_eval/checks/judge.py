"""`llm_judge`: a check whose verdict comes from another model, reading a rubric."""

from __future__ import annotations

import os
from typing import Annotated

import pydantic

from tui_eval.agents.agent import Agent, AgentRunError
from tui_eval.agents.messages import Message, RunResult, Usage
from tui_eval.agents.providers import ModelLike, resolve_model
from tui_eval.agents.providers.base import Provider
from tui_eval.checks.base import CheckResult, Declared
from tui_eval.text import value_text

JUDGE_MODEL_ENV = "TUI_EVAL_JUDGE_MODEL"
MAX_JUDGED_CHARS = 20_000

JUDGE_INSTRUCTIONS = """\
You are a strict, fair evaluator of an AI agent's answer. Read the rubric, the task the
agent was given, and the agent's answer. Decide how well the answer meets the rubric.

Reply with only a JSON object, no prose around it:
{"score": <number from 0.0 (fails the rubric) to 1.0 (fully meets it)>,
 "reasoning": "<one or two sentences naming what the answer did or did not do>"}
"""


class Verdict(pydantic.BaseModel):
    """A judge's verdict: a score in 0..1 and the reasoning behind it."""

    model_config = pydantic.ConfigDict(extra="ignore")

    score: float = pydantic.Field(ge=0.0, le=1.0, strict=True)  # never `true`
    reasoning: str


class JudgeConfigError(RuntimeError):
    """No judge model was given and `$TUI_EVAL_JUDGE_MODEL` is not set."""


class llm_judge:
    """Judge the output against a rubric with another model.

    The judge runs at temperature 0 with `Verdict` as its output type. A reply that is
    not a valid verdict fails the check (it never passes by accident).

    Example:
        >>> llm_judge("Polite, actionable, proposes one concrete next step.")  # doctest: +SKIP

    Args:
        rubric: what a good answer does, in plain words.
        model: a provider, a spec string or a zero-arg factory; defaults to
            `$TUI_EVAL_JUDGE_MODEL`. Never the agent under test.
        threshold: the lowest score that passes.
    """

    is_async = True

    def __init__(
        self,
        rubric: str,
        *,
        model: Annotated[ModelLike | None, Declared("str | None")] = None,
        threshold: Annotated[float, pydantic.Field(ge=0, le=1)] = 0.7,
        name: str = "llm_judge",
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"llm_judge threshold must be within 0..1, got {threshold}")
        self.rubric = rubric
        self.model = model
        self.threshold = threshold
        self.name = name
        self._shared: Provider | None = None

    def __repr__(self) -> str:
        return f"llm_judge({self.rubric!r}, threshold={self.threshold})"

    def _provider(self) -> Provider:
        model = self.model if self.model is not None else os.environ.get(JUDGE_MODEL_ENV)
        if model is None or model == "":
            raise JudgeConfigError(
                f"llm_judge needs a judge model: pass llm_judge(..., model=...) or set ${JUDGE_MODEL_ENV}"
            )
        if callable(model) and not hasattr(model, "complete"):
            return resolve_model(model)  # a factory: a fresh provider per judgement
        if self._shared is None:
            self._shared = resolve_model(model)
        return self._shared

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

    async def __call__(self, run: RunResult) -> CheckResult:
        try:
            provider = self._provider()
        except (JudgeConfigError, ValueError) as exc:
            return CheckResult(self.name, False, 0.0, str(exc))
        judge = Agent(
            provider,
            instructions=JUDGE_INSTRUCTIONS,
            output_type=Verdict,
            max_turns=1,
            name="judge",
            settings={"temperature": 0},
        )
        try:
            result = await judge.run([Message("user", self.prompt(run))])
        except AgentRunError as exc:
            usage = exc.partial.usage if exc.partial is not None else Usage()
            return CheckResult(
                self.name, False, 0.0, f"judge reply is not a valid verdict: {exc}", usage
            )
        verdict: Verdict = result.output
        passed = verdict.score >= self.threshold
        return CheckResult(self.name, passed, verdict.score, verdict.reasoning, result.usage)


def verdict_reply(score: float, reasoning: str) -> str:
    """The JSON text of a verdict, for scripting a judge offline."""
    return Verdict.model_construct(score=score, reasoning=reasoning).model_dump_json()
