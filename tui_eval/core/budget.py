"""`max_cost`: a run's spending limit, enforced before each sample starts.

A sample reserves an estimate (the dearest sample of its case so far, else of the run)
and starts only while spend + reservations + estimate fit; it settles with its real cost.
Until a sample has a price, samples run one at a time, so a first wave cannot overspend
(README "Guarantees" states the bound). An unknown cost makes the budget unenforceable:
the run goes on at full concurrency and the CLI warns."""

from __future__ import annotations

import math
from collections.abc import Hashable

import anyio

from tui_eval.core.results import SampleResult


def known_cost(cost: object) -> float | None:
    """The one rule for what a sample cost: a finite number of dollars ≥ 0, else None.

    An unknown cost is never counted as 0, so it can never lower the spend.
    """
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None


class Ledger:
    """What a run spent: its samples' costs, each counted once as it is recorded.

    Attributes:
        spent: dollars of the samples counted so far.
        priced: how many of them had a known cost.
        unpriced: how many that called a model (not from the cache) had none.
    """

    __slots__ = ("priced", "spent", "unpriced")

    def __init__(self) -> None:
        self.spent = 0.0
        self.priced = 0
        self.unpriced = 0

    def add(self, sample: SampleResult) -> float | None:
        """Count a recorded sample's cost; returns it (None: unknown, `known_cost`)."""
        cost = known_cost(sample.cost)
        if cost is not None:
            self.spent += cost
            self.priced += 1
        elif sample.status in ("passed", "failed") and not sample.cached:
            self.unpriced += 1  # it ran, and nothing says what it cost
        return cost


class CostBudget:
    """The spending limit of one run, or of several runs that share it.

    Example:
        >>> budget = CostBudget(3.0)
        >>> await evaluate(agent, cases, max_cost=budget)  # doctest: +SKIP
        >>> budget.spent  # doctest: +SKIP
        3.0

    Args:
        max_cost: dollars; a finite number ≥ 0.
    """

    def __init__(self, max_cost: float) -> None:
        if isinstance(max_cost, bool) or not math.isfinite(max_cost) or max_cost < 0:
            raise ValueError(f"max_cost must be a finite number of dollars ≥ 0, got {max_cost!r}")
        self.max_cost = float(max_cost)
        self.ledger = Ledger()
        """What the runs of this budget spent (the one count of it)."""
        self.stopped = False
        """Whether a sample was refused: no new sample starts any more."""
        self._reserved: dict[Hashable, float] = {}
        self._dearest: dict[str, float] = {}
        self._dearest_any: float | None = None
        self._changed: anyio.Event | None = None

    @classmethod
    def of(cls, max_cost: float | CostBudget | None) -> CostBudget | None:
        """`max_cost` as a budget (a shared one is used as it is)."""
        if max_cost is None or isinstance(max_cost, CostBudget):
            return max_cost
        return cls(max_cost)

    def __repr__(self) -> str:
        return f"CostBudget(max_cost={self.max_cost:g}, spent={self.spent:.4f})"

    @property
    def spent(self) -> float:
        """Dollars spent by the samples recorded so far (resumed ones included)."""
        return self.ledger.spent

    @property
    def enforced(self) -> bool:
        """False once a sample finished without a known cost: the limit cannot be kept."""
        return self.ledger.unpriced == 0

    @property
    def in_flight(self) -> int:
        """Samples that reserved and have not settled yet."""
        return len(self._reserved)

    @property
    def reserved(self) -> float:
        """Dollars reserved by the samples in flight."""
        return sum(self._reserved.values())

    def estimate(self, case: str) -> float | None:
        """What a sample of `case` is expected to cost (None: nothing priced yet)."""
        return self._dearest.get(case, self._dearest_any)

    def reason(self) -> str:
        """The stop message, with the spend as it stands (final once the run ended)."""
        return (
            f"max_cost ${self.max_cost:g} reached: ${self.spent:.4f} spent, no new sample started"
        )

    # -- the runner's two calls ---------------------------------------------------------
    async def reserve(self, key: Hashable, case: str) -> bool:
        """Wait until a sample of `case` may start, and reserve its estimate under `key`.

        Returns False when it must not start (the budget is spent): the caller stops.
        """
        while True:
            if self.stopped:
                return False
            if not self.enforced:
                self._reserved[key] = 0.0
                return True
            estimate = self.estimate(case)
            if estimate is None:  # nothing priced yet: one sample at a time
                if not self._reserved:
                    if self.spent < self.max_cost:
                        self._reserved[key] = 0.0
                        return True
                    return self._stop()
            elif self.spent + self.reserved + estimate <= self.max_cost:
                self._reserved[key] = estimate
                return True
            elif not self._reserved:
                return self._stop()
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()  # a sample in flight settles: maybe there is room

    def settle(self, sample: SampleResult, key: Hashable = None) -> None:
        """Count a recorded sample (no `key` for a resumed one) and drop `key`'s reservation."""
        self._reserved.pop(key, None)
        cost = self.ledger.add(sample)
        if (
            cost is not None
            and not sample.cached
            and (cost or sample.status in ("passed", "failed"))
        ):
            # Else it says nothing of what a sample costs (an error before any call).
            case = sample.case_name
            self._dearest[case] = max(cost, self._dearest.get(case, 0.0))
            self._dearest_any = max(cost, self._dearest_any or 0.0)
        self._wake()

    def release(self, owner: object) -> None:
        """Drop the reservations (keys `(owner, ...)`) of an ended run's unfinished samples."""
        stale = [k for k in self._reserved if isinstance(k, tuple) and k and k[0] == owner]
        for key in stale:
            del self._reserved[key]
        if stale:
            self._wake()

    def exhausted(self) -> bool:
        """Whether the spend has reached the budget (for executors, which do not reserve)."""
        if self.enforced and self.spent >= self.max_cost:
            self.stopped = True
        return self.stopped

    def _stop(self) -> bool:
        self.stopped = True
        self._wake()
        return False

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
