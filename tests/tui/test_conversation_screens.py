"""Conversations in the app: the Sample screen turn by turn with the first critical turn
marked, the Case screen's fault counts, side by side by turn, and the samples left out."""

from __future__ import annotations

import anyio
import pytest

from tui_eval import Conversation, Fault, Turn
from tui_eval.agents.messages import RunResult, StateChange, ToolCall, Usage
from tui_eval.checks import CheckResult
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.report.report import Report
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.case import CaseScreen
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.screens.side_by_side import SideBySideScreen
from tui_eval.tui.widgets.case_table import CaseTable

from .conversation_demo import shop_report
from .test_app import screen_text

pytestmark = pytest.mark.anyio


def turn(index: int, user: str, reply: str, *calls: ToolCall, **fields) -> Turn:
    return Turn(index, user, reply, list(calls), **fields)


def conversation_sample(
    turns: list[Turn],
    *,
    index: int = 0,
    status: str = "failed",
    fault: Fault | None = None,
    excluded: bool = False,
    **conversation: object,
) -> SampleResult:
    talk = Conversation(turns, **conversation)
    calls = [c for t in turns for c in t.tool_calls]
    run = RunResult(
        output=turns[-1].reply if turns else None,
        tool_calls=calls,
        turns=len(turns),
        conversation=talk,
    )
    checks = [] if status == "passed" else [CheckResult("state_equals", False, reason="differs")]
    return SampleResult(
        "cancel", index, status, run=run, checks=checks, fault=fault, excluded=excluded
    )


def one_case_report(*samples: SampleResult, threshold: float = 1.0) -> Report:
    case = CaseResult("cancel", list(samples), planned=len(samples), pass_threshold=threshold)
    return Report("shop", [case])


WRONG_ORDER = [
    turn(1, "Cancel my blue mug order.", "Which order number?", usage=Usage(40, 6, 1)),
    turn(
        2,
        "A-17.",
        "Cancelled.",
        ToolCall("cancel", {"order_id": "A-18"}, result="cancelled", latency_ms=0.8),
        usage=Usage(90, 20, 2),
        user_usage=Usage(300, 12, 1),
        changes=[StateChange("orders.A-18.status", "paid", "cancelled")],
    ),
    turn(3, "Thanks, bye.", "Goodbye!", usage=Usage(120, 3, 1)),
]


async def open_sample(pilot, app) -> SampleScreen:
    """From the Run screen of a one-case report: the case, then its first sample."""
    await pilot.press("enter", "enter")
    screen = app.screen
    assert isinstance(screen, SampleScreen)
    with anyio.fail_after(20):
        while not screen.query(".turn"):
            await pilot.pause(0.01)
    await pilot.pause()
    return screen


async def test_a_conversation_sample_shows_its_turns_in_order_with_the_critical_turn_marked():
    sample = conversation_sample(
        WRONG_ORDER,
        fault=Fault("agent", 2, "cancelled A-18, not A-17", by="rule"),
        user="SimulatedUser(openai:gpt-4o-mini)",
        user_usage=Usage(900, 40, 3),
        user_cost=0.0021,
        max_turns=20,
        closing="Bye now",
    )
    app = make_app(report=one_case_report(sample))
    async with app.run_test(size=(120, 60)) as pilot:
        screen = await open_sample(pilot, app)
        tabs = screen.query_one("TabbedContent")
        assert tabs.active == "trajectory"
        assert tabs.get_tab("trajectory").label.plain == "2 Conversation"
        fault = str(screen.query_one("#fault").render())
        assert "the agent's fault at turn 2" in fault and "cancelled A-18, not A-17" in fault
        turns = list(screen.query(".turn"))
        texts = [str(t.render()) for t in turns]
        assert [t.splitlines()[0].split(" · ")[0] for t in texts] == [
            "turn 1",
            "turn 2",
            "turn 3",
        ]
        assert [t.has_class("critical") for t in turns] == [False, True, False]
        assert "first critical turn" in texts[1].splitlines()[0]
        assert not any("first critical turn" in t for t in texts[::2])
        second = texts[1]
        for shown in (
            "A-17.",  # the user's message
            'cancel({"order_id": "A-18"})',  # the tool call and its arguments
            "cancelled",  # its result
            "orders.A-18.status: 'paid' → 'cancelled'",  # the state change
            "Cancelled.",  # the agent's reply
            "agent 110 tokens",  # the turn's tokens ...
            "user 312 tokens",  # ... and the user's, apart
        ):
            assert shown in second, shown
        assert second.index("A-17.") < second.index("cancel(") < second.index("Cancelled.")
        ending = str(screen.query_one("#conversation-end").render())
        assert "ended by the user" in ending and "Bye now" in ending
        assert "3 turns (at most 20)" in ending
        assert "SimulatedUser(openai:gpt-4o-mini)" in ending
        assert "940 tokens" in ending and "$0.0021" in ending
        await pilot.press("5")
        usage = str(screen.query_one("#usage-body").render())
        assert "user tokens   940" in usage and "$0.002100" in usage


