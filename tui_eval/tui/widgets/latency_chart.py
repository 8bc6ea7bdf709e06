"""`LatencyChart`: each sample's latency as a bar drawn from zero, failed samples in red.
(Textual's `Sparkline` scales from the smallest value: 251 and 252 ms looked far apart.)"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from tui_eval.tui.widgets.text import format_ms

EIGHTHS = " ▁▂▃▄▅▆▇█"
"""A cell filled to 0/8 ... 8/8 of its height."""


class LatencyChart(Widget):
    """The latencies of a case's samples, in order, as bars from zero (red: failed)."""

    DEFAULT_CSS = """
    LatencyChart { height: 2; }
    """

    samples: reactive[tuple[tuple[float, bool], ...]] = reactive(())
    """Each sample's latency in ms and whether it passed, in order."""

    def render(self) -> Text:
        return latency_bars(self.samples, self.size.width, self.size.height)


def latency_bars(samples: Sequence[tuple[float, bool]], width: int, height: int) -> Text:
    """`height` lines of bars, one per sample (or group: its largest latency, red if any failed).

    Example:
        >>> latency_bars([(100.0, True), (50.0, False)], 4, 1).plain
        '█ ▄ '
    """
    if not samples or width <= 0 or height <= 0:
        return Text()
    groups = _groups(samples, width)
    top = max(latency for latency, _ in groups)
    step = width // len(groups)
    bar = max(1, min(3, step - 1)) if step >= 2 else 1
    gap = min(1, step - bar)
    levels = [_level(latency, top, height) for latency, _ in groups]
    text = Text(no_wrap=True, overflow="crop")
    for row in reversed(range(height)):
        for level, (_, passed) in zip(levels, groups, strict=True):
            filled = EIGHTHS[max(0, min(8, level - 8 * row))]
            text.append(filled * bar, style="green" if passed else "red")
            text.append(" " * gap)
        if row:
            text.append("\n")
    return text


def _level(latency: float, top: float, height: int) -> int:
    """The bar's height in eighths of a cell: its share of `top`, at least one eighth."""
    if top <= 0 or latency <= 0:
        return 0
    return max(1, round(latency / top * 8 * height))


def _groups(samples: Sequence[tuple[float, bool]], width: int) -> list[tuple[float, bool]]:
    """At most `width` bars: neighbouring samples share one when they outnumber columns."""
    if len(samples) <= width:
        return list(samples)
    groups = []
    for column in range(width):
        part = samples[column * len(samples) // width : (column + 1) * len(samples) // width]
        groups.append((max(ms for ms, _ in part), all(passed for _, passed in part)))
    return groups


def scale_text(samples: Sequence[tuple[float, bool]]) -> str:
    """What the bars measure: `0 to 252ms`."""
    top = max((latency for latency, _ in samples), default=0.0)
    return f"0 to {format_ms(top)}"
