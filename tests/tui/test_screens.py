"""Screen-level defects a user meets: stale or cut footers, Home/End, side by side, labels."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from textual.widgets import DataTable

from tests.tui.scenes import build_scene
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import make_app
from tui_eval.tui.screens.help import HelpScreen, screen_keys
from tui_eval.tui.widgets.footer import KeyFooter

from .test_app import screen_text, wait_until_done
from .test_debug_loop import gated_suite, wait_for

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


def footer_keys(app) -> list[str]:
    return [key.key for key in app.screen.query_one(KeyFooter).shown]


def footer_laid_out(app) -> bool:
    footer = app.screen.query_one(KeyFooter)
    return bool(footer.shown) and bool(footer.region)


async def test_run_footer_follows_the_run_without_opening_help(tmp_path):
    gate = anyio.Event()
    app = make_app(suites=[gated_suite(gate)], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        await wait_for(pilot, lambda: "x" in footer_keys(app))
        assert "r" not in footer_keys(app)
        gate.set()
        await wait_until_done(pilot, screen)
        # Nothing but the run's end changes the footer (no key is pressed, `?` stays shut).
        await wait_for(pilot, lambda: footer_keys(app) and "x" not in footer_keys(app))
        assert {"r", "w", "c"} <= set(footer_keys(app))


SCENES_80x24 = ("suites", "run_live", "run_done", "case", "sample_judge", "diff", "side_by_side")
# The columns a table keeps at 80x24 (present) and those it gives up first (absent).
KEPT_AT_80x24 = {
    "history": ({"cases"}, {"samples"}),
    "suites": ({"status", "baseline"}, set()),
    "diff": ({"noise", "rates"}, set()),
}


# The tables whose cursor Home and End move (checked in the same session as the footer).
HOME_AND_END = ("case", "history", "suites", "diff")


@pytest.mark.parametrize("scene", [*SCENES_80x24, "history"])
async def test_at_80x24_no_key_is_cut_every_key_is_reachable_and_tables_keep_columns(
    scene, tmp_path
):
    app, setup, keys = await build_scene(scene, REPO / "suites", tmp_path)
    if scene == "history":  # a third run, so that the cursor has somewhere to go
        app.workspace.history.start("calculator", "suites/calculator.py", invocation="x")
    async with app.run_test(size=(80, 24)) as pilot:
        await setup(pilot)
        if keys:
            await pilot.press(*keys)
        # The footer's keys once laid out.
        await wait_for(pilot, lambda: footer_laid_out(app))
        screen = app.screen
        footer = screen.query_one(KeyFooter)
        shown = footer.shown
        assert footer.region.right <= 80 and shown[-1].end <= footer.region.width, shown
        in_footer = {key.action for key in shown}
        offered = {
            active.binding.action
            for active in screen.active_bindings.values()
            if active.binding.show and active.enabled and active.node is not app
        }
        if offered - in_footer:  # some did not fit: the last key says so and opens the rest
            assert shown[-1].key == "question_mark" and "more" in shown[-1].description
        help_keys = {what for _, what, _ in screen_keys(screen)}
        for active in screen.active_bindings.values():
            binding = active.binding
            # The app's keys and its widgets' (Textual's own, such as its arrows, have no id).
            if binding.id and active.enabled and binding.action not in in_footer:
                assert (binding.tooltip or binding.description) in help_keys, binding
        if scene in KEPT_AT_80x24:  # the tables keep their most useful columns
            present, absent = KEPT_AT_80x24[scene]
            columns = {c.key for c in screen.query_one(DataTable).shown_columns}
            assert present <= columns and not absent & columns, (scene, columns)
        if scene in HOME_AND_END:  # Home and End move the cursor on every table
            table = screen.query_one(DataTable)
            assert table.row_count > 1
            await pilot.press("end")
            assert table.cursor_row == table.row_count - 1, scene
            await pilot.press("home")
            assert table.cursor_row == 0, scene
            await pilot.press("end")
            if scene == "case":  # `enter` opens the row under the cursor, not the one before
                await pilot.press("enter")
                assert app.screen.sample_index == table.row_count - 1


async def test_side_by_side_at_120x40_shows_the_diff_the_trajectories_and_aligned_checks(
    tmp_path,
):
    app, setup, keys = await build_scene("side_by_side", REPO / "suites", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await setup(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        lines = screen_text(app).splitlines()
        text = "\n".join(lines)
        # The differences themselves, not only the diff's header lines.
        assert "-6 * 7 is 42: imagine 6 groups of 7 sweets." in text and "+It is 42." in text
        # Both trajectories, and each section on one line for both sides.
        for section in ("output", "trajectory", "checks"):
            assert any(line.split() == [section, section] for line in lines), section
        assert sum("llm_judge" in line for line in lines) == 1  # both checks on one line
        # The judge's score against its threshold, as on the Sample screen.
        assert "llm_judge  score 0.55 < 0.70" in text
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.screen.title_text == "Side by side"


async def test_diff_rates_say_what_they_count_and_deltas_are_in_points(tmp_path):
    app, setup, _ = await build_scene("diff", REPO / "suites", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await setup(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "mean pass rate of the cases 65% → 64% · Δ −1 pts" in text
        assert "−50" in text and "-50%" not in text


async def test_run_rates_say_what_they_count_and_filters_and_sort_are_shown(tmp_path):
    """Rates say what they count; filters and sort are shown, not only in a toast."""
    app, setup, _ = await build_scene("run_done", REPO / "suites", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await setup(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "samples  ✓ 9 passed" in text and "60% passed" in text
        assert "cases    5/8 passed · 62%" in text
        assert "…" not in text.splitlines()[3]  # the counters line is not cut
        assert not app.screen.query_one("#run-notes").display  # no filter, no sort yet
        await pilot.press("f", "o", "o", "o")
        await pilot.pause()
        notes = str(app.screen.query_one("#run-notes").render())
        assert "the failing cases" in notes and "sorted by pass ▲" in notes
        assert "pass▲" in str(app.screen.query_one("#case-header").render())
        await pilot.press("f", *["o"] * 4)  # back to every case, in run order
        await pilot.pause()
        assert not app.screen.query_one("#run-notes").display


async def test_a_judge_score_is_shown_against_its_threshold(tmp_path):
    # (Side by side shows it too: its test above checks.)
    app, setup, keys = await build_scene("sample_judge", REPO / "suites", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await setup(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        assert "llm_judge  score 0.55 < 0.70" in screen_text(app)


async def test_a_click_on_a_footer_key_presses_it(tmp_path):
    """The footer is one line of text; a click on a key still presses that key."""
    app = make_app(suites=[], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: footer_laid_out(app))
        footer = app.screen.query_one(KeyFooter)
        help_key = next(key for key in footer.shown if key.key == "question_mark")
        await pilot.click(KeyFooter, offset=(help_key.start + 1, 0))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert footer.shown[-1] == help_key  # `?` comes last
