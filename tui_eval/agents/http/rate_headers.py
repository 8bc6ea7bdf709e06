"""What a response's headers say about rate limits: the wait it asks for (`retry_after`)
and the numbers the limiter learns its ceilings from (`header_number`). The pacing that
uses them is `limits.py`'s."""

from __future__ import annotations

import datetime
import email.utils
import math
import time
from collections.abc import Mapping


def header_number(headers: Mapping[str, str], *names: str) -> float | None:
    """The first of the headers `names` present, as a finite number (else None)."""
    for name in names:
        value = headers.get(name)
        if value is not None:
            try:
                number = float(value)
            except ValueError:
                return None
            return number if math.isfinite(number) else None
    return None


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds: `retry-after-ms`, else `Retry-After`
    (seconds or an HTTP-date), each also under a proxy's `llm_provider-` prefix (LiteLLM
    passes the upstream API's headers on that way). `now`: the wall clock (tests)."""
    for prefix in ("", "llm_provider-"):
        millis = header_number(headers, f"{prefix}retry-after-ms")
        if millis is not None:
            return max(0.0, millis) / 1000
        seconds = header_number(headers, f"{prefix}retry-after")
        if seconds is not None:
            return max(0.0, seconds)
        value = headers.get(f"{prefix}retry-after")
        if value is None:
            continue
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None
