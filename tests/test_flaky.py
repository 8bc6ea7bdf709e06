"""Flaky cases: runs that disagree beyond sampling noise, not a case that once failed."""

from __future__ import annotations

from tui_eval.service.flaky import CaseHistory, RunOutcome


def history(*passed_of: tuple[int, int], threshold: float = 1.0) -> CaseHistory:
    runs = [
        RunOutcome(f"r{i}", float(i), p, n, p / n >= threshold)
        for i, (p, n) in enumerate(passed_of)
    ]
    return CaseHistory("c", runs)


def test_a_case_at_half_over_five_runs_is_flaky():
    assert history((1, 1), (0, 1), (1, 1), (0, 1), (0, 1)).flaky
    assert history((2, 4), (3, 4), (1, 4), (2, 4), (2, 4), threshold=0.5).flaky


def test_stable_cases_are_not_flaky():
    assert not history(*[(0, 1)] * 5).flaky
    assert not history(*[(1, 1)] * 5).flaky
    assert not history(*[(3, 3)] * 5).flaky


def test_a_case_that_regressed_or_was_fixed_is_not_flaky():
    """Newest first: it passed, then a change broke it and it failed every run since. Its
    verdict changed once: a regression (or, read the other way, a fix), not flakiness."""
    assert not history((0, 1), (0, 1), (1, 1)).flaky
    assert not history((0, 1), (0, 1), (0, 1), (1, 1), (1, 1)).flaky
    assert not history((3, 3), (3, 3), (0, 3), (0, 3)).flaky
    assert history((1, 1), (0, 1), (1, 1)).flaky  # back and forth: flaky


def test_one_failure_is_not_enough():
    assert not history((0, 1)).flaky  # one run
    assert not history((1, 1), (0, 1)).flaky  # two runs: too few to tell


def test_describe_counts_flips():
    case = history((1, 1), (0, 1), (1, 1), (0, 1), (0, 1))
    assert case.flips == 3
    assert case.describe() == "5 run(s), newest first: 100% · 0% · 100% · 0% · 0% · 3 flip(s)"
