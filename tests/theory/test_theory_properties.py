"""Hypothesis property tests of every closed form in :mod:`stylized.theory` (``pytest -m property``).

For each formula: limits (``λ → 0``, ``γ → 0``, ``M → ∞`` giving the Bessel floor, ``d → ∞``), monotonicity,
inverse pairs (``lambda_required`` ↔ the far-mass bound), broadcasting equal to the scalar loop, and
agreement with a small independent Monte Carlo at random parameters.

Monte Carlo level: each Monte Carlo property test runs ``MC_EXAMPLES`` parameter draws, each an interval
at confidence ``1 − LEVEL/(2·MC_EXAMPLES)`` (Bonferroni with a factor-2 margin), so a correct formula fails
a test with probability ≤ ``LEVEL`` = 1%.  ``python tests/theory/test_theory_properties.py`` measures the false-alarm rate over 200 seeds.
Examples are derandomised, so the suite is reproducible.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from stylized import theory as th
from stylized.core.estimators import mean_ci, proportion_ci
from stylized.laws.families import make_family

pytestmark = pytest.mark.property

LEVEL = 0.01  # family-wise false-alarm level of each Monte Carlo property test
MC_EXAMPLES = 10  # parameter draws per Monte Carlo test
# confidence of each draw's interval: Bonferroni over the draws, with a factor-2 margin because far in the tail
# the Student-t interval under-covers (measured over 200 seeds x 10 draws: |z| > 3.29 in 0.15-0.25% of draws
# instead of 0.1%, although z has mean 0.0 and sd 1.0); see ``false_alarm_rates``
EX_LEVEL = 1.0 - LEVEL / (2 * MC_EXAMPLES)

FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
MC = settings(max_examples=MC_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

pos = st.floats(0.0, 50.0)
counts = st.integers(1, 10**9)
lams = st.floats(0.0, 20.0)
eps01 = st.floats(1e-6, 1 - 1e-6)
dims = st.integers(2, 512)


def _seed(*params, base: int = 0) -> int:
    return zlib.crc32(repr((base, *params)).encode())


def _sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    g = rng.standard_normal((n, d))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


# ------------------------------------------------------------------------------------------
# Monte Carlo references (independent samplers: normalised Gaussians, uniform phases)
# ------------------------------------------------------------------------------------------
def mc_haar_mgf(lam: float, d: int, seed: int, level: float = EX_LEVEL, n: int = 20_000):
    """``E e^{λ u_1}`` for ``u`` uniform on ``S^{d−1}``: (interval, closed form)."""
    u = _sphere(np.random.default_rng(seed), n, d)[:, 0]
    return mean_ci(np.exp(lam * u), level), th.haar_mgf(lam, d)


def mc_uniform_phase_mgf(lam: float, a: tuple, seed: int, level: float = EX_LEVEL, n: int = 20_000):
    """``E e^{λ Σ_b a_b cos U_b}``: (interval, closed form)."""
    U = np.random.default_rng(seed).uniform(0, 2 * np.pi, (n, len(a)))
    return mean_ci(np.exp(lam * np.cos(U) @ np.asarray(a)), level), th.uniform_phase_mgf(lam, a)


def mc_haar_tail(t: float, d: int, seed: int, level: float = EX_LEVEL, n: int = 20_000):
    """``P(u_1 ≥ t)``: (Wilson interval, closed form)."""
    u = _sphere(np.random.default_rng(seed), n, d)[:, 0]
    return proportion_ci(int(np.sum(u >= t)), n, level), float(th.haar_coordinate_tail(t, d))


def mc_tilt_energy(d: int, lam: float, M: int, seed: int, level: float = EX_LEVEL, n: int = 4_000):
    """``E||Σ_n ᾱ_n u_n||²``, ``u_n`` i.i.d. uniform, ``ᾱ_n ∝ e^{λ u_{n,1}}``: (interval, closed form)."""
    u = _sphere(np.random.default_rng(seed), n * M, d).reshape(n, M, d)
    w = np.exp(lam * (u[..., 0] - u[..., 0].max(axis=1, keepdims=True)))
    F = np.einsum("tm,tmd->td", w / w.sum(axis=1, keepdims=True), u)
    return mean_ci(np.sum(F * F, axis=1), level), th.haar_tilt_energy(d, lam, M)[0]


def mc_forget_gate(gate: float, sd: float, seed: int, level: float = EX_LEVEL, n: int = 20_000):
    """``E σ(g)``, ``g ~ N(gate, sd²)``: (interval, closed form)."""
    g = np.random.default_rng(seed).normal(gate, sd, n)
    return mean_ci(special.expit(g), level), th.forget_gate_mean(gate, sd)


MC_CASES = {  # name: (sampler, parameter draw from a numpy Generator) for the false-alarm measurement
    "haar_mgf": (mc_haar_mgf, lambda r: (float(r.uniform(0, 3)), int(r.integers(2, 65)))),
    "uniform_phase_mgf": (mc_uniform_phase_mgf, lambda r: (float(r.uniform(0, 3)),
                                                           tuple(r.uniform(0.05, 0.6, int(r.integers(1, 6)))))),
    "haar_coordinate_tail": (mc_haar_tail, lambda r: (float(r.uniform(0, 0.5)), int(r.integers(2, 65)))),
    "haar_tilt_energy": (mc_tilt_energy, lambda r: (int(r.integers(2, 9)), float(r.uniform(0.05, 4)),
                                                    int(r.integers(1, 17)))),
    "forget_gate_mean": (mc_forget_gate, lambda r: (float(r.uniform(-4, 6)), float(r.uniform(0, 3)))),
}


@MC
@given(st.floats(0.0, 3.0), st.integers(2, 64))
def test_haar_mgf_agrees_with_monte_carlo(lam, d):
    est, theory = mc_haar_mgf(lam, d, _seed(lam, d))
    assert est.contains(theory), (est, theory)


@MC
@given(st.floats(0.0, 3.0), st.lists(st.floats(0.05, 0.6), min_size=1, max_size=5))
def test_uniform_phase_mgf_agrees_with_monte_carlo(lam, a):
    est, theory = mc_uniform_phase_mgf(lam, tuple(a), _seed(lam, *a))
    assert est.contains(theory), (est, theory)


@MC
@given(st.floats(0.0, 0.5), st.integers(2, 64))
def test_haar_tail_agrees_with_monte_carlo(t, d):
    est, theory = mc_haar_tail(t, d, _seed(t, d))
    assert est.contains(theory), (est, theory)


@MC
@given(st.integers(2, 8), st.floats(0.05, 4.0), st.integers(1, 16))  # λ ≳ 0: quad warns (relative tolerance on ~0)
def test_haar_tilt_energy_agrees_with_monte_carlo(d, lam, M):
    est, theory = mc_tilt_energy(d, lam, M, _seed(d, lam, M))
    assert est.contains(theory, tol=1e-9), (est, theory)


@MC
@given(st.floats(-4.0, 6.0), st.floats(0.0, 3.0))
def test_forget_gate_mean_agrees_with_monte_carlo(gate, sd):
    est, theory = mc_forget_gate(gate, sd, _seed(gate, sd))
    assert est.contains(theory, tol=1e-9), (est, theory)


# ------------------------------------------------------------------------------------------
# C4: the far-mass bound, its inverse, ALiBi and horizons
# ------------------------------------------------------------------------------------------
@FAST
@given(counts, counts, lams)
def test_far_mass_bound_is_the_extreme_configuration_and_monotone(K, M, lam):
    b = th.far_mass_lower_bound(K, M, lam)
    assert 0.0 <= b <= 1.0
    lse_far, lse_near = math.log(M) - lam, math.log(K) + lam  # far logits all −λ, near all +λ
    assert b == pytest.approx(special.expit(lse_far - lse_near), rel=1e-12, abs=1e-300)
    assert th.far_mass_lower_bound(K, 2 * M, lam) >= b >= th.far_mass_lower_bound(2 * K, M, lam)
    assert th.far_mass_lower_bound(K, M, lam + 0.5) <= b
    assert th.far_mass_lower_bound(K, M, 0.0) == pytest.approx(M / (M + K), rel=1e-12)


@FAST
@given(counts, counts, eps01)
def test_lambda_required_inverts_the_far_mass_bound(K, M, eps):
    lam = th.lambda_required(K, M, eps)
    if lam > 0:
        assert th.far_mass_lower_bound(K, M, lam) == pytest.approx(eps, rel=1e-8)
        assert th.far_mass_lower_bound(K, M, lam * (1 - 1e-6)) >= eps * (1 - 1e-12)
    else:
        assert th.far_mass_lower_bound(K, M, 0.0) <= eps * (1 + 1e-12)


@FAST
@given(st.integers(1, 10**6), st.floats(1e-5, 1 - 1e-5))
def test_far_mass_bound_inverts_lambda_required(K, rho):
    """The other direction: ``λ_required`` at the bound's own value returns ``λ``."""
    M = 10**6
    lam = th.lambda_required(K, M, rho)
    assume_lam = th.far_mass_lower_bound(K, M, lam)
    assert th.lambda_required(K, M, assume_lam) == pytest.approx(lam, rel=1e-8, abs=1e-8)


