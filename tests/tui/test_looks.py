"""Looks a user notices: the cursor row keeps its colours readable, text that does not fit
says so with an ellipsis (and takes room other columns do not need), side by side keeps
both samples' facts and lines in step."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.color import Color
from rich.text import Text

from tests.tui.scenes import build_scene
from tui_eval.tui.widgets.case_table import CaseTable
from tui_eval.tui.widgets.table import Column, Table, fit_columns

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


def luminance(color: Color) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = color.get_truecolor()
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: Color, b: Color) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_the_run_cursor_row_keeps_status_colours_readable(tmp_path):
    app, setup, _ = await build_scene("run_done", REPO / "suites", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await setup(pilot)
        table = app.screen.query_one(CaseTable)
        theme = app.ansi_theme  # what the ANSI colours red and green are drawn as
        statuses, others = {}, []
        for position in range(len(table.order)):
            table.move_cursor(position)
            await pilot.pause()
            strip = table.render_line(position - int(table.scroll_offset.y))
            for segment in strip:
                text = segment.text.strip()
                if text in ("✓ passed", "✗ failed"):
                    statuses[text] = segment.style
                elif text:
                    others.append(segment.style)
        passed, failed = statuses["✓ passed"], statuses["✗ failed"]
        assert passed.color != failed.color  # the status colours show on the cursor row
        background = passed.bgcolor
        assert background is not None and failed.bgcolor == background

        def ratio(color: Color) -> float:
            return contrast(Color.from_triplet(color.get_truecolor(theme)), background)

        assert ratio(passed.color) >= 4.5
        assert ratio(failed.color) >= 3
        colours = {style.color for style in others if style.color is not None}
        assert all(ratio(colour) >= 3 for colour in colours)  # names, failures, numbers
        assert max(ratio(colour) for colour in colours) >= 7  # the plain text


def test_room_goes_to_the_columns_whose_text_needs_it():
    columns = (
        Column("name", "case", 14, 1, grow=40),
        Column("noise", "noise", 17, 3, grow=14),
    )
    need = {"name": 18, "noise": 44}
    widths = {c.key: c.width for c in fit_columns(columns, 80, need)}
    assert widths["name"] == 18  # no more than its longest name
    assert widths["noise"] == 44  # the room the names do not use
    widths = {c.key: c.width for c in fit_columns(columns, 50, need)}
    assert widths["name"] == 18 and widths["noise"] == 46 - 18 - 4  # what is left


async def test_a_table_cell_that_does_not_fit_ends_with_an_ellipsis():
    from textual.app import App

    class Shown(App[None]):
        def compose(self):
            yield Table()

    columns = (Column("a", "a", 10, 0), Column("b", "b", 10, 1))
    long = "a very long cell that cannot fit in any column"
    async with Shown().run_test(size=(40, 10)) as pilot:
        table = pilot.app.query_one(Table)
        table.show(columns, [("r", {"a": Text("short"), "b": Text(long)})])
        await pilot.pause()
        line = pilot.app.screen._compositor.render_strips()[1].text
        assert "short" in line and "a very" in line and line.rstrip().endswith("…")
        table.set_cell("r", "b", Text(long + " again"))
        await pilot.pause()
        line = pilot.app.screen._compositor.render_strips()[1].text
        assert line.rstrip().endswith("…")


async def test_history_compare_header_keeps_the_counts_and_ends_with_an_ellipsis(tmp_path):
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report
    from tui_eval.service.store import RunHistory
    from tui_eval.tui.app import make_app
    from tui_eval.tui.screens.diff import DiffScreen

    history = RunHistory(tmp_path)
    name = "a suite with a rather long name for a header"
    for started, outcome in ((1_780_000_000.0, "passed"), (1_780_000_600.0, "failed")):
        cases = [CaseResult("q", [SampleResult("q", 0, outcome)], planned=1)]
        journal = history.start(name, "", invocation="t")
        journal.record.started_at = started
        journal.finish(Report(name, cases, started_at=started, duration_s=1.0))
    app = make_app(suites=[], history=history)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h", "space", "down", "c")
        assert isinstance(app.screen, DiffScreen)
        title = app.screen._compositor.render_strips()[0].text.rstrip()
        assert "1 regressed" in title and "0 improved" in title  # the counts come first
        assert title.endswith("…")  # the rest is cut, and says so


def _judged_case(name: str, latency: float, reasons: tuple[str, str]) -> object:
    from tui_eval.agents.messages import Message, RunResult, ToolCall
    from tui_eval.checks import CheckResult
    from tui_eval.core.results import CaseResult, SampleResult

    call = ToolCall("lookup", {"city": "Oslo"}, "c1", result=700_000, latency_ms=latency / 2)
    run = RunResult(
        output="About 700,000 people.",
        messages=[Message("user", "How many?"), Message("assistant", "", tool_calls=[call])],
        tool_calls=[call],
        turns=2,
        latency_ms=latency,
    )
    checks = [
        CheckResult("first", True, reason=reasons[0]),
        CheckResult("second", False, reason=reasons[1]),
    ]
    sample = SampleResult(name, 0, "failed", run=run, checks=checks, latency_ms=latency)
    return CaseResult(name, [sample], planned=1)


async def test_side_by_side_says_a_baseline_keeps_no_latency_and_keeps_checks_in_step(tmp_path):
    from tui_eval.report.baselines import BaselineStore
    from tui_eval.report.report import Report
    from tui_eval.tui.app import make_app
    from tui_eval.tui.screens.side_by_side import SideBySideScreen

    long_reason = "a reason long enough to wrap onto more lines than the other side " * 3
    saved = Report("s", [_judged_case("q", 480.0, (long_reason, "short"))])
    path = tmp_path / "__baselines__" / "s.json"
    BaselineStore(path).save(saved)
    baseline = BaselineStore(path).read().baseline
    assert baseline is not None
    current = _judged_case("q", 210.0, ("short", "also short"))

    app = make_app(suites=[])
    async with app.run_test(size=(120, 60)) as pilot:
        await app.push_screen(SideBySideScreen.of_cases("q", baseline.cases[0], current))
        await pilot.pause()
        lines = [strip.text for strip in pilot.app.screen._compositor.render_strips()]
        left = [line[:60] for line in lines]
        right = [line[60:] for line in lines]
        shown = "\n".join(lines)
        assert not re.search(r"(?<![\d.,])0ms", shown)  # a baseline file keeps no latencies
        assert "210ms" in shown and "latency not recorded" in shown

        def row_of(side: list[str], text: str) -> int:
            return next(i for i, line in enumerate(side) if text in line)

        assert row_of(left, "✗ second") == row_of(right, "✗ second")


def test_a_column_wider_than_its_text_gives_room_to_one_that_is_cut():
    columns = (
        Column("now", "now", 26, 1, grow=14),
        Column("last", "last run", 20, 3, grow=8),
    )
    need = {"now": 60, "last": 8}  # a long status; no run yet ("–")
    widths = {c.key: c.width for c in fit_columns(columns, 80, need)}
    assert widths["now"] == 60 and widths["last"] == 76 - 4 - 60  # all it needs, then the rest


async def test_the_calibration_reason_is_cut_with_an_ellipsis_at_80_columns(
    tmp_path, example_suites
):
    app, setup, _ = await build_scene("calibration", example_suites, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await setup(pilot)
        screen = pilot.app.screen
        reason = screen.calibration.disagreements[0].judge.reason
        lines = [strip.text.rstrip() for strip in screen._compositor.render_strips()]
        row = next(line for line in lines if reason[:12] in line)
        assert len(reason) > 40 and reason not in row  # it cannot fit at 80 columns…
        assert row.endswith("…")  # …and says it is cut


LONG_NAMES = (
    "cancels the wrong order (agent's fault)",
    "leaves before confirming (user's fault)",
    "where is my order (read only)",
)
DIFFERENCES = "state_equals: 6 difference(s): items.mug.stock: expected 10, got 9; " * 2


def _long_named_report():
    from tui_eval.checks import CheckResult
    from tui_eval.core.results import CaseResult, SampleResult
    from tui_eval.report.report import Report

    def failed(name: str) -> SampleResult:
        checks = [CheckResult("state_equals", False, reason=DIFFERENCES)]
        return SampleResult(name, 0, "failed", checks=checks)

    return Report("shop", [CaseResult(name, [failed(name)], planned=1) for name in LONG_NAMES])


def _case_rows(app) -> list[str]:
    lines = [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]
    return [line for line in lines if line.lstrip().startswith("✗ failed")]


async def test_the_run_table_gives_case_names_the_room_the_other_columns_leave():
    """At 120 columns the names are whole (`(agent's fault)` included) and the first failure
    keeps a column; at 80 a name is cut later, with "…", and the failure still shows."""
    from tui_eval.tui.app import make_app

    app = make_app(report=_long_named_report())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rows = _case_rows(app)
        assert len(rows) == len(LONG_NAMES)
        for name, row in zip(LONG_NAMES, rows, strict=True):
            assert name in row
            assert "state_equals" in row and row.endswith("…")  # the failure, cut
    app = make_app(report=_long_named_report())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        rows = _case_rows(app)
        assert len(rows) == len(LONG_NAMES)
        for name, row in zip(LONG_NAMES, rows, strict=True):
            assert len(row) <= 80
            if name in row:
                continue  # short enough to fit
            shown = row[row.index(name[:10]) :].split("…")[0]
            assert name.startswith(shown) and len(shown) >= 28, row  # cut late, and says so
            assert "state_eq" in row  # the first failure keeps a column


async def test_the_fault_line_cut_at_80x24_ends_with_an_ellipsis_and_stays_plain():
    from tui_eval import Fault
    from tui_eval.tui.app import make_app

    from .test_conversation_screens import WRONG_ORDER, conversation_sample, one_case_report
    from .test_conversation_screens import open_sample as open_first_sample

    reason = "the user ended the conversation [bold]while[/bold] the agent waited " * 6
    sample = conversation_sample(
        WRONG_ORDER[:1], fault=Fault("user", 1, reason, by="rule"), excluded=True
    )
    app = make_app(report=one_case_report(sample))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_first_sample(pilot, app)
        fault = screen.query_one("#fault")
        lines = [strip.text for strip in screen._compositor.render_strips()]
        shown = lines[fault.region.y : fault.region.bottom]
        assert 1 < len(shown) <= 4
        assert "[bold]while[/bold]" in shown[0] + shown[1]  # markup shown as typed
        assert shown[-1].rstrip().endswith("…")  # cut, and says so
        # The whole reason is at the end of the Conversation tab, plain.
        ending = str(screen.query_one("#conversation-end").render())
        assert reason.strip() in " ".join(ending.split()), ending


async def test_an_undecided_case_shows_its_whole_status_and_the_suites_count_it_apart():
    """The Run table's status says "⊘ undecided" whole at 80 columns; the Suites screen
    counts passed cases of the decided ones (`1/1 ⊘1`), as the Run header does."""
    from tui_eval import Fault, Suite
    from tui_eval.core.results import CaseResult
    from tui_eval.report.report import Report
    from tui_eval.service.session import RunSession
    from tui_eval.tui.app import make_app

    from .test_conversation_screens import WRONG_ORDER, conversation_sample

    undecided = conversation_sample(
        WRONG_ORDER[:1], fault=Fault("user", 1, "hung up"), excluded=True
    )
    passed = conversation_sample(WRONG_ORDER, status="passed")
    report = Report(
        "shop",
        [
            CaseResult("fine", [passed], planned=1),
            CaseResult("hung up", [undecided], planned=1),
        ],
    )
    app = make_app(report=report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "⊘ undecided  hung up" in "\n".join(
            strip.text for strip in app.screen._compositor.render_strips()
        )
    app = make_app(suites=[Suite("shop", agent=lambda q: q, cases=[])])
    async with app.run_test(size=(120, 40)) as pilot:
        session = RunSession.for_report(report, clock=lambda: 0.0)
        app.workspace.sessions["shop"] = session
        app.screen.wake()
        row = "shop"

        def shown() -> str:
            lines = [strip.text for strip in app.screen._compositor.render_strips()]
            return next((line for line in lines if line.lstrip().startswith(row)), "")

        from .test_app_flow import wait_for

        await wait_for(pilot, lambda: "passed" in shown())
        assert "1/1 ⊘1 passed" in shown()
