"""Backends: Numba and NumPy kernels agree on identical inputs; the array-namespace (CuPy) path agrees in law."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.core.backend import array_namespace, check_backend
from stylized.engine.kernels import (
    householder_chain_normals,
    householder_chain_numba,
    householder_queries_numpy,
    householder_route,
    kernel,
)
from stylized.engine.sampling import _sample_overlaps_xp, sample_far_route, sample_far_route_dense, sample_overlaps
from stylized.laws.families import make_family, uniform_sphere
from tests._shared import needs_gpu


def test_unknown_backend_names_backend():
    with pytest.raises(ValueError, match="backend"):
        check_backend("jax")
    with pytest.raises(ValueError, match="backend"):
        array_namespace("torch")


@settings(deadline=None, max_examples=15)
@given(L=st.integers(1, 40), B=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_so2_scores_numba_matches_numpy(L, B, seed):
    rng = np.random.default_rng(seed)
    th, dot, cross = rng.uniform(-3, 3, (L, B)), rng.standard_normal((L, B)), rng.standard_normal((L, B))
    np.testing.assert_allclose(kernel("so2_scores", "numba")(th, dot, cross), kernel("so2_scores", "numpy")(th, dot, cross),
                               rtol=1e-10, atol=1e-10)


@settings(deadline=None, max_examples=15)
@given(L=st.integers(1, 30), d=st.integers(2, 9), seed=st.integers(0, 2**16))
def test_householder_kernels_match_numpy(L, d, seed):
    rng = np.random.default_rng(seed)
    w, q = uniform_sphere(rng, (L,), d), uniform_sphere(rng, (), d)
    np.testing.assert_allclose(kernel("householder_queries", "numba")(w, q), householder_queries_numpy(w, q), atol=1e-12)
    ww = uniform_sphere(rng, (3, L), d)
    ns = np.array([0, L // 2, L]) if L > 1 else np.array([0, 1])
    np.testing.assert_allclose(kernel("householder_overlaps", "numba")(ww, q, ns),
                               kernel("householder_overlaps", "numpy")(ww, q, ns), atol=1e-12)


@pytest.mark.parametrize("d", [1, 7, 8, 64])  # 64: the benchmark size, full SIMD width in the step
@pytest.mark.parametrize("start_row", [True, False])
def test_householder_chain_equals_numpy_on_its_own_draws(d, start_row):
    # identical inputs: the normals the kernel draws (rebuilt in NumPy) fed to the NumPy rank-one loop give the same
    # chain; 150 steps cross the kernel's 64-step draw blocks
    m = 150
    q = uniform_sphere(np.random.default_rng(0), (), d)
    U = np.empty((m, d))
    householder_chain_numba(np.uint64(11), q, U, start_row)
    steps = m - 1 if start_row else m
    g = householder_chain_normals(11, steps, d)[::-1]
    w = np.zeros((steps + 1, d))
    w[1:] = g / np.linalg.norm(g, axis=1, keepdims=True)
    ref = householder_queries_numpy(w, q)
    np.testing.assert_allclose(U, ref if start_row else ref[:m], atol=1e-12)


def test_householder_route_segments_exact_in_law():
    # E[qᵀ u_j] = (1 − 2/d)^n with n = i − j, for every number of segments (the glue is exact in law).
    # 3000 routes of length 12; tolerance: 4.5 standard errors (|qᵀu| ≤ 1), i.e. far outside a 99.99% interval.
    d, L, R = 6, 12, 3000
    q = np.eye(d)[1]
    for segments in (1, 3):
        x = np.array([householder_route(q, L, seed=s, segments=segments) @ q for s in range(R)])
        n = L - 1 - np.arange(L)
        se = x.std(axis=0, ddof=1) / np.sqrt(R)
        assert np.all(np.abs(x.mean(axis=0) - (1 - 2 / d) ** n) <= 4.5 * se + 1e-12), segments
        assert np.allclose(np.linalg.norm(householder_route(q, L, seed=0, segments=segments), axis=1), 1.0)
    assert householder_route(q, 1, seed=0).shape == (1, d)


@pytest.mark.parametrize("name", ["so2-uniform", "so2-normal", "rope-random", "householder", "lazy-haar", "haar"])
def test_namespace_path_agrees_in_law_with_numpy(name):
    # The CuPy code path run through NumPy: means of qᵀP_n q from both paths (independent draws) differ by less than
    # 4.5 standard errors of the difference (4000 chains each), and n = 0 gives exactly qᵀq.
    fam = make_family(name, d=8)
    ns = np.array([0, 1, 3, 10, 40])
    a = _sample_overlaps_xp(fam, ns, 4000, np.random.default_rng(1), np)
    b = sample_overlaps(fam, ns, 4000, random_state=2, backend="numpy")
    se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) <= 4.5 * se + 1e-12)
    assert np.allclose(a[:, 0], 1.0)


def test_far_route_exact_matches_dense_in_law():
    # qᵀ P_n q: P(unchanged) = (1−p)^n, and after a Haar step it is a Haar coordinate with variance 1/d.
    fam = make_family("lazy-haar", d=6, p=0.3)
    q = np.eye(6)[0]
    ex = sample_far_route(fam, 3, 4000, 0, q=q) @ q
    de = sample_far_route_dense(fam, 3, 600, 1, q=q) @ q
    for x in (ex, de):
        k = np.sum(np.isclose(x, 1.0))
        p0 = 0.7**3
        assert abs(k / len(x) - p0) <= 4.5 * np.sqrt(p0 * (1 - p0) / len(x))
    with pytest.raises(ValueError, match="family"):
        sample_far_route(make_family("householder", d=4), 3, 5)


@needs_gpu
def test_cupy_overlaps_agree_in_law():
    import cupy

    for name in ("so2-uniform", "householder", "lazy-haar"):
        fam = make_family(name, d=16)
        ns = np.array([0, 1, 5, 50])
        a = sample_overlaps(fam, ns, 20000, random_state=1, backend="cupy")
        assert isinstance(a, np.ndarray)
        b = sample_overlaps(fam, ns, 20000, random_state=2, backend="numpy")
        se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
        assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) <= 4.5 * se + 1e-12), name
    # identical inputs: the namespace path with NumPy and with CuPy on the same draws (a counter-free family: haar n=0)
    assert cupy.asnumpy(_sample_overlaps_xp(make_family("haar", d=4), np.array([0]), 3, cupy.random.default_rng(0),
                                            cupy)).tolist() == [[1.0], [1.0], [1.0]]


@needs_gpu
def test_cupy_so2_identical_inputs():
    # same angles on host and device: accumulated-angle overlaps agree to float64 rounding
    import cupy

    rng = np.random.default_rng(0)
    th = rng.uniform(-1, 1, (64, 30, 8))
    w = rng.random(8)
    host = np.cos(np.cumsum(th, axis=1)) @ w
    dev = cupy.asnumpy(cupy.cos(cupy.cumsum(cupy.asarray(th), axis=1)) @ cupy.asarray(w))
    np.testing.assert_allclose(dev, host, atol=1e-12)


def test_householder_route_into_out_arrays():
    # out= gives the same route (float32: the float64 route rounded once per entry); a wrong out is refused
    q = np.full(16, 0.25)
    ref = householder_route(q, 300, seed=4)
    U = np.empty((300, 16))
    assert householder_route(q, 300, seed=4, out=U) is U and np.array_equal(U, ref)
    U32 = np.empty((300, 16), dtype=np.float32)
    np.testing.assert_allclose(householder_route(q, 300, seed=4, out=U32), ref, atol=1e-6)
    with pytest.raises(ValueError, match="out"):
        householder_route(q, 300, seed=4, out=np.empty((299, 16)))
