"""The statistics behind comparisons, against values computed elsewhere (SciPy/statsmodels
results copied in as constants) or by hand."""

from __future__ import annotations

import pytest

from tui_eval import Report
from tui_eval.core.results import CaseResult, SampleResult
from tui_eval.stats.proportions import (
    holm,
    paired_test,
    pass_hat_k,
    samples_needed,
    t975,
    wilson_interval,
)


def case(name: str, outcomes: str) -> CaseResult:
    samples = [
        SampleResult(name, i, "passed" if o == "p" else "failed") for i, o in enumerate(outcomes)
    ]
    return CaseResult(name, samples, planned=len(samples))


def test_known_values():
    # statsmodels.stats.proportion.proportion_confint(2, 3, method="wilson")
    assert wilson_interval(2, 3) == pytest.approx((0.20765, 0.93849), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # statsmodels.stats.multitest.multipletests([0.01, 0.04, 0.03], method="holm")
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # scipy.stats.t.ppf(0.975, df)
    assert t975(1) == pytest.approx(12.706, abs=1e-3) and t975(10) == pytest.approx(2.228, abs=1e-3)
    # Fisher's exact test, 0.9 vs 0.6, α = 0.05 two-sided: power 0.8004 at 36 a side, 0.785
    # at 35 (enumerated with scipy.stats.fisher_exact and binom.pmf).
    assert samples_needed(0.9, 0.6) == 36 and samples_needed(0.5, 0.5) is None
    # Exact sign-flip test: five equal differences, all one way: 2 of 32 patterns as extreme.
    assert paired_test([0.5] * 5)[0] == pytest.approx(2 / 32)
    assert paired_test([0.0, 0.0])[0] == 1.0


def test_pass_hat_k_is_the_chance_that_k_samples_all_pass():
    assert pass_hat_k(5, 3, 2) == pytest.approx(0.3)  # C(3,2)/C(5,2)
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(3, 2, 4)
    flaky = case("flaky", "ppfp")
    assert flaky.pass_hat_k(2) == pytest.approx(0.5) and flaky.pass_at_k(2) == 1.0
    report = Report("r", [flaky, case("solid", "pppp")])
    assert report.pass_hat_k(2) == pytest.approx(0.75)


def test_report_intervals():
    report = Report("r", [case("a", "pppp"), case("b", "pfpf"), case("c", "ffff")])
    assert report.pass_rate_ci == pytest.approx(wilson_interval(1, 3))
    assert report.sample_pass_rate == pytest.approx(0.5)
    low, high = report.sample_pass_rate_ci
    # mean 0.5, sd 0.5, n 3: 0.5 ± 4.303 · 0.5/√3, clipped to 0..1
    assert (low, high) == (0.0, 1.0)
    wide = Report("r", [case(str(i), "pppf" if i % 2 else "pppp") for i in range(20)])
    low, high = wide.sample_pass_rate_ci
    assert low < wide.sample_pass_rate < high and high - low < 0.15


def test_every_compared_case_has_a_labelled_change():
    before = Report("r", [case("flip", "p"), case("steady", "pppp"), case("broke", "pppppppp")])
    after = Report("r", [case("flip", "f"), case("steady", "pppp"), case("broke", "ffffffff")])
    diff = after.compare(before)
    labels = {c.name: c.label for c in diff.changes}
    assert set(labels) == {"flip", "steady", "broke"}
    assert labels["flip"] == "too few samples"  # one sample each side proves nothing
    assert labels["broke"] == "significant" and labels["steady"] == "noise"
    flip = next(c for c in diff.changes if c.name == "flip")
    assert flip.samples_needed is not None and flip.samples_needed > 1
    assert diff.delta == pytest.approx((-1.0 + 0.0 - 1.0) / 3)
    assert diff.delta_ci[0] < diff.delta < diff.delta_ci[1]
    assert 0.0 < diff.p_value <= 1.0
    # The verdict lists keep the seed's meaning.
    assert [c.name for c in diff.regressions] == ["flip", "broke"] and not diff.ok


# -- run until decided ---------------------------------------------------------------------
import random  # noqa: E402

from tui_eval import Case, compare_agents, contains, decide  # noqa: E402
from tui_eval.stats.case_decisions import simulate_pairs  # noqa: E402


def seeded_agent(p: float, seed: int):
    """An agent that answers right with probability `p` (deterministic for a seed)."""
    rng = random.Random(seed)

    async def agent(question: str) -> str:
        return "ok" if rng.random() < p else "no"

    return agent


def baseline_of(name: str, passed: int, total: int) -> Report:
    return Report("b", [case(name, "p" * passed + "f" * (total - passed))])


@pytest.mark.anyio
async def test_compare_agents_finds_a_real_drop_and_stops_early():
    diff = await compare_agents(
        seeded_agent(0.9, 1), seeded_agent(0.6, 2), [Case("q", checks=[contains("ok")])]
    )
    (change,) = diff.changes
    assert change.label == "regression" and change.decided
    assert change.current_total < 100  # decided before the budget
    assert diff.delta < 0


@pytest.mark.anyio
async def test_decide_says_when_the_baseline_caps_what_can_be_shown():
    diff = await decide(
        seeded_agent(0.5, 3),
        [Case("q", checks=[contains("ok")])],
        baseline_of("q", 1, 1),
        max_samples=10,
        alpha=0.01,
    )
    (change,) = diff.changes
    assert change.label == "undecided: baseline too small" and not change.decided


@pytest.mark.anyio
async def test_decide_regression_and_no_regression():
    broken = await decide(
        seeded_agent(0.3, 4), [Case("q", checks=[contains("ok")])], baseline_of("q", 20, 20)
    )
    assert broken.changes[0].label == "regression"
    fine = await decide(
        seeded_agent(1.0, 5), [Case("q", checks=[contains("ok")])], baseline_of("q", 40, 40)
    )
    assert fine.changes[0].label == "no regression" and fine.changes[0].decided
    capped = await decide(
        seeded_agent(0.85, 6),
        [Case("q", checks=[contains("ok")])],
        baseline_of("q", 9, 10),
        max_samples=10,
    )
    assert capped.changes[0].label == "undecided: budget"
    # max_samples counts the first samples; sampling stops once no outcome of the
    # remaining budget could decide it.
    assert capped.changes[0].current_total <= 10
    assert "samples would" in capped.changes[0].hint


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8, 0.95])
def test_an_aa_run_is_called_a_regression_at_most_alpha_of_the_time(p):
    """Looked at after every batch, as decide() does (bench/decide_sim.py runs 1,000+)."""
    rng = random.Random(int(p * 100))
    trials = 200
    false = sum(simulate_pairs(p, p, rng)[0] == "regression" for _ in range(trials))
    assert false / trials <= 0.05


