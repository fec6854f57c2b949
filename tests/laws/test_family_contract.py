"""Each step family's own laws, one class per family kind, plus what the step-law contract cannot ask of a law
instance: each family's parameter refusals and the engine's compiled kernels against the dense oracle.

The contract every family keeps (exact mean, orthogonal draws, ``γ`` against the dense SVD, ``E[M]ⁿ`` against matrix
powers, the window ``W(ε)``, seeds, refusals, the law of one step, every transport backend) is
:func:`stylized.harness.testing.check_law`, run item by item on every family in ``tests/laws/test_law_contract.py``.

Statistical tests use fixed seeds and a stated band: means within ``4.5`` standard errors per entry
(two-sided ≈ 7e-6 per entry for a true difference of 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stylized.engine.kernels import (
    householder_overlaps_numba,
    householder_overlaps_numpy,
    so2_scores_numba,
    so2_scores_numpy,
)
from stylized.engine.scores import plane_dot_cross
from stylized.engine.transport import transported_queries
from stylized.engine.transport_reference import route_product, route_products
from stylized.laws.base import StepLaw
from stylized.laws.families import (
    SO2Normal,
    TokenAngles,
    make_family,
    rope_frequencies,
    uniform_sphere,
)
from tests._shared import FAMILY_CASES, FAMILY_IDS, build_family

Z = 4.5
TOL = 1e-10  # agreement of a fast path with the dense oracle (float64 rounding over ≤ 20 steps)

BAD_PARAMETERS = {"so2-uniform": {"omega": 4.0}, "so2-normal": {"sigma": -1.0}, "rope-random": {"base": 1.0},
                  "lazy-haar": {"p": 0.0}, "token": {"probs": np.array([0.5, 0.5, 0.5, 0.5, 0.5])}}
WITH_PARAMETERS = [(i, name, kw) for i, (name, kw) in zip(FAMILY_IDS, FAMILY_CASES) if name in BAD_PARAMETERS]


@pytest.mark.parametrize("name,kw", [c[1:] for c in WITH_PARAMETERS], ids=[c[0] for c in WITH_PARAMETERS])
def test_family_refuses_a_bad_parameter_naming_it(name, kw):
    bad = BAD_PARAMETERS[name]
    with pytest.raises(ValueError, match=next(iter(bad))):
        build_family(name, 8, **{**kw, **bad})


@pytest.mark.parametrize("d", [2, 3, 4, 7, 33])
def test_token_family_is_built_at_every_even_d(d):
    if d % 2:
        with pytest.raises(ValueError, match="d must be even"):
            build_family("token", d)
    else:
        assert build_family("token", d).d == d


PATHWISE = [(name, kw) for name, kw in FAMILY_CASES if name not in ("lazy-haar", "haar")]


@pytest.mark.parametrize("name,kw", PATHWISE, ids=[i for i, (n, _) in zip(FAMILY_IDS, FAMILY_CASES)
                                                  if n not in ("lazy-haar", "haar")])
def test_engine_kernels_agree_with_the_dense_oracle(name, kw):
    """The Numba kernels and their NumPy twins (query at ``i = L−1``, ``steps[t] = M_t``) against ``P_{j→i}``."""
    fam = build_family(name, 6, **kw)
    rng = np.random.default_rng(7)
    N, d = 9, 6
    q = uniform_sphere(rng, (), d)
    keys = uniform_sphere(rng, (N,), d)
    pos = fam.rvs(N, rng)
    pos_mats = fam.dense(pos)
    if name == "householder":
        U = np.stack([route_product(pos_mats, j, N - 1).T @ q for j in range(N)])
        from stylized.engine.kernels import householder_queries_numba, householder_queries_numpy

        for f in (householder_queries_numba, householder_queries_numpy):
            assert np.allclose(f(pos, q), U, atol=TOL)
        steps = fam.pathwise_steps(rng, (3, N), np)
        P = route_products(fam.dense(steps.reshape(3 * N, d), rng).reshape(3, N, d, d))
        ns = np.array([0, 1, 4, N - 1])
        want_o = np.einsum("d,tnde,e->tn", q, P, q)[:, ns]
        for f in (householder_overlaps_numba, householder_overlaps_numpy):
            assert np.allclose(f(np.ascontiguousarray(steps[:, 1:]), q, ns), want_o, atol=TOL)
    else:
        dot, cross = plane_dot_cross(q, keys)
        s_pos = np.array([q @ route_product(pos_mats, j, N - 1) @ keys[j] for j in range(N)])
        for f in (so2_scores_numba, so2_scores_numpy):
            assert np.allclose(f(np.asarray(pos), dot, cross), s_pos, atol=TOL)


class TestSO2Laws:
    """SO(2) blocks: plane angles add along a route; the mean is ``diag(χ_b R(μ_b))``."""

    def test_closed_form_gaps(self):
        assert make_family("so2-uniform", 4, omega=1.0).spectral_gap == pytest.approx(1 - math.sin(1.0))
        assert make_family("so2-normal", 4, sigma=1.0).spectral_gap == pytest.approx(1 - math.exp(-0.5))
        om = rope_frequencies(8, 10000.0)
        assert make_family("rope-random", 8).spectral_gap == pytest.approx(1 - np.sinc(om[-1] / np.pi))

    def test_per_plane_normal_law_against_dense_oracle(self):
        fam = SO2Normal(d=6, sigma=(0.3, 0.6, 0.9), mu=(0.1, -0.4, 2.0))
        assert fam.spectral_gap == pytest.approx(StepLaw.spectral_gap.fget(fam), abs=1e-12)
        assert np.allclose(fam.mean_power(7), np.linalg.matrix_power(fam.mean(), 7), atol=1e-13)

    def test_normal_mean_has_rotation_part(self):
        fam = make_family("so2-normal", 2, sigma=0.5, mu=0.3)
        c = math.exp(-0.125)
        assert np.allclose(fam.mean(), c * np.array([[math.cos(0.3), -math.sin(0.3)], [math.sin(0.3), math.cos(0.3)]]))

    def test_token_family_mean_and_draws(self):
        table = np.array([[0.0, 1.0], [0.5, -1.0], [2.0, 0.2]])
        probs = np.array([0.5, 0.3, 0.2])
        fam = TokenAngles(d=4, table=table, probs=probs)
        assert np.allclose(fam.chi(), probs @ np.exp(1j * table))
        x, theta = fam.rvs_tokens(10, 0)
        assert np.allclose(theta, table[x])
        assert fam.spectral_gap == pytest.approx(StepLaw.spectral_gap.fget(fam), abs=1e-12)

    def test_rope_plane_windows_span_scales(self):
        W = make_family("rope-random", 64).plane_windows(0.01)
        assert W[0] < 100 and W[-1] > 1e8 and np.all(np.diff(W) >= 0)

    def test_route_of_rotations_is_rotation_by_summed_angles(self):
        fam = make_family("so2-normal", 8, sigma=1.3)
        theta = fam.rvs(12, 0)
        A = theta[1:].sum(axis=0)
        assert np.allclose(route_product(fam.dense(theta), 0, 11), fam.dense(A[None])[0], atol=1e-12)


class TestHouseholderLaws:
    """Reflections ``I − 2wwᵀ`` with uniform ``w``: ``E[M] = (1 − 2/d) I``, and ``qᵀP_n q`` has mean ``(1 − 2/d)ⁿ``."""

    def test_gap_is_two_over_d(self):
        assert make_family("householder", 16).spectral_gap == pytest.approx(2 / 16)

    def test_overlap_mean_is_a_power(self):
        rng = np.random.default_rng(4)
        q = uniform_sphere(rng, (), 8)
        ns = np.array([0, 1, 3, 6])
        x = householder_overlaps_numba(uniform_sphere(rng, (4000, 6), 8), q, ns)
        se = x.std(axis=0, ddof=1) / math.sqrt(len(x))
        assert np.all(np.abs(x.mean(axis=0) - (1 - 2 / 8) ** ns) <= Z * se + 1e-12)


class TestHaarLaws:
    """Haar / lazy Haar: ``E[M] = (1 − p) I``; after a Haar step a transported vector is uniform and fresh."""

    def test_gap_is_p(self):
        assert make_family("lazy-haar", 5, p=0.25).spectral_gap == pytest.approx(0.25)
        assert make_family("haar", 5).spectral_gap == pytest.approx(1.0)
        assert make_family("haar", 4).mixing_window(0.01) == 1

    def test_exact_law_changes_the_query_only_at_haar_steps(self):
        fam = make_family("lazy-haar", 6, p=0.4)
        mask = fam.rvs(30, 1)
        q = uniform_sphere(np.random.default_rng(2), (), 6)
        U = transported_queries(fam, mask, q, random_state=3)
        for j in range(29):
            assert np.array_equal(U[j], U[j + 1]) != bool(mask[j + 1])
        assert np.allclose(np.linalg.norm(U, axis=1), 1.0)


@pytest.mark.parametrize("name,kw", FAMILY_CASES, ids=FAMILY_IDS)
def test_builtin_draws_are_orthogonal_to_float_rounding(name, kw):
    """The built-in laws' steps are orthogonal to 1e-10 (``check_law``'s ``orthogonal`` item allows any law 1e-8)."""
    fam = build_family(name, 8, **kw)
    rng = np.random.default_rng(2)
    mats = fam.dense(fam.rvs(50, rng), rng)
    assert np.allclose(np.einsum("nij,nkj->nik", mats, mats), np.eye(8), atol=1e-10)
