"""`max_cost`: a run's spending limit, enforced before each sample starts.

A sample reserves an estimate of its cost before it starts and settles with its real cost
when it ends. It starts only while the dollars spent, the reservations of the samples in
flight and its own estimate together stay within the budget; when that is not so and
nothing is in flight, the run stops (nothing that is still running could make room).

The estimate of a sample is the dearest sample of its case seen so far, or of the whole
run for a case not seen yet (a resumed run's samples count as seen, and as spent). Until
the first sample has a price, samples run one at a time: nothing is known yet of what
they cost, and a wave of `concurrency` samples could spend many times the budget. The
README's "Guarantees" states the bound this gives.

A sample whose cost is unknown (`known_cost`: a model not in the price table, an agent
that reports no usage, a `price=` function's nonsense) makes the budget unenforceable: the
run then goes on at full concurrency, and the CLI warns that `max_cost` was not enforced.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import anyio

from tui_eval.core.results import SampleResult


def known_cost(cost: object) -> float | None:
    """The one rule for what a sample cost: a finite number of dollars ≥ 0 is believed;
    anything else (None: nothing priced it; NaN, infinity, a negative number, not a number:
    a price function's or a server's nonsense) is unknown, None.

    An unknown cost is never counted as 0 nor allowed to lower the spend: the sample is
    unpriced (`Report.unpriced` counts it), and once a sample that called its model is
    unpriced the budget cannot be held to (`CostBudget.enforced`).
    """
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None


class Ledger:
    """What a run spent: the sum of its samples' costs, each counted once, when the run
    records it (`Evaluation.record`). Runs that share a `CostBudget` (`decide()`'s rounds)
    share its ledger. Costs are priced once, as a sample finishes, under `known_cost`.

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
    """The spending limit of one run, or of several runs that share it (`decide()`'s
    rounds pass the same budget to every round).

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
        """Count a recorded sample in the ledger (a resumed run's too, with no `key`) and
        replace `key`'s reservation, if any, by what it really cost."""
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
        """Drop the reservations of samples that never finished, of a run that ended
        (cancelled): keys are tuples whose first item is `owner`."""
        stale = [k for k in self._reserved if isinstance(k, tuple) and k and k[0] == owner]
        for key in stale:
            del self._reserved[key]
        if stale:
            self._wake()

    def exhausted(self) -> bool:
        """Whether the spend has reached the budget (a run without reservations, on an
        executor, stops there)."""
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
