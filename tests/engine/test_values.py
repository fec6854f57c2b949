"""Value side (C5): the exact finite-M interference formula, its limits, and the transport engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.core.estimators import bonferroni_level, mean_ci
from stylized.core.step_ops import orthogonal_dense
from stylized.engine.sampling import haar_coordinates
from stylized.engine.values import far_energy_samples, ratio_ci
from stylized.laws.families import make_family
from stylized.theory.value_theory import (
    coherent_sum,
    correlation_pairs,
    haar_tilt_floor,
    qk_interference_theory,
    qkv_interference_theory,
    quadratic_form,
)
from tests._shared import build_family

FAMS = [("so2-uniform", {"omega": 1.0}), ("so2-normal", {"sigma": 0.7, "mu": 0.4}), ("rope-random", {"base": 100.0}),
        ("householder", {}), ("lazy-haar", {"p": 0.3}), ("haar", {})]


def _closed_form(z: complex, M: int) -> complex:
    return M * (1 + z) / (1 - z) - 2 * z * (1 - z**M) / (1 - z) ** 2


# ---------------------------------------------------------------------------------------
# the formula against Monte Carlo
# ---------------------------------------------------------------------------------------
CASES = [(n, kw, False) for n, kw in FAMS] + [("lazy-haar", {"p": 0.3}, True), ("haar", {}, True)]


@pytest.mark.parametrize("name,kw,dense", CASES)
@pytest.mark.parametrize("M,noise", [(3, 0.0), (12, 0.0), (12, 0.4)])
def test_exact_formula_matches_monte_carlo(name, kw, dense, M, noise):
    """Seed fixed; tolerance = the Student-t interval at the Bonferroni level over the 24 cases × 2 variants.

    Haar kinds run twice: by the exact law of the transport and with dense Haar matrices.
    """
    fam = build_family(name, 8, **kw)
    b = np.full(8, 1 / np.sqrt(8))
    s = far_energy_samples(fam, M, 3, 3000, np.random.default_rng(12345), noise=noise, dense_haar=dense)
    level = bonferroni_level(0.99, 2 * 24)
    assert mean_ci(s["qkv"], level).contains(qkv_interference_theory(fam, b, M, noise))
    qk = mean_ci(s["qk"], level)
    want = qk_interference_theory(8, b, M, noise)
    assert qk.contains(want) or (noise == 0 and np.allclose(s["qk"], 1.0))


def test_formula_is_not_the_coherent_value():
    """Power check: the MC clearly separates QKV from coherent addition and from 1/M (SO(2), χ = sinc 1)."""
    fam = make_family("so2-uniform", 8, omega=1.0)
    e = mean_ci(far_energy_samples(fam, 12, 3, 3000, np.random.default_rng(1))["qkv"])
    assert e.ci_high < 0.9 and e.ci_low > 1.5 / 12


def test_noise_term_matters():
    """σ²d/(M||b||²) is needed: without it the noisy MC falls outside its interval (both directions of the check)."""
    fam = make_family("haar", 8)
    b = np.full(8, 1 / np.sqrt(8))
    e = mean_ci(far_energy_samples(fam, 6, 2, 3000, np.random.default_rng(7), noise=0.5)["qkv"], 0.999)
    assert e.contains(qkv_interference_theory(fam, b, 6, 0.5))
    assert not e.contains(qkv_interference_theory(fam, b, 6, 0.0))


# ---------------------------------------------------------------------------------------
# limits
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", FAMS)
def test_one_far_source_is_coherent(name, kw):
    fam = build_family(name, 8, **kw)
    assert qkv_interference_theory(fam, np.ones(8), 1) == pytest.approx(1.0)


def test_chi_to_one_is_coherent():
    fam = make_family("so2-uniform", 8, omega=1e-6)
    assert qkv_interference_theory(fam, np.ones(8), 500) == pytest.approx(1.0, abs=1e-6)
    assert coherent_sum(1.0, 37).real == pytest.approx(37**2)


@pytest.mark.parametrize("chi", [0.2, 0.5, 0.9])
def test_large_M_asymptote(chi):
    """M·r(M) → (1+χ)/(1−χ); the relative correction is 2χ/((1−χ)(1+χ)M)."""
    M = 100_000
    r = coherent_sum(chi, M).real / M**2
    assert r * M == pytest.approx((1 + chi) / (1 - chi), rel=3 * chi / ((1 - chi) * (1 + chi) * M))


def test_haar_is_one_over_M():
    fam = make_family("haar", 16)
    assert qkv_interference_theory(fam, np.ones(16), 40) == pytest.approx(1 / 40)


def test_rope_random_keeps_a_coherent_floor():
    """Planes with ω_b ≪ 1/M do not mix: the floor is their share of ||b||²."""
    fam = make_family("rope-random", 64, base=10000.0)
    b = np.full(64, 1 / 8)
    w, z = correlation_pairs(fam, b)
    r = qkv_interference_theory(fam, b, 1000)
    frozen = w[np.abs(z) > 1 - 1e-7].sum()
    assert frozen > 0.1 and r > frozen


# ---------------------------------------------------------------------------------------
# universal properties
# ---------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=60)
@given(st.floats(0.0, 1.0), st.integers(1, 300))
def test_formula_in_unit_interval_and_decreasing_for_real_chi(chi, M):
    r = coherent_sum(chi, M).real / M**2
    r_next = coherent_sum(chi, M + 1).real / (M + 1) ** 2
    assert -1e-12 <= r <= 1 + 1e-12
    assert r_next <= r + 1e-12


@settings(deadline=None, max_examples=60)
@given(st.floats(0.0, 1.0), st.floats(-np.pi, np.pi), st.integers(1, 200))
def test_formula_in_unit_interval_for_complex_chi(mod, arg, M):
    """``Re χ^m`` is the correlation of a random-walk phase: the form is a variance, in ``[0, 1]``."""
    z = mod * np.exp(1j * arg)
    r = coherent_sum(z, M).real / M**2
    assert -1e-9 <= r <= 1 + 1e-9
    if abs(1 - z) > 1e-3:
        assert coherent_sum(z, M) == pytest.approx(_closed_form(z, M), rel=1e-8, abs=1e-8)


@settings(deadline=None, max_examples=40)
@given(st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_quadratic_form_matches_dense(M, seed):
    rng = np.random.default_rng(seed)
    a = rng.random((3, M))
    z = rng.uniform(-1, 1, 2) * np.exp(1j * rng.uniform(-3, 3, 2))
    w = rng.random(2)
    lag = np.abs(np.subtract.outer(np.arange(M), np.arange(M)))
    C = sum(wi * np.real(zi**lag) for wi, zi in zip(w, z))
    assert np.allclose(quadratic_form(a, w, z), np.einsum("tj,jk,tk->t", a, C, a))


# the transport engine against the dense oracle, for every law: the contract item backends (tests/laws/test_law_contract.py)


def test_orthogonal_dense_is_haar():
    """Orthogonal; E[Q_00²] = 1/d within the interval (seed fixed, 99.9% Student-t)."""
    Q = orthogonal_dense(np.random.default_rng(0), (4000,), 5)
    assert np.allclose(Q @ Q.transpose(0, 2, 1), np.eye(5), atol=1e-12)
    assert mean_ci(Q[:, 0, 0] ** 2, 0.999).contains(1 / 5)
    assert mean_ci(Q[:, 1, 2], 0.999).contains(0.0)


def test_haar_tilt_floor_matches_tilted_monte_carlo():
    """(I_{d/2}(λ)/I_{d/2−1}(λ)) = E[u₁e^{λu₁}]/E[e^{λu₁}] for u uniform on S^{d−1} (delta-method 99.9% CI)."""
    d, lam = 8, 3.0
    u1 = haar_coordinates(np.random.default_rng(2), 200_000, d)
    r, lo, hi = ratio_ci(u1 * np.exp(lam * u1), np.exp(lam * u1), level=0.999)
    assert lo <= np.sqrt(haar_tilt_floor(d, lam)) <= hi
    assert haar_tilt_floor(d, 0.0) == 0.0


def test_shared_keys_leave_a_floor_for_haar():
    """Keys = the value background: at large M the QKV energy sits near the tilt floor, far above 1/M."""
    fam = make_family("haar", 8)
    s = far_energy_samples(fam, 96, 2, 200, np.random.default_rng(4), weights="softmax", lam=3.0, key_align=1.0)
    e = mean_ci(s["qkv"], 0.999)
    floor = haar_tilt_floor(8, 3.0)
    assert e.ci_low > floor > 3 / 96  # well above the incoherent 1/M
    assert e.ci_low > mean_ci(s["plugin"]).ci_high


def test_bad_inputs():
    fam = make_family("haar", 4)
    with pytest.raises(ValueError, match="weights"):
        far_energy_samples(fam, 4, 2, 3, np.random.default_rng(0), weights="uniform")
    with pytest.raises(ValueError, match="key_align"):
        far_energy_samples(fam, 4, 2, 3, np.random.default_rng(0), weights="softmax", key_align=2.0)
    with pytest.raises(ValueError, match="M"):
        coherent_sum(0.5, 0)
    with pytest.raises(ValueError, match="b"):
        correlation_pairs(fam, np.zeros(4))


# ---------------------------------------------------------------------------------------
# the tilted energy (keys = b̂): exact Haar value at finite M, and the M → ∞ floors
# ---------------------------------------------------------------------------------------
def _iid_sphere_tilt(d: int, lam: float, M: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate ``||Σ ᾱ_n u_n||²`` and ``Σ ᾱ_n²`` for i.i.d. uniform ``u_n`` on ``S^{d−1}``, ``ᾱ ∝ e^{λ u_n,1}``."""
    g = np.random.default_rng(seed).standard_normal((n, M, d))
    u = g / np.linalg.norm(g, axis=-1, keepdims=True)
    a = np.exp(lam * u[..., 0])
    a /= a.sum(axis=1, keepdims=True)
    return np.sum(np.einsum("tm,tmd->td", a, u) ** 2, axis=1), np.sum(a * a, axis=1)


