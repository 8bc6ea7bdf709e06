"""The agreement statistics against scikit-learn, textbook values, and a coverage simulation."""

from __future__ import annotations

import math
import random

import pytest

from tests.lazy import lazy
from tui_eval.stats.agreement import (
    Confusion,
    category_kappa_interval,
    cohen_kappa,
    kappa_interval,
    krippendorff_alpha,
    labels_needed,
    weighted_score_kappa,
)

metrics = lazy("sklearn.metrics")


def pairs(seed: int, n: int, agree: float, base: float = 0.6) -> tuple[list[bool], list[bool]]:
    rng = random.Random(seed)
    human = [rng.random() < base for _ in range(n)]
    judge = [h if rng.random() < agree else not h for h in human]
    return human, judge


@pytest.mark.parametrize("seed", range(8))
def test_kappa_tpr_tnr_and_confusion_equal_scikit_learns(seed: int):
    human, judge = pairs(seed, 30 + seed * 20, agree=0.55 + seed * 0.05)
    confusion = Confusion.of(human, judge)
    tn, fp, fn, tp = metrics.confusion_matrix(human, judge, labels=[False, True]).ravel()
    assert confusion.as_dict() == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    assert confusion.kappa == pytest.approx(metrics.cohen_kappa_score(human, judge), abs=1e-12)
    assert cohen_kappa(human, judge) == pytest.approx(
        metrics.cohen_kappa_score(human, judge), abs=1e-12
    )
    assert confusion.tpr == pytest.approx(tp / (tp + fn))
    assert confusion.tnr == pytest.approx(tn / (tn + fp))
    assert confusion.agreement == pytest.approx((tp + tn) / len(human))


QUARTERS = [0.0, 0.25, 0.5, 0.75, 1.0]  # a 0-4 rubric


def quarters(scores: list[float]) -> list[int]:
    return [round(score * 4) for score in scores]


@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_equals_scikit_learns_on_the_values_given(seed: int):
    rng = random.Random(seed)
    human = [rng.choice(QUARTERS) for _ in range(60)]
    judge = [min(1.0, max(0.0, h + rng.choice([-0.25, 0.0, 0.0, 0.25, 0.5]))) for h in human]
    assert set(human) == set(QUARTERS) == set(judge)
    # scikit-learn takes categories, not floats: the same values as quarters 0..4.
    theirs = metrics.cohen_kappa_score(quarters(human), quarters(judge), weights="quadratic")
    assert weighted_score_kappa(human, judge) == pytest.approx(theirs, abs=1e-12)
    for weights in ("linear", "quadratic"):
        a = [rng.randint(0, 4) for _ in range(40)]
        b = [min(4, max(0, x + rng.randint(-1, 1))) for x in a]
        assert cohen_kappa(a, b, weights=weights) == pytest.approx(
            metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12
        )


def test_weighted_kappa_keeps_quarter_scores_where_they_are():
    """Scores on a quarter grid were moved to tenths with round-half-even (.25 to .2, .75
    to .8): uneven distances, and a κ_w unlike scikit-learn's on the same values."""
    human = [0.0, 0.25, 0.25, 0.5, 0.75, 0.75, 1.0, 1.0, 0.5, 0.25]
    judge = [0.25, 0.25, 0.75, 0.5, 0.5, 1.0, 1.0, 0.75, 0.0, 0.5]
    theirs = metrics.cohen_kappa_score(quarters(human), quarters(judge), weights="quadratic")
    assert weighted_score_kappa(human, judge) == pytest.approx(theirs, abs=1e-12)
    # Values that leave grid points out: scikit-learn on the grid that holds them exactly.
    partial_h, partial_j = [0.0, 0.25, 1.0, 1.0, 0.25], [0.25, 0.0, 1.0, 0.25, 0.25]
    on_grid = metrics.cohen_kappa_score(
        quarters(partial_h),
        quarters(partial_j),
        weights="quadratic",
        labels=range(5),
    )
    assert weighted_score_kappa(partial_h, partial_j) == pytest.approx(on_grid, abs=1e-12)
    # Any scores at all (a judge's 0.87): quadratic weights on the distances themselves.
    human, judge = [0.1, 0.87, 0.5, 0.33], [0.2, 0.9, 0.41, 0.1]
    grid = metrics.cohen_kappa_score(
        [round(v * 100) for v in human],
        [round(v * 100) for v in judge],
        weights="quadratic",
        labels=range(101),
    )
    assert weighted_score_kappa(human, judge) == pytest.approx(grid, abs=1e-12)
    assert math.isnan(weighted_score_kappa([0.5, 0.5], [0.5, 0.5]))


