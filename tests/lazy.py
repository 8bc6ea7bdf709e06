"""`lazy("module")`: an optional package imported on first use, inside the test that uses it.

Every pytest worker imports every test module to collect it. The framework packages the
adapter tests drive (openai-agents, LangGraph, pydantic-ai, scikit-learn) take 0.5–1.5 s of
CPU each to import; imported at module level, each worker pays for all of them. Through
`lazy`, only the worker that runs such a test imports the package, and a missing package
skips that test (as `pytest.importorskip` would skip the module). The tests of a module
that uses `lazy` run on one worker (see `tests/conftest.py`), so one import serves them all.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


class LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = pytest.importorskip(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"

    @property
    def package(self) -> str:
        """The installed package it belongs to (`sklearn` for `sklearn.metrics`)."""
        return self._name.partition(".")[0]


def lazy(name: str) -> Any:
    return LazyModule(name)


def xdist_group(packages: set[str]) -> str | None:
    """The worker group of tests that import `packages`: scikit-learn's, or one for every
    agent framework, since their modules import several of them each (LangGraph's tests
    with a group of their own made a second worker import LangGraph, ~2.5 CPU-seconds)."""
    if not packages:
        return None
    return "sklearn" if packages == {"sklearn"} else "frameworks"
