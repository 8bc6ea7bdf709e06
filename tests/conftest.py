"""Shared fixtures: every test gets its own TUI_EVAL_HOME and no judge model from the environment."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tui_eval.agents.http.context import ProviderSession

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
    # Registered before pytest's own clean-up (configured after this hook), so it runs after.
    config.add_cleanup(gc.unfreeze)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of a module that imports a framework through `tests.lazy` run on one
    worker (`--dist loadgroup`): each framework costs 0.5-1.5 CPU-seconds to import, and
    spread over three workers its tests made each of them pay for it."""
    from tests.lazy import LazyModule

    for item in items:
        module = getattr(item, "module", None)
        packages = {
            value.package for value in vars(module).values() if isinstance(value, LazyModule)
        }
        if packages:
            item.add_marker(pytest.mark.xdist_group("+".join(sorted(packages))))


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A test worker ends here; a run in one process collects once, then keeps what
    survived out of the collections pytest ends with.

    A worker's results are with the controller once its session finished (xdist sends
    them then, and ignores the worker from there on), so nothing it does after that is
    seen: not even an exception raised in a finalizer (tried). Its clean-up (a last
    collection over ~700,000 objects, pytest's own, the interpreter's teardown) kept the
    run waiting 1-2 s after the last test; the run's temporary folders are the
    controller's to clean, and it still does.

    In one process, pytest's last act is five full collections, to report exceptions
    raised in finalizers; each walked every live object again (~0.3 s each). The
    collection here runs every finalizer of what is garbage now, and its unraisable
    exceptions are reported as before (pytest's hook is still installed); pytest's five
    then look only at objects made since.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
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


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Atomic writes skip their fsync (`tui_eval.util.atomic.FSYNC`): no test can crash the
    machine, and the hundreds of fsyncs a run makes were seconds of waiting."""
    from tui_eval.util import atomic

    monkeypatch.setattr(atomic, "FSYNC", False)


@pytest.fixture(autouse=True)
def provider_session() -> Iterator[ProviderSession]:
    """Each test's own rate limiters: a fresh `ProviderSession`, the default one for the
    test's runs (and providers used outside a run). Limiters are keyed by base URL;
    loopback servers bind a port the OS picks, and within one worker a later server can get
    an earlier one's port, and with it that test's limiter: its learned pace, its `rpm` cap
    (a stale 120/min made a 2-second test take 20 seconds) or a pause."""
    from tui_eval.agents.http.context import ProviderSession

    with ProviderSession().as_default() as fresh:
        yield fresh


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