def test_score_distance_counts_on_the_value_grid():
    # A near miss costs far less than the opposite answer.
    close = weighted_score_kappa([0.0, 1.0, 0.8, 0.2], [0.0, 1.0, 0.9, 0.1])
    far = weighted_score_kappa([0.0, 1.0, 0.8, 0.2], [0.0, 1.0, 0.1, 0.9])
    assert close > 0.9 > far


def test_kappa_is_undefined_when_everything_is_one_class_as_in_scikit_learn():
    assert math.isnan(Confusion.of([True] * 5, [True] * 5).kappa)
    with pytest.warns(Warning):
        assert math.isnan(metrics.cohen_kappa_score([1] * 5, [1] * 5))
    assert math.isnan(Confusion().kappa) and math.isnan(Confusion().tpr)


@pytest.mark.parametrize(
    ("human", "judge"),
    [
        ([True] * 6, [True, True, True, False, True, False]),  # the humans passed everything
        ([True, False, True, False, True, True], [False] * 6),  # the judge failed everything
    ],
)
def test_kappa_is_undefined_with_one_verdict_on_either_side(human, judge):
    """scikit-learn says 0 here whatever the other side did: no agreement beyond chance can
    be measured when one rater never varies, so κ is undefined and has no interval."""
    confusion = Confusion.of(human, judge)
    assert math.isnan(confusion.kappa)
    assert all(math.isnan(bound) for bound in kappa_interval(human, judge))
    assert labels_needed(confusion) is None


def test_krippendorff_alpha_matches_krippendorffs_own_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4-coder example:
    # nominal α = 0.743, interval α = 0.849.
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = list(zip(*coders, strict=True))
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(units, metric="interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha([[1, 1], [0, 0]]) == 1.0
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))


def test_interval_is_seeded_and_holds_kappa():
    human, judge = pairs(3, 120, agree=0.85)
    low, high = kappa_interval(human, judge)
    assert (low, high) == kappa_interval(human, judge)
    assert kappa_interval(human, judge, seed=1) != (low, high)
    assert low < Confusion.of(human, judge).kappa < high
    assert all(math.isnan(x) for x in kappa_interval([True], [True]))


def test_an_interval_from_ten_agreeing_labels_is_never_a_point():
    human = [True] * 6 + [False] * 4
    low, high = kappa_interval(human, human)
    assert high == 1.0 and low < 0.8  # ten labels cannot pin κ down to 1.00
    low_100, _ = kappa_interval(human * 10, human * 10)
    assert low < low_100 < 1.0  # more labels, a tighter interval


def draw(seed: int, n: int, base: float, tpr: float, tnr: float) -> tuple[list[bool], list[bool]]:
    """n labelled outputs: the human passes with chance `base`; the judge passes what the
    human passed with chance `tpr` and fails what the human failed with chance `tnr`."""
    rng = random.Random(seed)
    human = [rng.random() < base for _ in range(n)]
    judge = [rng.random() < (tpr if h else 1 - tnr) for h in human]
    return human, judge


def population_kappa(base: float, tpr: float, tnr: float) -> float:
    """κ of the population the simulation draws from."""
    return Confusion(  # cells in parts per million
        tp=round(1e6 * base * tpr),
        fp=round(1e6 * (1 - base) * (1 - tnr)),
        fn=round(1e6 * base * (1 - tpr)),
        tn=round(1e6 * (1 - base) * tnr),
    ).kappa


def coverage(simulations: int, n: int, base: float, tpr: float, tnr: float, draws: int) -> float:
    """The share of seeded samples whose 95% interval holds the population κ, among those
    where κ is defined (a sample where one side never varies has no interval)."""
    truth = population_kappa(base, tpr, tnr)
    covered = defined = 0
    for seed in range(simulations):
        human, judge = draw(10_000 + seed, n, base, tpr, tnr)
        if math.isnan(Confusion.of(human, judge).kappa):
            continue
        low, high = kappa_interval(human, judge, draws=draws, seed=seed)
        defined += 1
        covered += low <= truth <= high
    return covered / defined


# 30 labels at this mix is also in the slow grid below, at 400 samples and a higher bar.
@pytest.mark.parametrize("n", [20, pytest.param(30, marks=pytest.mark.slow)])
def test_interval_holds_at_small_label_counts_with_90_percent_passing(n: int):
    # The percentile bootstrap covered 0.69 at 20 labels and 0.82 at 30 here (nominal 0.95).
    assert coverage(100, n, base=0.9, tpr=0.95, tnr=0.6, draws=1000) >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize(
    ("base", "tpr", "tnr"),
    [(0.5, 0.85, 0.85), (0.6, 0.8, 0.8), (0.7, 0.9, 0.8), (0.9, 0.95, 0.6), (0.9, 0.99, 0.9)],
)
@pytest.mark.parametrize("n", [20, 30, 50, 100])
def test_interval_covers_near_nominal_from_20_labels(n: int, base: float, tpr: float, tnr: float):
    # 400 seeded samples each: the binomial noise of the estimate is about ±0.011.
    assert coverage(400, n, base, tpr, tnr, draws=2000) >= 0.92