async def test_n_and_p_walk_between_conversations_and_plain_samples():
    three_turns = conversation_sample(WRONG_ORDER, fault=Fault("agent", 2, "wrong order"))
    plain_sample = SampleResult(
        "plain", 0, "failed", run=RunResult(output="4"), checks=[CheckResult("contains", False)]
    )
    one_turn = conversation_sample(WRONG_ORDER[:1], fault=Fault("user", 1, "hung up"))
    report = Report(
        "shop",
        [
            CaseResult("cancel", [three_turns], planned=1),
            CaseResult("plain", [plain_sample], planned=1),
            CaseResult("hang up", [one_turn], planned=1),
        ],
    )
    app = make_app(report=report)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_sample(pilot, app)
        tabs = screen.query_one("TabbedContent")

        async def shown() -> tuple[str, int, list[bool], bool]:
            await pilot.pause()
            turns = [t for t in screen.query(".turn") if t.parent.display and t.is_attached]
            return (
                tabs.get_tab("trajectory").label.plain,
                len(turns),
                [t.has_class("critical") for t in turns],
                screen.query_one("#fault").display,
            )

        assert await shown() == ("2 Conversation", 3, [False, True, False], True)
        for key, expected in (
            ("n", ("2 Trajectory", 0, [], False)),
            ("n", ("2 Conversation", 1, [True], True)),
            ("n", ("2 Conversation", 3, [False, True, False], True)),
            ("p", ("2 Conversation", 1, [True], True)),
        ):
            await pilot.press(key)
            found = await shown()
            if expected[1] == 0:  # a plain sample: its trajectory, the turns hidden
                assert found[0] == expected[0] and not screen.query_one("#turns").display
                assert found[3] is False
            else:
                assert found == expected, key
        assert "hung up" in str(screen.query_one("#fault").render())


async def test_the_critical_turn_of_a_long_conversation_is_scrolled_into_view():
    turns = [turn(i, f"message {i}", f"reply {i}\nsecond line") for i in range(1, 31)]
    sample = conversation_sample(turns, fault=Fault("agent", 24, "wrong refund"))
    app = make_app(report=one_case_report(sample))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sample(pilot, app)
        critical = screen.query_one(".critical")
        scroller = critical.parent.parent
        with anyio.fail_after(20):
            while not scroller.region.overlaps(critical.region):
                await pilot.pause(0.01)
        assert "turn 24" in screen_text(app) and "message 24" in screen_text(app)


