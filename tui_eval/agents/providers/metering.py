"""What one sample spent: cost from built-in prices, requests, and answers from the cache.

The runner opens a `SampleMeter` for every sample (a context variable, so the agent's
requests and its judges' land in the same one); HTTP providers add each response to it.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class SampleMeter:
    """The running totals of one sample.

    Attributes:
        index: the sample's number within its case (the response cache keys on it).
        cost: dollars, from the built-in prices of every priced response.
        priced: whether any response had a known price.
        requests: model requests made (answered by the API or the cache).
        cached: requests answered by the response cache.
    """

    index: int = 0
    cost: float = 0.0
    priced: bool = False
    requests: int = 0
    cached: int = 0

    @property
    def all_cached(self) -> bool:
        """Every request of the sample came from the cache."""
        return self.requests > 0 and self.cached == self.requests


sample_meter: ContextVar[SampleMeter | None] = ContextVar("tui_eval_sample_meter", default=None)


def price_of(provider: str, model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for one response by the built-in price table (genai-prices), None if unknown."""
    unit = _unit_prices(provider, model)
    if unit is None:
        return None
    per_input, per_output = unit
    return input_tokens * per_input + output_tokens * per_output


@functools.lru_cache(maxsize=256)
def _unit_prices(provider: str, model: str) -> tuple[float, float] | None:
    """(dollars per input token, per output token), looked up once per model."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    million = 1_000_000
    try:
        inputs: Any = calc_price(
            Usage(input_tokens=million, output_tokens=0), model, provider_id=provider
        )
        outputs: Any = calc_price(
            Usage(input_tokens=0, output_tokens=million), model, provider_id=provider
        )
    except (LookupError, ValueError):
        return None
    return float(inputs.total_price) / million, float(outputs.total_price) / million