def test_labels_needed_for_a_tenth_either_side():
    # Balanced classes and κ 0.7 need about 200 labels (Fleiss, Cohen & Everitt's variance);
    # 90% passing needs several times more at a lower κ.
    balanced = Confusion(tp=85, fp=15, fn=15, tn=85)
    needed = labels_needed(balanced)
    assert needed is not None and 180 <= needed <= 215
    skewed = labels_needed(Confusion(tp=171, fp=8, fn=9, tn=12))
    assert skewed is not None and skewed > 3 * needed
    # At that many labels the interval is about ±0.1 wide.
    widths = []
    for seed in range(12):
        human, judge = draw(seed, needed, base=0.5, tpr=0.85, tnr=0.85)
        low, high = kappa_interval(human, judge, draws=1000, seed=seed)
        widths.append((high - low) / 2)
    assert sum(widths) / len(widths) == pytest.approx(0.1, abs=0.015)


# -- κ's interval over more than two categories (the fault reviewer's three parties) -----
PARTIES3 = ("user", "agent", "environment")


def draw_parties(seed: int, n: int, right: float) -> tuple[list[str], list[str]]:
    """n conversations: the human blames a party (agent 50%, user 30%, environment 20%);
    the reviewer names the same one with chance `right`, else one of the other two."""
    rng = random.Random(seed)
    human = rng.choices(PARTIES3, weights=(3, 5, 2), k=n)
    reviewer = [
        h if rng.random() < right else rng.choice([p for p in PARTIES3 if p != h]) for h in human
    ]
    return human, reviewer


def population_party_kappa(right: float) -> float:
    shares = {"user": 0.3, "agent": 0.5, "environment": 0.2}
    observed = right
    # The reviewer's marginal: right on its own party, half of the wrong share of each other.
    reviewer = {
        p: shares[p] * right + sum(shares[q] * (1 - right) / 2 for q in PARTIES3 if q != p)
        for p in PARTIES3
    }
    expected = sum(shares[p] * reviewer[p] for p in PARTIES3)
    return (observed - expected) / (1 - expected)


def test_a_category_interval_is_seeded_and_holds_scikit_learns_kappa():
    metrics = lazy("sklearn.metrics")
    human, reviewer = draw_parties(5, 60, right=0.75)
    low, high = category_kappa_interval(human, reviewer, labels=PARTIES3)
    assert (low, high) == category_kappa_interval(human, reviewer, labels=PARTIES3)
    assert category_kappa_interval(human, reviewer, labels=PARTIES3, seed=1) != (low, high)
    assert low < metrics.cohen_kappa_score(human, reviewer) < high
    assert -1.0 <= low < high <= 1.0
    assert all(math.isnan(x) for x in category_kappa_interval(["user"], ["user"], labels=PARTIES3))
    one_sided = category_kappa_interval(["agent"] * 5, ["agent", "user"] * 2 + ["agent"])
    assert all(math.isnan(x) for x in one_sided)  # the humans blamed one party only


def test_a_category_interval_of_two_categories_is_the_pass_fail_one():
    human, judge = pairs(3, 120, agree=0.85)
    two = category_kappa_interval(human, judge, labels=(True, False))
    low, high = kappa_interval(human, judge)
    assert two[0] == pytest.approx(low, abs=0.03) and two[1] == pytest.approx(high, abs=0.03)


def test_ten_agreeing_parties_are_never_a_point():
    human = ["agent"] * 5 + ["user"] * 3 + ["environment"] * 2
    low, high = category_kappa_interval(human, human, labels=PARTIES3)
    assert high == 1.0 and low < 0.85
    low_100, _ = category_kappa_interval(human * 10, human * 10, labels=PARTIES3)
    assert low < low_100 < 1.0


# 50 labels, a simulation like the grid above: .ci/run runs it with `-m slow`.
@pytest.mark.parametrize("n", [20, pytest.param(50, marks=pytest.mark.slow)])
def test_a_category_interval_covers_near_nominal(n: int):
    truth = population_party_kappa(0.75)
    covered = defined = 0
    for seed in range(150):
        human, reviewer = draw_parties(20_000 + seed, n, right=0.75)
        low, high = category_kappa_interval(human, reviewer, labels=PARTIES3, draws=1000, seed=seed)
        if math.isnan(low):
            continue
        defined += 1
        covered += low <= truth <= high
    assert covered / defined >= 0.9
