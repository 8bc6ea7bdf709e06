"""How far two raters agree: Cohen's κ (plain and weighted), its bootstrap interval, the
confusion matrix, TPR/TNR, and Krippendorff's α for more than two raters.

Pure Python (no NumPy): calibration runs in a plain install. The figures are pinned against
scikit-learn's `cohen_kappa_score` and `confusion_matrix` in the tests.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2000
"""Resamples behind a κ interval: enough for stable 2.5/97.5 percentiles."""

SCORE_STEPS = 10
"""Score labels and judge scores are compared on a grid of tenths for the weighted κ."""


@dataclass(frozen=True, slots=True)
class Confusion:
    """Judge verdicts against human labels, with the human "pass" as the positive class.

    Attributes:
        tp: the judge passed what the human passed.
        fp: the judge passed what the human failed.
        fn: the judge failed what the human passed.
        tn: the judge failed what the human failed.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @classmethod
    def of(cls, human: Sequence[bool], judge: Sequence[bool]) -> Confusion:
        """Count the pairs `(human[i], judge[i])`."""
        counts = Counter(zip(human, judge, strict=True))
        return cls(
            tp=counts[(True, True)],
            fp=counts[(False, True)],
            fn=counts[(True, False)],
            tn=counts[(False, False)],
        )

    @property
    def n(self) -> int:
        """How many pairs."""
        return self.tp + self.fp + self.fn + self.tn

    def as_dict(self) -> dict[str, int]:
        """`{"tp", "fp", "fn", "tn"}`, as the calibration JSON holds it."""
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}

    @property
    def agreement(self) -> float:
        """The share of pairs where judge and human agree (NaN without pairs)."""
        return (self.tp + self.tn) / self.n if self.n else math.nan

    @property
    def tpr(self) -> float:
        """Of the outputs the human passed, the share the judge passed (NaN: none passed)."""
        positives = self.tp + self.fn
        return self.tp / positives if positives else math.nan

    @property
    def tnr(self) -> float:
        """Of the outputs the human failed, the share the judge failed (NaN: none failed)."""
        negatives = self.tn + self.fp
        return self.tn / negatives if negatives else math.nan

    @property
    def kappa(self) -> float:
        """Cohen's κ of the 2×2 table (NaN when chance agreement is 1, as scikit-learn)."""
        n = self.n
        if not n:
            return math.nan
        observed = (self.tp + self.tn) / n
        human_pass = (self.tp + self.fn) / n
        judge_pass = (self.tp + self.fp) / n
        expected = human_pass * judge_pass + (1 - human_pass) * (1 - judge_pass)
        if expected >= 1.0:
            return math.nan
        return (observed - expected) / (1 - expected)


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
) -> float:
    """Cohen's κ between two raters' labels of the same items.

    Matches `sklearn.metrics.cohen_kappa_score`: with `weights="linear"` or `"quadratic"` the
    categories are ordered as `labels` (default: the sorted labels seen) and disagreements
    weigh by their distance in that order. NaN when κ is undefined (no items, or chance
    agreement is perfect).

    Example:
        >>> round(cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]), 3)
        0.5
    """
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} and {len(b)}")
    if not a:
        return math.nan
    categories = list(labels) if labels is not None else sorted({*a, *b})  # type: ignore[type-var]
    index = {label: i for i, label in enumerate(categories)}
    k = len(categories)
    observed = [[0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        if x in index and y in index:
            observed[index[x]][index[y]] += 1
    total = sum(map(sum, observed))
    if not total:
        return math.nan
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    if weights is None:
        weight = [[0.0 if i == j else 1.0 for j in range(k)] for i in range(k)]
    elif weights == "linear":
        weight = [[float(abs(i - j)) for j in range(k)] for i in range(k)]
    elif weights == "quadratic":
        weight = [[float((i - j) ** 2) for j in range(k)] for i in range(k)]
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    disagreement = sum(weight[i][j] * observed[i][j] for i in range(k) for j in range(k))
    chance = sum(weight[i][j] * rows[i] * cols[j] / total for i in range(k) for j in range(k))
    if chance == 0:
        return math.nan
    return 1.0 - disagreement / chance


def score_step(score: float) -> int:
    """A score in 0..1 as its nearest tenth (0..10), the categories of the weighted κ."""
    return round(min(max(score, 0.0), 1.0) * SCORE_STEPS)


def weighted_score_kappa(human: Sequence[float], judge: Sequence[float]) -> float:
    """Quadratic weighted κ between human score labels and judge scores, on a grid of tenths
    (so a 0.8 against 0.9 costs a hundredth of a 0 against 1)."""
    return cohen_kappa(
        [score_step(s) for s in human],
        [score_step(s) for s in judge],
        weights="quadratic",
        labels=range(SCORE_STEPS + 1),
    )


def kappa_interval(
    human: Sequence[bool],
    judge: Sequence[bool],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """A percentile bootstrap interval for Cohen's κ of pass/fail pairs.

    Pairs are resampled with replacement (seeded: the same pairs always give the same
    interval). Resamples where κ is undefined (all one class) are left out; NaNs when fewer
    than half of them are usable, or with fewer than two pairs.
    """
    n = len(human)
    if n != len(judge):
        raise ValueError(f"raters labelled different numbers of items: {n} and {len(judge)}")
    if n < 2:
        return (math.nan, math.nan)
    confusion = Confusion.of(human, judge)
    cells = (
        (True, True, confusion.tp),
        (False, True, confusion.fp),
        (True, False, confusion.fn),
        (False, False, confusion.tn),
    )
    cumulative: list[int] = []
    running = 0
    for _, _, count in cells:
        running += count
        cumulative.append(running)
    rng = random.Random(seed)
    kappas: list[float] = []
    for _ in range(resamples):
        drawn = Counter(rng.choices(range(4), cum_weights=cumulative, k=n))
        kappa = Confusion(tp=drawn[0], fp=drawn[1], fn=drawn[2], tn=drawn[3]).kappa
        if not math.isnan(kappa):
            kappas.append(kappa)
    if len(kappas) < resamples / 2:
        return (math.nan, math.nan)
    kappas.sort()
    tail = (1.0 - level) / 2
    return (_quantile(kappas, tail), _quantile(kappas, 1.0 - tail))


def _quantile(ordered: list[float], q: float) -> float:
    """The `q` quantile of sorted values, interpolated linearly (NumPy's default)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def krippendorff_alpha(
    units: Sequence[Sequence[Hashable | None]], *, metric: str = "nominal"
) -> float:
    """Krippendorff's α: how far several raters agree beyond chance.

    Args:
        units: one row per item, holding each rater's value (None: that rater gave none).
            Items with fewer than two values carry no information and are left out.
        metric: `"nominal"` (categories) or `"interval"` (numbers, squared differences).

    Returns:
        α (1 perfect, 0 chance, below 0 systematic disagreement); NaN when undefined (fewer
        than two values in all, or a single value throughout).

    Example:
        >>> round(krippendorff_alpha([[1, 1, 1], [0, 0, 0], [1, 1, 0]]), 3)
        0.6
    """
    if metric not in ("nominal", "interval"):
        raise ValueError(f"metric must be 'nominal' or 'interval', got {metric!r}")

    def delta(x: Hashable, y: Hashable) -> float:
        if metric == "nominal":
            return 0.0 if x == y else 1.0
        return (float(x) - float(y)) ** 2  # type: ignore[arg-type]

    coincidences: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, x in enumerate(values):
            for j, y in enumerate(values):
                if i != j:
                    coincidences[(x, y)] += 1.0 / (m - 1)
    marginals: defaultdict[Hashable, float] = defaultdict(float)
    for (x, _), weight in coincidences.items():
        marginals[x] += weight
    total = sum(marginals.values())
    if total < 2:
        return math.nan
    observed = sum(w * delta(x, y) for (x, y), w in coincidences.items()) / total
    expected = sum(
        marginals[x] * marginals[y] * delta(x, y) for x in marginals for y in marginals
    ) / (total * (total - 1))
    if expected == 0:
        return math.nan
    return 1.0 - observed / expected
