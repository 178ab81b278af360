"""How often `benchfs compare` says "changed": between runs drawn from one
distribution (should be <= 5 % at 95 %) and after a real shift (the power), per
repetition count, beside the bootstrap interval alone.

Seeded samples of typical benchmark noise shapes; no cluster needed, and the
same command prints the same table (docs/ANALYSIS.md quotes it).

    python benchmarks/compare_calibration.py [--trials 1000] [--shift 1.3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from analysis.stats import noise

Noise = Callable[[np.random.Generator, int], np.ndarray]
SHAPES: dict[str, Noise] = {
    "log-normal 10 %": lambda rng, n: rng.lognormal(0, 0.1, n) * 100,
    "log-normal 30 %": lambda rng, n: rng.lognormal(0, 0.3, n) * 100,
    "normal 10 %": lambda rng, n: rng.normal(100, 10, n),
    "20 % outliers (3x)": lambda rng, n: (
        np.where(rng.random(n) < 0.2, 300.0, 100.0) * rng.lognormal(0, 0.05, n)
    ),
}


def rates(shape: Noise, n: int, shift: float, trials: int, seed: int) -> tuple[float, float]:
    """Share of trials with verdict 'changed', and with the interval alone excluding 0."""
    rng = np.random.default_rng(seed)
    changed = interval = 0
    for trial in range(trials):
        result = noise.compare_samples(
            shape(rng, n), shape(rng, n) * shift, resamples=2000, seed=trial
        )
        changed += result.verdict == noise.CHANGED
        interval += result.ci_low_pct > 0 or result.ci_high_pct < 0
    return changed / trials, interval / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--shift", type=float, default=1.3)
    parser.add_argument("--repetitions", type=int, nargs="+", default=[2, 3, 4, 5, 10])
    options = parser.parse_args()
    print(f"| repetitions per run | noise | 'changed', equal runs | interval alone, equal runs "
          f"| 'changed', x{options.shift:g} |")  # fmt: skip
    print("|---|---|---|---|---|")
    for n in options.repetitions:
        for index, (name, shape) in enumerate(SHAPES.items()):
            null, null_interval = rates(shape, n, 1.0, options.trials, seed=index)
            power, _ = rates(shape, n, options.shift, options.trials, seed=100 + index)
            print(f"| {n} | {name} | {null:.1%} | {null_interval:.1%} | {power:.1%} |")


if __name__ == "__main__":
    main()