@FAST
@given(st.floats(0.0, 10.0), st.floats(0.05, 3.0), st.integers(1, 64))
def test_alibi_sums_match_direct_sums_and_bound_the_worst_case(lam, m, D):
    n = np.arange(D, D + int(60 / m) + 200)
    assert th.alibi_far_sum(lam, m, D) == pytest.approx(float(np.exp(lam - m * n).sum()), rel=1e-10)
    assert th.alibi_far_sum(lam, m, D + 1) < th.alibi_far_sum(lam, m, D)
    bound = th.alibi_far_mass_bound(lam, m, D)
    # the worst case at a finite L: target λ, other near −λ − mn, far λ − mn (n < L)
    for L in (D + 1, D + 10, D + 1000):
        near = np.r_[lam, -lam - m * np.arange(1, D)]
        far = lam - m * np.arange(D, L)
        rho = special.expit(special.logsumexp(far) - special.logsumexp(near))
        assert rho <= bound * (1 + 1e-12)
    assert th.alibi_far_mass_bound(lam, m, D + 1) <= bound


@FAST
@given(st.floats(0.1, 1e4), st.floats(0.5, 100.0), st.integers(1, 64))
def test_horizons(Z, mu, D):
    L = th.horizon_prediction(Z, mu, D)
    assert (L - D) * mu == pytest.approx(Z, rel=1e-12)  # the far sum (L − D)μ reaches Z_N
    far = th.FarLaw(1.0, 8)
    wald, ratio = th.wald_horizon(Z, far, D)
    assert ratio == th.horizon_prediction(Z, far.mean, D) and wald > ratio  # the mean overshoot is positive


