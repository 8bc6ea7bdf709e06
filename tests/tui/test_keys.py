"""Keys: one meaning for a key that changes a baseline, ids a keymap remaps, and keys that
act on what the user is looking at (`*` on Suites, `q` after `n`, `f`)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import pytest
from textual.binding import Binding

import tui_eval.tui
from tui_eval import Case, Suite, contains
from tui_eval.agents.http.context import current_sample
from tui_eval.service.store import RunHistory
from tui_eval.tui.app import KEYMAP_ENV, make_app, user_keymap
from tui_eval.tui.screens.case import CaseScreen
from tui_eval.tui.screens.run import RunScreen
from tui_eval.tui.screens.sample import SampleScreen
from tui_eval.tui.screens.suites import SuitesScreen
from tui_eval.tui.widgets.case_table import CaseTable

from .test_app import screen_text, table_rows
from .test_app_flow import wait_for, wait_until_done

BASELINE_IDS = {"accept", "reject", "write", "accept-all"}
"""The keys that change a baseline: accept, reject, write (the Run screen's save), accept all."""


def every_binding() -> list[tuple[str, Binding]]:
    """(class, binding) for every key the app, its screens and its widgets declare."""
    found = []
    for module in pkgutil.walk_packages(tui_eval.tui.__path__, "tui_eval.tui."):
        loaded = importlib.import_module(module.name)
        for name, klass in inspect.getmembers(loaded, inspect.isclass):
            if klass.__module__ == loaded.__name__:
                found += [(name, b) for b in vars(klass).get("BINDINGS", ())]
    assert len({name for name, _ in found}) > 15  # the screens were found
    return found


def letters(binding: Binding) -> set[str]:
    """The letters a binding's keys type, whatever the case or modifier (`A`, `ctrl+a`: a)."""
    keys = (key.rsplit("+", 1)[-1] for key in binding.key.split(","))
    return {key.lower() for key in keys if len(key) == 1 and key.isalpha()}


def test_a_key_that_changes_a_baseline_means_nothing_else_on_any_screen():
    bindings = every_binding()
    baseline = [b for _, b in bindings if b.id in BASELINE_IDS]
    assert {b.id for b in baseline} == BASELINE_IDS
    taken = set().union(*(letters(b) for b in baseline))
    assert taken == {"a", "k", "w"}
    for where, binding in bindings:
        if binding.id not in BASELINE_IDS:
            assert not letters(binding) & taken, (where, binding)


def test_every_key_has_an_id_that_moves_it_everywhere_and_help_is_the_apps():
    keys_of = defaultdict(set)
    ids_of = defaultdict(set)
    for where, binding in every_binding():
        assert isinstance(binding, Binding) and binding.id, (where, binding)
        keys_of[binding.id].add(binding.key)  # one keymap line remaps the verb everywhere
        ids_of[where, binding.action].add(binding.id)  # and an action has one id
        if "question_mark" in binding.key.split(","):
            assert where == "TuiEvalApp", where  # `?` is bound once, by the app
    assert {i: k for i, k in keys_of.items() if len(k) > 1} == {}
    assert {a: i for a, i in ids_of.items() if len(i) > 1} == {}


async def test_a_keymap_file_remaps_a_key_and_a_broken_one_says_why(tmp_path, monkeypatch):
    keymap = tmp_path / "keys.toml"
    keymap.write_text('history = "H"\n')
    monkeypatch.setenv(KEYMAP_ENV, str(keymap))
    app = make_app(suites=[mixed()], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")  # no longer History
        assert isinstance(app.screen, SuitesScreen)
        await pilot.press("H")
        await wait_for(pilot, lambda: not isinstance(app.screen, SuitesScreen))
    keymap.write_text("history = H\n")  # not TOML: no remapping, and a note says why
    assert user_keymap()[0] == {} and str(keymap) in user_keymap()[1]
    keymap.write_text("history = 1\n")
    assert "keys are a string" in user_keymap()[1]
    monkeypatch.delenv(KEYMAP_ENV)
    assert user_keymap() == ({}, "")  # no keymap.toml in the data folder: nothing to say


pytestmark = pytest.mark.anyio


async def answer(question: str) -> str:
    """Fails `broken` and `also broken`; fails the second sample of `flaky`."""
    sample = current_sample()
    if "broken" in question or (question == "flaky" and sample and sample.index == 1):
        return "no"
    return "ok"


def mixed(name: str = "mixed") -> Suite:
    return Suite(
        name,
        agent=answer,
        cases=[
            Case("broken", checks=[contains("ok")]),
            Case("flaky", checks=[contains("ok")], samples=3, pass_threshold=0.6),
            Case("fine", checks=[contains("ok")]),
            Case("also broken", checks=[contains("ok")]),
        ],
    )


async def test_asterisk_runs_every_suite_and_stays_on_the_suites(tmp_path):
    app = make_app(suites=[mixed("first"), mixed("second")], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "asterisk")
        assert isinstance(app.screen, SuitesScreen)  # each row shows its run's progress
        assert set(app.workspace.sessions) == {"first", "second"}
        await wait_for(pilot, lambda: all(s.report for s in app.workspace.sessions.values()))
        await pilot.press("enter")  # the cursor's suite, still on the second row
        # The Run screen opens once the app has handled the Suites screen's request.
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.session is app.workspace.sessions["second"]


def footer_texts(app) -> list[str]:
    """The footer's keys as shown: `⏎ Open`, `d Beside pass`."""
    from tui_eval.tui.widgets.footer import KeyFooter

    return [f"{k.display} {k.description}".strip() for k in app.screen.query_one(KeyFooter).shown]


async def test_walking_the_failing_samples_d_q_and_f(tmp_path):
    """One run of `mixed`, walked as a user walks it: `d` shows only on a failing sample
    whose case has a passing one (`broken` has none; `flaky`'s second sample failed and two
    passed; a passing sample has nothing to compare); `q` after `n` returns to the case of
    the sample shown; `f` shows the cases below their threshold and says so."""
    app = make_app(suites=[mixed()], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        await wait_until_done(pilot, run)
        await pilot.press("enter")  # the case "broken"
        case = app.screen
        assert isinstance(case, CaseScreen) and case.case.name == "broken"
        await pilot.press("enter")  # its one (failing) sample
        sample = app.screen
        assert isinstance(sample, SampleScreen)
        await wait_for(pilot, lambda: bool(footer_texts(app)))
        assert not any(text.startswith("d ") for text in footer_texts(app))
        await pilot.press("d")  # nothing to do: no toast, no new screen
        assert app.screen is sample
        assert not any("compare" in note.message for note in app._notifications)
        await pilot.press("n")  # the next failing sample: flaky's, two of its samples passed
        assert sample.session.state.cases[sample.case_index].name == "flaky"
        await wait_for(pilot, lambda: "d Beside pass" in footer_texts(app))
        await pilot.press("q")
        assert app.screen is case and case.case.name == "flaky"
        assert "Case · flaky" in screen_text(app)
        rows = case.query_one("#samples").row_count
        assert rows == 3 and case.query_one("#samples").cursor_row == 1  # on that sample
        await pilot.press("home", "enter")  # flaky's first sample passed
        passing = app.screen
        assert isinstance(passing, SampleScreen) and passing.sample.passed
        await wait_for(pilot, lambda: bool(footer_texts(app)))
        assert not any(text.startswith("d ") for text in footer_texts(app))
        await pilot.press("q", "q")
        assert app.screen is run
        # From the Run screen too: back from a sample, the cursor is on the sample's case.
        await pilot.press("n", "n", "n")
        assert app.screen.session.state.cases[app.screen.case_index].name == "also broken"
        await pilot.press("q")
        assert app.screen is run
        table = run.query_one(CaseTable)
        assert run.session.state.cases[table.current_case()].name == "also broken"
        await pilot.press("f")
        # "flaky" passed (2 of 3 samples, threshold 60%): not a failing case.
        assert list(table_rows(app.screen)) == ["broken", "also broken"]
        # The note is drawn when the screen next refreshes.
        await wait_for(pilot, lambda: "below their pass threshold" in screen_text(app))


async def test_f_leaves_out_an_undecided_case_as_the_run_header_does():
    """Every sample of `hung up` was left out (the user simulator's fault): it is undecided,
    not failing, so `f` does not list it, and the note says it was left out."""
    from tui_eval import Fault
    from tui_eval.core.results import CaseResult
    from tui_eval.report.report import Report

    from .test_conversation_screens import WRONG_ORDER, conversation_sample

    undecided = conversation_sample(
        WRONG_ORDER[:1], fault=Fault("user", 1, "hung up"), excluded=True
    )
    wrong = conversation_sample(WRONG_ORDER, fault=Fault("agent", 2, "wrong order"))
    passed = conversation_sample(WRONG_ORDER, status="passed")
    report = Report(
        "shop",
        [
            CaseResult("wrong order", [wrong], planned=1),
            CaseResult("hung up", [undecided], planned=1),
            CaseResult("fine", [passed], planned=1),
        ],
    )
    app = make_app(report=report)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "⊘ 1 undecided" in screen_text(app)
        await pilot.press("f")
        assert list(table_rows(app.screen)) == ["wrong order"]
        await wait_for(pilot, lambda: "1 undecided" in screen_text(app).split("showing")[-1])


async def test_enter_on_the_suites_says_run_until_the_suite_has_a_run_then_open(tmp_path):
    app = make_app(suites=[mixed("first"), mixed("second")], history=RunHistory(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(footer_texts(app)))
        assert "⏎ Run" in footer_texts(app) and "⏎ Open" not in footer_texts(app)
        await pilot.press("enter")  # starts a run of "first", and shows it
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await wait_until_done(pilot, app.screen)
        await pilot.press("q")
        assert isinstance(app.screen, SuitesScreen)
        await wait_for(pilot, lambda: "⏎ Open" in footer_texts(app))
        assert "⏎ Run" not in footer_texts(app)
        await pilot.press("down")  # "second" has no run yet
        await wait_for(pilot, lambda: "⏎ Run" in footer_texts(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.session is app.workspace.sessions["second"]