def test_a_real_drop_is_detected_within_the_budget():
    rng = random.Random(7)
    outcomes = [simulate_pairs(0.9, 0.6, rng) for _ in range(100)]
    detected = [n for label, n in outcomes if label == "regression"]
    assert len(detected) / len(outcomes) >= 0.8


# -- round two: power, futility, intervals that never collapse ------------------------------
from tui_eval.stats.case_decisions import judge_against_baseline, judge_pairs, simulate_decide  # noqa: E402
from tui_eval.stats.proportions import (  # noqa: E402
    Z975,
    clustered_rate_interval,
    fisher_power,
)


def test_decide_finds_a_drop_against_a_30_sample_baseline():
    """0.9 → 0.6, a 30-sample baseline, 100 samples: 95.6% in bench/decide_sim.py's 1,000
    runs (the e-process it replaced: 78%)."""
    rng = random.Random(11)
    labels = [simulate_decide(0.9, 0.6, rng)[0] for _ in range(60)]
    assert labels.count("regression") / len(labels) >= 0.85


@pytest.mark.slow  # 60 simulated A/A runs looked at 60 times each: .ci/run runs it
def test_decide_aa_looked_at_after_every_sample_stays_under_alpha():
    rng = random.Random(12)
    trials = 60
    false = sum(
        simulate_decide(0.8, 0.8, rng, batch=1, max_samples=60)[0] == "regression"
        for _ in range(trials)
    )
    assert false / trials <= 0.05


def test_baseline_too_small_only_when_no_outcome_could_decide():
    rng = random.Random(13)
    labels = [simulate_decide(0.9, 0.7, rng, baseline_total=100)[0] for _ in range(30)]
    assert labels.count("undecided: baseline too small") == 0
    one = judge_against_baseline(1, 1, [True, False], alpha=0.01, horizon=10)
    assert one.label == "undecided: baseline too small" and "baseline of" in one.hint
    # With 100 samples, a current agent failing nearly all of them would be a regression
    # even against a 1/1 baseline: not "baseline too small", whatever the point estimate.
    wider = judge_against_baseline(1, 1, [True, False], alpha=0.05, horizon=100)
    assert wider.label == "undecided"


def test_a_case_that_never_passed_cannot_regress():
    verdict = judge_against_baseline(0, 1, [True] * 30, alpha=0.05)
    assert verdict.label == "no regression" and verdict.decided