@FAST
@given(st.floats(-10.0, 10.0), st.floats(0.0, 5.0))
def test_forget_gate_mean_limits_and_monotone(gate, sd):
    phi = th.forget_gate_mean(gate, sd)
    assert 0.0 < phi < 1.0 or phi == pytest.approx(1.0)
    assert th.forget_gate_mean(gate + 0.5, sd) >= phi
    assert th.forget_gate_mean(gate, 0.0) == pytest.approx(special.expit(gate), rel=1e-12)


@FAST
@given(st.floats(1.0, 5.0), st.floats(1.0, 5.0))
def test_laplace_ratio_mean_is_exact_for_gamma_sums(a, b):
    """``F ~ Γ(a)``, ``N ~ Γ(b)``: ``F/(F+N) ~ Beta(a, b)`` with mean ``a/(a+b)``."""
    sig, h = np.exp(np.arange(math.log(1e-12), math.log(1e12), 0.05)), 0.05
    got = th.laplace_ratio_mean(-a * np.log1p(sig), a / (1 + sig), -b * np.log1p(sig), sig, h)
    assert got == pytest.approx(a / (a + b), abs=1e-6)


@FAST
@given(st.floats(0.0, 6.0), st.integers(2, 128))
def test_far_law_moments_are_the_haar_mgf(lam, d):
    far = th.FarLaw(lam, d)
    assert far.mean == th.haar_mgf(lam, d)
    lp, tl = far.laplace_pair(np.array([0.0]))
    assert lp[0] == pytest.approx(0.0, abs=1e-14) and tl[0] == pytest.approx(far.mean, rel=1e-10)