@pytest.mark.parametrize("d,lam,M", [(8, 3.0, 16), (3, 5.0, 4), (16, 4.0, 64)])
def test_haar_tilt_energy_matches_iid_monte_carlo(d, lam, M):
    """Both parts (total, plug-in E[Σᾱ²]) inside the 99.9% Student-t interval (6 comparisons; seed fixed)."""
    from stylized.theory.value_theory import haar_tilt_energy

    total, diag = _iid_sphere_tilt(d, lam, M, max(5_000, 320_000 // M), 11)
    want = haar_tilt_energy(d, lam, M)
    assert mean_ci(total, 0.999).contains(want[0]) and mean_ci(diag, 0.999).contains(want[1])


def test_haar_tilt_energy_matches_the_engine():
    """The engine with dense Haar steps, query and keys = b̂: E||F||² is the exact value, its plug-in ᾱᵀCᾱ = Σᾱ²
    has the exact mean E[Σᾱ²] (99.9% intervals, seed fixed)."""
    from stylized.theory.value_theory import haar_tilt_energy

    fam = make_family("haar", 6)
    s = far_energy_samples(fam, 12, 2, 3000, np.random.default_rng(8), weights="softmax", lam=3.0, key_align=1.0)
    total, diag = haar_tilt_energy(6, 3.0, 12)
    assert mean_ci(s["qkv"], 0.999).contains(total) and mean_ci(s["plugin"], 0.999).contains(diag)


def test_haar_tilt_energy_limits_and_accuracy():
    from stylized.theory.value_theory import haar_tilt_energy

    assert haar_tilt_energy(8, 3.0, 1) == (1.0, 1.0)
    assert haar_tilt_energy(8, 0.0, 7) == pytest.approx((1 / 7, 1 / 7))
    r = [haar_tilt_energy(8, 3.0, M)[0] for M in (2, 8, 64, 1024, 100_000)]
    assert all(a > b for a, b in zip(r, r[1:]))  # decreasing towards the floor
    assert r[-1] == pytest.approx(haar_tilt_floor(8, 3.0), rel=1e-3)
    for d, lam, M in [(16, 12.0, 256), (4, 20.0, 64), (2, 2.0, 4096)]:
        assert haar_tilt_energy(d, lam, M) == pytest.approx(haar_tilt_energy(d, lam, M, nodes=400), rel=1e-8)
    with pytest.raises(ValueError, match="M"):
        haar_tilt_energy(8, 3.0, 0)


def test_torus_tilt_floor_matches_monte_carlo():
    """Uniform torus angles, an uneven background: ||E[u e^{λb̂ᵀu}]/E[e^{λb̂ᵀu}]||² = Σ_p w_p (I_1/I_0)(λw_p)²
    (coordinate-weighted by plane; 200k draws, 1% relative tolerance ≈ 10 standard errors)."""
    from stylized.theory.value_theory import torus_tilt_floor

    b = np.array([1.0, 0.5, 0.2, 0.1, 1.5, -0.7])
    bh = b / np.linalg.norm(b)
    phi = np.random.default_rng(3).uniform(-np.pi, np.pi, (200_000, 3))
    c, s = np.cos(phi), np.sin(phi)
    u = np.empty((phi.shape[0], 6))
    u[:, 0::2] = c * bh[0::2] - s * bh[1::2]
    u[:, 1::2] = s * bh[0::2] + c * bh[1::2]
    w = np.exp(5.0 * u @ bh)
    F = (w[:, None] * u).mean(axis=0) / w.mean()
    assert F @ F == pytest.approx(torus_tilt_floor(b, 5.0), rel=0.01)


def test_tilt_floor_by_family():
    from stylized.laws.families import TokenAngles
    from stylized.theory.value_theory import tilt_floor, torus_tilt_floor

    b = np.ones(8)
    assert tilt_floor(make_family("so2-uniform", 8), b, 4.0) == torus_tilt_floor(b, 4.0)
    for name in ("householder", "lazy-haar", "haar"):
        assert tilt_floor(make_family(name, 8), b, 4.0) == haar_tilt_floor(8, 4.0)
    tok = TokenAngles(d=8, table=np.zeros((2, 4)))
    assert tilt_floor(tok, b, 4.0) is None and tilt_floor(make_family("haar", 8), b, 0.0) == 0.0
    # small λ/d: both floors ≈ (λ/d)² (the tilt is linear)
    assert torus_tilt_floor(np.ones(64), 4.0) == pytest.approx(haar_tilt_floor(64, 4.0), rel=1e-2)


# ---------------------------------------------------------------------------------------
# the step-law protocol: the lag form of every law, estimated theories with their radius
# ---------------------------------------------------------------------------------------
LAW_CASES = FAMS + [("householder", {"d": 5}), ("haar", {"d": 13}), ("lazy-haar", {"p": 0.3, "d": 3}),
                    ("cayley", {"d": 5})]


@pytest.mark.parametrize("name,kw", LAW_CASES)
def test_lag_form_equals_the_pair_form(name, kw):
    """b̂ᵀE[P_m]b̂ from the law's mean_overlap (the form of every law) = Σ_r w_r Re z_r^m; same plug-in, same exact value."""
    from stylized.theory.value_theory import _coherent_lags, lag_correlations, toeplitz_form

    kw = dict(kw)
    d = kw.pop("d", 8)
    fam = build_family(name, d, **kw)
    b = np.random.default_rng(5).normal(size=d)
    w, z = correlation_pairs(fam, b)
    c = lag_correlations(fam, b, 40)
    assert c == pytest.approx([float(np.real(z**m) @ w) for m in range(40)], abs=1e-12)
    a = np.random.default_rng(6).random((3, 40))
    assert toeplitz_form(a, c) == pytest.approx(quadratic_form(a, w, z), rel=1e-10)
    assert _coherent_lags(c, 40) == pytest.approx(qkv_interference_theory(fam, b, 40), rel=1e-10)


def test_estimated_theory_carries_a_radius_and_matches_monte_carlo():
    """cayley (no closed-form E[M]): the estimated exact value agrees with Monte Carlo within both intervals; a closed
    form has radius 0; one far source is exact."""
    from stylized.theory.value_theory import qkv_interference_radius

    cay, hh = make_family("cayley", 5), make_family("householder", 5)
    b = np.ones(5)
    assert qkv_interference_radius(hh, b, 16) == 0.0 and qkv_interference_radius(cay, b, 1) == 0.0
    rad = qkv_interference_radius(cay, b, 12)
    assert 0 < rad < 0.01
    e = mean_ci(far_energy_samples(cay, 12, 3, 3000, np.random.default_rng(1))["qkv"], 0.999)
    th = qkv_interference_theory(cay, b, 12)
    assert e.ci_low - rad <= th <= e.ci_high + rad


def test_plugin_radius_only_for_an_estimated_mean():
    cay = make_family("cayley", 5)
    s = far_energy_samples(cay, 8, 2, 50, np.random.default_rng(0), weights="softmax", lam=3.0)
    assert np.all(s["plugin-radius"] > 0)
    s = far_energy_samples(make_family("householder", 5), 8, 2, 50, np.random.default_rng(0), weights="softmax")
    assert "plugin-radius" not in s


def test_dependent_steps_use_the_lag_form():
    """A Markov token chain (iid = False): no correlation pairs, E[P_m] from the law itself; the exact value and the
    plug-in agree with Monte Carlo (99.9% intervals, seed fixed)."""
    from stylized.laws.registry import law_names
    from stylized.theory.value_theory import has_correlation_pairs

    if "markov-tokens" not in law_names():
        pytest.skip("no markov-tokens law registered")
    law = make_family("markov-tokens", 8, switch=0.1)
    b = np.full(8, 1 / np.sqrt(8))
    assert not has_correlation_pairs(law)
    with pytest.raises(ValueError, match="i.i.d"):
        correlation_pairs(law, b)
    s = far_energy_samples(law, 12, 3, 4000, np.random.default_rng(1))
    assert mean_ci(s["qkv"], 0.999).contains(qkv_interference_theory(law, b, 12))
    s = far_energy_samples(law, 12, 3, 2000, np.random.default_rng(2), weights="softmax", lam=3.0)
    assert mean_ci(s["qkv"] - s["plugin"], 0.999).contains(0.0)


def test_mixing_capabilities_replace_names():
    from stylized.laws.families import TokenAngles
    from stylized.theory.value_theory import tilt_floor

    b = np.ones(8)
    assert make_family("haar", 8).mixes_in_one_step and make_family("lazy-haar", 8, p=1.0).mixes_in_one_step
    assert not make_family("lazy-haar", 8, p=0.4).mixes_in_one_step
    assert tilt_floor(make_family("cayley", 7), np.ones(7), 4.0) == haar_tilt_floor(7, 4.0)
    assert tilt_floor(TokenAngles(d=8, table=np.zeros((2, 4))), b, 4.0) is None
    assert not TokenAngles(d=8, table=np.zeros((2, 4))).mixes_to_uniform and make_family("rope-random", 8).mixes_to_uniform


@pytest.mark.parametrize("name", ["lazy-haar", "haar"])
def test_pathwise_steps_of_a_flag_law_are_dense_haar(name):
    """pathwise_steps: the flags, then a Haar matrix per flag from the same Generator (what draw_route_steps gave)."""
    from stylized.engine.values import draw_route_steps

    fam = make_family(name, 5, p=0.5)
    m = draw_route_steps(fam, 40, 3, np.random.default_rng(0))
    assert m.shape == (40, 3, 5, 5) and fam.pathwise_ndim == 2
    assert np.allclose(m @ np.swapaxes(m, -1, -2), np.eye(5), atol=1e-12)
    rng = np.random.default_rng(0)
    mask = fam.sample(rng, (40, 3))
    assert np.array_equal(m[~mask], np.broadcast_to(np.eye(5), (int((~mask).sum()), 5, 5)))
    assert np.array_equal(m[mask], orthogonal_dense(rng, (int(mask.sum()),), 5))