async def test_markup_in_user_and_agent_messages_is_shown_literally():
    sneaky = [
        turn(
            1,
            "[bold red]urgent[/] cancel [link=https://evil.example]here[/link]",
            "[i]Done[/i] \x1b[31mred\x1b[0m",
            ToolCall("cancel", {"note": "[b]x[/b]"}, error="ValueError: [red]boom[/red]"),
            changes=[StateChange("orders.A-17.note", None, "[u]hi[/u]", "added")],
        )
    ]
    sample = conversation_sample(
        sneaky,
        fault=Fault("environment", 1, "the tool cancel failed: [red]boom[/red]"),
        closing="[blink]bye[/blink]",
    )
    app = make_app(report=one_case_report(sample))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_sample(pilot, app)
        shown = screen_text(app)
        for literal in (
            "[bold red]urgent[/] cancel [link=https://evil.example]here[/link]",
            "[i]Done[/i]",
            '{"note": "[b]x[/b]"}',
            "ValueError: [red]boom[/red]",
            "orders.A-17.note: added '[u]hi[/u]'",
            "the tool cancel failed: [red]boom[/red]",
            "[blink]bye[/blink]",
        ):
            assert literal in shown, literal
        assert "\x1b" not in shown


async def test_the_case_screen_counts_samples_by_fault_and_shows_those_left_out():
    samples = [
        conversation_sample(WRONG_ORDER, index=0, status="passed"),
        conversation_sample(WRONG_ORDER, index=1, fault=Fault("agent", 2, "wrong order")),
        conversation_sample(
            WRONG_ORDER[:1], index=2, fault=Fault("user", 1, "hung up"), excluded=True
        ),
        conversation_sample(WRONG_ORDER, index=3, fault=Fault("environment", 2, "503")),
        conversation_sample(
            WRONG_ORDER[:1], index=4, fault=Fault("user", 1, "hung up"), excluded=True
        ),
    ]
    app = make_app(report=one_case_report(*samples, threshold=0.3))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, CaseScreen)
        stats = str(screen.query_one("#case-stats").render())
        assert "faults  user 2 · agent 1 · environment 1" in stats
        assert "2 samples left out of the pass rate: the user simulator's fault" in stats
        assert "1/3 = 33%" in stats  # the rate counts the three samples left in
        assert "k=3" in stats and "k=4" not in stats  # pass@k over the counted samples
        rows = [[c.plain for c in row] for row in _table_rows(screen)]
        assert [row[-2] for row in rows] == ["", "agent t2", "user t1", "environment t2", "user t1"]
        assert [row[1] for row in rows] == [
            "passed",
            "failed",
            "failed ⊘",
            "failed",
            "failed ⊘",
        ]
        assert len(rows) == 5  # left out, never hidden


async def test_the_run_header_says_how_many_samples_were_left_out():
    samples = [
        conversation_sample(WRONG_ORDER, index=0, status="passed"),
        conversation_sample(
            WRONG_ORDER[:1], index=1, fault=Fault("user", 1, "hung up"), excluded=True
        ),
    ]
    app = make_app(report=one_case_report(*samples, threshold=0.5))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = screen_text(app)
        assert "⊘ 1 left out (user faults)" in header
        assert "✗ 0 failed" in header  # the user simulator's failure is not the agent's
        assert "100% passed" in header  # of the one sample counted
    plain = make_app(report=one_case_report(samples[0]))
    async with plain.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "left out" not in screen_text(plain)


async def test_an_undecided_case_says_so_in_the_case_table():
    samples = [
        conversation_sample(WRONG_ORDER[:1], index=0, fault=Fault("user", 1, "x"), excluded=True)
    ]
    app = make_app(report=one_case_report(*samples))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        cells = app.screen.query_one(CaseTable).rows()[0]
        assert cells[0].plain == "⊘ undecided"
        assert cells[2].plain == "0/0 ⊘1"


