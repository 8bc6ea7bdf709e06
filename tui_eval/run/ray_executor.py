"""Run a suite's samples on a Ray cluster (`tui-eval run PATH --executor ray`); the driver
stays the only writer of the journal.

Workers load the suite from the same checkout (no agent is pickled, no key travels) and
see only an allow-list of environment variables; a dead worker's unsent samples are
queued again. Idle workers stay in the `Runtime` for the next run (`release_workers`
stops them). Importing this module never imports Ray; `RayExecutor()` does."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tui_eval.core.settings import ExecutorError
from tui_eval.run.ray_worker import SampleWorker, decode
from tui_eval.util.secrets import SECRET_SUFFIXES

if TYPE_CHECKING:
    from tui_eval.agents.http.context import Runtime
    from tui_eval.run.evaluation import Evaluation

INSTALL_HINT = "pip install 'tui-eval[ray]'"
MAX_CALLS = 16
"""Calls a worker serves at once: two streams, `prepare`, `take_unsent`."""
CHUNK = 8192
"""The most units handed to a worker at a time (its unsent ones are requeued if it dies)."""
KEY_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")

Unit = tuple[int, int]
"""(case index, sample index) within the driver's run."""


def release_workers(runtime: Runtime) -> int:
    """Stop the idle workers the runs of `runtime` left; returns how many."""
    idle = [actor for actors in runtime.idle_workers.values() for actor in actors]
    runtime.idle_workers.clear()
    if idle:
        ray = import_ray()
        for actor in idle:
            ray.kill(actor, no_restart=True)
    return len(idle)


