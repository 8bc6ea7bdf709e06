"""What one sample spent: cost from built-in prices, requests, and answers from the cache.

The runner opens a `SampleMeter` for every sample (in its `SampleContext`, so the agent's
requests and its judges' land in the same one); HTTP providers add each response to it.

Usage numbers come from a server and are not trusted: a count that is not a whole,
finite, non-negative number of plausible size (`-5`, `NaN`, `"lots"`, `1e30`) counts as
0, so it can neither crash a sample that answered nor lower (or explode) the spend.
Prices follow the vendor's bill through genai-prices: cached prompt tokens at the cached
price, Anthropic's cache reads and writes counted, `openai/gpt-4o-mini` resolved.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_eval.agents.messages import Usage

MAX_TOKENS = 100_000_000
"""More tokens than any model reads or writes in one response: a larger count is a lie."""
MAX_RESPONSE_COST = 1_000.0
"""Dollars; a proxy's cost header above this (or negative, or not a number) is ignored."""
COST_HEADERS = ("x-litellm-response-cost",)
"""Headers in which a proxy states what it billed for the response."""


@dataclass(slots=True)
class SampleMeter:
    """The running totals of one sample.

    Attributes:
        input_tokens: prompt tokens of every response (the cache's included): what a
            `price=` function prices for a sample cut off before its run returned.
        output_tokens: their completion tokens.
        cost: dollars, from the built-in prices of every priced response.
        priced: whether any response had a known price.
        requests: model requests made (answered by the API or the cache).
        cached: requests answered by the response cache.
        external: usage a framework reported (its calls did not pass through tui-eval's
            HTTP layer) was priced in, in this turn of the agent's.
        turn_start: `requests` when the agent's current turn began (a conversation has
            one per user message; any other sample, one from 0).
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
        """The agent starts another turn of a conversation: the usage its framework
        reports for it is priced afresh (`charge_unmetered`)."""
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
        """Count one response: its (checked) tokens, and its cost when its price is known
        (an answer from the cache has a known price and costs nothing)."""
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
    """The tokens one response reports, checked.

    Attributes:
        input: every prompt token the model read (cached ones included).
        output: tokens it wrote.
        cache_read: prompt tokens served from the provider's prompt cache (part of `input`).
        cache_write: prompt tokens written to it (part of `input`).
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


def token_count(value: object) -> int:
    """`value` as a token count: a whole, finite number in [0, MAX_TOKENS], else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    count = int(value)
    return count if 0 <= count <= MAX_TOKENS else 0


def response_tokens(body: Mapping[str, Any]) -> ResponseTokens:
    """The checked token counts of a chat-completions, Responses-API or messages-API
    response.

    OpenAI's `prompt_tokens` (`input_tokens` in the Responses API) include the cached ones
    (`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`);
    Anthropic's `input_tokens` exclude its cache reads and writes, which are added here.
    """
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
    """The model and usage an event stream (server-sent events) reports, and whether any
    event reported usage at all.

    OpenAI's chat chunks carry it in the last chunk (`stream_options.include_usage`), the
    Responses API in `response.completed`, Anthropic's in `message_start` (input) and the
    last `message_delta` (output). The events are httpx2's reading of the stream.
    """
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
    """Dollars for one response by the built-in price table (genai-prices), None if unknown.

    The model decides, not the host: `gpt-4o-mini` behind a proxy on localhost is priced.
    A provider prefix (`openai/gpt-4o-mini`, as proxies write it) is understood.
    """
    ref = _price_ref(provider, model)
    if ref is None:
        return None
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


@functools.lru_cache(maxsize=256)
def _price_ref(provider: str, model: str) -> tuple[str | None, str] | None:
    """(provider id, model ref) under which genai-prices knows `model`, looked up once.

    Loading the price table costs about 0.2 s of CPU, paid at a run's first response
    while every other request waits. A model the table does not know (a local model,
    a fine-tune) is remembered in the cache folder, per installed table, so later runs
    know it is unpriced without loading the table.
    """
    if not model or _known_unpriced(provider, model):
        return None
    ref = _look_up(provider, model)
    table = _table_identity()
    if ref is None and table is not None:
        _remember_unpriced(table, f"{provider}\t{model}")
    return ref


def _known_unpriced(provider: str, model: str) -> bool:
    """Whether the installed price table is remembered not to know `model` (read from the
    cache folder, without loading the table)."""
    table = _table_identity()
    return table is not None and f"{provider}\t{model}" in _unpriced(table)


def _look_up(provider: str, model: str) -> tuple[str | None, str] | None:
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


_warming: threading.Thread | None = None
"""The thread loading the price table, once per process (None: not started)."""
_warm_asked = False
"""Whether a metered request has gone out in this process (the load is decided once)."""


def warm_prices(provider: str, model: str) -> None:
    """Start loading the price table in a thread, once per process, as the first metered
    request goes out: its answer is priced without the event loop loading the table (0.1–0.4
    s of imports, while every other request would wait). Nothing starts for a model the
    installed table is known not to price."""
    global _warming, _warm_asked
    if _warm_asked or not model:  # every later request: one check, no file read
        return
    _warm_asked = True
    if _known_unpriced(provider, model):
        return
    _warming = threading.Thread(
        target=_warm, args=(provider, model), name="tui-eval prices", daemon=True
    )
    _warming.start()


def _warm(provider: str, model: str) -> None:
    with contextlib.suppress(Exception):  # the loop's own lookup meets it again
        _price_ref(provider, model)


UNPRICED_FILE = "unpriced-models.json"
"""In the cache folder: the models the installed price table does not know."""
MAX_UNPRICED = 1_000


@functools.lru_cache(maxsize=1)
def _table_identity() -> str | None:
    """Which price table is installed (its data file's path, size and time), found without
    importing it; None if it cannot be told."""
    try:
        spec = importlib.util.find_spec("genai_prices")
        folders = spec.submodule_search_locations if spec is not None else None
        if not folders:
            return None
        data = os.path.join(next(iter(folders)), "data.py")
        info = os.stat(data)
    except (ImportError, ValueError, OSError):
        return None
    return f"{data}:{info.st_size}:{info.st_mtime_ns}"


def _unpriced_path() -> Path:
    from tui_eval.util.home import data_root

    return data_root() / "cache" / UNPRICED_FILE


def _unpriced(table: str) -> frozenset[str]:
    try:
        stored = json.loads(_unpriced_path().read_bytes())
    except (OSError, ValueError):
        return frozenset()
    if not isinstance(stored, dict) or stored.get("table") != table:
        return frozenset()  # another price table: what it did not know may be known now
    models = stored.get("models")
    return (
        frozenset(m for m in models if isinstance(m, str))
        if isinstance(models, list)
        else frozenset()
    )


def _remember_unpriced(table: str, key: str) -> None:
    from tui_eval.util.atomic import atomic_write_bytes
    from tui_eval.util.home import private_subfolder

    models = sorted(_unpriced(table) | {key})[-MAX_UNPRICED:]
    try:
        path = private_subfolder("cache") / UNPRICED_FILE
        payload = json.dumps({"table": table, "models": models}, indent=0)
        atomic_write_bytes(path, payload.encode(), private=True)
    except OSError:
        pass  # a cache: the next run looks the model up again
