"""`Suite`: a named set of cases plus the agent that runs them and how to run them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tui_eval.agents.messages import Price
from tui_eval.agents.providers.cache import CacheMode
from tui_eval.agents.providers.settings import ProviderOptions
from tui_eval.checks.base import Check
from tui_eval.core.cases import Case
from tui_eval.core.settings import RunSettings

SUITE_SETTINGS = ("concurrency", "price", "provider", "max_cost", "cache")
"""The `RunSettings` a suite may give (a Python `Suite`'s fields, a suite file's keys)."""


def baseline_file_stem(name: str) -> str:
    """A file name for a suite's baseline that stays inside its folder, whatever the name:
    path separators, `..`, leading dots and control characters become `_`."""
    stem = re.sub(r"[^\w\-. ]", "_", name).strip().lstrip(".")
    return stem[:120] or "suite"


@dataclass(eq=False)
class Suite:
    """A named set of cases and the agent that runs them.

    A Python suite file defines one or more at module level:

    Example:
        >>> suite = Suite("geography", agent=make_agent, cases=[Case("Capital of France?", checks=[contains("Paris")])])

    Attributes:
        name: the suite's name (baselines and history are keyed by it).
        agent: any agent source `evaluate()` accepts.
        cases: the cases.
        concurrency, price, provider, max_cost, cache: how its runs run, as the
            `RunSettings` fields of those names (their meaning, default and validation);
            None: not given by the suite. `settings` holds the ones given.
        baseline: where its baseline lives; default `<suite dir>/__baselines__/<name>.json`.
        skip: a reason not to run it (for example a missing API key); shown instead of results.
        required_env: environment variables it needs (YAML `skip_unless_env`); Ray workers
            are given these, besides the providers' key variables.
        path: the file it was loaded from (set by discovery).
        checks: checks every case must meet, run before each case's own (YAML: a
            top-level `checks:` list).
    """

    name: str
    agent: Any = None
    cases: list[Case] = field(default_factory=list)
    concurrency: int | None = None
    price: Price | None = None
    provider: ProviderOptions | None = None
    max_cost: float | None = None
    cache: CacheMode | None = None
    baseline: str | Path | None = None
    skip: str | None = None
    required_env: list[str] = field(default_factory=list)
    path: Path | None = None
    description: str = ""
    checks: Sequence[Check] = ()

    def __post_init__(self) -> None:
        self.checks = list(self.checks)
        self.cases = [self._with_suite_checks(case) for case in self.cases]

    @property
    def settings(self) -> RunSettings:
        """The run settings this suite gives (the others are `RunSettings`' defaults).

        Raises:
            ValueError: one of them is not valid (`concurrency=0`, a negative `max_cost`).
        """
        given = {name: getattr(self, name) for name in SUITE_SETTINGS}
        return RunSettings(**{name: value for name, value in given.items() if value is not None})

    def _with_suite_checks(self, case: Case) -> Case:
        """`case` with the suite's checks first (once: a copy of the suite, as `select`
        makes, finds them already there — the same check objects)."""
        shared = list(self.checks)
        if not shared:
            return case
        own = list(case.checks)
        if len(own) >= len(shared) and all(a is b for a, b in zip(own, shared, strict=False)):
            return case
        return replace(case, checks=[*shared, *own])

    def __repr__(self) -> str:
        return f"Suite({self.name!r}, {len(self.cases)} cases)"

    @property
    def total_samples(self) -> int:
        """Samples in a full run."""
        return sum(case.samples for case in self.cases)

    @property
    def baseline_path(self) -> Path:
        """Where this suite's baseline is read and written."""
        if self.baseline is not None:
            given = Path(self.baseline)
            if not given.is_absolute() and self.path is not None:
                return self.path.parent / given
            return given
        folder = self.path.parent if self.path is not None else Path.cwd()
        return folder / "__baselines__" / f"{baseline_file_stem(self.name)}.json"

    def duplicate_names(self) -> list[str]:
        """Case names used more than once (they would make `compare()` ambiguous)."""
        return [name for name, n in Counter(case.label for case in self.cases).items() if n > 1]

    def select(
        self,
        *,
        filter: str | None = None,
        samples: int | None = None,
        names: Iterable[str] | None = None,
    ) -> Suite:
        """A copy with only the cases whose name contains `filter` (case-insensitive) or is in
        `names`, and with `samples` overriding each case's sample count."""
        cases = self.cases
        if filter:
            needle = filter.casefold()
            cases = [c for c in cases if needle in c.label.casefold()]
        if names is not None:
            wanted = set(names)
            cases = [c for c in cases if c.label in wanted]
        if samples is not None:
            cases = [replace(c, samples=samples) for c in cases]
        return replace(self, cases=list(cases))
