"""The agreement statistics against scikit-learn, textbook values, and a coverage simulation."""

from __future__ import annotations

import math
import random

import pytest

from tests.lazy import lazy
from tui_eval.stats.agreement import (
    Confusion,
    cohen_kappa,
    kappa_interval,
    krippendorff_alpha,
    score_step,
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


@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_equals_scikit_learns_on_score_grids(seed: int):
    rng = random.Random(seed)
    human = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(60)]
    judge = [min(1.0, max(0.0, h + rng.choice([-0.3, -0.1, 0.0, 0.0, 0.1, 0.2]))) for h in human]
    ours = weighted_score_kappa(human, judge)
    theirs = metrics.cohen_kappa_score(
        [score_step(h) for h in human],
        [score_step(j) for j in judge],
        weights="quadratic",
        labels=list(range(11)),
    )
    assert ours == pytest.approx(theirs, abs=1e-12)
    for weights in ("linear", "quadratic"):
        a = [rng.randint(0, 4) for _ in range(40)]
        b = [min(4, max(0, x + rng.randint(-1, 1))) for x in a]
        assert cohen_kappa(a, b, weights=weights) == pytest.approx(
            metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12
        )


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


def test_bootstrap_interval_is_seeded_and_brackets_kappa():
    human, judge = pairs(3, 120, agree=0.85)
    low, high = kappa_interval(human, judge)
    assert (low, high) == kappa_interval(human, judge)
    assert kappa_interval(human, judge, seed=1) != (low, high)
    assert low < Confusion.of(human, judge).kappa < high
    assert all(math.isnan(x) for x in kappa_interval([True], [True]))


def population_kappa(base: float, agree: float) -> float:
    """κ of the population the simulation draws from."""
    tp = base * agree
    tn, fp = (1 - base) * agree, (1 - base) * (1 - agree)
    observed = tp + tn
    judge_pass = tp + fp
    expected = base * judge_pass + (1 - base) * (1 - judge_pass)
    return (observed - expected) / (1 - expected)


def coverage(simulations: int, n: int, resamples: int) -> float:
    truth = population_kappa(0.6, 0.8)
    covered = 0
    for seed in range(simulations):
        human, judge = pairs(10_000 + seed, n, agree=0.8)
        low, high = kappa_interval(human, judge, resamples=resamples, seed=seed)
        covered += low <= truth <= high
    return covered / simulations


def test_bootstrap_interval_covers_the_true_kappa_in_a_small_simulation():
    assert coverage(simulations=60, n=80, resamples=400) >= 0.85


@pytest.mark.slow
def test_bootstrap_interval_covers_at_nominal():
    # 400 seeded samples of 100 pairs: the 95% interval holds the population κ in
    # 0.95 ± 0.03 of them (the binomial noise of 400 draws is ±0.011).
    assert coverage(simulations=400, n=100, resamples=1000) == pytest.approx(0.95, abs=0.03)
