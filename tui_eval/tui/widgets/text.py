"""Showing untrusted text: never as markup, never as terminal escape sequences."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tui_eval.checks.matchers import output_text

DISPLAY_LIMIT = 20_000
"""Characters of an output shown inline; the full text is one keypress away."""

# C0 controls (but tab and newline) become their visible "control pictures" (ESC → ␛);
# DEL and C1 controls become U+FFFD. Nothing reaches the terminal as a control code.
_VISIBLE = {c: 0x2400 + c for c in range(32) if c not in (9, 10)}
_VISIBLE[0x7F] = 0x2421
_VISIBLE.update({c: 0xFFFD for c in range(0x80, 0xA0)})


def sanitize(text: str) -> str:
    """Replace control characters with visible stand-ins."""
    return text.translate(_VISIBLE)


def plain(value: Any, *, limit: int | None = DISPLAY_LIMIT, style: str = "") -> Text:
    """Untrusted text as a `Text` that Rich will not parse for markup, cut at `limit`."""
    raw = value if isinstance(value, str) else output_text(value)
    cut = 0
    if limit is not None and len(raw) > limit:
        cut = len(raw) - limit
        raw = raw[:limit]
    text = Text(sanitize(raw), style=style)
    if cut:
        text.append(
            f"\n… {cut:,} more characters — press v to view the full text", style="italic dim"
        )
    return text


def one_line(value: Any, limit: int = 120) -> str:
    """A single sanitized line (for table cells)."""
    raw = value if isinstance(value, str) else output_text(value)
    if len(raw) > limit * 4:
        raw = raw[: limit * 4]
    flat = " ".join(sanitize(raw).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
