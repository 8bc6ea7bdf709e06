"""Untrusted text in widgets as Rich `Text`, never markup or escapes (`tui_eval.util.text`)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tui_eval.util.text import one_line, sanitize, value_text

DISPLAY_LIMIT = 20_000
"""Characters of an output shown inline; the full text is one keypress away."""


def plain(value: Any, *, limit: int | None = DISPLAY_LIMIT, style: str = "") -> Text:
    """Untrusted text as a `Text` that Rich will not parse for markup, cut at `limit`."""
    raw = value_text(value)
    hidden = 0
    if limit is not None and len(raw) > limit:
        hidden = len(raw) - limit
        raw = raw[:limit]
    text = Text(sanitize(raw), style=style)
    if hidden:
        text.append(
            f"\n… {hidden:,} more characters — press v to view the full text", style="italic dim"
        )
    return text


def cell(value: Any, limit: int = 120, style: str = "") -> Text:
    """A table cell of untrusted text."""
    return Text(one_line(value, limit), style=style, no_wrap=True, overflow="ellipsis")


def format_duration(seconds: float | None) -> str:
    """`1.2s`, `3m04s`, or `–` when unknown."""
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_ms(ms: float) -> str:
    """`820ms` or `1.4s`."""
    return f"{ms:,.0f}ms" if ms < 1000 else f"{ms / 1000:,.1f}s"