# ------------------------------------------------------------------------------------------
# C1–C3: windows, correlations, Haar coordinate law, MGFs, tails
# ------------------------------------------------------------------------------------------
@FAST
@given(st.floats(1e-6, 1.0), eps01)
def test_mixing_window_is_the_first_crossing(gamma, eps):
    W = th.mixing_window(gamma, eps)
    assert W >= 1 and (1 - gamma) ** W <= eps * (1 + 1e-9)
    if W > 1:
        assert (1 - gamma) ** (W - 1) > eps * (1 - 1e-9)
    assert th.mixing_window(min(1.0, 2 * gamma), eps) <= W <= th.mixing_window(gamma / 2, eps)
    assert th.mixing_window(gamma, eps / 2) >= W
    assert th.mixing_window(0.0, eps) == math.inf  # γ → 0: no window


@FAST
@given(st.lists(st.complex_numbers(max_magnitude=1.0, allow_nan=False), min_size=1, max_size=8), st.integers(0, 50))
def test_chi_power_correlation(chi, n):
    c = th.chi_power_correlation(np.array(chi), n)
    assert abs(c) <= max(abs(np.array(chi))) ** n + 1e-12
    assert th.chi_power_correlation(np.array(chi), 0) == pytest.approx(1.0)


@FAST
@given(st.floats(-1.0, 1.0), dims)
def test_haar_coordinate_law_symmetry_density_and_gaussian_limit(s, d):
    F = float(th.haar_coordinate_cdf(s, d))
    assert F == pytest.approx(1.0 - float(th.haar_coordinate_cdf(-s, d)), abs=1e-12)
    assert float(th.haar_coordinate_cdf(min(1.0, s + 0.01), d)) >= F
    assert float(th.haar_coordinate_tail(s, d)) == pytest.approx(1.0 - F, abs=1e-12)
    total = integrate.quad(lambda x: float(th.haar_coordinate_pdf(x, d)), -1, 1, points=[0.0])[0]
    assert total == pytest.approx(1.0, abs=1e-6)
    if s >= 0:
        assert float(th.haar_coordinate_tail(s, d)) <= float(th.levy_tail(s, d)) + 1e-15


@FAST
@given(st.floats(-3.0, 3.0))
def test_haar_coordinate_tends_to_gaussian_as_d_grows(x):
    d = 10**6  # √d·s → N(0, 1)
    assert float(th.haar_coordinate_cdf(x / math.sqrt(d), d)) == pytest.approx(stats.norm.cdf(x), abs=1e-5)


@FAST
@given(st.floats(0.0, 30.0), dims)
def test_haar_mgf_quadrature_small_lambda_and_log(lam, d):
    x, w = th.jacobi_nodes(64, (d - 3) / 2)
    mu = th.haar_mgf(lam, d)
    assert mu == pytest.approx(float(w @ np.exp(lam * x)), rel=1e-9)
    assert th.haar_log_mgf(lam, d) == pytest.approx(math.log(mu), rel=1e-12, abs=1e-15)
    assert th.haar_mgf(lam + 0.1, d) >= mu >= 1.0
    assert th.haar_mgf(1e-4, d) == pytest.approx(1 + 1e-8 / (2 * d), rel=1e-12)  # λ → 0: 1 + λ²/(2d)


@FAST
@given(st.floats(0.0, 20.0), st.lists(st.floats(0.0, 2.0), min_size=1, max_size=16))
def test_uniform_phase_mgf_factorises_over_planes(lam, a):
    want = float(np.prod(special.i0(lam * np.asarray(a))))
    assert th.uniform_phase_mgf(lam, a) == pytest.approx(want, rel=1e-10)
    assert th.uniform_phase_log_mgf(lam, a) == pytest.approx(math.log(want), rel=1e-10, abs=1e-13)


@FAST
@given(st.sampled_from([4, 16, 64]), st.integers(1, 4096))
def test_expected_max_below_the_mgf_bound_and_increasing(d, M):
    em = th.haar_expected_max(d, M)
    assert th.haar_expected_max(d, 2 * M) >= em
    assert em <= th.max_mgf_bound(M, lambda b: th.haar_log_mgf(b, d)) + 1e-9


@FAST
@given(st.floats(0.0, 0.99), st.lists(st.floats(0.05, 1.0), min_size=4, max_size=8))
def test_hoeffding_bounds_the_uniform_phase_tail(t, a):
    law = th.UniformPhaseSum(tuple(a))
    x = t * law.A
    assert float(law.sf(x)) <= float(th.hoeffding_tail(x, a)) + 1e-9


