"""Run a suite's samples on a Ray cluster; the driver stays the only writer of the journal.

`pip install 'tui-eval[ray]'`, then `tui-eval run PATH --executor ray` (or
`Evaluation(..., executor=RayExecutor(suite_path, suite_name))`). It connects to
`RAY_ADDRESS` / `--ray-address` when given, else starts a local runtime.

- **Units name suites by file, cases by index.** Each worker (an async Ray actor) loads the
  suite from the same checkout and runs the normal per-sample path (timeouts, checks,
  judges, redaction); no agent is pickled and no key travels in a unit.
- **Streaming.** A worker sends finished samples back in micro-batches (every 50 ms, or 256
  samples); the driver records them in completion order and emits the usual events, so
  the app, the progress bar, `resume` and exports work unchanged.
- **Faults.** When a worker dies, the samples it had not sent back are queued again on a
  new worker: none lost, none counted twice (the driver keeps the first result of each).
  Cancelling keeps the finished samples; a killed driver resumes from its journal.
- **Workers are kept between runs.** A run that finishes leaves its workers idle for the
  driver's next run (the app's rerun loop), which has them load its suite file again
  instead of starting new processes (about a second each). Runs with another allowed
  environment get their own; a cancelled or failed run's workers are stopped; all stop
  with the driver, or with `release_workers()`.
- **Secrets.** Workers get only an allow-list of environment variables (the providers' key
  variables, `TUI_EVAL_*`, and the suite's `skip_unless_env`), through `runtime_env`.

Importing this module never imports Ray; `RayExecutor()` does, with a clear error when the
extra is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pydantic

from tui_eval.report import SampleResult
from tui_eval.secrets import SECRET_SUFFIXES

if TYPE_CHECKING:
    from tui_eval.runner import Evaluation

INSTALL_HINT = "pip install 'tui-eval[ray]'"
FLUSH_EVERY_S = 0.05
FLUSH_AT = 256
MAX_CALLS = 16
"""Calls a worker serves at once: two streams, `prepare`, `take_unsent` (samples run
inside a stream, bounded by the run's concurrency, not by this)."""
CHUNK = 8192
"""The most units handed to a worker at a time (its unsent ones are requeued if it dies)."""
KEY_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")

Unit = tuple[int, int]
"""(case index, sample index) within the driver's run."""
Work = tuple[str, int]
"""(case label, sample index): a unit as a worker knows it (the driver may have filtered
the suite's cases, so indexes differ; labels do not)."""


_IDLE: dict[str, list[Any]] = {}
"""Workers that finished a run of this driver, by `RayExecutor._pool_key`."""


def release_workers() -> int:
    """Stop the idle workers this driver's runs left (they also stop when it exits);
    returns how many."""
    idle = [actor for actors in _IDLE.values() for actor in actors]
    _IDLE.clear()
    if idle:
        ray = import_ray()
        for actor in idle:
            ray.kill(actor, no_restart=True)
    return len(idle)


class ExecutorError(RuntimeError):
    """An executor could not start (Ray missing, no suite file, an unreachable cluster)."""


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


class LimiterActor:
    """One API quota's `RateLimiter`, as a named Ray actor every worker shares: 20 workers
    do not each think they own the quota. Requests reserve their slot here and wait for it
    in their own process."""

    def __init__(self, name: str, rpm: float | None, tpm: float | None) -> None:
        from tui_eval.agents.providers.limits import RateLimiter

        self.limiter = RateLimiter(name, rpm=rpm, tpm=tpm)

    def reserve(self, tokens: int) -> tuple[float, float]:
        """(seconds to wait for this request's slot, seconds since the last accepted response)."""
        wait = self.limiter.reserve(tokens)
        return wait, self.limiter.clock() - self.limiter.last_success

    def on_response(
        self, status: int, headers: dict[str, str], tokens_reserved: int, tokens_used: int | None
    ) -> None:
        self.limiter.on_response(
            status, headers, tokens_reserved=tokens_reserved, tokens_used=tokens_used
        )

    def on_limited(self, retry_after: float | None) -> float:
        self.limiter.on_limited(retry_after)
        return max(0.0, self.limiter.paused_until - self.limiter.clock())


class SharedLimiter:
    """A worker's handle on a `LimiterActor`, shaped like a `RateLimiter` for the providers."""

    def __init__(self, actor: Any, name: str) -> None:
        from tui_eval.agents.providers.limits import RateLimiter

        self.actor = actor
        self.local = RateLimiter(name)  # what this process last heard, for its own reads
        self.name = name

    @property
    def paused_until(self) -> float:
        return self.local.paused_until

    @property
    def last_success(self) -> float:
        return self.local.last_success

    @property
    def last_used(self) -> float:
        return self.local.last_used

    @property
    def pace(self) -> float | None:
        return self.local.pace

    def status(self) -> Any:
        return self.local.status()

    async def acquire(self, tokens: int = 0, deadline: Callable[[], float] | None = None) -> None:
        wait, since_success = await self.actor.reserve.remote(tokens)
        now = time.monotonic()
        self.local.last_used = now
        self.local.last_success = now - since_success
        if wait <= 0:
            return
        limit = deadline() if deadline is not None else math.inf
        if now + wait > limit:  # every wait is bounded by the retry budget
            await anyio.sleep(max(0.0, limit - now))
            from tui_eval.agents.providers.limits import RateLimitWait

            raise RateLimitWait(now + wait - time.monotonic(), "the cluster's shared limiter")
        await anyio.sleep(wait)

    def give_up_at(self, started: float, budget: float) -> float:
        return self.local.give_up_at(started, budget)

    def on_response(
        self,
        status: int,
        headers: Any,
        *,
        tokens_reserved: int = 0,
        tokens_used: int | None = None,
    ) -> None:
        if status < 400:
            self.local.last_success = time.monotonic()
        lower = {str(name).lower(): value for name, value in dict(headers).items()}
        self.actor.on_response.remote(status, lower, tokens_reserved, tokens_used)

    def on_limited(self, retry_after: float | None) -> None:
        now = time.monotonic()
        self.local.paused_until = now + (retry_after or 0.0)
        if self.local.stalled_since is None or self.local.stalled_since < self.local.last_success:
            self.local.stalled_since = now  # what this process saw: its budget's start
        self.local.last_limited = now
        self.actor.on_limited.remote(retry_after)


def shared_limiter_factory(ray: Any) -> Any:
    """`limits.use_limiters` factory for workers: one named actor per (base URL, key)."""

    def build(base_url: str, fingerprint: str, rpm: float | None, tpm: float | None) -> Any:
        actor = (
            ray.remote(LimiterActor)
            .options(
                name=f"tui-eval-limiter:{base_url}:{fingerprint}",
                get_if_exists=True,
                lifetime="detached",
                num_cpus=0,
            )
            .remote(base_url, rpm, tpm)
        )
        return SharedLimiter(actor, base_url)

    return build


_BATCH: pydantic.TypeAdapter[list[tuple[str, SampleResult]]] = pydantic.TypeAdapter(
    list[tuple[str, SampleResult]]
)
"""Batches travel as JSON made by pydantic-core: half the cost of pickling the dataclasses,
and any output travels (a value JSON cannot hold arrives as its text, as in the journal)."""


def encode(batch: list[tuple[str, SampleResult]]) -> bytes:
    """A batch of finished samples as bytes (values JSON cannot hold become text)."""
    # Fields at their defaults are left out: half the bytes, and less for the driver to parse.
    return _BATCH.dump_json(batch, fallback=str, exclude_defaults=True)


def decode(data: bytes) -> list[tuple[str, SampleResult]]:
    """The batch `encode` made."""
    return _BATCH.validate_json(data)


class SampleWorker:
    """One Ray actor: loads the suite once, runs units, streams micro-batches of samples."""

    def __init__(self) -> None:
        import ray

        from tui_eval.agents.providers.limits import use_limiters

        use_limiters(shared_limiter_factory(ray))
        self._batches: list[list[tuple[str, SampleResult]]] = []

    def prepare(
        self,
        suite_path: str,
        suite_name: str,
        concurrency: int,
        provider: dict[str, Any] | None = None,
        cache: str = "off",
    ) -> None:
        """Load the run's suite from its file, before each run: a worker serves one run
        after another for its driver, and the suite may have been edited in between."""
        from tui_eval.agents.providers.settings import ProviderOptions
        from tui_eval.sample_runner import SampleRunner, response_cache
        from tui_eval.sample_sources import AgentRuns
        from tui_eval.suites import load_suites

        loaded = load_suites([suite_path])
        suites = [s for s in loaded.suites if s.name == suite_name]
        if not suites:
            problems = "; ".join(str(e) for e in loaded.errors) or "no such suite"
            raise ExecutorError(
                f"worker cannot load suite {suite_name!r} from {suite_path}: {problems}"
            )
        suite = suites[0]
        # The driver records, budgets and announces; a worker only runs single samples.
        self.samples = SampleRunner(
            list(suite.cases),
            AgentRuns(suite.agent),
            provider=ProviderOptions(**provider) if provider else None,
            cache=response_cache(cache),  # type: ignore[arg-type]
        )
        self.positions: dict[str, int] = {}
        for position, case in enumerate(suite.cases):
            self.positions.setdefault(case.label, position)
        self.concurrency = max(1, concurrency)
        self._capacity: anyio.CapacityLimiter | None = None

    async def run(self, units: Sequence[Work]) -> AsyncIterator[bytes]:
        """Run `units` (at most `concurrency` at once across this worker's streams), yielding
        finished samples in batches: every `FLUSH_EVERY_S`, or as soon as `FLUSH_AT` wait."""
        unknown = sorted({label for label, _ in units if label not in self.positions})
        if unknown:
            raise ExecutorError(
                f"the worker's copy of the suite has no case {unknown[0]!r}: workers must "
                "load the same suite file as the driver (same checkout and environment)"
            )
        if self._capacity is None:  # shared by every stream this worker serves
            self._capacity = anyio.CapacityLimiter(self.concurrency)
        capacity = self._capacity
        pending = iter(units)
        batch: list[tuple[str, SampleResult]] = []
        full = anyio.Event()
        finished = False

        async def work() -> None:
            for label, sample_index in pending:
                async with capacity:
                    sample = await self.samples.sample(self.positions[label], sample_index)
                batch.append((label, sample))
                if len(batch) >= FLUSH_AT:
                    full.set()

        async def drive() -> None:
            nonlocal finished
            with self.samples.scope():
                async with anyio.create_task_group() as group:
                    for _ in range(min(self.concurrency, len(units))):
                        group.start_soon(work)
            finished = True
            full.set()

        self._batches.append(batch)  # what `take_unsent` drains when the driver cancels
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(drive)
                while True:
                    with anyio.move_on_after(FLUSH_EVERY_S):
                        await full.wait()
                    if full.is_set():
                        full = anyio.Event()
                    done = finished
                    if batch:
                        ready = encode(batch)
                        batch.clear()
                        yield ready
                    if done and not batch:
                        break
        finally:
            self._batches = [other for other in self._batches if other is not batch]

    async def take_unsent(self) -> bytes:
        """Finished samples not yet sent (the driver is cancelling: it keeps them)."""
        unsent = [item for batch in self._batches for item in batch]
        for batch in self._batches:
            batch.clear()
        return encode(unsent)

    def pid(self) -> int:
        """The worker's process id (the fault tests kill it)."""
        return os.getpid()


@contextlib.contextmanager
def _without_secrets(allowed: Iterable[str]) -> Iterator[None]:
    """The environment without secret-looking variables (`*_KEY`, `*_TOKEN`...) that are
    not allowed: a local Ray runtime's processes inherit the environment they start in."""
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
    """Standard streams with file descriptors while Ray starts: the app (Textual) replaces
    them with objects that have none, and Ray needs them. Ray's output goes nowhere."""
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

    Workers see only the allowed variables (`allowed_environment`): other secret-looking
    variables are hidden from a local runtime's processes while they start.

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
    """Runs an `Evaluation`'s missing samples on Ray workers (see the module docstring).

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
            evaluation.provider.model_dump(exclude_unset=True) if evaluation.provider else None
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
        per_worker = max(1, -(-evaluation.concurrency // count))
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
        idle = _IDLE.pop(key, [])
        self.actors = [idle.pop() if idle else self._new_actor() for _ in range(count)]
        if idle:
            _IDLE[key] = idle
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
                _IDLE.setdefault(key, []).extend(self.actors)
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
