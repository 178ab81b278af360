"""Is the change between two runs beyond run-to-run variation?

The samples are one value per repetition (a repetition's bandwidth, or its
p99 latency), never the individual transfers: transfers of one repetition
share its state (cache, placement, a slow node) and are not independent
runs. With 3-10 repetitions per run the statistics must be right for small
samples, so a change counts as "changed" only when two independent checks
agree at the chosen confidence:

1. a bootstrap confidence interval of the relative change of the means
   (resampling each run's repetitions, a fixed seed, so the same inputs give
   the same interval) excludes 0. A plain percentile interval is too narrow
   for few samples; it is widened to the width of Welch's t interval
   (Hesterberg's "expanded percentile" interval);
2. a test rejects "no change": the exact Mann-Whitney U test (the
   permutation distribution of the rank sum, ties included) when the
   repetitions allow it to reach the confidence (4 against 4 at 95 %; 3
   against 3 can never go below p = 0.10), else Welch's t test on the
   logarithms (which assumes roughly log-normal noise).

With one repetition in either run there is no noise estimate, and no
verdict beyond saying so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as scipy_stats

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0
POWER = 0.80  # for the repetitions a claim would need
MAX_REPETITIONS = 1000  # beyond this the difference is taken as unresolvable
# Past this many pooled samples the rank test uses the normal approximation.
EXACT_RANK_LIMIT = 60

CHANGED = "changed"
WITHIN_NOISE = "within noise"
NO_ESTIMATE_ONE = "no noise estimate (1 repetition)"
NOT_POSITIVE = "not tested (values not all positive)"

MANN_WHITNEY = "Mann-Whitney U (exact)"
MANN_WHITNEY_NORMAL = "Mann-Whitney U (normal approximation)"
WELCH_LOG = "Welch t on log values"

Samples = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NoiseVerdict:
    """The comparison of one metric's per-repetition values, A against B."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    change_pct: float  # (mean B / mean A - 1) * 100
    ci_low_pct: float  # bootstrap interval of change_pct; NaN without a noise estimate
    ci_high_pct: float
    p_value: float
    test: str  # the test that gave p_value ("" when none ran)
    verdict: str
    reps_needed: int | None  # per run, to resolve the observed change; None: cannot say


