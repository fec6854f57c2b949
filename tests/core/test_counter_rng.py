"""Counter-based draws and the fused kernels built on them: exact against NumPy on identical draws, right in law."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stylized.core.counter_rng import (
    GOLDEN,
    box_muller,
    box_muller_np,
    draw,
    draw_np,
    log_unit,
    mix64_np,
    sincos,
    splitmix64_reference,
    stream_keys,
    unit_from_high,
    unit_from_low,
    unit_open,
    zero_based_key,
)
from stylized.engine.context_sweep import so2_context_inputs, so2_context_numba, so2_context_numpy
from stylized.engine.kernels import so2_context_counter, so2_context_counter_inputs, so2_context_sampled
from stylized.engine.sampling import equal_energy_query
from stylized.laws.families import make_family


@numba.njit(error_model="numpy")
def _draws(key, n):
    out = np.empty(n, np.uint64)
    for t in range(n):
        out[t] = draw(key, t)
    return out


@numba.njit(error_model="numpy")
def _units(z):
    a, b, c = np.empty(z.size), np.empty(z.size), np.empty(z.size)
    for i in range(z.size):
        a[i], b[i], c[i] = unit_open(z[i]), unit_from_high(z[i]), unit_from_low(z[i])
    return a, b, c


@numba.njit(error_model="numpy")
def _log(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = log_unit(x[i])
    return out


@numba.njit(error_model="numpy")
def _sincos(x):
    s, c = np.empty_like(x), np.empty_like(x)
    for i in range(x.size):
        s[i], c[i] = sincos(x[i])
    return s, c


def test_splitmix64_known_answers_and_kernel_stream():
    # SplitMix64 seeded with 0 (Vigna's reference splitmix64.c): its first three outputs
    assert splitmix64_reference(0, 3) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    for key in (0, 12345, 2**64 - 1):
        assert [int(v) for v in _draws(np.uint64(key), 6)] == splitmix64_reference(key, 6)
    t = np.arange(6, dtype=np.uint64)
    assert mix64_np(np.uint64(12345) + (t + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)).tolist() == \
        splitmix64_reference(12345, 6)


def test_stream_keys_depend_on_seed_only():
    assert np.array_equal(stream_keys(5, 4), stream_keys(np.random.SeedSequence(5), 4))
    assert len(set(stream_keys(5, 1000).tolist())) == 1000


def test_uniforms_in_range_and_in_law():
    # 2·10⁵ draws: each uniform's mean within 4.5 standard errors of ½ (sd 1/√12), KS against U(0,1) at p > 1e-3
    z = _draws(np.uint64(7), 200_000)
    n = z.size
    for u in _units(z):
        assert u.min() > 0.0 and u.max() <= 1.0
        assert abs(u.mean() - 0.5) <= 4.5 / math.sqrt(12 * n)
        assert stats.kstest(u, "uniform").pvalue > 1e-3
    edges = np.array([0, 2**64 - 1], dtype=np.uint64)
    lo, hi, low = _units(edges)
    assert lo[0] == 2.0**-53 and lo[1] == 1.0 and 0 < hi[0] < hi[1] < 1 and 0 < low[0] < low[1] < 1


@settings(deadline=None, max_examples=40)
@given(st.floats(min_value=2.0**-1022, max_value=1.0))
def test_log_unit_matches_libm(u):
    assert _log(np.array([u]))[0] == pytest.approx(math.log(u), rel=4e-15, abs=4e-16)


def test_log_unit_edges():
    x = np.array([2.0**-53, 0.5, 2**-0.5, np.nextafter(2**-0.5, 1), np.nextafter(1.0, 0), 1.0])
    np.testing.assert_allclose(_log(x), np.log(x), rtol=4e-15, atol=4e-16)
    assert _log(np.array([1.0]))[0] == 0.0


@settings(deadline=None, max_examples=60)
@given(st.floats(min_value=-200.0, max_value=200.0))
def test_sincos_matches_libm(x):
    # 2e-15 on the kernels' range |x| ≤ 2π; beyond it the one-constant reduction x − 2π·k adds ≈ |x|·1.5e-16
    tol = 2e-15 + 2e-16 * max(0.0, abs(x) - 2 * math.pi)
    s, c = _sincos(np.array([x]))
    assert abs(s[0] - math.sin(x)) <= tol and abs(c[0] - math.cos(x)) <= tol


@settings(deadline=None, max_examples=20)
@given(L=st.integers(1, 60), B=st.integers(1, 5), D=st.integers(1, 8), target=st.integers(-1, 70),
       lam=st.floats(0.1, 20.0), seed=st.integers(0, 2**20))
def test_fused_so2_sweep_equals_numpy_on_identical_draws(L, B, D, target, lam, seed):
    # the draws rebuilt in NumPy, scored by the NumPy reference: same near scores and far log-sum-exp
    D = min(D, L)
    omegas = np.linspace(0.3, np.pi, B)
    qn = np.random.default_rng(seed).random(B) + 0.1
    keys = stream_keys(seed, 3)
    near, far = so2_context_counter(keys, omegas, qn, L, lam, D, target)
    near0, far0 = so2_context_numpy(*so2_context_counter_inputs(omegas, qn, L, keys, target), lam, D)
    np.testing.assert_allclose(near, near0, atol=1e-12)
    np.testing.assert_allclose(far, far0, atol=1e-10)


def test_fused_so2_sweep_long_route_and_target():
    # 65,536 steps: the recurrence with the polynomial sincos tracks the NumPy cos/sin of the summed angle
    fam = make_family("rope-random", 8)
    q = equal_energy_query(8)
    qn = np.hypot(q[0::2], q[1::2])
    keys = stream_keys(3, 1)
    near, far = so2_context_counter(keys, fam.omegas, qn, 65536, 1.0, 8, 5)
    near0, far0 = so2_context_numpy(*so2_context_counter_inputs(fam.omegas, qn, 65536, keys, 5), 1.0, 8)
    assert np.allclose(near, near0, atol=1e-11) and abs(far[0] - far0[0]) < 1e-9
    assert near[0, 0] != 1.0 and abs(so2_context_sampled(fam, 50, 2, 0, q, 1.0, 3, 0)[0][:, 0] - 1.0).max() < 1e-15


def test_fused_so2_sweep_agrees_in_law_with_numpy_draws():
    # 600 contexts each way (independent streams): per-position means of the near scores (route lengths 0…5, target
    # at 2) and the mean far log-sum-exp agree within 4.5 standard errors of their difference
    fam = make_family("so2-uniform", 16, omega=1.0)
    q = equal_energy_query(16)
    L, D, lam, T = 400, 6, 4.0, 600
    near_a, far_a = so2_context_sampled(fam, L, T, 11, q, lam, D, 2)
    rng = np.random.default_rng(12)
    near_b, far_b = so2_context_numba(*so2_context_inputs(fam, L, T, rng, q, target_n=2), lam, D)
    for a, b in ((near_a, near_b), (far_a[:, None], far_b[:, None])):
        se = np.sqrt(a.var(axis=0, ddof=1) / T + b.var(axis=0, ddof=1) / T)
        assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) <= 4.5 * se)
    # and the planted target's mean is the exact E[cos A_2]-weighted value qᵀE[M]²q
    assert abs(near_a[:, 2].mean() - np.sinc(1 / np.pi) ** 2) <= 4.5 * near_a[:, 2].std(ddof=1) / math.sqrt(T)


def test_fused_so2_sweep_rejects_other_families():
    with pytest.raises(ValueError, match="family"):
        so2_context_sampled(make_family("so2-normal", 8), 10, 1, 0, equal_energy_query(8), 1.0, 2)
    with pytest.raises(ValueError, match="family"):
        so2_context_sampled(make_family("householder", 8), 10, 1, 0, equal_energy_query(8), 1.0, 2)


# ---------------------------------------------------------------------------------------
# one stream convention: draw t of key K is mix64(K + (t+1)·G), in kernels and in NumPy
# ---------------------------------------------------------------------------------------
@numba.njit(error_model="numpy")
def _pairs(key, n):
    a, b = np.empty(n), np.empty(n)
    for t in range(n):
        a[t], b[t] = box_muller(key, t)
    return a, b


@pytest.mark.parametrize("key", [0, 12345, 2**64 - 1])
def test_numpy_twins_rebuild_the_kernel_stream(key):
    t = np.arange(40, dtype=np.uint64)
    assert np.array_equal(draw_np(np.uint64(key), t), _draws(np.uint64(key), 40))
    a, b = box_muller_np(np.uint64(key), t)
    ka, kb = _pairs(np.uint64(key), 40)
    assert np.allclose(a, ka, rtol=0, atol=1e-13) and np.allclose(b, kb, rtol=0, atol=1e-13)


@pytest.mark.parametrize("key", [0, 7, GOLDEN - 1, 2**64 - 1])
def test_zero_based_streams_are_the_one_convention_rekeyed(key):
    """A stream written ``mix64(K + t·G)`` (the streaming log-sum-exp) is :func:`draw`'s stream keyed ``K − G``:
    the same 64-bit words, so mapping it onto the one convention moves no number."""
    t = np.arange(50, dtype=np.uint64)
    zero_based = mix64_np(np.uint64(key) + t * np.uint64(GOLDEN))
    assert np.array_equal(draw_np(np.uint64(zero_based_key(key)), t), zero_based)
    assert np.array_equal(_draws(np.uint64(zero_based_key(key)), 50), zero_based)
    from stylized.engine.lse import counter_uniforms

    assert np.array_equal(counter_uniforms(key, 0, 50), (zero_based >> np.uint64(11)).astype(float) / 2.0**53)
