"""Prices that match the vendor's bill, and usage numbers a server cannot bend.

Every expected figure is genai-prices' own calculation on the same response body
(`extract_usage(...).calc_price()`), so the built-in prices are checked against the
vendor's rules (cached prompt tokens, cache writes), not against a copy of our formula.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from genai_prices import extract_usage

from tui_eval import Agent, Case, contains, evaluate
from tui_eval.agents.http.metering import MAX_TOKENS, ResponseTokens, response_tokens
from tui_eval.agents.providers.anthropic import AnthropicProvider
from tui_eval.agents.providers.openai import OpenAIProvider

from .wire_server import Reply, WireServer, anthropic_text, openai_text

pytestmark = pytest.mark.anyio


def _bill(body: dict[str, Any], provider: str) -> float:
    flavor = {"openai": "chat"}.get(provider, "default")
    extracted = extract_usage(body, provider_id=provider, api_flavor=flavor)
    return float(extracted.calc_price().total_price)


def _openai(model: str, usage: dict[str, Any], content: str = "ok") -> dict[str, Any]:
    body = openai_text(content)
    body["model"] = model
    body["usage"] = usage
    return body


async def _run_openai(*replies: Reply, model: str = "gpt-4o-mini", samples: int = 1) -> Any:
    with WireServer() as server:
        server.reply(*replies)
        agent = Agent(OpenAIProvider(model, base_url=server.url + "/v1"))
        return await evaluate(
            agent, [Case("hi", checks=[contains("ok")], samples=samples)], concurrency=1
        )


async def test_cached_prompt_tokens_are_billed_at_the_cached_price():
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 800},
    }
    body = _openai("gpt-4o-mini", usage)
    report = await _run_openai(Reply(body=body))
    sample = report.samples[0]
    assert sample.cost == pytest.approx(_bill(body, "openai"), rel=1e-9)
    uncached = _bill(_openai("gpt-4o-mini", {**usage, "prompt_tokens_details": {}}), "openai")
    assert sample.cost < uncached  # today: billed as if nothing were cached (29% high)
    assert sample.usage.input_tokens == 1000 and sample.usage.output_tokens == 100


async def test_anthropic_cache_reads_and_writes_are_counted():
    body = anthropic_text("ok")
    body["model"] = "claude-3-5-sonnet-latest"
    body["usage"] = {
        "input_tokens": 100,
        "output_tokens": 50,
        "cache_read_input_tokens": 800,
        "cache_creation_input_tokens": 100,
    }
    with WireServer() as server:
        server.reply(Reply(body=body))
        agent = Agent(AnthropicProvider("claude-3-5-sonnet-latest", base_url=server.url))
        report = await evaluate(agent, [Case("hi", checks=[contains("ok")])])
    sample = report.samples[0]
    assert sample.cost == pytest.approx(_bill(body, "anthropic"), rel=1e-9)
    # The tokens the model read: Anthropic counts cache reads and writes apart.
    assert sample.usage.input_tokens == 1000 and sample.usage.output_tokens == 50


async def test_provider_prefixed_model_names_are_priced():
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    report = await _run_openai(Reply(body=_openai("openai/gpt-4o-mini", usage)))
    expected = _bill(_openai("gpt-4o-mini", usage), "openai")
    assert report.samples[0].cost == pytest.approx(expected, rel=1e-9)
    prefixed_request = await _run_openai(Reply(body=_openai("", usage)), model="openai/gpt-4o-mini")
    assert prefixed_request.samples[0].cost == pytest.approx(expected, rel=1e-9)


async def test_a_proxys_cost_header_is_preferred_and_checked():
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    body = _openai("gpt-4o-mini", usage)
    report = await _run_openai(
        Reply(body=body, headers={"x-litellm-response-cost": "0.0123"}),
        Reply(body=body, headers={"x-litellm-response-cost": "-5"}),
        Reply(body=body, headers={"x-litellm-response-cost": "NaN"}),
        samples=3,
    )
    costs = [s.cost for s in report.samples]
    assert costs[0] == pytest.approx(0.0123)
    # A header that cannot be a price is ignored: the table prices the response.
    assert costs[1] == costs[2] == pytest.approx(_bill(body, "openai"), rel=1e-9)


async def test_pricing_goes_by_the_model_not_the_host():
    # A LiteLLM proxy on this machine serving gpt-4o-mini costs what gpt-4o-mini costs.
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    body = _openai("gpt-4o-mini", usage)
    report = await _run_openai(Reply(body=body))
    assert report.priced and report.cost == pytest.approx(_bill(body, "openai"), rel=1e-9)
    unknown = await _run_openai(Reply(body=_openai("my-llama", usage)), model="my-llama")
    assert not unknown.priced and unknown.cost is None


async def test_a_report_mixing_priced_and_unpriced_samples_says_so():
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    priced = _openai("gpt-4o-mini", usage)
    with WireServer() as server:
        server.reply(Reply(body=priced), *[Reply(body=_openai("my-llama", usage))] * 3)
        known = Agent(OpenAIProvider("gpt-4o-mini", base_url=server.url + "/v1"))
        unknown = Agent(OpenAIProvider("my-llama", base_url=server.url + "/v1"))
        first = await evaluate(known, [Case("hi", checks=[contains("ok")], name="a")])
        second = await evaluate(
            unknown, [Case("hi", checks=[contains("ok")], name="b", samples=3)], concurrency=1
        )
    from tui_eval.report.exporters import merge_reports

    both = merge_reports([first, second])
    header = both.header()
    assert f"${_bill(priced, 'openai'):.4f} · 3 samples unpriced" in header
    assert both.unpriced_samples == 3
    assert "unpriced" not in first.header()


@pytest.mark.parametrize(
    "bad", [-5, float("nan"), "lots", float("inf"), float("-inf"), 1e30, True, [3], {"n": 1}]
)
async def test_untrusted_usage_numbers_never_crash_or_lower_the_spend(bad):
    honest = {"prompt_tokens": 1000, "completion_tokens": 100}
    for field in ("prompt_tokens", "completion_tokens"):
        body = _openai("gpt-4o-mini", {**honest, field: bad})
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": bad}
        report = await _run_openai(Reply(body=body))
        sample = report.samples[0]
        assert sample.status == "passed", sample.error
        assert 0 <= sample.usage.input_tokens <= MAX_TOKENS
        assert 0 <= sample.usage.output_tokens <= MAX_TOKENS
        assert sample.cost is not None and math.isfinite(sample.cost)
        # Never below what the trustworthy numbers alone cost (the bad one counted as 0).
        zeroed = _openai("gpt-4o-mini", {**honest, field: 0})
        assert sample.cost >= _bill(zeroed, "openai") * (1 - 1e-9)


async def test_untrusted_anthropic_usage_never_crashes():
    body = anthropic_text("ok")
    body["usage"] = {
        "input_tokens": "lots",
        "output_tokens": -3,
        "cache_read_input_tokens": float("nan"),
        "cache_creation_input_tokens": 1e30,
    }
    with WireServer() as server:
        server.reply(Reply(body=body))
        agent = Agent(AnthropicProvider("claude-3-5-sonnet-latest", base_url=server.url))
        report = await evaluate(agent, [Case("hi", checks=[contains("ok")])])
    sample = report.samples[0]
    assert sample.status == "passed", sample.error
    assert sample.usage.input_tokens == 0 and sample.usage.output_tokens == 0


def test_response_tokens_reads_both_wire_formats():
    openai = {"usage": {"prompt_tokens": 10, "completion_tokens": 3}}
    anthropic = {"usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 5}}
    assert response_tokens(openai).input == 10 and response_tokens(openai).output == 3
    tokens = response_tokens(anthropic)
    assert (tokens.input, tokens.cache_read, tokens.output) == (15, 5, 3)
    assert response_tokens({"usage": "x"}).input == 0
    over = response_tokens(
        {"usage": {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}}}
    )
    assert over.cache_read <= over.input


def test_the_app_run_header_says_how_many_samples_are_unpriced():
    from tui_eval.agents.messages import Usage
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report
    from tui_eval.run.state import RunState
    from tui_eval.tui.widgets.run_header import RunHeader

    called = Usage(10, 2, 1)
    samples = [
        SampleResult("a", 0, "passed", usage=called, cost=0.0048),
        *(SampleResult("a", i, "passed", usage=called) for i in (1, 2, 3)),
    ]
    report = Report("r", [CaseResult("a", samples)], priced=True)
    state = RunState.from_report(report)
    line = RunHeader._counters(state).plain
    assert "$0.0048 · 3 samples unpriced" in line
    assert "$0.0048 · 3 samples unpriced" in report.header()


def test_a_runtime_looks_each_model_up_in_the_price_table_once(monkeypatch):
    """A look-up costs milliseconds (the table's import, 0.2 s, the first): a runtime
    remembers where the table has each model, and that a local model is not in it, while
    its prices stay the table's."""
    from tui_eval.agents.http import context, metering

    looked_up: list[str] = []

    def price_ref(provider: str, model: str) -> Any:
        looked_up.append(model)
        return metering.price_ref(provider, model)

    monkeypatch.setattr(context, "price_ref", price_ref)
    runtime, used = context.Runtime(), ResponseTokens(1000, 100, 400)
    for _ in range(3):
        assert runtime.price_of("openai", "my-local-model", used) is None
        assert runtime.price_of("openai", "gpt-4o-mini", used) == metering.price_of(
            "openai", "gpt-4o-mini", used
        )
    assert looked_up == ["my-local-model", "gpt-4o-mini"]
    context.Runtime().price_of("openai", "my-local-model", used)  # another runtime: afresh
    assert looked_up == ["my-local-model", "gpt-4o-mini", "my-local-model"]