# ------------------------------------------------------------------------------------------
# C5: interference and the noncommutative floor
# ------------------------------------------------------------------------------------------
@FAST
@given(st.complex_numbers(max_magnitude=0.999, allow_nan=False), st.integers(1, 300))
def test_coherent_sum_closed_form(z, M):
    closed = M * (1 + z) / (1 - z) - 2 * z * (1 - z**M) / (1 - z) ** 2
    assert complex(th.coherent_sum(z, M)) == pytest.approx(closed, rel=1e-8, abs=1e-8)
    assert complex(th.coherent_sum(1.0, M)) == M * M


@FAST
@given(st.sampled_from(["so2-uniform", "householder", "lazy-haar", "haar"]), st.floats(0.0, 1.0))
def test_qkv_interference_limits(name, noise):
    fam = make_family(name, 8)
    b = np.ones(8) / math.sqrt(8)
    assert th.qkv_interference_theory(fam, b, 1, noise) == pytest.approx(1 + noise**2 * 8, rel=1e-12)
    big = 20000
    asym = th.qkv_asymptote(fam, b, big, noise)
    if asym is not None:  # M → ∞: the 1/M law
        assert th.qkv_interference_theory(fam, b, big, noise) == pytest.approx(asym, rel=2e-2)
    assert th.qk_interference_theory(8, b, big, noise) == pytest.approx(1 + noise**2 * 8 / big)


@FAST
@given(dims, st.floats(0.0, 30.0))
def test_haar_tilt_floor_limits_and_monotone(d, lam):
    f = th.haar_tilt_floor(d, lam)
    assert 0.0 <= f < 1.0
    assert th.haar_tilt_floor(d, lam + 0.5) >= f
    assert th.haar_tilt_floor(d + 1, lam) <= f + 1e-15
    assert th.haar_tilt_floor(d, 1e-6) == pytest.approx((1e-6 / d) ** 2, rel=1e-4)  # λ → 0: (λ/d)²


@FAST
@given(st.integers(1, 8), st.floats(0.0, 10.0))
def test_torus_floor_one_plane_is_the_bessel_ratio(p, lam):
    b = np.zeros(2 * p)
    b[:2] = [0.6, 0.8]
    want = (special.ive(1, lam) / special.ive(0, lam)) ** 2 if lam > 0 else 0.0
    assert th.torus_tilt_floor(b, lam) == pytest.approx(want, rel=1e-12, abs=1e-300)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.integers(2, 16), st.floats(0.5, 6.0))
def test_tilt_energy_tends_to_the_bessel_floor(d, lam):
    """``M → ∞``: the finite-``M`` tilted energy decreases to ``(I_{d/2}(λ)/I_{d/2−1}(λ))²``."""
    floor = th.haar_tilt_floor(d, lam)
    e_small, e_big = th.haar_tilt_energy(d, lam, 8)[0], th.haar_tilt_energy(d, lam, 20000)[0]
    assert e_small >= e_big >= floor * (1 - 1e-6)
    assert e_big == pytest.approx(floor, rel=0.05, abs=2e-4)
    assert th.haar_tilt_energy(d, 0.0, 7) == (1 / 7, 1 / 7)


# ------------------------------------------------------------------------------------------
# broadcasting equals the scalar loop, and bad input is named
# ------------------------------------------------------------------------------------------
BROADCAST = [
    (th.far_mass_lower_bound, (np.array([1, 8, 64]), np.array([[10.0], [1e6]]), 2.0)),
    (th.lambda_required, (8, np.array([10.0, 1e3, 1e9]), np.array([[0.1], [0.5]]))),
    (th.alibi_far_sum, (np.array([0.0, 2.0]), np.array([[0.1], [1.0]]), 4)),
    (th.alibi_far_mass_bound, (2.0, np.array([0.1, 1.0]), np.array([[1], [16]]))),
    (th.horizon_prediction, (np.array([1.0, 50.0]), 2.0, np.array([[1], [16]]))),
    (th.mixing_window, (np.array([0.01, 0.5, 1.0]), np.array([[0.01], [0.5]]))),
    (th.haar_mgf, (np.array([0.0, 1.0, 8.0]), np.array([[3], [64]]))),
    (th.haar_log_mgf, (np.array([0.0, 1.0, 800.0]), np.array([[3], [64]]))),
    (th.haar_expected_max, (np.array([4, 16]), np.array([[1], [100]]))),
    (th.forget_gate_mean, (np.array([-1.0, 4.0]), np.array([[0.0], [1.0]]))),
    (th.haar_tilt_floor, (np.array([2, 16]), np.array([[0.0], [4.0]]))),
    (th.haar_tilt_energy, (np.array([3, 8]), np.array([[0.0], [2.0]]), 4)),
]


