"""The noise verdict on fixed per-repetition samples: known shifts, equal samples,
one repetition, determinism, the exact rank test, and calibration for small n."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis.stats import noise

BASE = np.array([100.0, 103.0, 97.0, 101.0, 99.0])


def test_a_known_shift_is_changed_and_the_interval_holds_it() -> None:
    result = noise.compare_samples(BASE, BASE * 1.5)
    assert result.verdict == noise.CHANGED
    assert result.change_pct == pytest.approx(50.0)
    assert 0 < result.ci_low_pct <= 50.0 <= result.ci_high_pct
    # complete separation of 5 against 5: the exact two-sided p is 2 / C(10, 5)
    assert result.test == noise.MANN_WHITNEY
    assert result.p_value == pytest.approx(2 / 252)
    assert (result.n_a, result.n_b) == (5, 5)
    assert result.reps_needed == 2  # the shift is ~20 standard deviations


def test_a_drop_is_changed_with_an_interval_below_zero() -> None:
    result = noise.compare_samples(BASE, BASE / 10)
    assert result.verdict == noise.CHANGED
    assert result.ci_high_pct < 0 and result.change_pct == pytest.approx(-90.0)


@pytest.mark.parametrize(
    "b",
    [
        BASE,  # the very same values
        np.array([99.0, 101.0, 100.0, 102.0, 98.0]),  # other values from the same spread
        BASE[::-1] + 0.5,
    ],
)
def test_equal_distributions_are_within_noise(b: np.ndarray) -> None:
    result = noise.compare_samples(BASE, b)
    assert result.verdict == noise.WITHIN_NOISE
    assert result.ci_low_pct < 0 < result.ci_high_pct
    assert result.p_value > 0.05


def test_identical_samples_give_p_one_and_a_zero_interval_around_the_change() -> None:
    result = noise.compare_samples(BASE, BASE)
    assert result.p_value == pytest.approx(1.0)
    assert result.change_pct == 0.0
    assert result.reps_needed is None  # nothing to resolve


def test_one_repetition_gives_no_noise_estimate() -> None:
    result = noise.compare_samples([100.0], [150.0])
    assert result.verdict == noise.NO_ESTIMATE_ONE == "no noise estimate (1 repetition)"
    assert result.change_pct == pytest.approx(50.0)
    assert math.isnan(result.ci_low_pct) and math.isnan(result.p_value) and result.test == ""
    assert result.reps_needed is None  # no spread to go by
    # one side with repetitions: still no verdict, but the spread gives a repetition count
    mixed = noise.compare_samples([100.0], BASE * 1.05)
    assert mixed.verdict == noise.NO_ESTIMATE_ONE
    assert mixed.reps_needed is not None and mixed.reps_needed >= 2


def test_output_is_deterministic_for_a_fixed_seed() -> None:
    a, b = BASE, np.array([104.0, 99.0, 108.0, 101.0, 106.0])
    first, second = noise.compare_samples(a, b), noise.compare_samples(a, b)
    assert first == second
    other_seed = noise.compare_samples(a, b, seed=7)
    assert other_seed.ci_low_pct != first.ci_low_pct  # the seed is what fixes the interval
    assert other_seed.verdict == first.verdict and other_seed.p_value == first.p_value


def test_three_against_three_uses_welch_on_logs() -> None:
    # No rank test of 3 against 3 goes below p = 0.10: Welch's t test decides.
    assert not noise.rank_test_can_reach(3, 3, 0.05)
    assert noise.rank_test_can_reach(4, 4, 0.05)
    assert noise.rank_test_can_reach(3, 3, 0.20)
    far = noise.compare_samples([100.0, 102.0, 98.0], [10.0, 10.5, 9.8])
    assert far.test == noise.WELCH_LOG and far.verdict == noise.CHANGED
    near = noise.compare_samples([100.0, 120.0, 80.0], [110.0, 90.0, 125.0])
    assert near.test == noise.WELCH_LOG and near.verdict == noise.WITHIN_NOISE


def test_interval_is_wider_than_the_plain_percentile_for_few_repetitions() -> None:
    a, b = np.array([100.0, 110.0, 95.0]), np.array([120.0, 104.0, 131.0])
    low, high = noise.bootstrap_change_ci(a, b)
    rng = np.random.default_rng(noise.SEED)
    means_a = a[rng.integers(0, 3, size=(noise.RESAMPLES, 3))].mean(axis=1)
    means_b = b[rng.integers(0, 3, size=(noise.RESAMPLES, 3))].mean(axis=1)
    plain_low, plain_high = np.quantile((means_b / means_a - 1) * 100, [0.025, 0.975])
    assert low < plain_low and high > plain_high


def _brute_force_p(a: np.ndarray, b: np.ndarray) -> float:
    pooled = np.concatenate([a, b])
    order = pooled.argsort(kind="stable")
    ranks = np.empty(pooled.size)
    ranks[order] = np.arange(1, pooled.size + 1)
    for value in np.unique(pooled):  # mid-ranks for ties
        ranks[pooled == value] = ranks[pooled == value].mean()
    center = a.size * (pooled.size + 1) / 2
    observed = abs(ranks[: a.size].sum() - center)
    sums = [ranks[list(c)].sum() for c in itertools.combinations(range(pooled.size), a.size)]
    return sum(abs(s - center) >= observed - 1e-9 for s in sums) / len(sums)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]),
        ([1.0, 5.0, 3.0], [2.0, 4.0, 6.0, 7.0]),
        ([1.0, 1.0, 2.0, 3.0], [2.0, 2.0, 3.0, 4.0, 4.0]),  # ties across the runs
        ([5.0, 5.0, 5.0], [5.0, 5.0, 6.0]),
        ([3.0, 1.0, 2.0, 2.0, 7.0, 1.0], [2.0, 9.0, 8.0, 2.0, 6.0]),
    ],
)
def test_exact_rank_test_matches_enumerating_every_split(a: list[float], b: list[float]) -> None:
    xa, xb = np.array(a), np.array(b)
    p_value, method = noise.mann_whitney_p(xa, xb)
    assert method == noise.MANN_WHITNEY
    assert p_value == pytest.approx(_brute_force_p(xa, xb), abs=1e-12)


def test_many_values_use_the_normal_approximation() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 5, 40), rng.normal(100, 5, 40)
    p_value, method = noise.mann_whitney_p(a, b)
    assert method == noise.MANN_WHITNEY_NORMAL and 0 < p_value <= 1


def test_repetitions_needed_grow_with_spread_and_shrink_with_the_change() -> None:
    tight, loose = BASE, 100 + (BASE - 100) * 5
    small = noise.repetitions_needed(tight, tight * 1.05)
    assert small is not None
    wider = noise.repetitions_needed(loose, loose * 1.05)
    assert wider is not None and wider > small
    bigger_change = noise.repetitions_needed(loose, loose * 1.3)
    assert bigger_change is not None and bigger_change < wider
    assert noise.repetitions_needed(loose, loose * 1.0001) is None  # beyond the cap


def test_values_that_are_not_positive_are_not_tested() -> None:
    result = noise.compare_samples([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    assert result.verdict == noise.NOT_POSITIVE and math.isnan(result.p_value)


def test_bad_confidence_and_empty_samples_are_errors() -> None:
    with pytest.raises(ValueError, match="confidence"):
        noise.compare_samples(BASE, BASE, confidence=1.0)
    with pytest.raises(ValueError, match="at least one value"):
        noise.compare_samples([math.nan], BASE)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_equal_runs_read_changed_at_most_at_the_chosen_rate(n: int) -> None:
    """Calibration on seeded log-normal samples (10 % spread, a common shape of
    benchmark noise): 'changed' between equal distributions stays near or below
    5 %. The plain bootstrap interval alone would say so in 30 % of pairs at n=2."""
    rng = np.random.default_rng(2024 + n)
    trials = 300
    changed = sum(
        noise.compare_samples(
            rng.lognormal(0, 0.1, n) * 100, rng.lognormal(0, 0.1, n) * 100, resamples=1000
        ).verdict
        == noise.CHANGED
        for _ in range(trials)
    )
    assert changed <= 0.05 * trials
