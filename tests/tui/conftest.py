from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.css.stylesheet import Stylesheet

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def example_suites() -> Path:
    return REPO / "suites"


_PARSE_PARAMETERS = ["self", "css", "read_from", "is_default_rules", "tie_breaker", "scope"]


@pytest.fixture(autouse=True, scope="session")
def _css_parsed_once_per_process() -> Iterator[None]:
    """Each test starts a new App, and each App parsed the same CSS again (its own file and
    every widget's `DEFAULT_CSS`): ~25 ms of a ~80 ms start, over a hundred times per run.
    Textual caches what it parsed per stylesheet; here that cache is shared by the apps of
    the process. The key holds everything the parse depends on (the text, its origin, its
    priority and the theme's variables), so each app gets the rules it would have parsed;
    rules are only read once parsed (one app already shares them across its re-parses).
    Should `Stylesheet._parse_rules` change shape in a Textual release, apps parse as before.
    """
    original = Stylesheet._parse_rules
    if list(inspect.signature(original).parameters) != _PARSE_PARAMETERS:
        yield
        return
    parsed: dict[tuple[Any, ...], Any] = {}

    def parse_rules(
        self: Stylesheet,
        css: str,
        read_from: Any,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> Any:
        key = (css, read_from, is_default_rules, tie_breaker, scope, *self._variables.items())
        rules = parsed.get(key)
        if rules is None:
            rules = parsed[key] = original(
                self, css, read_from, is_default_rules, tie_breaker, scope
            )
        return rules

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Stylesheet, "_parse_rules", parse_rules)
        yield


@pytest.fixture(autouse=True, scope="session")
def _pilot_checks_for_idle_in_short_slices() -> Iterator[None]:
    """Pilot waits for the app to look idle after every key press (twice) and `pause()`,
    judging idleness over 20 ms slices: at least 40 ms a key, ~850 waits and ~28 s of a
    run of these tests spent sleeping. Judged over 5 ms slices (the same share of CPU,
    5%, means busy) the same waits end sooner. No test may rely on how long Pilot waits:
    each waits for the state it reads (a shorter slice is how such a test is found).
    """
    import textual._wait as wait

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wait, "SLEEP_GRANULARITY", 0.005)
        patch.setattr(wait, "SLEEP_IDLE", 0.005 / 20)
        yield