@pytest.mark.parametrize("f, args", BROADCAST, ids=[f.__name__ for f, _ in BROADCAST])
def test_broadcasting_equals_the_scalar_loop(f, args):
    out = f(*args)
    outs = out if isinstance(out, tuple) else (out,)
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    for o in outs:
        assert o.shape == shape
    for idx in np.ndindex(shape):
        scalar = f(*(np.broadcast_to(a, shape)[idx].item() for a in args))
        for o, s in zip(outs, scalar if isinstance(scalar, tuple) else (scalar,)):
            assert o[idx] == s  # bit for bit


def test_vector_only_forms_broadcast():
    a = (0.3, 0.2, 0.5)
    lam = np.array([0.0, 1.0, 4.0])
    assert th.uniform_phase_mgf(lam, a).tolist() == [th.uniform_phase_mgf(float(v), a) for v in lam]
    t, d = np.array([0.1, 0.3]), np.array([[8], [64]])
    np.testing.assert_array_equal(th.levy_tail(t, d), [[th.levy_tail(x, int(k)) for x in t] for k in d[:, 0]])
    np.testing.assert_array_equal(th.haar_coordinate_tail(t, d),
                                  [[th.haar_coordinate_tail(x, int(k)) for x in t] for k in d[:, 0]])
    fam, q = make_family("so2-uniform", 8), np.full(8, 1 / math.sqrt(8))
    n, lam2 = np.array([0, 1, 3]), np.array([[1.0], [4.0]])
    np.testing.assert_array_equal(th.so2_overlap_mgf(fam, n, lam2, q),
                                  [[th.so2_overlap_mgf(fam, int(k), float(v), q) for k in n] for v in lam2[:, 0]])
    np.testing.assert_array_equal(th.max_mgf_bound(np.array([4, 64]), math.log1p),
                                  [th.max_mgf_bound(4, math.log1p), th.max_mgf_bound(64, math.log1p)])


@pytest.mark.parametrize("call, name", [
    (lambda: th.far_mass_lower_bound(np.array([1.0, -1.0]), 10, 1.0), "K"),
    (lambda: th.lambda_required(8, 10, np.array([0.5, 1.5])), "eps"),
    (lambda: th.mixing_window(np.array([0.5, 2.0]), 0.1), "gamma"),
    (lambda: th.alibi_far_sum(1.0, np.array([0.0]), 4), "m"),
    (lambda: th.haar_coordinate_cdf(0.1, np.array([1, 8])), "d"),
])
def test_bad_elements_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_theory_function_names_its_claim():
    import inspect

    assert set(th.__all__) == {"CLAIMS", *th.CLAIMS}
    for n, (claim, _kind) in th.CLAIMS.items():
        doc = inspect.getdoc(getattr(th, n)) or ""
        assert claim in doc and ("quoted" in doc or "derived" in doc), n


def false_alarm_rates(n_seeds: int = 200) -> dict:
    """Each Monte Carlo test as run by pytest (``MC_EXAMPLES`` draws at confidence ``EX_LEVEL``), repeated
    over ``n_seeds`` seeds at random parameters: fraction of runs with any draw outside its interval."""
    out = {}
    for name, (fn, draw) in MC_CASES.items():
        fails = 0
        for seed in range(n_seeds):
            r = np.random.default_rng([seed, 7])
            bad = False
            for k in range(MC_EXAMPLES):
                est, theory = fn(*draw(r), seed=_seed(name, k, base=seed))
                bad |= not est.contains(theory, tol=1e-9)
            fails += bad
        out[name] = (fails, n_seeds, proportion_ci(fails, n_seeds, 0.95))
    return out


if __name__ == "__main__":  # python tests/theory/test_theory_properties.py: measure the false-alarm rates
    for name, (k, n, ci) in false_alarm_rates().items():
        print(f"{name:22s} {k}/{n} runs rejected = {k / n:.3f} (95% CI [{ci.ci_low:.3f}, {ci.ci_high:.3f}]),"
              f" level {LEVEL}")
