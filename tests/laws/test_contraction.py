"""The ``contraction`` law ``I − β w wᵀ``, the law of ``log ||P_n k||`` and the ``contraction-norm`` check.

Statistical tests use fixed seeds and a band of 4.5 standard errors (two-sided ≈ 7e-6 for a true
difference of 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from simulations import contraction_norm as cn
from simulations._contraction_far import far_mass_draws
from stylized.core.backend import numpy_standin_for_cupy
from stylized.engine.transport import transported_queries, transported_sum
from stylized.engine.transport_reference import (
    dense_route_steps,
    position_to_route,
    reference_sum,
    route_product,
    route_products,
)
from stylized.harness.falsify import run_reduced
from stylized.laws.base import StepLaw
from stylized.laws.contraction import Contraction
from stylized.laws.families import law_names, make_family
from stylized.theory.bounds import far_mass_lower_bound
from stylized.theory.contraction_theory import (
    increment_moments,
    log_norm_moments,
    mean_square_norm,
    sample_increments,
    sample_log_norms,
    shrink_rate,
)

Z = 4.5
DIMS = (2, 3, 5, 13, 16)
BETAS = (0.3, 1.0, 1.7)


def _within(est: np.ndarray, se: np.ndarray, truth) -> bool:
    return bool(np.all(np.abs(np.asarray(est) - truth) <= Z * np.asarray(se) + 1e-12))


# -- the law --------------------------------------------------------------------------------
class TestLaw:
    def test_capabilities_and_registry(self):
        law = make_family("contraction", 7, beta=0.5)
        assert isinstance(law, Contraction) and "contraction" in law_names()
        assert law.name == "contraction" and law.beta == 0.5
        assert law.orthogonal is False and law.isotropic is True and law.planes is False and law.step_ndim == 1
        assert law.has_exact_mean and law.theory_kind == "closed form" and law.mean_radius == 0.0
        assert law.spectral_gap == pytest.approx(0.5 / 7)
        assert make_family("contraction", 4).beta == 1.0

    @pytest.mark.parametrize("d", [3, 5, 8])
    @pytest.mark.parametrize("beta", BETAS)
    def test_mean_against_monte_carlo(self, d, beta):
        law = Contraction(d, beta)
        m = law.dense(law.rvs(40000, random_state=1))
        est, se = m.mean(0), m.std(0, ddof=1) / math.sqrt(m.shape[0])
        assert np.allclose(law.mean(), (1 - beta / d) * np.eye(d))
        assert _within(est, se, law.mean())
        q = np.arange(1.0, d + 1)
        assert law.mean_overlap(q, 3) == pytest.approx((1 - beta / d) ** 3 * q @ q)
        assert np.allclose(law.mean_power(4), np.linalg.matrix_power(law.mean(), 4))

    def test_draws_are_contractions_not_orthogonal(self):
        law = Contraction(6, 0.5)
        w = law.rvs(20, random_state=2)
        m = law.dense(w)
        assert np.allclose(np.linalg.norm(w, axis=1), 1.0)
        assert np.allclose(m, np.swapaxes(m, 1, 2))
        sv = np.linalg.svd(m, compute_uv=False)
        assert np.allclose(sv.max(1), 1.0) and np.allclose(sv.min(1), 0.5)  # eigenvalue 1 − β along w
        assert not np.allclose(m[0] @ m[0].T, np.eye(6))

    @pytest.mark.parametrize("d", [3, 5, 13])
    def test_apply_and_transport_against_dense_oracle(self, d):
        law = Contraction(d, 0.7)
        rng = np.random.default_rng(3)
        T, N = 3, 9
        steps = law.sample(rng, (T, N))
        x = rng.standard_normal((T, d))
        mats = dense_route_steps(law, steps)
        assert np.allclose(law.apply(steps[:, 1], x), np.einsum("tab,tb->ta", mats[:, 1], x))
        assert np.allclose(law.apply(steps[:, 1], x, transpose=True), law.apply(steps[:, 1], x))
        q = rng.standard_normal(d)
        P = route_products(mats)
        assert np.allclose(law.route_queries(steps, q), np.einsum("tnab,a->tnb", P, q))
        wts, vals = rng.random((T, N)), rng.standard_normal((T, N, d))
        assert np.allclose(law.route_sum(steps, wts, vals), reference_sum(mats, wts, vals))
        pos = law.rvs(N, random_state=4)  # one context by position, query at L − 1
        dense = law.dense(pos)
        U = transported_queries(law, pos, q)
        assert all(np.allclose(U[j], route_product(dense, j, N - 1).T @ q) for j in range(N))
        a, v = rng.random(N), rng.standard_normal((N, d))
        ref = sum(a[j] * route_product(dense, j, N - 1) @ v[j] for j in range(N))
        assert np.allclose(transported_sum(law, pos, a, v), ref)
        assert np.allclose(position_to_route(pos)[1], pos[-1])

    @pytest.mark.parametrize("beta", [0, 2, -0.1, 2.5, float("nan"), float("inf"), "1", True, None])
    def test_beta_validation_names_beta(self, beta):
        with pytest.raises(ValueError, match="beta"):
            Contraction(4, beta)
        with pytest.raises(ValueError, match="beta"):
            make_family("contraction", 4, beta=beta)

    @pytest.mark.parametrize("d", [1, 0, 2.5, "4"])
    def test_dimension_validation_names_d(self, d):
        with pytest.raises(ValueError, match="d must"):
            Contraction(d)


# -- the law of log ||P_n k|| -----------------------------------------------------------------
class TestNormLaw:
    @pytest.mark.parametrize("d", DIMS)
    @pytest.mark.parametrize("beta", BETAS)
    def test_increment_moments_against_the_step(self, d, beta):
        """One step of the law itself (not the theory's sampler): ``½ log ||M k||²``."""
        law = Contraction(d, beta)
        rng = np.random.default_rng(10 + d)
        N = 200_000
        k = np.zeros(d)
        k[0] = 1.0
        x = 0.5 * np.log(np.sum(law.apply(law.sample(rng, (N,)), np.broadcast_to(k, (N, d))) ** 2, axis=1))
        mu, var = increment_moments(d, beta)
        assert _within(x.mean(), x.std(ddof=1) / math.sqrt(N), mu)
        dev = (x - x.mean()) ** 2
        assert _within(dev.mean(), dev.std(ddof=1) / math.sqrt(N), var)
        y = sample_increments(rng, (N,), d, beta)
        assert _within(y.mean(), y.std(ddof=1) / math.sqrt(N), mu)

    @pytest.mark.parametrize("d", [2, 3, 5, 13, 64, 1024])
    @pytest.mark.parametrize("beta", [1e-4, 0.3, 0.9, 1.5, 1.99])
    def test_quadrature_equals_series(self, d, beta):
        q, s = increment_moments(d, beta), increment_moments(d, beta, method="series")
        assert q == pytest.approx(s, rel=1e-7, abs=1e-300)

    @pytest.mark.parametrize("d", [2, 3, 5, 16, 64])
    def test_beta_one_closed_form_is_the_limit(self, d):
        """Quadrature just off ``β = 1`` meets the digamma closed form (at ``d = 2`` the moments move like
        ``|1 − β| log|1 − β|``: not analytic in ``β`` there, hence the small offset)."""
        exact = increment_moments(d, 1.0)
        for eps in (1e-9, -1e-9):
            assert increment_moments(d, 1.0 - eps) == pytest.approx(exact, rel=1e-6)
        assert increment_moments(d, 0.4) == pytest.approx(increment_moments(d, 1.6), rel=1e-12)  # a(β) = a(2 − β)

    @pytest.mark.parametrize("d", [3, 5, 16])
    def test_hypergeometric_mean(self, d):
        mp = pytest.importorskip("mpmath")
        for beta in (0.2, 0.7):
            a = shrink_rate(beta)
            ref = float(-(a / (2 * d)) * mp.hyp3f2(1, 1, 1.5, 2, d / 2 + 1, a))
            assert increment_moments(d, beta)[0] == pytest.approx(ref, rel=1e-10)

    @pytest.mark.parametrize("d,beta", [(5, 1.0), (13, 0.5)])
    def test_path_law_and_mean_square(self, d, beta):
        """The law's own walk vs ``n μ₁``, ``n σ₁²``; ``E||P_n k||² = (1 − a/d)ⁿ``; the exact-sum sampler."""
        ns = [1, 4, 16]
        x = cn.walk_log_norms(Contraction(d, beta), ns, 40_000, np.random.default_rng(5))
        m, v = log_norm_moments(ns, d, beta)
        N = x.shape[0]
        assert _within(x.mean(0), x.std(0, ddof=1) / math.sqrt(N), m)
        dev = (x - x.mean(0)) ** 2
        assert _within(dev.mean(0), dev.std(0, ddof=1) / math.sqrt(N), v)
        sq = np.exp(2 * x)
        assert _within(sq.mean(0), sq.std(0, ddof=1) / math.sqrt(N), mean_square_norm(ns, d, beta))
        y = sample_log_norms(np.random.default_rng(6), ns, N, d, beta)
        assert _within(y.mean(0), y.std(0, ddof=1) / math.sqrt(N), m)

    def test_theory_validation(self):
        for bad in (0.0, 2.0, -1.0):
            with pytest.raises(ValueError, match="beta"):
                increment_moments(8, bad)
        with pytest.raises(ValueError, match="d"):
            increment_moments(1, 1.0)
        with pytest.raises(ValueError, match="method"):
            increment_moments(8, 0.5, method="mc")
        with pytest.raises(ValueError, match="β ≠ 1"):
            increment_moments(8, 1.0, method="series")

    def test_variance_interval_covers(self):
        """Bonett's interval at 95% over 400 exact samples of ``log ||P_8 k||`` (d = 16, β = 1)."""
        rng = np.random.default_rng(7)
        truth = log_norm_moments(8, 16, 1.0)[1]
        hits = sum(cn.variance_ci(sample_log_norms(rng, [8], 1000, 16, 1.0)[:, 0], 0.95).contains(truth)
                   for _ in range(400))
        assert 0.91 <= hits / 400 <= 0.99


# -- the check ------------------------------------------------------------------------------
class TestCheck:
    def test_holds_at_reduced_sizes_and_mutants_flip(self, check_runs):
        r = check_runs.reduced(cn.CHECK.name, seed=0)
        assert r["holds"]
        rows = r["result"]["rows"]
        assert all("n_samples" in row for row in rows)
        far = [row for row in rows if row["quantity"].startswith("far")]
        assert {row["law"] for row in far} == {"contraction", "lazy-haar"}
        assert all(row["estimate"] >= row["bound"] for row in far)
        inc = [row for row in rows if row["quantity"].startswith(("mean of one increment", "variance of one increment"))]
        assert all(row["in_verdict"] is False and row["role"].startswith("reported") for row in far)
        beta = cn.CHECK.defaults()["beta"]
        assert beta != 1.0  # at β = 1 a missing (2 − β) factor is invisible
        mu, var = cn.increment_moments(cn.CHECK.reduced["d"], beta)
        assert [row["theory"] for row in inc] == [mu, var] and all(row["agrees"] for row in inc)
        n_row = next(row for row in rows if row["quantity"] == "variance of log||P_n k||")
        # pooled along the routes, σ₁² is resolved far more sharply than by one n row (relative widths)
        assert (inc[1]["ci_high"] - inc[1]["ci_low"]) / var < 0.5 * (n_row["ci_high"] - n_row["ci_low"]) / n_row["theory"]
        with cn._perturb_moment("variance")(1.1):
            assert not run_reduced(cn.CHECK, seed=0)["holds"]
        for m in cn.CHECK.mutants:
            assert not check_runs.reduced(cn.CHECK.name, seed=0, mutant=m.name)["holds"], m.name
        assert "(2 − β) missing" in {m.name for m in cn.CHECK.mutants}

    @pytest.mark.parametrize("d", [3, 5, 13, 33])
    def test_odd_dimensions(self, d):
        assert run_reduced(cn.CHECK, seed=1, params={"d": d, "beta": 0.6})["holds"]

    def test_cupy_path_on_the_numpy_standin(self):
        with numpy_standin_for_cupy():
            assert run_reduced(cn.CHECK, seed=2, backend="cupy")["holds"]

    def test_far_L_must_exceed_D(self):
        from stylized import InvalidInput

        with pytest.raises(InvalidInput, match="far-L"):
            cn.CHECK.parse_params({"far_L": [8, 64], "D": 16})


@dataclass(frozen=True)
class _UserLaw(StepLaw):
    """A user's law: a random sign flip of one coordinate, dense."""

    d: int

    def sample(self, xrng, shape, xp=np):
        k = xrng.integers(0, self.d, size=tuple(shape))
        return np.eye(self.d)[None] - 2.0 * (np.eye(self.d)[k][..., :, None] * np.eye(self.d)[k][..., None, :])


@pytest.mark.parametrize("law", [Contraction(5, 1.3), make_family("cayley", 5), _UserLaw(5), make_family("lazy-haar", 5)],
                         ids=["contraction", "cayley", "user", "lazy-haar"])
def test_far_mass_draws_any_law_respects_the_bound(law):
    Ls, lam, D = [20, 40], 4.0, 4
    r = far_mass_draws(law, Ls, lam, D, 3, np.random.default_rng(8))
    assert r["rho"].shape == (3, 2) and np.all(r["max_abs_logit"] <= lam * (1 + 1e-12))
    for k, L in enumerate(Ls):
        assert np.all(r["rho"][:, k] >= far_mass_lower_bound(D, L - D, lam) * (1 - 1e-12))
