"""The Case screen's latency chart: bars from zero, with their scale."""

from __future__ import annotations

import pytest

from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.case import CaseScreen

from .test_app import screen_text

pytestmark = pytest.mark.anyio


def one_case(latencies: list[float], failed: set[int] = frozenset()) -> Report:
    samples = [
        SampleResult("steady", i, "failed" if i in failed else "passed", latency_ms=ms)
        for i, ms in enumerate(latencies)
    ]
    return Report("timing", [CaseResult("steady", samples, planned=len(samples))])


def chart_lines(app) -> list[list[str]]:
    """Each line of the chart as its bars (each bar: the character it is drawn with)."""
    lines = str(app.screen.query_one("#latency").render()).splitlines()
    return [[bar[0] for bar in line.split()] for line in lines]


async def test_near_equal_latencies_draw_near_equal_bars_with_their_scale():
    app = make_app(report=one_case([251.0, 251.0, 252.0, 251.0]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        assert isinstance(app.screen, CaseScreen)
        top, bottom = chart_lines(app)
        assert bottom == ["█"] * 4
        assert len(top) == 4 and set(top) <= {"█", "▇"}  # all near full
        assert "0 to 252ms" in screen_text(app)


async def test_bars_are_proportional_to_latency_from_zero_and_failures_are_red():
    app = make_app(report=one_case([100.0, 400.0, 200.0], failed={1}))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        assert chart_lines(app) == [["█"], ["▄", "█", "█"]]
        text = app.screen.query_one("#latency").render()
        styles = {span.style for span in text.spans if str(text)[span.start : span.end].strip()}
        assert styles == {"red", "green"}