def compare_samples(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> NoiseVerdict:
    """Compare per-repetition values of run A and run B (NaN values are dropped)."""
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence {confidence}: must be at least 0.5 and below 1")
    xa, xb = _finite(a), _finite(b)
    if xa.size == 0 or xb.size == 0:
        raise ValueError("each run needs at least one value to compare")
    mean_a, mean_b = float(xa.mean()), float(xb.mean())
    change = (mean_b / mean_a - 1) * 100 if mean_a > 0 else math.nan
    alpha = 1 - confidence
    positive = min(xa.min(), xb.min()) > 0
    needed = repetitions_needed(xa, xb, confidence=confidence) if positive else None
    if min(xa.size, xb.size) < 2 or not positive:
        verdict = NO_ESTIMATE_ONE if min(xa.size, xb.size) < 2 else NOT_POSITIVE
        return NoiseVerdict(xa.size, xb.size, mean_a, mean_b, change, math.nan, math.nan,
                            math.nan, "", verdict, needed)  # fmt: skip
    low, high = bootstrap_change_ci(xa, xb, confidence=confidence, resamples=resamples, seed=seed)
    if rank_test_can_reach(xa.size, xb.size, alpha):
        p_value, test = mann_whitney_p(xa, xb)
    else:
        p_value, test = welch_log_p(xa, xb), WELCH_LOG
    changed = p_value < alpha and (low > 0 or high < 0)
    return NoiseVerdict(
        xa.size, xb.size, mean_a, mean_b, change, low, high, p_value, test,
        CHANGED if changed else WITHIN_NOISE, needed,
    )  # fmt: skip


def bootstrap_change_ci(
    a: Samples,
    b: Samples,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float]:
    """Expanded-percentile bootstrap interval of (mean B / mean A - 1) * 100.

    Each run's values are resampled with replacement, independently. The
    percentiles are taken at a level widened so that the interval is as wide
    as Welch's t interval: the bootstrap spread of a mean is too small by
    sqrt((n-1)/n), and z is too small against t with few degrees of freedom.
    """
    rng = np.random.default_rng(seed)
    means_a = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
    means_b = b[rng.integers(0, b.size, size=(resamples, b.size))].mean(axis=1)
    changes = (means_b / means_a - 1) * 100
    unbiased = a.var(ddof=1) / a.size + b.var(ddof=1) / b.size
    plug_in = a.var(ddof=0) / a.size + b.var(ddof=0) / b.size
    if plug_in == 0:  # every repetition of both runs gave the same value
        point = (b.mean() / a.mean() - 1) * 100
        return float(point), float(point)
    t = float(scipy_stats.t.ppf(1 - (1 - confidence) / 2, welch_df(a, b)))
    expanded_alpha = 2 * float(scipy_stats.norm.sf(t * math.sqrt(unbiased / plug_in)))
    low, high = np.quantile(changes, [expanded_alpha / 2, 1 - expanded_alpha / 2])
    return float(low), float(high)


def welch_df(a: Samples, b: Samples) -> float:
    """Welch-Satterthwaite degrees of freedom (n - 1 of a run when the other has no spread)."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return float(a.size + b.size - 2)
    return float((va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)))


def rank_test_can_reach(n_a: int, n_b: int, alpha: float) -> bool:
    """Whether the exact rank test's smallest two-sided p-value, 2 / C(n_a + n_b, n_a),
    is below ``alpha``: only then can it ever say "changed"."""
    return 2 / math.comb(n_a + n_b, n_a) < alpha


def mann_whitney_p(a: Samples, b: Samples) -> tuple[float, str]:
    """Two-sided Mann-Whitney U p-value and the method that gave it.

    Exact up to EXACT_RANK_LIMIT values in all: the permutation distribution
    of A's rank sum given the observed ties (mid-ranks), counted by dynamic
    programming over the groups of tied values. Beyond, the normal
    approximation with the tie correction.
    """
    pooled = np.concatenate([a, b])
    ranks = scipy_stats.rankdata(pooled)  # mid-ranks for ties
    doubled = np.rint(ranks * 2).astype(np.int64)  # mid-ranks are multiples of 1/2
    observed = int(doubled[: a.size].sum())
    center = a.size * (pooled.size + 1)  # expected doubled rank sum
    if pooled.size > EXACT_RANK_LIMIT:
        return _rank_sum_normal_p(a.size, b.size, pooled, observed / 2), MANN_WHITNEY_NORMAL
    counts = _rank_sum_counts(doubled, a.size)
    sums = np.arange(counts.size)
    extreme = np.abs(sums - center) >= abs(observed - center)
    return float(min(1.0, counts[extreme].sum() / counts.sum())), MANN_WHITNEY


def _rank_sum_counts(doubled_ranks: npt.NDArray[np.int64], n_a: int) -> Samples:
    """counts[s]: the number of ways to pick n_a of the values with doubled rank sum s."""
    values, sizes = np.unique(doubled_ranks, return_counts=True)
    top = int(doubled_ranks.sum()) + 1
    # ways[k, s]: ways to pick k values so far with doubled rank sum s
    ways = np.zeros((n_a + 1, top), dtype=np.float64)
    ways[0, 0] = 1.0
    for rank, size in zip(values.tolist(), sizes.tolist(), strict=True):
        step = np.zeros_like(ways)
        for k in range(min(size, n_a) + 1):
            shift = k * rank
            step[k:, shift:] += math.comb(size, k) * ways[: n_a + 1 - k, : top - shift]
        ways = step
    counts: Samples = ways[n_a]
    return counts


def _rank_sum_normal_p(n_a: int, n_b: int, pooled: Samples, rank_sum: float) -> float:
    n = n_a + n_b
    _, ties = np.unique(pooled, return_counts=True)
    variance = n_a * n_b / 12 * ((n + 1) - float((ties**3 - ties).sum()) / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(rank_sum - n_a * (n + 1) / 2) - 0.5) / math.sqrt(variance)
    return float(min(1.0, 2 * scipy_stats.norm.sf(max(z, 0.0))))


def welch_log_p(a: Samples, b: Samples) -> float:
    """Two-sided Welch t test on the logarithms (a relative change)."""
    la, lb = np.log(a), np.log(b)
    difference = float(lb.mean() - la.mean())
    scale = math.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
    if scale == 0:
        return 1.0 if difference == 0 else 0.0
    t = abs(difference) / scale
    return float(2 * scipy_stats.t.sf(t, welch_df(la, lb)))


def repetitions_needed(
    a: Samples, b: Samples, *, confidence: float = CONFIDENCE, power: float = POWER
) -> int | None:
    """Repetitions per run for a two-sided test at ``confidence`` to detect the
    observed relative change with probability ``power``, given the observed
    spread (the pooled standard deviation of the logarithms, from the runs
    with two or more repetitions). None when there is no spread to go by, no
    change to resolve, or more than MAX_REPETITIONS would be needed.

    An estimate: with few repetitions the spread and the change are
    themselves uncertain.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = abs(math.log(b.mean() / a.mean()))
    logs = [np.log(x) for x in (a, b) if x.size >= 2]
    if not logs or not math.isfinite(shift) or shift == 0:
        return None
    dof = sum(x.size - 1 for x in logs)
    spread = math.sqrt(sum(float(((x - x.mean()) ** 2).sum()) for x in logs) / dof)
    alpha = 1 - confidence
    n = np.arange(2, MAX_REPETITIONS + 1)
    df = 2 * n - 2
    quantiles = scipy_stats.t.ppf(1 - alpha / 2, df) + scipy_stats.t.ppf(power, df)
    enough = np.flatnonzero(quantiles * spread * np.sqrt(2 / n) <= shift)
    return int(n[enough[0]]) if enough.size else None


def _finite(values: npt.ArrayLike) -> Samples:
    array = np.asarray(values, dtype=np.float64).ravel()
    return array[np.isfinite(array)]
