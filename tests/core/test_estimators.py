"""Estimators: interval coverage (seeded simulation), Wilson/Clopper–Pearson, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stylized.core.estimators import bonferroni_level, mean_ci, mean_ci_from_moments, proportion_ci


def test_mean_ci_coverage_is_near_nominal():
    """2000 seeded replications of n=30 normals: coverage of the 95% t-interval within its binomial 99.9% band."""
    rng = np.random.default_rng(0)
    reps = 2000
    hits = sum(mean_ci(rng.normal(1.0, 2.0, 30)).contains(1.0) for _ in range(reps))
    lo, hi = stats.binom.ppf([0.0005, 0.9995], reps, 0.95)
    assert lo <= hits <= hi


def test_streamed_moments_equal_direct():
    x = np.random.default_rng(1).random(1000)
    a, b = mean_ci(x), mean_ci_from_moments(x.sum(), (x * x).sum(), x.size)
    assert a.estimate == pytest.approx(b.estimate) and a.ci_low == pytest.approx(b.ci_low)


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
def test_proportion_ci_contains_estimate_and_edges(method):
    e = proportion_ci(0, 50, method=method)
    assert e.ci_low == 0.0 and 0 < e.ci_high < 0.1
    e = proportion_ci(50, 50, method=method)
    assert e.ci_high == 1.0 and e.ci_low > 0.9
    e = proportion_ci(7, 100, method=method)
    assert e.ci_low < 0.07 < e.ci_high


def test_bad_input():
    with pytest.raises(ValueError, match="k ≤ n"):
        proportion_ci(5, 3)
    with pytest.raises(ValueError, match="level"):
        mean_ci([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="NaN"):
        mean_ci([1.0, np.nan])
    with pytest.raises(ValueError, match="method"):
        proportion_ci(1, 3, method="exact")
    assert bonferroni_level(0.95, 10) == pytest.approx(0.995)


def test_contains_with_rounding_tolerance():
    from stylized.core.estimators import Estimate, rounding_tolerance

    e = Estimate(1.0, 1.0, 1.0, 4000)  # zero-variance row: every sample equals qᵀq
    theory = 0.9999999999999999  # the same qᵀq summed in another order
    assert not e.contains(theory)  # exact comparison (the default) is unchanged
    tol = rounding_tolerance(theory, 10 + 4000)
    assert e.contains(theory, tol) and tol < 1e-11
    assert not e.contains(1.0 - 1e-9, tol)  # a real difference is not hidden
    assert rounding_tolerance(-2.0, 0, ulps=1) == 2.0 * 2.0**-53
    with pytest.raises(ValueError, match="n_terms"):
        rounding_tolerance(1.0, -1)