def test_intervals_never_collapse():
    assert clustered_rate_interval([1.0, 1.0, 1.0], [5, 5, 5])[0] < 1.0
    assert clustered_rate_interval([0.0], [3])[1] > 0.0
    p, low, high = paired_test([-0.2] * 5, [0.02] * 5)
    assert low < high and p == pytest.approx(0.0625)
    p, low, high = paired_test([-0.2] * 20, [0.02] * 20)
    assert 0 < p < 0.05 and low < -0.2 < high < 0


def test_sample_rate_interval_covers_at_five_by_five():
    rng = random.Random(14)
    covered = 0
    for _ in range(2000):
        rates = [sum(rng.random() < 0.95 for _ in range(5)) / 5 for _ in range(5)]
        low, high = clustered_rate_interval(rates, [5] * 5)
        covered += low <= 0.95 <= high
    assert covered / 2000 >= 0.93


def test_delta_ci_excludes_zero_exactly_when_p_is_below_005():
    rng = random.Random(15)
    for _ in range(200):
        n = rng.choice([2, 3, 5, 9, 16, 17, 30])
        differences = [rng.choice([-1.0, -0.5, -0.2, 0.0, 0.0, 0.2, 0.4]) for _ in range(n)]
        p, low, high = paired_test(differences, [0.01] * n)
        assert (p < 0.05) == (not low <= 0.0 <= high)
        assert low < high


def test_samples_needed_has_the_power_it_promises():
    for p1, p2, alpha in [
        (0.9, 0.6, 0.05),
        (1.0, 0.0, 0.05),
        (0.8, 0.5, 0.05 / 3),
        (0.7, 0.3, 0.01),
    ]:
        n = samples_needed(p1, p2, alpha=alpha)
        assert n is not None and fisher_power(p1, p2, n, alpha) >= 0.78
    assert samples_needed(1.0, 0.0) == 4  # 4/4 vs 0/4: p = 2/70 < 0.05; 3 a side cannot


def test_decision_table_aligns_wide_case_names(capsys):
    from rich.cells import cell_len

    from tui_eval.cli.outcomes import print_decisions as _print_decisions
    from tui_eval.report.diff import CaseChange, Diff

    changes = [
        CaseChange("日本語の質問", 9, 10, 3, 10, 0.01, label="regression", decided=True),
        CaseChange("ascii", 9, 10, 9, 10, 1.0, label="undecided: budget", hint="~400 samples"),
    ]
    _print_decisions("suite", Diff(changes=changes))
    rows = [line for line in capsys.readouterr().out.splitlines() if "→" in line][-2:]
    starts = [
        cell_len(row[: row.index(label)])
        for row, label in zip(rows, ["regression", "undecided"], strict=False)
    ]
    assert starts[0] == starts[1]
    assert "(~400 samples)" in rows[1]


@pytest.mark.slow  # 300 simulated decisions: .ci/run runs it
def test_decide_detects_the_issue_25_drop_for_one_case():
    """One case, 0.9 → 0.6, 30-sample baseline, 100 samples, seeded: issue 25 asks for
    ≥ 80%; the regression test's exact figure is 96.0%, so this guards at 90% (the e-process
    it replaced found 78–82%)."""
    rng = random.Random(25)
    labels = [simulate_decide(0.9, 0.6, rng)[0] for _ in range(300)]
    assert labels.count("regression") / len(labels) >= 0.9


@pytest.mark.slow  # 300 simulated decisions: .ci/run runs it
def test_decide_detects_the_issue_25_drop_among_20_cases():
    """The regressed case of 20 (19 unchanged) is tested at α/20 (Bonferroni; the others
    do not change its test): issue 25 asks for ≥ 60% (exact figure: 68.6%)."""
    rng = random.Random(2520)
    labels = [simulate_decide(0.9, 0.6, rng, alpha=0.05 / 20)[0] for _ in range(300)]
    assert labels.count("regression") / len(labels) >= 0.6


def test_betting_on_a_payoff_n_times_at_once_is_betting_on_it_n_times():
    """`judge_pairs` bets once per value of the pairs' difference; the wealth (and so the
    verdict) is that of betting pair by pair, in order."""
    from tui_eval.stats.case_decisions import EProcess

    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 120)
        a = [rng.random() < 0.8 for _ in range(n)]
        b = [rng.random() < rng.choice([0.5, 0.8, 0.95]) for _ in range(n)]
        differences = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
        one_by_one = EProcess(low=-1.0, high=1.0)
        for d in differences:
            one_by_one.update(d)
        at_once = EProcess(low=-1.0, high=1.0)
        for d in (-1.0, 0.0, 1.0):
            at_once.update(d, times=differences.count(d))
        assert at_once.wealth == pytest.approx(one_by_one.wealth, rel=1e-9)
        if one_by_one.wealth >= 20 * 1.001:
            assert judge_pairs(a, b, alpha=0.05).label == "regression"


