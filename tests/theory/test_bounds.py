"""Closed forms: bounds hold, are tight where the theory says, and reject bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from stylized.theory import bounds


def test_far_mass_bound_equality_configuration():
    K, M, lam = 7, 300, 1.3
    logits = np.r_[np.full(K, lam), np.full(M, -lam)]
    rho = np.exp(special.logsumexp(logits[K:]) - special.logsumexp(logits))
    assert rho == pytest.approx(bounds.far_mass_lower_bound(K, M, lam), rel=1e-13)


def test_far_mass_bound_extremes_do_not_overflow():
    assert bounds.far_mass_lower_bound(8, 1e9, 0.0) == pytest.approx(1e9 / (1e9 + 8))
    assert bounds.far_mass_lower_bound(8, 100, 1e6) == 0.0
    assert bounds.far_mass_lower_bound(0, 100, 1.0) == 1.0
    assert bounds.far_mass_lower_bound(8, 0, 1.0) == 0.0
    with pytest.raises(ValueError, match="lam"):
        bounds.far_mass_lower_bound(8, 10, float("nan"))


def test_lambda_required_is_the_crossing_point():
    K, M, eps = 16, 65536 - 16, 0.05
    lam = bounds.lambda_required(K, M, eps)
    assert bounds.far_mass_lower_bound(K, M, lam) == pytest.approx(eps, rel=1e-12)
    assert bounds.far_mass_lower_bound(K, M, lam * 0.99) > eps


def test_alibi_far_sum_is_the_geometric_series():
    lam, m, D = 2.0, 0.3, 5
    direct = sum(math.exp(lam - m * n) for n in range(D, 5000))
    assert bounds.alibi_far_sum(lam, m, D) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("d", [2, 3, 8, 64])
def test_exact_haar_tail_matches_density_integral(d):
    """P(s ≥ t) from the Beta law equals ∫_t^1 c_d (1 − s²)^{(d−3)/2} ds."""
    c = special.gamma(d / 2) / (math.sqrt(math.pi) * special.gamma((d - 1) / 2))
    for t in (0.0, 0.1, 0.4, 0.8):
        val, _ = integrate.quad(lambda s: c * (1 - s * s) ** ((d - 3) / 2), t, 1)
        assert bounds.haar_coordinate_tail(t, d) == pytest.approx(val, rel=1e-7, abs=1e-12)


def test_exact_tail_equals_incomplete_beta_form():
    d, t = 16, 0.3
    assert bounds.haar_coordinate_tail(t, d) == pytest.approx(0.5 * special.betainc((d - 1) / 2, 0.5, 1 - t * t))


@pytest.mark.parametrize("d", [4, 16, 128, 768])
def test_levy_bound_holds(d):
    t = np.linspace(0.0, 0.999, 200)
    assert np.all(bounds.haar_coordinate_tail(t, d) <= bounds.levy_tail(t, d))


@pytest.mark.parametrize("c", [1.0, 2.0, 3.0])
def test_levy_bound_tight_on_the_sqrt_d_scale(c):
    """At t = c/√d the ratio bound/exact converges to e^{−c²/2}/Q(c) (Gaussian limit): a constant, not growing with d."""
    from scipy import stats

    limit = math.exp(-c * c / 2) / stats.norm.sf(c)
    ratios = [bounds.levy_tail(c / math.sqrt(d), d) / bounds.haar_coordinate_tail(c / math.sqrt(d), d) for d in (64, 768, 10**5)]
    assert all(r >= 1 for r in ratios)
    assert ratios[-1] == pytest.approx(limit, rel=1e-3)


def test_hoeffding_bound_holds_for_uniform_phases():
    a = np.array([0.5, 0.3, 0.2, 0.1])
    rng = np.random.default_rng(0)
    s = np.cos(rng.uniform(0, 2 * np.pi, (200000, 4))) @ a
    for t in (0.2, 0.4, 0.6):
        # seeded; bound is far above the estimate + its 99.9% Wilson margin
        p = (s >= t).mean()
        assert p <= bounds.hoeffding_tail(t, a)


def test_chi_power_correlation_and_windows():
    chi = np.array([0.9, 0.5 + 0.2j])
    assert bounds.chi_power_correlation(chi, 3) == pytest.approx(np.mean(np.real(chi**3)))
    assert bounds.mixing_window(0.5, 0.01) == 7
    with pytest.raises(ValueError, match="gamma"):
        bounds.mixing_window(1.5, 0.1)


def test_alibi_far_mass_bound_and_horizon_live_in_bounds():
    lam, m, D = 3.0, 0.2, 4
    S = bounds.alibi_far_sum(lam, m, D)
    zmin = math.exp(lam) + sum(math.exp(-lam - m * n) for n in range(1, D))
    assert bounds.alibi_far_mass_bound(lam, m, D) == S / (S + zmin)
    assert bounds.horizon_prediction(10.0, 2.0, 4) == 9.0


def test_each_closed_form_has_one_implementation():
    """Regression (issue 16): ``haar_mgf`` existed twice with different formulas; the public index names the one object."""
    from stylized import theory
    from stylized.theory import score_laws, weight_laws

    assert score_laws.haar_mgf is theory.haar_mgf is weight_laws.haar_mgf
    assert theory.alibi_far_mass_bound is bounds.alibi_far_mass_bound
    assert theory.horizon_prediction is bounds.horizon_prediction
    for name in theory.__all__:
        assert getattr(theory, name) is not None
