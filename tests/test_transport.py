"""Route transport: structured equals dense, composition, Horner value transport."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.families import make_family, uniform_sphere
from stylized.transport import route_angles, route_product, transported_queries, transported_sum

STRUCTURED = [("so2-uniform", dict(omega=1.2)), ("so2-normal", dict(sigma=0.7)), ("householder", {})]


@pytest.mark.parametrize("name,kw", STRUCTURED)
def test_structured_queries_equal_dense_products(name, kw):
    fam = make_family(name, 6, **kw)
    rng = np.random.default_rng(0)
    L = 12
    steps = fam.rvs(L, rng)
    mats = fam.dense(steps)
    q = uniform_sphere(rng, (), 6)
    U = transported_queries(fam, steps, q)
    for j in range(L):
        assert np.allclose(U[j], route_product(mats, j, L - 1).T @ q)


@pytest.mark.parametrize("name,kw", STRUCTURED)
def test_structured_value_sum_equals_dense(name, kw):
    fam = make_family(name, 6, **kw)
    rng = np.random.default_rng(1)
    L = 10
    steps = fam.rvs(L, rng)
    mats = fam.dense(steps)
    v = rng.standard_normal((L, 6))
    a = rng.random(L)
    want = sum(a[j] * route_product(mats, j, L - 1) @ v[j] for j in range(L))
    assert np.allclose(transported_sum(fam, steps, a, v), want)


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


def test_haar_exact_law_resamples_only_at_haar_steps():
    fam = make_family("lazy-haar", 5, p=0.5)
    mask = np.array([True, False, True, False, False, True])
    q = np.eye(5)[0]
    U = transported_queries(fam, mask, q, random_state=0)
    assert np.allclose(U[5], q)
    # U[j] = P_{j→i}ᵀ q is resampled exactly where step j+1 is a Haar step, kept otherwise
    for j in range(4, -1, -1):
        same = np.allclose(U[j], U[j + 1])
        assert same == (not mask[j + 1])
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0)


def test_haar_transported_query_is_uniform_in_law():
    """One coordinate of P_{j→i}ᵀ q after a Haar step has the exact Beta law (KS test, fixed seed)."""
    from scipy import stats

    from stylized.bounds import haar_coordinate_cdf

    fam = make_family("haar", 7)
    rng = np.random.default_rng(5)
    q = np.eye(7)[0]
    x = np.concatenate([transported_queries(fam, fam.rvs(200, rng), q, rng)[:-1, 0] for _ in range(10)])
    assert stats.kstest(x, lambda s: haar_coordinate_cdf(s, 7)).pvalue > 1e-3