def import_ray() -> Any:
    """Ray, or an `ExecutorError` that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


def allowed_environment(extra: Iterable[str] = ()) -> dict[str, str]:
    """The environment variables workers may see: provider keys, TUI_EVAL_*, and `extra`."""
    names = {*KEY_VARIABLES, *extra}
    return {
        name: value
        for name, value in os.environ.items()
        if name in names or name.startswith("TUI_EVAL_")
    }


@contextlib.contextmanager
def _without_secrets(allowed: Iterable[str]) -> Iterator[None]:
    """The environment without disallowed secrets, which local Ray processes would inherit."""
    keep = set(allowed)
    hidden = {
        name: value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_SUFFIXES) and name not in keep
    }
    for name in hidden:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(hidden)


@contextlib.contextmanager
def _real_standard_streams() -> Iterator[None]:
    """Standard streams with file descriptors while Ray starts (Textual's have none)."""
    import sys

    saved = sys.stdout, sys.stderr
    try:
        real = all(stream.fileno() >= 0 for stream in saved)
    except (AttributeError, OSError, RuntimeError, ValueError):
        real = False
    if real:  # the CLI, tests
        yield
        return
    with open(os.devnull, "w") as devnull:
        sys.stdout = sys.stderr = devnull
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved


def start_ray(
    address: str | None = None,
    working_dir: Path | None = None,
    env: Iterable[str] = (),
    *,
    num_cpus: int | None = None,
) -> None:
    """Join the cluster at `address` (shipping `working_dir`), or start a local runtime.

    Raises:
        ExecutorError: Ray is missing, or the cluster cannot be reached.
    """
    ray = import_ray()
    allowed = allowed_environment(env)
    runtime_env: dict[str, Any] = {"env_vars": allowed}
    if address and working_dir is not None:
        runtime_env["working_dir"] = str(working_dir)  # a real cluster: ship the checkout
    try:
        with _without_secrets(allowed), _real_standard_streams():
            ray.init(
                address=address,
                num_cpus=None if address else num_cpus,
                runtime_env=runtime_env,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
    except Exception as exc:
        raise ExecutorError(f"cannot start or reach Ray ({address or 'local'}): {exc}") from exc


class RayExecutor:
    """Runs an `Evaluation`'s missing samples on Ray workers.

    Args:
        suite_path: the suite's file (workers load it from the same checkout).
        suite_name: which suite of that file.
        address: a cluster to join (default: `RAY_ADDRESS`, else a local runtime).
        workers: how many worker actors (default: the cluster's CPUs).
        env: more environment variable names workers may see.
    """

    def __init__(
        self,
        suite_path: str | Path,
        suite_name: str,
        *,
        address: str | None = None,
        workers: int | None = None,
        env: Iterable[str] = (),
    ) -> None:
        self.ray = import_ray()
        self.suite_path = str(Path(suite_path).resolve())
        self.suite_name = suite_name
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.workers = workers
        self.env = list(env)
        self.restarts = 0
        """Workers replaced after dying (the fault tests read it)."""
        self.actors: list[Any] = []

    def _start_ray(self) -> None:
        if self.ray.is_initialized():
            return
        start_ray(self.address, Path(self.suite_path).parent, self.env)

    def _worker_options(self, per_worker: int, evaluation: Evaluation) -> tuple[Any, ...]:
        provider = (
            evaluation.settings.provider.model_dump(exclude_unset=True)
            if evaluation.settings.provider
            else None
        )
        cache = evaluation.cache.mode if evaluation.cache is not None else "off"
        return self.suite_path, self.suite_name, per_worker, provider, cache

    def _new_actor(self) -> Any:
        remote = self.ray.remote(SampleWorker).options(
            max_concurrency=MAX_CALLS,
            num_cpus=0,
            # The allow-list as it is now, even on a runtime started earlier.
            runtime_env={"env_vars": allowed_environment(self.env)},
        )
        return remote.remote()

    def _pool_key(self) -> str:
        """Which idle workers a run may take: same runtime, same job, same environment."""
        context = self.ray.get_runtime_context()
        try:  # this driver's node: a new local runtime is a new node
            node = context.get_node_id()
        except Exception:  # Ray Client (ray://) drivers have no node of their own
            node = self.address or ""
        env = sorted(allowed_environment(self.env).items())
        seen = repr((node, context.get_job_id(), env))
        return hashlib.sha256(seen.encode()).hexdigest()

    async def execute(self, evaluation: Evaluation, units: Sequence[Unit]) -> None:
        """Run `units` on the workers, recording every sample on `evaluation` as it arrives."""
        ray = self.ray
        self._start_ray()  # in the calling thread: Ray ties its core worker to it
        count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, min(count, len(units) or 1))
        per_worker = max(1, -(-evaluation.settings.concurrency // count))
        # Few, large chunks: each new stream costs a worker a moment of idle capacity;
        # a dead worker's unsent samples are requeued whatever the size.
        size = max(1, min(CHUNK, max(2 * per_worker, -(-len(units) // (2 * count)))))
        queue: deque[list[Unit]] = deque(
            list(units[start : start + size]) for start in range(0, len(units), size)
        )
        labels = [case.label for case in evaluation.cases]
        positions = {label: position for position, label in enumerate(labels)}
        options = self._worker_options(per_worker, evaluation)
        # Workers left by this driver's earlier runs load this run's suite; a new worker
        # (a new process, about a second) is started only for the rest.
        key = self._pool_key()
        pool = evaluation.samples.context.runtime.idle_workers
        idle = pool.pop(key, [])
        self.actors = [idle.pop() if idle else self._new_actor() for _ in range(count)]
        if idle:
            pool[key] = idle
        prepared = [actor.prepare.remote(*options) for actor in self.actors]

        async def serve(slot: int) -> None:
            # Two streams per worker share its capacity, so it never idles between chunks.
            while queue:
                chunk = queue.popleft()
                left = set(chunk)
                actor = self.actors[slot]
                try:
                    await prepared[slot]
                    stream = actor.run.remote([(labels[i], s) for i, s in chunk])
                    async for ref in stream:
                        for label, sample in decode(await ref):
                            index = positions[label]
                            left.discard((index, sample.index))
                            evaluation.accept(index, sample)
                except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError):
                    # The worker died: what it had not sent back runs again elsewhere.
                    queue.appendleft([u for u in chunk if u in left])
                    if self.actors[slot] is actor:  # the slot's other stream may have done it
                        self.restarts += 1
                        self.actors[slot] = self._new_actor()
                        prepared[slot] = self.actors[slot].prepare.remote(*options)

        keep = False
        try:
            async with anyio.create_task_group() as group:
                for slot in range(count):
                    group.start_soon(serve, slot)
                    group.start_soon(serve, slot)
            keep = not evaluation.cancel_requested
        finally:
            with anyio.CancelScope(shield=True):
                await self._keep_unsent(evaluation, positions)
            if keep:  # idle and healthy: the next run of this driver starts at once
                pool.setdefault(key, []).extend(self.actors)
            else:  # a cancelled or failed run may leave work running on them
                for actor in self.actors:
                    ray.kill(actor, no_restart=True)
            self.actors = []

    async def _keep_unsent(self, evaluation: Evaluation, positions: dict[str, int]) -> None:
        """On cancel: the samples workers finished but had not sent yet are kept too."""
        if not evaluation.cancel_requested:
            return
        for actor in self.actors:
            with anyio.move_on_after(2.0):
                try:
                    unsent = await actor.take_unsent.remote()
                except Exception:  # a dead worker has nothing to give
                    continue
                for label, sample in decode(unsent):
                    evaluation.accept(positions[label], sample)
