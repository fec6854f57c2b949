"""Exact far-score laws (stylized.theory.score_laws) and real-route score chains (stylized.engine.score_chains).

Laws: closed forms against an independent inversion (Gil-Pelaez) and against large Monte Carlo samples
(DKW band at a stated false-alarm rate).  Chains: every fast kernel equals its NumPy twin on identical
(counter-stream) draws and the dense route product; the Haar-step construction is Haar in law; the
library's exact-law shortcuts agree in law with real transport.  Fixed seeds; each statistical assertion
names its level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats
from scipy.stats import ortho_group

from stylized.core.counter_rng import stream_keys
from stylized.engine.kernels import householder_chain_normals
from stylized.engine.score_chains import (
    BERNOULLI_OFFSET,
    counter_normals,
    counter_uniforms,
    haar_apply_transpose,
    haar_chain_scores,
    haar_scores_xp,
    householder_chain_scores,
    householder_scores_xp,
    score_chains,
    so2_chain_scores,
    so2_scores_xp,
)
from stylized.engine.scores import far_scores
from stylized.engine.transport_reference import route_product
from stylized.laws.families import StepLaw, TokenAngles, make_family, uniform_sphere
from stylized.theory.bounds import haar_coordinate_cdf
from stylized.theory.phase_cdf import gil_pelaez_cdf
from stylized.theory.score_laws import (
    HaarCoordinate,
    UniformPhaseSum,
    estimated_far_score_law,
    far_score_law,
    haar_expected_max,
    max_mgf_bound,
)

DKW_FALSE_ALARM = 1e-4


def _dkw(n: int) -> float:
    """Half-width ε with P(sup|F_n − F| > ε) ≤ 1e-4 (Dvoretzky–Kiefer–Wolfowitz, Massart's constant)."""
    return math.sqrt(math.log(2 / DKW_FALSE_ALARM) / (2 * n))


def _phases(a, n, seed):
    return np.cos(np.random.default_rng(seed).uniform(0, 2 * np.pi, (n, len(a)))) @ np.asarray(a)


# ---------------------------------------------------------------------------------------
# uniform-phase law
# ---------------------------------------------------------------------------------------
def test_one_plane_is_the_arcsine_law():
    law = UniformPhaseSum((0.7,))
    x = np.linspace(-0.69, 0.69, 9)
    assert np.allclose(law.cdf(x), 0.5 + np.arcsin(x / 0.7) / np.pi, atol=1e-15)
    assert law.cdf(-0.7) == 0.0 and law.cdf(0.7) == 1.0 and law.sf(0.0) == pytest.approx(0.5)


@pytest.mark.parametrize("B", [2, pytest.param(3, marks=pytest.mark.slow), 4, 8, 32])  # three planes: nested quad, slow
def test_cdf_matches_a_large_monte_carlo(B):
    a = np.random.default_rng(B).uniform(0.2, 1.0, B)
    law = UniformPhaseSum(tuple(a))
    n = 200_000
    s = np.sort(_phases(a, n, 10 + B))
    x = np.linspace(-0.95, 0.95, 13 if B < 4 else 41) * law.A
    emp = np.searchsorted(s, x, side="right") / n
    assert np.max(np.abs(law.cdf(x) - emp)) <= _dkw(n)


@pytest.mark.parametrize("B", [4, 5, 8])
def test_series_equals_gil_pelaez_inversion(B):
    """The Fourier series (compact support) against the Gil-Pelaez integral: two independent exact evaluations."""
    a = np.random.default_rng(20 + B).uniform(0.1, 1.0, B)
    law = UniformPhaseSum(tuple(a))
    for x in np.linspace(-0.97, 0.97, 7) * law.A:
        assert law.cdf(x) == pytest.approx(gil_pelaez_cdf(x, a), abs=5e-9)


def test_series_truncation_bound_holds():
    """Four times the terms moves the CDF by less than the stated tolerance (the bound is conservative)."""
    law = UniformPhaseSum(tuple(np.full(4, 0.25)), tol=1e-6)
    fine = UniformPhaseSum(tuple(np.full(4, 0.25)), tol=1e-6 / 4**3)
    assert fine.n_terms() >= 4 * law.n_terms()
    x = np.linspace(-0.99, 0.99, 101)
    assert np.max(np.abs(law.cdf(x) - fine.cdf(x))) <= 1e-6


def test_law_is_symmetric_monotone_and_has_its_density_and_variance():
    law = UniformPhaseSum(tuple(np.full(8, 1 / 8)))
    x = np.linspace(-1, 1, 2001)
    F = law.cdf(x)
    assert np.all(np.diff(F) >= -1e-12) and np.allclose(F + law.cdf(-x), 1.0, atol=1e-10)
    mid = 0.5 * (x[1:] + x[:-1])
    assert np.allclose(np.diff(F) / np.diff(x), law.pdf(mid), atol=1e-5)
    var = np.trapezoid(mid**2 * law.pdf(mid), mid)
    assert var == pytest.approx(law.variance, rel=1e-4) and law.variance == pytest.approx(8 / 64 / 2)


def test_invalid_amplitudes_raise():
    with pytest.raises(ValueError, match="a must"):
        UniformPhaseSum(())
    with pytest.raises(ValueError, match="d must"):
        HaarCoordinate(1)


# ---------------------------------------------------------------------------------------
# Haar coordinate, MGF bound
# ---------------------------------------------------------------------------------------
def test_haar_coordinate_closed_forms():
    assert float(HaarCoordinate(3).cdf(0.4)) == pytest.approx(0.7)  # d = 3: uniform on [−1, 1]
    law = HaarCoordinate(16)
    x = np.linspace(-0.9, 0.9, 7)
    assert np.allclose(law.cdf(x), haar_coordinate_cdf(x, 16)) and np.allclose(law.sf(x), 1 - law.cdf(x))
    assert HaarCoordinate(3).mgf(2.0) == pytest.approx(math.sinh(2.0) / 2.0)
    assert law.log_mgf(3.0) == pytest.approx(math.log(law.mgf(3.0)), abs=1e-12)
    assert np.isfinite(law.log_mgf(1e4))  # no overflow where ₀F₁ itself overflows


@pytest.mark.parametrize("d", [8, 64, 256])
def test_mgf_bound_on_the_expected_maximum(d):
    """min_β (ln M + ln E e^{βs})/β bounds E[max of M] for independent scores (and is not absurdly loose)."""
    law = HaarCoordinate(d)
    for M in (1, 64, 65536):
        b = max_mgf_bound(M, law.log_mgf)
        assert haar_expected_max(d, M) <= b <= haar_expected_max(d, M) + 0.1
    u = UniformPhaseSum(tuple(np.full(d // 2, 2 / d)))
    x = _phases(u.a, 1500 * 64, 1).reshape(1500, 64).max(axis=1)
    assert x.mean() + 4 * x.std() / math.sqrt(x.size) <= max_mgf_bound(64, u.log_mgf)


def test_far_score_law_by_family():
    q = np.full(8, 8**-0.5)
    assert far_score_law(make_family("householder", 8), q, q) == HaarCoordinate(8, 1.0)
    law = far_score_law(make_family("so2-uniform", 8), q, q)
    assert isinstance(law, UniformPhaseSum) and np.allclose(law.a, 0.25)


# ---------------------------------------------------------------------------------------
# score chains: kernels = twins = dense products
# ---------------------------------------------------------------------------------------
def _unit(seed, d):
    return uniform_sphere(np.random.default_rng(seed), (), d)


def _dense_scores(mats, q, k):
    """Oracle: ``s_n = qᵀ P_{i−n→i} k`` by :func:`route_product` in a context of ``L = len(mats) + 1`` positions,
    query at ``i = L − 1``; ``mats[m]`` is the step ``m + 1`` positions back, ``M_{i−m}``."""
    L = len(mats) + 1
    pos = np.concatenate([np.eye(len(q))[None], np.asarray(mats)[::-1]])  # pos[t] = M_t
    return np.array([q @ route_product(pos, L - 1 - n, L - 1) @ k for n in range(L)])


@pytest.mark.parametrize("d", [5, 6, 64])
def test_householder_chain_equals_twin_and_dense(d):
    q, k = _unit(0, d), _unit(1, d)
    keys = stream_keys(np.random.SeedSequence(3), 3)
    N = 25
    s = householder_chain_scores(keys, q, k, N)
    g = np.stack([householder_chain_normals(int(key), N - 1, d) for key in keys])
    assert np.allclose(s, householder_scores_xp(q, k, N, lambda st, m: g[:, st : st + m], block=7), atol=1e-13)
    fam = make_family("householder", d)
    mats = fam.dense(g[1] / np.linalg.norm(g[1], axis=1, keepdims=True))
    assert np.allclose(s[1], _dense_scores(mats, q, k), atol=1e-13)


@pytest.mark.parametrize("name,kw", [("so2-uniform", {"omega": 1.3}), ("so2-normal", {"sigma": 0.8})])
def test_so2_chain_equals_twin_and_dense(name, kw):
    d, N = 6, 40
    fam = make_family(name, d, **kw)
    q, k = _unit(2, d), _unit(3, d)
    keys = stream_keys(np.random.SeedSequence(4), 3)
    dot, cross = q[0::2] * k[0::2] + q[1::2] * k[1::2], q[1::2] * k[0::2] - q[0::2] * k[1::2]
    normal = name == "so2-normal"
    loc, scale = np.zeros(3), (np.full(3, 0.8) if normal else fam.omegas)
    s = so2_chain_scores(keys, normal, loc, scale, dot, cross, N)
    if normal:
        th = np.stack([counter_normals(int(key), 0, N * 3)[:, 0].reshape(N, 3) for key in keys]) * scale
    else:
        th = np.stack([(2 * counter_uniforms(int(key), 0, N * 3) - 1).reshape(N, 3) for key in keys]) * scale
    assert np.allclose(s, so2_scores_xp(dot, cross, N, lambda st, m: th[:, st : st + m], block=9), atol=1e-12)
    assert np.allclose(s[2], _dense_scores(fam.dense(th[2, : N - 1]), q, k), atol=1e-12)


def _haar_draws(keys, d, p):
    nrm = d * (d + 1) // 2
    S = (nrm + 1) // 2

    def step(n):
        return np.array([counter_uniforms(int(key), BERNOULLI_OFFSET + n, 1)[0] < p for key in keys])

    def normals(n, rows):
        return np.stack([counter_normals(int(keys[r]), n * S, S).ravel()[:nrm] for r in np.atleast_1d(rows)])
    return step, normals


def _dense_haar(x, d):
    """The Haar matrix Q of the normals ``x``, column by column: Qᵀ e_j."""
    Qt = np.stack([haar_apply_transpose(np.eye(d)[j][None].copy(), x[None])[0] for j in range(d)], axis=1)
    return Qt.T


@pytest.mark.parametrize("d", [5, 16])
@pytest.mark.parametrize("p", [0.4, 1.0])
def test_haar_chain_equals_twin_and_dense_products(p, d):
    N = 12
    q, k = _unit(5, d), _unit(6, d)
    keys = stream_keys(np.random.SeedSequence(7), 3)
    s = haar_chain_scores(keys, q, k, N, p)
    step, normals = _haar_draws(keys, d, p)
    assert np.allclose(s, haar_scores_xp(q, k, N, p, step, normals), atol=1e-13)
    mats = [(_dense_haar(normals(n, 0)[0], d) if step(n)[0] else np.eye(d)) for n in range(N - 1)]
    assert all(np.allclose(M.T @ M, np.eye(d), atol=1e-13) for M in mats)
    assert np.allclose(s[0], _dense_scores(mats, q, k), atol=1e-13)


def test_haar_step_matrices_are_haar_in_law():
    """Q from the QR construction against scipy's ortho_group: trace and a matrix entry (KS two-sample, one
    entry against the exact Beta law; each at 1e-3); E[tr Q] = 0, E[tr² Q] = 1, E[det Q] = 0 within 4 SE."""
    d, n = 5, 20000
    rng = np.random.default_rng(8)
    x = rng.standard_normal((n, d * (d + 1) // 2))
    Qt = np.stack([haar_apply_transpose(np.broadcast_to(np.eye(d)[j], (n, d)).copy(), x) for j in range(d)], axis=2)
    Q = np.transpose(Qt, (0, 2, 1))
    R = ortho_group.rvs(d, size=n, random_state=9)
    tr, tr_ref = np.trace(Q, axis1=1, axis2=2), np.trace(R, axis1=1, axis2=2)
    assert stats.ks_2samp(tr, tr_ref).pvalue > 1e-3
    assert stats.kstest(Q[:, 1, 3], lambda v: haar_coordinate_cdf(v, d)).pvalue > 1e-3
    for f, want in ((tr, 0.0), (tr**2, 1.0), (np.linalg.det(Q), 0.0)):
        assert abs(f.mean() - want) <= 4 * f.std() / math.sqrt(n)


# ---------------------------------------------------------------------------------------
# real transport in law: the exact laws, the library's shortcuts, the backends
# ---------------------------------------------------------------------------------------
def test_dense_haar_products_follow_the_beta_law():
    """Real transport by dense products of scipy Haar matrices (d = 6, three steps) has the Beta law, and so
    do the chains (KS at 1e-3 each)."""
    d, n = 6, 3000
    q = np.full(d, d**-0.5)
    U = ortho_group.rvs(d, size=3 * n, random_state=10).reshape(n, 3, d, d)
    s = np.einsum("i,tij,tjk,tkl,l->t", q, U[:, 0], U[:, 1], U[:, 2], q)
    assert stats.kstest(s, lambda v: haar_coordinate_cdf(v, d)).pvalue > 1e-3
    chains = score_chains(make_family("haar", d), 4, n, seed=11)[:, 3]
    assert stats.kstest(chains, lambda v: haar_coordinate_cdf(v, d)).pvalue > 1e-3
    assert stats.ks_2samp(s, chains).pvalue > 1e-3


def test_exact_law_shortcuts_agree_with_real_transport():
    """far_scores draws Haar-kind scores from the exact law (an atom, else a Beta variate); real Haar matrices
    give the same law (KS two-sample at 1e-3; the unmixed share by a binomial test at 1e-3)."""
    fam = make_family("lazy-haar", 8, p=0.25)
    real = score_chains(fam, 6, 20000, seed=12)[:, 5]
    short = far_scores(fam, 5, 20000, 13)
    ra, sa = np.abs(real - 1) < 1e-9, np.abs(short - 1) < 1e-9  # the atom s = qᵀq (1 up to rounding)
    assert stats.ks_2samp(real[~ra], short[~sa]).pvalue > 1e-3
    assert stats.binomtest(int(ra.sum()), real.size, 0.75**5).pvalue > 1e-3


@pytest.mark.parametrize("name", ["householder", "so2-uniform", "so2-normal", "lazy-haar"])
def test_numpy_twin_agrees_in_law_with_the_kernel(name):
    fam = make_family(name, 8, p=0.3, sigma=0.9)
    a = score_chains(fam, 30, 4000, seed=14)[:, [3, 29]]
    b = score_chains(fam, 30, 4000, seed=15, backend="numpy")[:, [3, 29]]
    for c in range(2):
        assert stats.ks_2samp(a[:, c], b[:, c]).pvalue > 1e-3


@pytest.mark.parametrize("name", ["householder", "so2-uniform", "haar"])
def test_chains_past_the_window_follow_the_exact_law(name):
    fam = make_family(name, 16)
    n = int(math.ceil(3 * fam.mixing_window(0.01)))
    q = np.full(16, 0.25)
    s = score_chains(fam, n + 1, 20000, seed=16)[:, n]
    assert stats.kstest(s, far_score_law(fam, q, q).cdf).pvalue > 1e-3
    assert stats.kstest(score_chains(fam, 3, 20000, seed=17)[:, 2], far_score_law(fam, q, q).cdf).pvalue < 1e-6 \
        or name == "haar"  # two steps: householder and so2 are still far from mixed


def test_sample_overlaps_haar_shortcut_agrees_with_real_transport():
    """sample_overlaps (the mixing check's sampler) draws Haar-kind routes from the exact law; real Haar matrices
    agree at every route length: the unmixed share (binomial at 1e-3) and the mixed part (KS two-sample at 1e-3)."""
    from stylized.engine.sampling import sample_overlaps

    fam = make_family("lazy-haar", 8, p=0.3)
    ns = [1, 3, 6]
    short = sample_overlaps(fam, ns, 20000, 18, "numpy")
    real = score_chains(fam, 7, 20000, seed=19)[:, ns]
    for c, n in enumerate(ns):
        ra, sa = np.abs(real[:, c] - 1) < 1e-9, np.abs(short[:, c] - 1) < 1e-9
        assert stats.binomtest(int(ra.sum()), ra.size, 0.7**n).pvalue > 1e-3
        assert stats.ks_2samp(real[~ra, c], short[~sa, c]).pvalue > 1e-3


# ---------------------------------------------------------------------------------------
# the law protocol: chains and post-mixing laws asked of the law (odd d, cayley, a user's law)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UserRotation(StepLaw):
    """A user's law, only ``d`` and ``sample``: the Cayley transform of a Gaussian skew matrix, dense."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d, self.d))
        a = 0.3 * (g - xp.swapaxes(g, -1, -2))
        eye = xp.eye(self.d)
        return xp.linalg.solve(eye + a, xp.broadcast_to(eye - a, a.shape))


@dataclass(frozen=True)
class Doubling(StepLaw):
    """A user's law that expands: ``M = 2I``."""

    d: int

    def sample(self, xrng, shape, xp=np):
        return 2.0 * xp.broadcast_to(xp.eye(self.d), tuple(shape) + (self.d, self.d))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_generic_chains_are_the_dense_route_products_of_the_laws_own_draws(backend):
    """A law without a chain kernel walks its own draws: s_n = qᵀ M_1 ⋯ M_n k with the draws of a Generator seeded
    from ``seed`` (one block of N − 1 steps here), on every backend."""
    law, d, N, size = UserRotation(5), 5, 9, 3
    q, k = _unit(20, d), _unit(21, d)
    s = score_chains(law, N, size, seed=7, q=q, k=k, backend=backend)
    mats = law.sample(np.random.default_rng(7), (size, N - 1))
    for t in range(size):
        P, want = np.eye(d), [q @ k]
        for n in range(N - 1):
            P = P @ mats[t, n]
            want.append(q @ P @ k)
        assert np.allclose(s[t], want, atol=1e-12)


@pytest.mark.parametrize("d", [3, 13, 33])
@pytest.mark.parametrize("name", ["householder", "lazy-haar", "haar", "cayley"])
def test_chains_run_at_odd_d(name, d):
    """Odd d for every O(d) law (the SO(2) plane pairing once made it crash), both backends: s_0 = qᵀk, |s| ≤ |q||k|."""
    fam = make_family(name, d, p=0.5)
    q, k = _unit(22, d), _unit(23, d)
    for backend in ("numba", "numpy"):
        s = score_chains(fam, 6, 40, seed=1, q=q, k=k, backend=backend)
        assert s.shape == (40, 6) and np.allclose(s[:, 0], q @ k) and np.all(np.abs(s) <= 1 + 1e-12)


def test_post_mixing_law_by_declared_capability():
    q = np.full(6, 6**-0.5)
    for name in ("householder", "lazy-haar", "haar", "cayley"):
        fam = make_family(name, 6)
        assert fam.post_mixing_law == "haar"
        assert far_score_law(fam, q, q) == HaarCoordinate(6, float(np.linalg.norm(q) ** 2))
    for name in ("so2-uniform", "so2-normal", "rope-random"):
        assert isinstance(far_score_law(make_family(name, 6), q, q), UniformPhaseSum)
    table = np.random.default_rng(0).uniform(-1.0, 1.0, (4, 3))
    assert TokenAngles(d=6, table=table).post_mixing_law == "estimated"  # a finite table: equidistribution not declared
    assert UserRotation(6).post_mixing_law == "estimated"


def test_estimated_reference_matches_the_closed_form_and_carries_its_intervals():
    """householder (d = 5) through the estimated path agrees with its exact Haar-coordinate law: KS at 1e-3, each
    95% tail and MGF interval holds the exact value (fixed seed), the Hoeffding top lies above ln E e^{βs}."""
    fam = make_family("householder", 5)
    q = np.full(5, 5**-0.5)
    ref, exact = estimated_far_score_law(fam, q, q), far_score_law(fam, q, q)
    assert ref.n == 4 * math.ceil(math.log(0.01) / math.log(1 - 0.4)) and ref.size == 20000
    assert ref.theory_kind.startswith("estimated (Monte Carlo post-mixing reference") and ref.tail_bound(0.2) is None
    assert stats.kstest(ref.sample, exact.cdf).pvalue > 1e-3
    assert ref.ks_test(2 * np.random.default_rng(3).beta(2, 2, 3000) - 1).pvalue > 1e-3  # d = 5: Beta(2, 2)
    for t in (0.1, 0.3, 0.5):
        lo, hi = ref.sf_interval(t)
        assert lo <= float(exact.sf(t)) <= hi and exact.sf_interval(t) == (float(exact.sf(t)),) * 2
    lo, hi = ref.mgf_interval(3.0)
    assert lo <= exact.mgf(3.0) <= hi
    assert all(ref.log_mgf_upper(b) >= exact.log_mgf(b) for b in (0.5, 2.0, 8.0, 100.0))
    assert estimated_far_score_law(fam, q, q) is ref  # cached


def test_estimated_reference_refuses_laws_it_cannot_estimate():
    q = np.full(4, 0.5)
    with pytest.raises(ValueError, match=r"family doubling: .*the law expands"):
        estimated_far_score_law(Doubling(4), q, q, n=3)
    with pytest.raises(ValueError, match=r"family doubling: .*needs a law that mixes"):
        estimated_far_score_law(Doubling(4), q, q)  # ||E[M]|| = 2: γ < 0, no window


def test_far_scores_asks_the_law():
    """far_scores walks any law (cayley, a user's law) at odd d; n = 0 is qᵀk; chunks give one draw stream."""
    for fam in (make_family("cayley", 7), UserRotation(7), make_family("householder", 7)):
        s = far_scores(fam, 4, 50, 0, "numpy")
        assert s.shape == (50,) and np.all(np.abs(s) <= 1 + 1e-12)
    fam = make_family("lazy-haar", 9, p=0.3)
    assert np.array_equal(far_scores(fam, 5, 30, 4, chunk=7)[:7], far_scores(fam, 5, 7, 4))