async def test_failing_beside_passing_aligns_two_conversations_turn_by_turn():
    long_first_turn = [
        turn(
            1,
            "Cancel my blue mug order.",
            "Let me look.\n" * 6 + "Which one?",
            ToolCall("look_up", {"order_id": "A-17"}, result={"item": "blue mug"}),
            ToolCall("look_up", {"order_id": "A-18"}, result={"item": "red mug"}),
        ),
        *WRONG_ORDER[1:],
    ]
    right_turns = [
        turn(1, "Cancel my blue mug order.", "Which one?", *long_first_turn[0].tool_calls),
        turn(
            2,
            "A-17.",
            "Cancelled.",
            ToolCall("cancel", {"order_id": "A-17"}, result="cancelled"),
        ),
        turn(3, "Thanks, bye.", "Goodbye!"),
    ]
    failing = conversation_sample(long_first_turn, index=0, fault=Fault("agent", 2, "wrong"))
    passing = conversation_sample(right_turns, index=1, status="passed")
    app = make_app(report=one_case_report(failing, passing, threshold=0.5))
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.pause()
        await app.push_screen(SideBySideScreen.beside_passing("cancel", failing, passing))
        await pilot.pause()
        pair = app.screen
        assert pair.divergence.where == "conversation" and pair.divergence.line == 1
        shown = screen_text(app)
        assert "first divergence: turn 2: tool call 1: cancel: order_id=A-18 vs A-17" in shown
        lines = shown.splitlines()
        for number in (1, 2, 3):
            heads = [line for line in lines if f"turn {number} ·" in line]
            assert heads and heads[0].count(f"turn {number} ·") == 2, number


async def test_side_by_side_of_a_baseline_aligns_conversations_by_turn():
    before = conversation_sample(
        [turn(1, "Hi", "Hello!\n" * 5 + "How can I help?"), turn(2, "Cancel A-17", "Done.")],
        status="passed",
    )
    after = conversation_sample(WRONG_ORDER, fault=Fault("agent", 2, "wrong order"))
    app = make_app(report=one_case_report(after))
    async with app.run_test(size=(160, 80)) as pilot:
        await pilot.pause()
        await app.push_screen(
            SideBySideScreen.of_cases(
                "cancel", one_case_report(before).cases[0], one_case_report(after).cases[0]
            )
        )
        await pilot.pause()
        lines = screen_text(app).splitlines()
        for number in (1, 2):
            heads = [line for line in lines if f"turn {number} ·" in line]
            assert heads and heads[0].count(f"turn {number} ·") == 2, number
        turn_3 = [line for line in lines if "turn 3 ·" in line]
        assert turn_3 and "(no turn 3)" in turn_3[0]


async def test_the_shop_conversations_open_from_the_run_to_the_critical_turn():
    report = await shop_report()
    app = make_app(report=report)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        case = app.screen
        assert isinstance(case, CaseScreen)
        assert "faults  user 1 · agent 1 · environment 0" in str(
            case.query_one("#case-stats").render()
        )
        await pilot.press("down", "enter")
        screen = app.screen
        assert isinstance(screen, SampleScreen) and screen.sample.fault.turn == 3
        with anyio.fail_after(20):
            while not screen.query(".critical"):
                await pilot.pause(0.01)
        assert "turn 3" in str(screen.query_one(".critical").render()).splitlines()[0]
        await pilot.press("d")
        pair = app.screen
        assert isinstance(pair, SideBySideScreen)
        assert pair.divergence.description == ("turn 3: tool call 1: cancel: order_id=A-18 vs A-17")


def _table_rows(screen: CaseScreen) -> list[list]:
    from textual.widgets import DataTable

    table = screen.query_one("#samples", DataTable)
    return [table.get_row_at(i) for i in range(table.row_count)]


async def test_a_run_of_conversations_keeps_left_out_samples_out_of_its_history(tmp_path):
    from tui_eval.service.store import RunHistory

    from .conversation_demo import suite
    from .test_app_flow import wait_until_done

    app = make_app(suites=[suite], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until_done(pilot, app.screen)
        header = screen_text(app)
        assert "⊘ 1 left out (user faults)" in header
        await pilot.press("enter")
        case = app.screen
        assert isinstance(case, CaseScreen)
        stats = str(case.query_one("#case-stats").render())
        # The rate in the history is the case's own: 1 of the 2 samples counted.
        assert "1/2 = 50%" in stats and "past runs (newest first): 50%" in stats
