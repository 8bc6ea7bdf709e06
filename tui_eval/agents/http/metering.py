"""What one sample spent (`SampleMeter`), and the prices of responses (genai-prices).
A server's usage numbers are not trusted: an implausible count counts as 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tui_eval.agents.messages import Usage

MAX_TOKENS = 100_000_000
"""More tokens than any model reads or writes in one response: a larger count is a lie."""
MAX_RESPONSE_COST = 1_000.0
"""Dollars; a proxy's cost header above this (or negative, or not a number) is ignored."""
COST_HEADERS = ("x-litellm-response-cost",)
"""Headers in which a proxy states what it billed."""


@dataclass(slots=True)
class SampleMeter:
    """The running totals of one sample.

    Attributes:
        input_tokens: prompt tokens of every response (the cache's included).
        output_tokens: their completion tokens.
        cost: dollars, from the built-in prices of every priced response.
        priced: whether any response had a known price.
        requests: model requests made (answered by the API or the cache).
        cached: requests answered by the response cache.
        external: usage a framework reported was priced in this turn (`charge_unmetered`).
        turn_start: `requests` when the agent's current turn began.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    priced: bool = False
    requests: int = 0
    cached: int = 0
    external: bool = False
    turn_start: int = 0

    def new_turn(self) -> None:
        """The agent starts another turn of a conversation (priced afresh)."""
        self.turn_start = self.requests
        self.external = False

    @property
    def usage(self) -> Usage:
        """The tokens and requests of every response so far."""
        return Usage(self.input_tokens, self.output_tokens, self.requests)

    def add(
        self,
        tokens: ResponseTokens | None = None,
        cost: float | None = None,
        *,
        cached: bool = False,
    ) -> None:
        """Count one response (one from the cache has a known price and costs nothing)."""
        self.requests += 1
        if cached:
            self.cached += 1
        if tokens is not None:
            self.input_tokens += tokens.input
            self.output_tokens += tokens.output
        if cost is not None:
            self.priced = True
            if not cached:
                self.cost += cost

    @property
    def all_cached(self) -> bool:
        """Every request of the sample came from the cache."""
        return self.requests > 0 and self.cached == self.requests


@dataclass(frozen=True, slots=True)
class ResponseTokens:
    """The checked tokens of one response (`input` includes prompt-cache reads and writes)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @classmethod
    def checked(
        cls, prompt: object, output: object, read: object = 0, write: object = 0
    ) -> ResponseTokens:
        """Counts a framework reports, checked; cache reads and writes are part of `prompt`."""
        given = token_count(prompt)
        cached = min(token_count(read), given)
        return cls(given, token_count(output), cached, min(token_count(write), given - cached))


def token_count(value: object) -> int:
    """`value` as a token count: a whole, finite number in [0, MAX_TOKENS], else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    count = int(value)
    return count if 0 <= count <= MAX_TOKENS else 0


def response_tokens(body: Mapping[str, Any]) -> ResponseTokens:
    """The checked token counts of an OpenAI or Anthropic response (Anthropic's cache reads
    and writes added to its `input_tokens`, as OpenAI's prompt tokens include them)."""
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return ResponseTokens()
    details = usage.get("input_tokens_details")
    if isinstance(details, Mapping):  # OpenAI's Responses API: cached ones are included
        prompt = token_count(usage.get("input_tokens"))
        cached = token_count(details.get("cached_tokens"))
        return ResponseTokens(prompt, token_count(usage.get("output_tokens")), min(cached, prompt))
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        prompt = token_count(usage.get("prompt_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = token_count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
        return ResponseTokens(
            prompt, token_count(usage.get("completion_tokens")), min(cached, prompt), 0
        )
    read = token_count(usage.get("cache_read_input_tokens"))
    write = token_count(usage.get("cache_creation_input_tokens"))
    return ResponseTokens(
        min(MAX_TOKENS, token_count(usage.get("input_tokens")) + read + write),
        token_count(usage.get("output_tokens")),
        read,
        write,
    )


def stream_usage(stream: bytes) -> tuple[str, ResponseTokens, bool]:
    """The model and usage an OpenAI or Anthropic event stream reports, and whether any
    event reported usage."""
    import httpx2

    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=stream,
        request=httpx2.Request("GET", "http://stream.invalid/"),
    )
    model, tokens, output, seen = "", ResponseTokens(), None, False
    for event in httpx2.EventSource(response):
        data = event.data
        if not data.startswith("{") or ('"usage"' not in data and '"model"' not in data):
            continue
        try:
            parsed = json.loads(data)
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        for holder in (parsed.get("message"), parsed.get("response"), parsed):
            if not isinstance(holder, Mapping):
                continue
            named = holder.get("model")
            if isinstance(named, str) and named:
                model = named
            usage = holder.get("usage")
            if not isinstance(usage, Mapping):
                continue
            seen = True
            if parsed.get("type") == "message_delta":  # Anthropic: output so far
                output = token_count(usage.get("output_tokens"))
            else:
                tokens = response_tokens(holder)
            break
    if output is not None:
        tokens = ResponseTokens(tokens.input, output, tokens.cache_read, tokens.cache_write)
    return model, tokens, seen


def stated_cost(headers: Mapping[str, str]) -> float | None:
    """The cost a proxy states for a response (LiteLLM's header), if it is a plausible one."""
    for name in COST_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            cost = float(raw)
        except ValueError:
            continue
        if math.isfinite(cost) and 0 <= cost <= MAX_RESPONSE_COST:
            return cost
    return None


def price_of(provider: str, model: str, tokens: ResponseTokens) -> float | None:
    """Dollars for one response by the built-in price table (None: unknown); the model
    decides, not the host, and a prefix (`openai/gpt-4o-mini`) is understood."""
    ref = price_ref(provider, model)
    return None if ref is None else price_with(ref, tokens)


def price_with(ref: tuple[str | None, str], tokens: ResponseTokens) -> float | None:
    """Dollars for `tokens` of the model the table knows as `ref` (from `price_ref`)."""
    from genai_prices import Usage, calc_price

    usage = Usage(
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read or None,
        cache_write_tokens=tokens.cache_write or None,
    )
    try:
        price = calc_price(usage, ref[1], provider_id=ref[0])
    except (LookupError, ValueError):
        return None
    cost = float(price.total_price)
    return cost if math.isfinite(cost) and cost >= 0 else None


def price_ref(provider: str, model: str) -> tuple[str | None, str] | None:
    """(provider id, model ref) under which genai-prices knows `model`, None if it does not."""
    if not model:
        return None
    from genai_prices import Usage, calc_price

    prefix, _, bare = model.rpartition("/")
    candidates: list[tuple[str | None, str]] = [(provider, model)]
    if prefix:
        candidates += [(prefix.split("/")[-1], bare), (provider, bare), (None, bare)]
    candidates.append((None, model))
    for provider_id, ref in candidates:
        try:
            calc_price(Usage(input_tokens=1), ref, provider_id=provider_id)
        except (LookupError, ValueError):
            continue
        return provider_id, ref
    return None
