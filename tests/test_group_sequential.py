"""The exact group-sequential regression test of `decide()` (tui_eval.stats.group_sequential)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tui_eval.stats.group_sequential import null_size, regression_boundary
from tui_eval.stats.two_sample import judge_two_sample

# One worker runs them all: the library caches a boundary per process, and several tests
# use the same (1 sample, 1,600 looks) boundary, ~1.5 CPU-seconds to compute.
pytestmark = pytest.mark.xdist_group("group_sequential")


def fisher_mid_p(x: int, n0: int, s: int, t: int) -> float:
    """P(S < s) + ½ P(S = s) for the current's passed count S given the margins, by
    direct summation (independent of the module's table)."""
    total, passed = n0 + t, x + s
    denom = math.comb(total, t)
    low = max(0, passed - n0)

    def pmf(k: int) -> float:
        return math.comb(passed, k) * math.comb(total - passed, t - k) / denom

    return sum(pmf(k) for k in range(low, s)) + 0.5 * pmf(s)


def crossing_chance(limits: list[list[int]], n0: int, p_b: float, p_c: float) -> float:
    """P(some look crosses) by a plain per-path-state recursion over probabilities."""
    total = 0.0
    for x, row in enumerate(limits):
        weight = math.comb(n0, x) * p_b**x * (1 - p_b) ** (n0 - x)
        alive = {0: 1.0}
        crossed = 0.0
        for limit in row:
            nxt: dict[int, float] = {}
            for s, mass in alive.items():
                nxt[s] = nxt.get(s, 0.0) + mass * (1 - p_c)
                nxt[s + 1] = nxt.get(s + 1, 0.0) + mass * p_c
            crossed += sum(m for s, m in nxt.items() if s <= limit)
            alive = {s: m for s, m in nxt.items() if s > limit}
        total += weight * crossed
    return total


def test_the_boundary_rejects_exactly_where_fishers_mid_p_is_below_the_level():
    boundary = regression_boundary(6, 12, 0.05)
    assert boundary is not None
    for x in range(7):
        for t in range(1, 13):
            level = 0.5 * math.erfc(boundary.scale * (t / 12) ** -0.25 / math.sqrt(2))
            rejected = [s for s in range(t + 1) if fisher_mid_p(x, 6, s, t) <= level]
            limit = boundary.limits[x][t - 1]
            # Made nondecreasing in x, so a row may reject a little more than its own p-values.
            assert limit >= max(rejected, default=-1)
            if x == 0 or boundary.limits[x - 1][t - 1] < limit:
                assert limit == max(rejected, default=-1)
    for t in range(12):
        column = [boundary.limits[x][t] for x in range(7)]
        assert column == sorted(column)


def test_the_calibrated_size_is_exact_and_at_most_alpha():
    """The size the module computes matches a plain recursion on a fine grid of null rates;
    the largest is at most α and not far below it (the calibration is tight)."""
    for n0, horizon, alpha in [(6, 12, 0.05), (10, 20, 0.01), (4, 15, 0.1)]:
        boundary = regression_boundary(n0, horizon, alpha)
        assert boundary is not None
        limits = [list(row) for row in boundary.limits]
        rates = np.linspace(0.001, 0.999, 999)
        curve = null_size(np.array(limits), n0, horizon, rates)
        for p in rates[::50]:
            index = int(np.argmin(abs(rates - p)))
            assert curve[index] == pytest.approx(crossing_chance(limits, n0, p, p), rel=1e-9)
        assert curve.max() <= alpha
        assert boundary.size == pytest.approx(curve.max(), rel=1e-3)
        assert boundary.size >= 0.8 * alpha


def forward_size(limits: np.ndarray, n0: int, rates: np.ndarray) -> np.ndarray:
    """P(some look crosses) at p = p for each rate: a forward recursion on the
    probabilities of the passed count (no path counts, nothing shared with the module),
    vectorised over the rates."""
    horizon = limits.shape[1]
    total = np.zeros(len(rates))
    for x in range(n0 + 1):
        if limits[x].max() < 0:
            continue
        alive = np.zeros((len(rates), horizon + 1))
        alive[:, 0] = 1.0
        crossed = np.zeros(len(rates))
        p = rates[:, None]
        for t in range(1, horizon + 1):
            alive[:, 1 : t + 1] = alive[:, 1 : t + 1] * (1 - p) + alive[:, :t] * p
            alive[:, 0] *= 1 - rates
            limit = limits[x, t - 1]
            if limit >= 0:
                crossed += alive[:, : limit + 1].sum(axis=1)
                alive[:, : limit + 1] = 0.0
        log_comb = math.lgamma(n0 + 1) - math.lgamma(x + 1) - math.lgamma(n0 - x + 1)
        total += np.exp(log_comb + x * np.log(rates) + (n0 - x) * np.log1p(-rates)) * crossed
    return total


@pytest.mark.parametrize(
    ("n0", "horizon", "alpha"),
    [
        (1, 1600, 0.05 / 20),  # where the path counts underflowed
        pytest.param(30, 400, 0.05 / 20, marks=pytest.mark.slow),
        pytest.param(2, 1600, 0.05 / 20, marks=pytest.mark.slow),
        pytest.param(1, 2000, 0.05, marks=pytest.mark.slow),
        pytest.param(5000, 40, 0.05, marks=pytest.mark.slow),  # a large baseline, few looks
    ],
)
def test_the_size_holds_at_long_horizons(n0, horizon, alpha):
    """Past ~1,000 looks the raw path counts underflowed and c came out too low (a 1-sample
    baseline at N = 1600, α/20: 2.7 α). The size, recomputed here exactly from the
    probabilities on a grid dense where the peak is, is at most α, equals the reported size
    at the reported worst rate, and is not far below α (the calibration is tight)."""
    boundary = regression_boundary(n0, horizon, alpha)
    assert boundary is not None
    limits = np.array(boundary.limits)
    worst = boundary.worst_rate
    rates = np.unique(
        np.concatenate(
            [
                np.sin(np.pi / 2 * (np.arange(48) + 0.5) / 48) ** 2,
                worst * np.linspace(0.5, 1.5, 11),
            ]
        )
    )
    rates = rates[(rates > 0) & (rates < 1)]
    sizes = forward_size(limits, n0, rates)
    assert sizes.max() <= alpha
    at_worst = forward_size(limits, n0, np.array([worst]))[0]
    assert at_worst == pytest.approx(boundary.size, rel=1e-6)
    assert sizes.max() <= boundary.size * (1 + 1e-6)
    assert boundary.size >= 0.9 * alpha


def test_a_one_sample_baseline_at_1600_looks_keeps_its_level_in_simulation():
    """The setup `Case`'s default of one sample makes common: 1/1 in the baseline, the
    current agent at the same rate, looked at after each of 1,600 samples (α/20). Seeded
    runs at the worst shared rate cross as often as the exact size says (it was 2.7 α)."""
    alpha = 0.05 / 20
    boundary = regression_boundary(1, 1600, alpha)
    assert boundary is not None
    limits = np.array(boundary.limits)
    p = boundary.worst_rate
    rng = np.random.default_rng(37)
    trials = 2_000_000
    baseline_passed = rng.random(trials) < p  # x = 0 never crosses: nothing to fall from
    assert limits[0].max() < 0
    crossed = 0
    for start in range(0, int(baseline_passed.sum()), 1000):
        count = min(1000, int(baseline_passed.sum()) - start)
        paths = np.cumsum(rng.random((count, 1600)) < p, axis=1)
        crossed += int(np.any(paths <= limits[1][None, :], axis=1).sum())
    rate = crossed / trials
    assert abs(rate - boundary.size) <= 4 * math.sqrt(boundary.size / trials)
    assert rate <= alpha * 1.15


def test_an_unconfirmed_size_falls_back_to_the_e_process(monkeypatch):
    """Where the independent re-check of the size disagrees, no boundary is returned and
    the regression side is the e-process, at the whole α."""
    import tui_eval.stats.group_sequential as gs
    from tui_eval.stats.two_sample import regression_plan

    monkeypatch.setattr(gs, "null_size_forward", lambda *args: 2 * gs.null_size(*args))
    assert regression_boundary(7, 13, 0.0421) is None
    plan = regression_plan(7, 13, 0.0421)
    assert plan.boundary is None and plan.e_alpha == 0.0421
    verdict = judge_two_sample([True] * 7, [False] * 13, alpha=0.0421, margin=0.1, horizon=13)
    assert verdict.label == "regression"


def test_a_long_horizon_splits_alpha_between_the_exact_test_and_the_e_process():
    from tui_eval.stats.group_sequential import calibrated_horizon
    from tui_eval.stats.two_sample import regression_plan

    assert calibrated_horizon(30, 30_000) == 621 and calibrated_horizon(30, 100) == 100
    plan = regression_plan(30, 200, 0.05)
    assert plan.boundary is not None and plan.boundary.horizon == 200 and plan.e_alpha == 0
    plan = regression_plan(30, 30_000, 0.05)
    assert plan.boundary is not None and plan.boundary.horizon == 310
    assert plan.boundary.alpha == 0.025 and plan.e_alpha == 0.025


def test_the_reveal_schedule_reveals_the_baseline_in_proportion_to_the_budget():
    from tui_eval.stats.two_sample import reveal_schedule

    for n0 in (1, 2, 7, 30, 150):
        for horizon in (1, 3, 10, 29, 100, 1000):
            expected, last = [], 0
            for t in range(1, horizon + 1):
                revealed = n0 if t == horizon else n0 * t // horizon
                if revealed > last or t == horizon:
                    expected.append((revealed, t))
                    last = revealed
            assert reveal_schedule(n0, horizon) == expected
    assert len(reveal_schedule(30, 30_000)) == 30


def test_a_current_agent_better_than_the_baseline_is_called_a_regression_even_less():
    """The null is "the current rate is at least the baseline's": the level at p = p bounds
    every point of it (crossing is "few passes"; the baseline's count enters only through
    its own distribution)."""
    boundary = regression_boundary(8, 16, 0.05)
    assert boundary is not None
    limits = [list(row) for row in boundary.limits]
    for p_b in (0.2, 0.5, 0.8, 0.95):
        at_equal = crossing_chance(limits, 8, p_b, p_b)
        for p_c in (p_b + 0.02, min(1.0, p_b + 0.1), 1.0):
            assert crossing_chance(limits, 8, p_b, p_c) <= at_equal + 1e-15
    assert max(crossing_chance(limits, 8, p, p) for p in np.linspace(0.01, 0.99, 99)) <= 0.05


def test_crossings_and_futility_read_the_boundary():
    boundary = regression_boundary(10, 20, 0.05)
    assert boundary is not None
    x = 10
    first = next(t for t in range(1, 21) if boundary.limits[x][t - 1] >= 0)
    assert boundary.first_crossing(x, [False] * 20) == first
    assert boundary.first_crossing(x, [True] * 20) is None
    assert boundary.can_cross(x, 0, 0)
    assert not boundary.can_cross(x, 20, 20) and not boundary.can_cross(x, 0, 20)
    # Every later sample failing keeps the passed count: can a later look reject it?
    passed = 5
    expected = any(boundary.limits[x][t - 1] >= passed for t in range(11, 21))
    assert boundary.can_cross(x, passed, 10) == expected


def test_a_regression_crossed_inside_a_round_counts():
    """Looks are after every sample: a crossing at sample 4 of a 20-sample path counts
    even though later passes lifted the path back above the boundary."""
    baseline = [True] * 30
    current = [False] * 4 + [True] * 16
    verdict = judge_two_sample(baseline, current, alpha=0.05, margin=0.1, horizon=100)
    assert verdict.label == "regression"
    boundary = regression_boundary(30, 100, 0.05)
    assert boundary is not None
    assert boundary.first_crossing(30, current) is not None
    assert boundary.limits[30][19] < sum(current)  # the last look alone would not reject


def test_the_boundary_is_cached_and_big_sizes_fall_back():
    assert regression_boundary(5, 10, 0.05) is regression_boundary(5, 10, 0.05)
    assert regression_boundary(400, 400, 0.05) is None  # the e-process stands in
    verdict = judge_two_sample([True] * 400, [False] * 40, alpha=0.05, margin=0.1, horizon=400)
    assert verdict.label == "regression"
    with pytest.raises(ValueError, match="0 < α < 1"):
        regression_boundary(5, 10, 1.5)


@pytest.mark.slow  # 12,000 simulated runs looked at after every sample: .ci/run runs it
def test_seeded_runs_at_null_points_agree_with_the_exact_size():
    """n0 = 30, N = 100, α = 0.05, looking after every sample. At p = p the size is close to
    α over a wide range (the calibration is tight), so a simulation there agrees with the
    exact figure within its noise; with the current agent better than the baseline it
    stays under α."""
    boundary = regression_boundary(30, 100, 0.05)
    assert boundary is not None
    rng = random.Random(2025)
    trials = 3000
    limits = np.array(boundary.limits)
    for p_b, p_c in [(0.5, 0.5), (0.9, 0.9), (0.5, 0.6), (0.8, 0.9)]:
        false = 0
        for _ in range(trials):
            x = sum(rng.random() < p_b for _ in range(30))
            current = [rng.random() < p_c for _ in range(100)]
            false += boundary.first_crossing(x, current) is not None
        exact = float(null_size(limits, 30, 100, np.array([p_b]))[0])
        assert exact <= 0.05
        if p_b == p_c:
            assert abs(false / trials - exact) <= 3 * math.sqrt(exact * (1 - exact) / trials)
        else:
            assert false / trials <= min(0.05, exact)


@pytest.mark.anyio
async def test_decide_refuses_an_alpha_outside_0_1():
    from tui_eval import Case, Report, decide

    with pytest.raises(ValueError, match="0 < alpha < 1"):
        await decide(lambda q: "ok", [Case("q")], Report("eval", []), alpha=1.5)


def _all_passing_baseline(samples: int):
    from tui_eval import Report
    from tui_eval.core.results import CaseResult, SampleResult

    results = [SampleResult("q", i, "passed") for i in range(samples)]
    return Report("eval", [CaseResult("q", results, planned=samples)])


@pytest.mark.anyio
async def test_an_obvious_regression_is_called_at_once_at_any_horizon():
    """30/30 in the baseline, every current sample failing: called within a few samples
    even when `max_samples` is far longer than the exact test calibrates (30,000 used
    to take 2,001 samples: the e-process revealed one baseline sample per 1,000)."""
    from tui_eval import Case, decide, equals

    case = Case("q", checks=[equals("ok")])
    diff = await decide(lambda q: "no", [case], _all_passing_baseline(30), max_samples=30_000)
    change = diff.changes[0]
    assert change.label == "regression" and change.current_total <= 15


@pytest.mark.anyio
async def test_a_long_decision_takes_few_rounds_and_judges_off_the_event_loop(monkeypatch):
    """Every round re-reads all of a case's samples, so rounds of five samples made a
    decision's cost grow with the square of `max_samples`; the rounds grow with the case
    (a tenth of what it has), and the verdicts run in a worker thread."""
    import threading

    import tui_eval.run.sequential as sequential
    from tui_eval import Case, decide, equals
    from tui_eval.run.events import RunStarted

    threads: set[str] = set()
    judge = sequential.judge_against_baseline

    def recording(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return judge(*args, **kwargs)

    monkeypatch.setattr(sequential, "judge_against_baseline", recording)
    rounds = []
    outcomes = iter(([True] * 9 + [False]) * 300)
    diff = await decide(
        lambda q: "ok" if next(outcomes) else "no",  # 90% against 30/30: never settled
        [Case("q", checks=[equals("ok")])],
        _all_passing_baseline(30),
        max_samples=3_000,
        on_event=lambda e: rounds.append(e) if isinstance(e, RunStarted) else None,
    )
    change = diff.changes[0]
    assert change.label == "undecided: budget" and change.current_total > 1_000
    assert len(rounds) <= 80  # 1, then 5 at a time up to 50, then a tenth more each round
    assert threading.main_thread().name not in threads and threads


@pytest.mark.anyio
async def test_decide_compares_verdicts_so_a_score_check_counts_at_its_threshold():
    """What the README says: a score that falls from 0.95 to 0.60 above the check's bar
    (a bare score passes at 0.5) is no regression; a bar where it matters catches it."""
    from tui_eval import Case, decide

    def score(run):
        return float(run.output)

    def high_bar(run):
        return float(run.output) >= 0.9

    for check, expected in ((score, "no regression"), (high_bar, "regression")):
        case = Case("q", checks=[check])
        baseline = await _evaluate_constant(case, "0.95", samples=30)
        diff = await decide(lambda q: "0.60", [case], baseline, max_samples=60)
        assert diff.changes[0].label == expected


async def _evaluate_constant(case, output: str, *, samples: int):
    import dataclasses

    from tui_eval import evaluate

    return await evaluate(lambda q: output, [dataclasses.replace(case, samples=samples)])