def test_an_undecided_pair_says_roughly_what_budget_would_decide_it():
    verdict = judge_pairs([True, False] * 5, [True, False] * 5, alpha=0.05)
    assert verdict.label == "undecided" and "samples a side would" in verdict.hint


# -- round three: the sample-rate interval with one or two samples a case --------------------
def _coverage(cases: int, per_case: int, p: float) -> float:
    """The exact chance that `clustered_rate_interval` covers p when every case runs
    `per_case` independent samples at rate p (every split of the cases by passed count,
    weighted by its multinomial probability)."""
    import itertools
    import math

    weights = [
        math.comb(per_case, k) * p**k * (1 - p) ** (per_case - k) for k in range(per_case + 1)
    ]
    covered = 0.0
    for split in itertools.product(range(cases + 1), repeat=per_case):
        if sum(split) > cases:
            continue
        counts = [*split, cases - sum(split)]
        chance = math.factorial(cases)
        for k, count in enumerate(counts):
            chance = chance / math.factorial(count) * weights[k] ** count
        rates = [k / per_case for k, count in enumerate(counts) for _ in range(count)]
        low, high = clustered_rate_interval(rates, [per_case] * cases)
        covered += chance * (low <= p <= high)
    return covered


@pytest.mark.parametrize(
    ("cases", "per_case", "p"), [(10, 1, 0.67), (50, 1, 0.94), (10, 2, 0.83), (20, 2, 0.92)]
)
def test_the_sample_rate_interval_covers_with_one_or_two_samples_a_case(cases, per_case, p):
    """Where the symmetric t interval covered 0.85–0.87 (computed exactly, not simulated),
    the interval holds Wilson's on the same samples, which covers at least 0.93 there."""
    assert _coverage(cases, per_case, p) >= 0.93


def test_the_sample_rate_interval_is_never_narrower_than_independent_samples():
    rng = random.Random(38)
    for _ in range(3000):
        cases = rng.randint(1, 40)
        per_case = rng.randint(1, 6)
        p = rng.random()
        passed = [sum(rng.random() < p for _ in range(per_case)) for _ in range(cases)]
        low, high = clustered_rate_interval([k / per_case for k in passed], [per_case] * cases)
        wilson_low, wilson_high = wilson_interval(sum(passed), cases * per_case, z=Z975)
        assert low <= wilson_low + 1e-12 and high >= wilson_high - 1e-12


def _fisher_power_by_definition(p1: float, p2: float, n: int, alpha: float) -> float:
    """The power of the two-sided Fisher test (as `fisher_exact`) by enumeration: given
    the total passed, the tables that are least likely are rejected while their combined
    chance stays below α (ties within 1e-7 together)."""
    import math

    binom1 = [math.comb(n, k) * p1**k * (1 - p1) ** (n - k) for k in range(n + 1)]
    binom2 = [math.comb(n, k) * p2**k * (1 - p2) ** (n - k) for k in range(n + 1)]
    power = 0.0
    for total in range(2 * n + 1):
        low, high = max(0, total - n), min(n, total)
        weights = [math.comb(n, x) * math.comb(n, total - x) for x in range(low, high + 1)]
        denom = sum(weights)
        ordered = sorted(weights)
        cutoff, tail, i = -1.0, 0.0, 0
        while i < len(ordered):
            j = i
            while j < len(ordered) and ordered[j] <= ordered[i] * (1 + 1e-7):
                tail += ordered[j]
                j += 1
            if tail / denom >= alpha:
                break
            cutoff = ordered[j - 1]
            i = j
        if cutoff >= 0:
            power += sum(
                binom1[low + j] * binom2[total - low - j]
                for j in range(len(weights))
                if weights[j] <= cutoff * (1 + 1e-7)
            )
    return power


def test_fisher_power_is_the_enumerated_power():
    rng = random.Random(42)
    for _ in range(400):
        n = rng.choice([1, 2, 3, 5, 8, 13, 30, 64, 120])
        p1 = rng.choice([0.0, 1.0, 0.5, rng.random()])
        p2 = rng.random()
        alpha = rng.choice([0.05, 0.01, 0.05 / 3, 0.05 / 200, 0.2])
        expected = _fisher_power_by_definition(p1, p2, n, alpha)
        assert fisher_power(p1, p2, n, alpha) == pytest.approx(expected, rel=1e-9, abs=1e-12)
