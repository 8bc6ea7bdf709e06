from __future__ import annotations

import pytest

from tui_eval import Message, RunResult, Usage, Verdict, llm_judge, run_check
from tui_eval.checks import verdict_reply
from tui_eval.testing import ScriptedProvider, text

pytestmark = pytest.mark.anyio

RUN = RunResult(output="雨天，来书店读一本书", messages=[Message("user", "写一句雨天文案")])


async def test_verdict_passes_and_reasoning_is_the_reason():
    judge = ScriptedProvider([text(verdict_reply(0.9, "有雨天和阅读意象"), usage=Usage(50, 10))])
    result = await run_check(llm_judge("包含雨天和阅读意象", model=judge), RUN)
    assert result.passed and result.score == 0.9 and result.reason == "有雨天和阅读意象"
    assert result.usage == Usage(50, 10, 1)
    # The judge saw the rubric, the task and the answer, at temperature 0.
    prompt = judge.requests[0][-1].content
    assert (
        "包含雨天和阅读意象" in prompt and "写一句雨天文案" in prompt and "来书店读一本书" in prompt
    )


async def test_below_threshold_fails_with_score():
    judge = ScriptedProvider([text(verdict_reply(0.55, "缺少阅读意象"))])
    result = await run_check(llm_judge("rubric", model=judge, threshold=0.7), RUN)
    assert not result.passed and result.score == 0.55 and result.reason == "缺少阅读意象"


@pytest.mark.parametrize(
    "reply",
    [
        '{"reasoning": "fine"}',
        '{"score": 1.5, "reasoning": "great"}',
        "looks good to me",
        '{"score": "high", "reasoning": "x"}',
    ],
)
async def test_invalid_verdicts_fail_closed(reply: str):
    result = await run_check(llm_judge("rubric", model=ScriptedProvider([text(reply)])), RUN)
    assert not result.passed
    assert result.reason.startswith("judge reply is not a valid verdict")
    assert result.usage is not None and result.usage.requests == 1


async def test_no_judge_model_is_a_clear_failure():
    result = await run_check(llm_judge("rubric"), RUN)
    assert not result.passed and "TUI_EVAL_JUDGE_MODEL" in result.reason


async def test_judge_model_from_environment(monkeypatch):
    monkeypatch.setenv("TUI_EVAL_JUDGE_MODEL", "nosuch:model")
    result = await run_check(llm_judge("rubric"), RUN)
    assert not result.passed and "unknown model provider 'nosuch'" in result.reason


async def test_judge_factory_gives_fresh_provider_each_time():
    factory = ScriptedProvider.factory([text(verdict_reply(1.0, "ok"))])
    judge = llm_judge("rubric", model=factory)
    for _ in range(3):
        assert (await run_check(judge, RUN)).passed


async def test_a_python_spec_naming_a_factory_gives_a_fresh_provider_each_time(
    tmp_path, monkeypatch
):
    # A declarative suite's offline judge (`judge_model: python:module:make_judge`) is a
    # one-reply script: every run of the suite must get its own copy, not the first one's.
    (tmp_path / "one_reply_judge.py").write_text(
        "from tui_eval.testing import ScriptedProvider, text\n"
        f"REPLY = {verdict_reply(1.0, 'ok')!r}\n"
        "def make_judge():\n"
        "    return ScriptedProvider([text(REPLY)])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    judge = llm_judge("rubric", model="python:one_reply_judge:make_judge")
    for _ in range(3):
        result = await run_check(judge, RUN)
        assert result.passed, result.reason


def test_verdict_bounds():
    with pytest.raises(ValueError):
        Verdict(score=-0.1, reasoning="x")
    with pytest.raises(ValueError):
        llm_judge("r", threshold=2)
