"""Shared fixtures: every test gets its own TUI_EVAL_HOME and no judge model from the environment."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tui_eval.util.atomic import FSYNC_VARIABLE

_GC_THRESHOLDS = gc.get_threshold()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Collect cyclic garbage less often than Python's default (every 700 allocations).

    Each Textual app, screen and widget is a web of cycles, and a full collection walks
    every object alive (~250,000 in a worker: every module, class and test loaded): with
    the default thresholds the collector took ~20% of the CPU of the app's tests. Fewer,
    larger collections free the same garbage later, costing ~25 MB more at the peak.
    Tests about freeing memory call `gc.collect()` themselves.
    """
    gc.set_threshold(50_000, 20, 10)
    # Atomic writes skip their fsync, here and in the processes tests start: no test can
    # crash the machine, and the hundreds of fsyncs a run makes were seconds of waiting.
    os.environ[FSYNC_VARIABLE] = "0"
    # Registered before pytest's own clean-up (configured after this hook), so it runs after.
    config.add_cleanup(gc.unfreeze)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of a module that imports a framework through `tests.lazy` run on one
    worker (`--dist loadgroup`): each framework costs 0.5-1.5 CPU-seconds to import, and
    spread over three workers its tests made each of them pay for it."""
    from tests.lazy import LazyModule, xdist_group

    for item in items:
        module = getattr(item, "module", None)
        packages = {
            value.package for value in vars(module).values() if isinstance(value, LazyModule)
        }
        if group := xdist_group(packages):
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Collect once, then keep what survived out of the collections pytest ends with.

    pytest's last act is five full collections, to report exceptions raised in finalizers;
    each walked every live object again (~0.3 s each). The collection here runs every
    finalizer of what is garbage now, and its unraisable exceptions are reported as before
    (pytest's hook is still installed); pytest's five then look only at objects made since.
    """
    gc.set_threshold(*_GC_THRESHOLDS)
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _isolate_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("tui_eval_home")
    monkeypatch.setenv("TUI_EVAL_HOME", str(home))
    # The example suites' simulated model latency, at a tenth: same results, less waiting.
    monkeypatch.setenv("TUI_EVAL_EXAMPLE_PACE", "0.1")
    for var in ("TUI_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def ray_runtime() -> Iterator[Any]:
    """One local 2-CPU Ray runtime for the session (every module's `ray` tests share it),
    started the way tui-eval starts one, with a secret in the environment that no worker
    may see (`tests/test_executors.py`)."""
    pytest.importorskip("ray")
    import ray

    from tui_eval.run.ray_executor import start_ray

    os.environ["TOP_SECRET_KEY"] = "do-not-ship-this-0123"
    try:
        ray.shutdown()
        start_ray(num_cpus=2)
        yield ray
    finally:
        del os.environ["TOP_SECRET_KEY"]
        ray.shutdown()
