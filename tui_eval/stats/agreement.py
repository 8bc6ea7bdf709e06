"""How far two raters agree: Cohen's κ (plain and weighted) with an interval that holds at
small label counts, the labels a precision needs, the confusion matrix, TPR/TNR, and
Krippendorff's α for more than two raters. Pinned against scikit-learn in the tests.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from tui_eval.stats.proportions import percentile

POSTERIOR_DRAWS = 4000
"""Draws behind a κ interval: its bounds move by about 0.01 from one seed to another."""

JEFFREYS = 0.5
"""The Dirichlet prior's weight on each of the four cells (Jeffreys' prior)."""


@dataclass(frozen=True, slots=True)
class Confusion:
    """Judge verdicts against human labels, the human "pass" as the positive class."""

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
    def one_sided(self) -> bool:
        """Whether the humans or the judge gave one verdict only (or there are no pairs)."""
        human_pass, judge_pass = self.tp + self.fn, self.tp + self.fp
        return human_pass in (0, self.n) or judge_pass in (0, self.n)

    @property
    def kappa(self) -> float:
        """Cohen's κ; NaN when either side gave one verdict only (scikit-learn's 0 there
        would hide that nothing can be measured: a `--min-kappa` gate fails closed)."""
        if self.one_sided:
            return math.nan
        return _kappa(self.tp, self.fp, self.fn, self.tn)


def _kappa(tp: float, fp: float, fn: float, tn: float) -> float:
    """κ of a 2×2 table of counts or shares, both raters varying."""
    n = tp + fp + fn + tn
    observed = (tp + tn) / n
    human_pass = (tp + fn) / n
    judge_pass = (tp + fp) / n
    expected = human_pass * judge_pass + (1 - human_pass) * (1 - judge_pass)
    return (observed - expected) / (1 - expected)


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
) -> float:
    """Cohen's κ between two raters' labels, as scikit-learn's `cohen_kappa_score` (`weights`
    by distance in the order of `labels`, default the sorted labels seen). NaN when
    undefined (no items, or chance agreement is perfect).

    Example:
        >>> round(cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]), 3)
        0.5
    """
    observed = _table(a, b, labels)
    k = len(observed)
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


def _table(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None
) -> list[list[int]]:
    """The k×k counts of the pairs (a[i], b[i]) within the categories `labels`."""
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} and {len(b)}")
    categories = list(labels) if labels is not None else sorted({*a, *b})  # type: ignore[type-var]
    index = {label: i for i, label in enumerate(categories)}
    table = [[0] * len(categories) for _ in categories]
    for x, y in zip(a, b, strict=True):
        if x in index and y in index:
            table[index[x]][index[y]] += 1
    return table


def weighted_score_kappa(human: Sequence[float], judge: Sequence[float]) -> float:
    """Quadratic weighted κ of human score labels against judge scores, on the scores
    themselves: scikit-learn's `cohen_kappa_score(weights="quadratic")` over any even grid
    holding them, in closed form. NaN when undefined (no pairs, or no spread).

    Example:
        >>> round(weighted_score_kappa([0.0, 0.25, 1.0], [0.0, 0.5, 1.0]), 3)
        0.941
    """
    n = len(human)
    if n != len(judge):
        raise ValueError(f"raters scored different numbers of items: {n} and {len(judge)}")
    if not n:
        return math.nan
    observed = sum((h - j) ** 2 for h, j in zip(human, judge, strict=True))
    # Chance disagreement: every human score against every judge score, divided by n.
    sum_h, sum_j = math.fsum(human), math.fsum(judge)
    squares = n * math.fsum(h * h for h in human) + n * math.fsum(j * j for j in judge)
    chance = (squares - 2 * sum_h * sum_j) / n
    if chance <= 0:
        return math.nan
    return 1.0 - observed / chance


def kappa_interval(
    human: Sequence[bool],
    judge: Sequence[bool],
    *,
    draws: int = POSTERIOR_DRAWS,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """An interval for Cohen's κ of pass/fail pairs that holds at small label counts.

    The equal-tailed interval of κ over the four cells' posterior (Dirichlet, Jeffreys'
    prior), `draws` seeded draws, widened to hold the estimate: ten labels in perfect
    agreement give about [0.4, 1], not a bootstrap's [1, 1], whose coverage falls far below
    95% at small counts (the slow tests pin it).

    Returns:
        (low, high); NaNs when κ is undefined (fewer than two pairs, or one side gave one
        verdict only).
    """
    n = len(human)
    if n != len(judge):
        raise ValueError(f"raters labelled different numbers of items: {n} and {len(judge)}")
    confusion = Confusion.of(human, judge)
    estimate = confusion.kappa
    if n < 2 or math.isnan(estimate):
        return (math.nan, math.nan)
    cells = [c + JEFFREYS for c in (confusion.tp, confusion.fp, confusion.fn, confusion.tn)]
    gamma = random.Random(seed).gammavariate
    kappas: list[float] = []
    for _ in range(draws):
        tp, fp, fn, tn = (gamma(alpha, 1.0) for alpha in cells)
        if tp + fn > 0 and fp + tn > 0 and tp + fp > 0 and fn + tn > 0:
            kappas.append(_kappa(tp, fp, fn, tn))
    return _posterior_interval(kappas, estimate, level)


def category_kappa_interval(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] | None = None,
    draws: int = POSTERIOR_DRAWS,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """`kappa_interval` for any number of categories (the fault reviewer's three parties),
    over the k×k table's posterior; NaNs when κ is undefined."""
    table = _table(a, b, labels)
    estimate = cohen_kappa(a, b, labels=labels)
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2 or math.isnan(estimate):
        return (math.nan, math.nan)
    k = len(table)
    cells = [count + JEFFREYS for row in table for count in row]
    gamma = random.Random(seed).gammavariate
    kappas: list[float] = []
    for _ in range(draws):
        shares = [gamma(alpha, 1.0) for alpha in cells]
        total = sum(shares)
        rows = [sum(shares[i * k : (i + 1) * k]) / total for i in range(k)]
        cols = [sum(shares[j::k]) / total for j in range(k)]
        observed = sum(shares[i * k + i] for i in range(k)) / total
        expected = sum(r * c for r, c in zip(rows, cols, strict=True))
        if expected < 1.0:
            kappas.append((observed - expected) / (1.0 - expected))
    return _posterior_interval(kappas, estimate, level)


def _posterior_interval(kappas: list[float], estimate: float, level: float) -> tuple[float, float]:
    """The equal-tailed `level` interval of drawn κs, widened to hold the estimate."""
    tail = (1.0 - level) / 2 * 100
    low = min(percentile(kappas, tail), estimate)
    high = max(percentile(kappas, 100 - tail), estimate)
    return (max(low, -1.0), min(high, 1.0))


def labels_needed(confusion: Confusion, half_width: float = 0.1, level: float = 0.95) -> int | None:
    """About how many labels a `level` interval for κ of ±`half_width` needs at
    `confusion`'s rates, from κ's large-sample variance with half a label added to each
    cell (so a perfect record still needs some). None when κ is undefined."""
    if math.isnan(confusion.kappa):
        return None
    total = confusion.n + 4 * JEFFREYS
    tp, fp, fn, tn = (
        (count + JEFFREYS) / total
        for count in (confusion.tp, confusion.fp, confusion.fn, confusion.tn)
    )
    z = NormalDist().inv_cdf(0.5 + level / 2)
    needed = z * z * _kappa_variance(tp, fp, fn, tn) / (half_width * half_width)
    return max(2, math.ceil(needed))


def _kappa_variance(tp: float, fp: float, fn: float, tn: float) -> float:
    """n times the large-sample variance of κ from a 2×2 table of shares (Fleiss, Cohen and
    Everitt 1969, "Large sample standard errors of kappa and weighted kappa")."""
    cell = {(1, 1): tp, (0, 1): fp, (1, 0): fn, (0, 0): tn}  # (human, judge)
    human = {i: cell[(i, 1)] + cell[(i, 0)] for i in (0, 1)}
    judge = {j: cell[(1, j)] + cell[(0, j)] for j in (0, 1)}
    observed = tp + tn
    expected = human[1] * judge[1] + human[0] * judge[0]
    agreeing = sum(
        cell[(i, i)] * ((1 - expected) - (judge[i] + human[i]) * (1 - observed)) ** 2
        for i in (0, 1)
    )
    disagreeing = (1 - observed) ** 2 * sum(
        cell[(i, j)] * (judge[i] + human[j]) ** 2 for i, j in ((0, 1), (1, 0))
    )
    correction = (observed * expected - 2 * expected + observed) ** 2
    return (agreeing + disagreeing - correction) / (1 - expected) ** 4


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
