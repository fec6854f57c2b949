"""The transport engine beyond the per-family contract: the β-step written once per backend against its
dense matrix, the kernels without a family (contraction, window sums, chains) against the dense route
product, composition of routes, and the exact Haar law.

Per-law agreement of every backend with the dense oracle is the contract item ``backends``
(``tests/laws/test_law_contract.py``)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.core.step_ops import beta_step
from stylized.engine.kernels import beta_step_nb
from stylized.engine.score_chains import contraction_queries_numba, contraction_queries_numpy
from stylized.engine.scores import (
    householder_chain_scores_numba,
    householder_chain_scores_numpy,
    householder_window_sums_numba,
    householder_window_sums_numpy,
)
from stylized.engine.transport import route_angles, transported_queries
from stylized.engine.transport_reference import route_product
from stylized.laws.families import make_family, uniform_sphere


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), L=st.integers(2, 9), data=st.data())
def test_composition(seed, L, data):
    """P_{j→i} = P_{k→i} P_{j→k} for every j ≤ k ≤ i."""
    fam = make_family("householder", 5)
    mats = fam.dense(fam.rvs(L, seed))
    j = data.draw(st.integers(0, L - 1))
    k = data.draw(st.integers(j, L - 1))
    i = data.draw(st.integers(k, L - 1))
    assert np.allclose(route_product(mats, j, i), route_product(mats, k, i) @ route_product(mats, j, k))


def test_route_angles_are_suffix_sums():
    theta = np.arange(12.0).reshape(6, 2)
    A = route_angles(theta)
    for j in range(6):
        assert np.allclose(A[j], theta[j + 1 :].sum(axis=0))


def test_haar_transported_query_is_uniform_in_law():
    """One coordinate of P_{j→i}ᵀ q after a Haar step has the exact Beta law (KS test, fixed seed)."""
    from scipy import stats

    from stylized.theory.bounds import haar_coordinate_cdf

    fam = make_family("haar", 7)
    rng = np.random.default_rng(5)
    q = np.eye(7)[0]
    x = np.concatenate([transported_queries(fam, fam.rvs(200, rng), q, rng)[:-1, 0] for _ in range(10)])
    assert stats.kstest(x, lambda s: haar_coordinate_cdf(s, 7)).pvalue > 1e-3


@numba.njit
def _beta_step_nb_rows(U, W, beta, nn):
    for t in range(U.shape[0]):
        beta_step_nb(U[t], W[t], beta, nn[t])


@pytest.mark.parametrize("beta", [2.0, 0.5, 1.3])
def test_beta_step_is_the_dense_matrix_in_both_backends(beta):
    """``u − β w (w·u) = (I − β wwᵀ) u``: the namespace helper (one vector, a batch) and the Numba helper
    (unit ``w``, and an unnormalised ``g`` with ``nn = ||g||²``) agree with the dense matrix."""
    rng = np.random.default_rng(0)
    g = rng.standard_normal((5, 7))
    w = g / np.linalg.norm(g, axis=1, keepdims=True)
    u = rng.standard_normal((5, 7))
    want = np.einsum("tab,tb->ta", np.eye(7) - beta * w[:, :, None] * w[:, None, :], u)
    assert np.allclose(beta_step(u, w, beta), want, atol=1e-13)
    assert np.allclose(beta_step(u[0], w[0], beta), want[0], atol=1e-13)
    out = u.copy()
    _beta_step_nb_rows(out, w, beta, np.ones(5))
    assert np.allclose(out, want, atol=1e-13)
    out = u.copy()
    _beta_step_nb_rows(out, g, beta, np.sum(g * g, axis=1))
    assert np.allclose(out, want, atol=1e-13)


@pytest.mark.parametrize("beta", [2.0, 0.5])
def test_contraction_queries_equal_dense_route_product(beta):
    """PaTH-style steps ``I − β wwᵀ``: ``U[n] = P_nᵀ q`` (row ``n`` = route length) in both backends."""
    rng = np.random.default_rng(1)
    N, d = 9, 6
    w = uniform_sphere(rng, (N,), d)
    q = uniform_sphere(rng, (), d)
    mats = np.eye(d) - beta * w[:, :, None] * w[:, None, :]  # m_n = I − β w_n w_nᵀ, symmetric
    want = np.array([np.linalg.multi_dot([np.eye(d), *mats[n:0:-1], q[:, None]])[:, 0] for n in range(N)])  # P_nᵀ q
    for f in (contraction_queries_numba, contraction_queries_numpy):
        assert np.allclose(f(w, q, beta), want, atol=1e-12)


def test_window_sums_and_chain_scores_equal_dense_route_product():
    rng = np.random.default_rng(2)
    L, d = 23, 5
    w = uniform_sphere(rng, (L,), d)
    mats = np.eye(d) - 2.0 * w[:, :, None] * w[:, None, :]
    q = uniform_sphere(rng, (), d)
    stride, nmax = 3, 6
    want = np.zeros(nmax + 1)
    for i in range(L - 1, -1, -stride):
        for n in range(min(nmax, i) + 1):
            want[n] += q @ route_product(mats, i - n, i) @ q
    for f in (householder_window_sums_numba, householder_window_sums_numpy):
        assert np.allclose(f(w, q, stride, nmax)[0], want, atol=1e-12)
    g = rng.standard_normal((4, 8, d))
    k = uniform_sphere(rng, (), d)
    hw = g / np.linalg.norm(g, axis=2, keepdims=True)
    dense = np.eye(d) - 2.0 * hw[..., :, None] * hw[..., None, :]
    want = np.array([q @ np.linalg.multi_dot([*dense[t, ::-1], k[:, None]])[:, 0] for t in range(4)])
    for f in (householder_chain_scores_numba, householder_chain_scores_numpy):
        assert np.allclose(f(g, q, k), want, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(d=st.integers(1, 9), routes=st.integers(1, 5), N=st.integers(1, 7), batch=st.booleans(),
       seed=st.integers(0, 2**16))
def test_dense_route_kernel_equals_its_numpy_twin_and_the_route_product(d, routes, N, batch, seed):
    """The compiled generic dense path (what a user's ``sample``-only law runs) against its NumPy twin and the
    dense route product ``P_nᵀ q``, odd ``d`` and leading axes included."""
    from scipy.stats import ortho_group

    from stylized.engine.dense_kernels import dense_route_queries, dense_route_queries_numpy

    rng = np.random.default_rng(seed)
    steps = ortho_group.rvs(d, size=routes * N, random_state=rng).reshape(routes, N, d, d) if d > 1 else \
        rng.choice([-1.0, 1.0], size=(routes, N, 1, 1))
    q = rng.standard_normal(d)
    fast, twin = dense_route_queries(steps, q), dense_route_queries_numpy(steps, q)
    P, oracle = np.broadcast_to(np.eye(d), (routes, d, d)).copy(), np.empty((routes, N, d))
    for n in range(N):
        if n:
            P = P @ steps[:, n]
        oracle[:, n] = np.einsum("rde,d->re", P, q)
    assert np.allclose(fast, twin, atol=1e-12) and np.allclose(fast, oracle, atol=1e-12)
    if batch:  # any leading shape
        two = dense_route_queries(np.stack([steps, steps]), q)
        assert two.shape == (2, routes, N, d) and np.array_equal(two[1], fast)


def test_dense_route_kernel_does_not_depend_on_threads():
    from stylized.engine.dense_kernels import dense_route_queries

    rng = np.random.default_rng(3)
    steps, q = rng.standard_normal((33, 9, 7, 7)), rng.standard_normal(7)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = dense_route_queries(steps, q)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = dense_route_queries(steps, q)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, many)
