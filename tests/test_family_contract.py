"""The contract every step family keeps, as one parametrised class (SciPy's checklist per distribution),
then one class per family kind for its own laws.

Contract (every family in :data:`tests._shared.FAMILY_CASES`): the exact mean ``E[M]`` against dense draws,
orthogonal draws, the closed-form gap ``γ`` against the dense SVD oracle, ``E[M]ⁿ`` and ``qᵀE[M]ⁿq``
against matrix powers, the window ``W(ε)`` bounding ``||E[M]^W||_op``, reproducibility under a seed,
invalid input naming the parameter, the law of one step through the transport engine, and every
transport backend (array-namespace engine, position adapters, Numba kernels, the ``cupy`` path on the
NumPy stand-in) against the dense route product ``P_n = m_1 ⋯ m_n`` (:mod:`stylized.engine.transport_reference`).

Statistical tests use fixed seeds and a stated band: means within ``4.5`` standard errors per entry
(two-sided ≈ 7e-6 per entry for a true difference of 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stylized.core.backend import numpy_standin_for_cupy
from stylized.engine.kernels import (
    householder_overlaps_numba,
    householder_overlaps_numpy,
    householder_queries_numba,
    householder_queries_numpy,
    so2_scores_numba,
    so2_scores_numpy,
)
from stylized.engine.transport import (
    route_queries,
    route_scores,
    route_sum,
    route_sums,
    transported_queries,
    transported_sum,
)
from stylized.engine.transport_reference import (
    dense_route_steps,
    position_to_route,
    reference_scores,
    reference_sum,
    route_product,
    route_products,
)
from stylized.engine.values import draw_route_steps
from stylized.laws.families import (
    Householder,
    SO2Normal,
    StepFamily,
    TokenAngles,
    make_family,
    rope_frequencies,
    uniform_sphere,
)
from tests._shared import FAMILY_CASES, FAMILY_IDS, build_family

Z = 4.5
TOL = 1e-10
SO2_NAMES = ("so2-uniform", "so2-normal", "rope-random", "token")  # agreement of a fast path with the dense oracle (float64 rounding over ≤ 20 steps)


def _family(name: str, d: int, kw: dict) -> StepFamily:
    return build_family(name, d, **kw)


contract = pytest.mark.parametrize("name,kw", FAMILY_CASES, ids=FAMILY_IDS)


class TestFamilyContract:
    """One checklist, every family."""

    @contract
    def test_mean_matches_dense_draws(self, name, kw):
        fam = _family(name, 6, kw)
        rng = np.random.default_rng(1)
        n = 20000
        mats = fam.dense(fam.rvs(n, rng), rng)
        se = mats.std(axis=0, ddof=1) / math.sqrt(n)
        assert np.all(np.abs(mats.mean(axis=0) - fam.mean()) <= Z * se + 1e-12)

    @contract
    def test_draws_are_orthogonal(self, name, kw):
        fam = _family(name, 8, kw)
        rng = np.random.default_rng(2)
        mats = fam.dense(fam.rvs(50, rng), rng)
        assert np.allclose(np.einsum("nij,nkj->nik", mats, mats), np.eye(8), atol=1e-10)

    @contract
    def test_gap_equals_dense_svd(self, name, kw):
        fam = _family(name, 6, kw)
        assert fam.spectral_gap == pytest.approx(StepFamily.spectral_gap.fget(fam), abs=1e-12)

    @contract
    def test_mean_power_and_overlap_equal_matrix_powers(self, name, kw):
        fam = _family(name, 6, kw)
        q = np.random.default_rng(3).standard_normal(6)
        ns = (0, 1, 2, 9)
        dense = [np.linalg.matrix_power(fam.mean(), n) for n in ns]
        for n, P in zip(ns, dense):
            assert np.allclose(fam.mean_power(n), P, atol=1e-13)
            assert fam.mean_overlap(q, n) == pytest.approx(q @ P @ q, rel=1e-12, abs=1e-13)
        assert np.allclose(fam.mean_overlap(q, np.array(ns)), [q @ P @ q for P in dense], atol=1e-13)

    @contract
    @pytest.mark.parametrize("eps", [0.5, 0.05, 1e-4])
    def test_window_bounds_the_mean_power(self, name, kw, eps):
        """``||E[M]^W||_op ≤ ε`` at ``W = W(ε)``; with ``0 < γ < 1`` also ``(1−γ)^{W−1} > ε`` (the least such ``W``)."""
        fam = _family(name, 6, kw)
        W, g = fam.mixing_window(eps), fam.spectral_gap
        if math.isinf(W):
            assert g == 0.0
            return
        assert np.linalg.norm(fam.mean_power(int(W)), 2) <= eps * (1 + 1e-9)
        if 0.0 < g < 1.0:
            assert (1 - g) ** (W - 1) > eps

    @contract
    def test_reproducible_under_a_seed(self, name, kw):
        fam = _family(name, 8, kw)
        assert np.array_equal(fam.rvs(7, 3), fam.rvs(7, 3))
        assert np.array_equal(fam.rvs(7, np.random.default_rng(3)), fam.rvs(7, 3))
        steps = draw_route_steps(fam, 3, 5, 11)  # dense Haar matrices for Haar kinds (their mask may be all True)
        assert np.array_equal(steps, draw_route_steps(fam, 3, 5, 11))
        assert not np.array_equal(steps, draw_route_steps(fam, 3, 5, 12))

    @contract
    def test_invalid_input_names_the_parameter(self, name, kw):
        with pytest.raises(ValueError, match="d must be"):
            _family(name, 1, kw)
        with pytest.raises(ValueError, match="eps"):
            _family(name, 8, kw).mixing_window(1.5)
        if name in SO2_NAMES:
            with pytest.raises(ValueError, match="d must be even"):
                _family(name, 7, kw)
        bad = {"so2-uniform": {"omega": 4.0}, "so2-normal": {"sigma": -1.0}, "rope-random": {"base": 1.0},
               "lazy-haar": {"p": 0.0}, "token": {"probs": np.array([0.5, 0.5, 0.5, 0.5, 0.5])}}.get(name)
        if bad:
            with pytest.raises(ValueError, match=next(iter(bad))):
                _family(name, 8, {**kw, **bad})

    @contract
    def test_gap_is_closed_form_and_fast_at_large_d(self, name, kw):
        import time

        t0 = time.perf_counter()
        g = _family(name, 2048, kw).spectral_gap
        assert time.perf_counter() - t0 < 0.5 and 0.0 <= g <= 1.0  # no dense SVD (it took 2.4 s for householder)

    @contract
    @pytest.mark.parametrize("d", [2, 3, 4, 7, 33])
    def test_accepts_every_d_it_should(self, name, kw, d):
        if d % 2 and name in SO2_NAMES:
            with pytest.raises(ValueError, match="d must be even"):
                _family(name, d, kw)
        else:
            assert _family(name, d, kw).d == d

    @contract
    def test_law_of_one_step(self, name, kw):
        """``E[qᵀ m_1 k] = qᵀ E[M] k`` for the one-step route, through the engine's structured transport."""
        fam = _family(name, 6, kw)
        rng = np.random.default_rng(5)
        q, k = uniform_sphere(rng, (2,), 6)
        T = 20000
        steps = draw_route_steps(fam, T, 2, rng)
        s = route_scores(fam, steps, q, np.broadcast_to(k, (T, 2, 6)))[:, 1]
        assert abs(s.mean() - q @ fam.mean() @ k) <= Z * s.std(ddof=1) / math.sqrt(T) + 1e-12

    @contract
    def test_every_transport_backend_agrees_with_the_dense_oracle(self, name, kw):
        fam = _family(name, 6, kw)
        rng = np.random.default_rng(7)
        T, N, d = 3, 9, 6
        steps = draw_route_steps(fam, T, N, rng)  # by route length; dense matrices for Haar kinds
        mats = dense_route_steps(fam, steps, rng)
        q = uniform_sphere(rng, (), d)
        keys, values = uniform_sphere(rng, (T, N), d), rng.standard_normal((T, N, d))
        a = rng.random((T, N))
        want_s, want_v = reference_scores(mats, q, keys), reference_sum(mats, a, values)
        P = route_products(mats)
        # the array-namespace engine with xp = numpy
        assert np.allclose(route_scores(fam, steps, q, keys), want_s, atol=TOL)
        assert np.allclose(route_sum(fam, steps, a, values), want_v, atol=TOL)
        assert np.allclose(route_sums(fam, steps, (a, 2 * a), values)[1], 2 * want_v, atol=TOL)
        assert np.allclose(route_queries(fam, steps, q), np.einsum("tnde,d->tne", P, q), atol=TOL)
        # the same engine on the cupy path (NumPy standing in for CuPy)
        with numpy_standin_for_cupy():
            assert np.allclose(route_scores(fam, steps, q, keys), want_s, atol=TOL)
            assert np.allclose(route_sum(fam, steps, a, values), want_v, atol=TOL)
        if not fam.pathwise:
            return  # structured Haar transport is the exact law (TestHaarLaws), not a realisation
        # one context by position, and the Numba kernels (query at i = L−1, steps[t] = M_t)
        pos = fam.rvs(N, rng)
        pos_mats = fam.dense(pos)
        U = np.stack([route_product(pos_mats, j, N - 1).T @ q for j in range(N)])
        assert np.allclose(transported_queries(fam, pos, q), U, atol=TOL)
        want = sum(a[0, j] * route_product(pos_mats, j, N - 1) @ values[0, j] for j in range(N))
        assert np.allclose(transported_sum(fam, pos, a[0], values[0]), want, atol=TOL)
        assert np.allclose(route_products(position_to_route(pos_mats)[None])[0, 4], route_product(pos_mats, N - 5, N - 1))
        if isinstance(fam, Householder):  # the Householder kernels
            for f in (householder_queries_numba, householder_queries_numpy):
                assert np.allclose(f(pos, q), U, atol=TOL)
            ns = np.array([0, 1, 4, N - 1])
            want_o = np.einsum("d,tnde,e->tn", q, P, q)[:, ns]
            for f in (householder_overlaps_numba, householder_overlaps_numpy):
                assert np.allclose(f(np.ascontiguousarray(steps[:, 1:]), q, ns), want_o, atol=TOL)
        else:
            from stylized.engine.scores import plane_dot_cross

            dot, cross = plane_dot_cross(q, keys[0])
            s_pos = np.array([q @ route_product(pos_mats, j, N - 1) @ keys[0, j] for j in range(N)])
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
        assert fam.spectral_gap == pytest.approx(StepFamily.spectral_gap.fget(fam), abs=1e-12)
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
        assert fam.spectral_gap == pytest.approx(StepFamily.spectral_gap.fget(fam), abs=1e-12)

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
