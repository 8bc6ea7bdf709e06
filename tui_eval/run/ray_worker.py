"""The worker side of `tui_eval.run.ray_executor`: the `SampleWorker` actor, the batches'
wire format, and the cluster-wide rate limiter (a `LimiterActor` per API quota, reached
through a `SharedLimiter`). Importing this module never imports Ray."""

from __future__ import annotations

import math
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
import pydantic

from tui_eval.core.results import SampleResult
from tui_eval.core.settings import ExecutorError

FLUSH_EVERY_S = 0.05
FLUSH_AT = 256

Work = tuple[str, int]
"""(case label, sample index): labels, as the driver may have filtered the suite's cases."""


class LimiterActor:
    """One API quota's `RateLimiter` as a named Ray actor every worker shares; requests
    reserve their slot here and wait for it in their own process."""

    def __init__(self, name: str, rpm: float | None, tpm: float | None) -> None:
        from tui_eval.agents.http.limits import RateLimiter

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

    def settle_tokens(self, reserved: int, used: int) -> None:
        self.limiter.settle_tokens(reserved, used)

    def set_caps(self, rpm: float | None, tpm: float | None) -> None:
        self.limiter.set_caps(rpm, tpm)


class SharedLimiter:
    """A worker's handle on a `LimiterActor`, shaped like a `RateLimiter` for the providers.

    What changes the quota's pace goes to the actor; reads are answered from `local`
    (`tests/test_ray_worker.py` fails when the two shapes drift).
    """

    def __init__(self, actor: Any, name: str) -> None:
        from tui_eval.agents.http.limits import RateLimiter

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
            from tui_eval.agents.http.limits import RateLimitWait

            raise RateLimitWait(now + wait - time.monotonic(), "the cluster's shared limiter")
        await anyio.sleep(wait)

    def give_up_at(self, started: float, budget: float) -> float:
        return self.local.give_up_at(started, budget)

    def set_caps(self, rpm: float | None, tpm: float | None) -> None:
        """Explicit ceilings (a later run's `rpm`/`tpm`), on the cluster's limiter."""
        self.local.set_caps(rpm, tpm)
        self.actor.set_caps.remote(rpm, tpm)

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

    def settle_tokens(self, reserved: int, used: int) -> None:
        """Correct a request's token estimate by what it used, on the cluster's limiter."""
        self.actor.settle_tokens.remote(reserved, used)

    def on_limited(self, retry_after: float | None) -> None:
        now = time.monotonic()
        self.local.paused_until = now + (retry_after or 0.0)
        if self.local.stalled_since is None or self.local.stalled_since < self.local.last_success:
            self.local.stalled_since = now  # what this process saw: its budget's start
        self.local.last_limited = now
        self.actor.on_limited.remote(retry_after)


def shared_limiter_factory(ray: Any) -> Any:
    """The limiter factory of a worker's `Runtime`: one named actor per (base URL, key)."""

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
"""Batches travel as pydantic-core JSON: half the cost of pickling the dataclasses."""


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

        from tui_eval.agents.http.context import Runtime

        self._runtime = Runtime(shared_limiter_factory(ray))
        """The rate limiters of every run this worker serves: the cluster's, shared."""
        self._batches: list[list[tuple[str, SampleResult]]] = []
        self._streams: dict[int, int] = {}
        """Streams running here, by the run (its sample runner's id) they belong to."""

    def prepare(
        self,
        suite_path: str,
        suite_name: str,
        concurrency: int,
        provider: dict[str, Any] | None = None,
        cache: str = "off",
    ) -> None:
        """Load the run's suite from its file before each run (it may have been edited)."""
        from tui_eval.agents.http.options import ProviderOptions
        from tui_eval.core.settings import RunSettings
        from tui_eval.run.sample_runner import SampleRunner
        from tui_eval.run.sample_sources import AgentRuns
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
            RunSettings(
                provider=ProviderOptions(**provider) if provider else None,
                cache=cache,
                runtime=self._runtime,
            ),
        )
        self.positions: dict[str, int] = {}
        for position, case in enumerate(suite.cases):
            self.positions.setdefault(case.label, position)
        self.concurrency = max(1, concurrency)
        self._capacity: anyio.CapacityLimiter | None = None

    async def run(self, units: Sequence[Work]) -> AsyncIterator[bytes]:
        """Run `units` (at most `concurrency` at once across this worker's streams), yielding
        finished samples in batches: every `FLUSH_EVERY_S`, or as soon as `FLUSH_AT` wait.

        The run's connections close when its last stream here ends, so no session is left
        open in an idle worker.
        """
        unknown = sorted({label for label, _ in units if label not in self.positions})
        if unknown:
            raise ExecutorError(
                f"the worker's copy of the suite has no case {unknown[0]!r}: workers must "
                "load the same suite file as the driver (same checkout and environment)"
            )
        if self._capacity is None:  # shared by every stream this worker serves
            self._capacity = anyio.CapacityLimiter(self.concurrency)
        capacity = self._capacity
        samples = self.samples  # the run's, whatever `prepare` does meanwhile
        pending = iter(units)
        batch: list[tuple[str, SampleResult]] = []
        full = anyio.Event()
        finished = False

        async def work() -> None:
            for label, sample_index in pending:
                async with capacity:
                    sample = await samples.sample(self.positions[label], sample_index)
                batch.append((label, sample))
                if len(batch) >= FLUSH_AT:
                    full.set()

        async def drive() -> None:
            nonlocal finished
            async with anyio.create_task_group() as group:
                for _ in range(min(self.concurrency, len(units))):
                    group.start_soon(work)
            finished = True
            full.set()

        # One batch per stream running here: what `take_unsent` drains when the driver cancels.
        self._batches.append(batch)
        run_id = id(samples)
        self._streams[run_id] = self._streams.get(run_id, 0) + 1
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
            self._streams[run_id] -= 1
            if not self._streams[run_id]:  # the run's last stream: done with its connections
                del self._streams[run_id]
                async with samples.context.closing_clients():
                    pass  # leaving the block closes them

    async def take_unsent(self) -> bytes:
        """Finished samples not yet sent (the driver is cancelling: it keeps them)."""
        unsent = [item for batch in self._batches for item in batch]
        for batch in self._batches:
            batch.clear()
        return encode(unsent)

    def pid(self) -> int:
        """The worker's process id (the fault tests kill it)."""
        return os.getpid()
