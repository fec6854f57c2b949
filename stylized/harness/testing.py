"""``check_law(law)``: the step-law contract, runnable on any law (a user's included).

In the spirit of scikit-learn's ``check_estimator``: the library's whole contract for a
:class:`~stylized.laws.base.StepLaw`, as a public tool.  Each item is one :class:`LawCheck`:

* ``shape`` — :meth:`sample` returns ``shape + <step axes>``; :meth:`dense` returns ``(n, d, d)``;
* ``reproducible`` — the same seed gives the same draws, another seed different ones;
* ``invalid-input`` — ``rvs`` refuses a negative or fractional size with a ``ValueError``;
* ``orthogonal`` — ``MᵀM = I`` for every draw (or, for ``orthogonal = False``, a declared contraction:
  ``||M||_op ≤ 1``);
* ``apply`` — :meth:`apply` (and its transpose) equals the dense matrix times the vector (pathwise laws);
* ``dense-oracle`` — ``route_queries``, ``route_scores`` and ``route_sum`` equal the dense route product
  (:mod:`stylized.engine.transport_reference`) on the same draws (pathwise laws; a law applied in law is
  compared in distribution by ``walk-vs-mean``);
* ``mean`` — a closed-form :meth:`mean` against an independent Monte Carlo mean of :meth:`dense` draws
  (entrywise, Bonferroni over the ``d²`` entries at family level ``1e-3``); an estimated mean reports its
  sample size and radius;
* ``walk-vs-mean`` — ``E[qᵀP_n q]`` from :meth:`walk_scores` against :meth:`mean_overlap` at ``n = 1, 2, 5``
  (z at family level ``1e-3`` plus the theory's own radius);
* ``gap`` — ``γ ∈ [0, 1]`` and a window ``W(0.01) ≥ 1``.

The family level of each statistical item is ``1e-3``, so a correct law fails an item about once in
a thousand seeds.

Example
-------
>>> from stylized.laws.families import make_family
>>> all(c.passed for c in check_law(make_family("householder", 5)))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..engine.transport_reference import reference_scores, reference_sum, route_products
from ..laws.base import StepLaw
from ..laws.step_ops import uniform_sphere

__all__ = ["LawCheck", "check_law", "CONTRACT_LEVEL"]

CONTRACT_LEVEL = 1e-3
"""Family level of each statistical item of the contract."""


@dataclass(frozen=True)
class LawCheck:
    """One item of the contract: its name, whether it passed, and what was measured."""

    name: str
    passed: bool
    detail: str


def _z(level: float, m: int = 1) -> float:
    return float(stats.norm.isf(level / (2 * m)))


def _item(name: str, fn) -> LawCheck:
    try:
        ok, detail = fn()
    except Exception as e:  # a contract item that crashes fails, naming the exception
        return LawCheck(name, False, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return LawCheck(name, bool(ok), detail)


def check_law(law: StepLaw, *, seed: int = 0, samples: int = 20000, raise_on_fail: bool = True) -> list[LawCheck]:
    """Run the step-law contract on ``law``; returns every :class:`LawCheck` (and raises ``AssertionError``
    naming the failed items when ``raise_on_fail``)."""
    if not isinstance(law, StepLaw):
        raise TypeError(f"check_law needs a StepLaw, got {type(law).__name__}")
    d, nd = law.d, law.step_ndim
    rng = np.random.default_rng(seed)
    checks = []

    def shape():
        x = law.sample(np.random.default_rng(seed), (3, 2), np)
        step_shape = tuple(x.shape[2:])
        want = {2: (d, d), 1: None, 0: ()}[nd] if nd != 1 else step_shape
        dense = law.dense(law.rvs(4, seed), seed)
        ok = x.shape[:2] == (3, 2) and len(step_shape) == nd and step_shape == want and dense.shape == (4, d, d)
        return ok, f"sample (3, 2) → {x.shape}, dense(rvs(4)) → {dense.shape}"

    def reproducible():
        def draw(s):  # dense matrices: structured draws may be degenerate (Haar's flags are all set)
            return law.dense(law.rvs(5, s), s)

        a, b, c = draw(seed), draw(seed), draw(seed + 1)
        return np.array_equal(a, b) and not np.array_equal(a, c), "same seed equal, next seed different (dense)"

    def invalid_input():
        refused = []
        for bad in (-1, 1.5):
            try:
                law.rvs(bad, seed)
            except (ValueError, TypeError):
                refused.append(bad)
        return len(refused) == 2, f"rvs refused sizes {refused} of [-1, 1.5]"

    def orthogonal():
        m = law.dense(law.rvs(64, rng), rng)
        if law.orthogonal:
            err = float(np.max(np.abs(np.einsum("nji,njk->nik", m, m) - np.eye(d))))
            return err < 1e-8, f"max |MᵀM − I| = {err:.2e} over 64 draws"
        top = float(np.max(np.linalg.norm(m, ord=2, axis=(1, 2))))
        return top <= 1 + 1e-10, f"declared contraction: max ||M||_op = {top:.6f} over 64 draws"

    def apply():
        if not law.pathwise:
            return True, "applied in law (pathwise = False): compared in distribution by walk-vs-mean"
        steps = law.rvs(16, rng)
        m = law.dense(steps, rng)
        x = rng.standard_normal((16, d))
        e1 = np.max(np.abs(law.apply(steps, x) - np.einsum("nab,nb->na", m, x)))
        e2 = np.max(np.abs(law.apply(steps, x, transpose=True) - np.einsum("nba,nb->na", m, x)))
        return max(e1, e2) < 1e-10, f"max error {max(e1, e2):.2e} (M x and Mᵀ x, 16 draws)"

    def dense_oracle():
        if not law.pathwise:
            return True, "applied in law (pathwise = False): compared in distribution by walk-vs-mean"
        T, N = 3, 7
        steps = law.sample(rng, (T, N), np)
        mats = law.dense(steps.reshape((T * N,) + steps.shape[2:]), rng).reshape(T, N, d, d)
        q = uniform_sphere(rng, (), d)
        keys, values, a = uniform_sphere(rng, (T, N), d), rng.standard_normal((T, N, d)), rng.random((T, N))
        P = route_products(mats)
        errs = [np.max(np.abs(law.route_scores(steps, q, keys) - reference_scores(mats, q, keys))),
                np.max(np.abs(law.route_sum(steps, a, values) - reference_sum(mats, a, values))),
                np.max(np.abs(law.route_queries(steps, q) - np.einsum("tnde,d->tne", P, q)))]
        return max(errs) < 1e-9, f"max error {max(errs):.2e} (scores, sums, queries; T={T}, N={N})"

    def mean():
        if not law.has_exact_mean:
            est = law.estimated_mean
            return est.radius < 1.0, f"estimated (Monte Carlo, n = {est.n}): ||Ê − E[M]||_op ≤ {est.radius:.3g} (95%)"
        n = samples
        m = law.dense(law.rvs(n, np.random.default_rng(seed + 17)), rng).reshape(n, d * d)
        mu, se = m.mean(0), m.std(0, ddof=1) / math.sqrt(n)
        exact = np.asarray(law.mean(), dtype=float).reshape(d * d)
        z = _z(CONTRACT_LEVEL, d * d)
        worst = float(np.max(np.abs(mu - exact) - z * se - 1e-12))
        return worst <= 0, f"closed-form E[M] vs Monte Carlo (n = {n}): max excess over z·se = {worst:.3g}"

    def walk_vs_mean():
        q = np.full(d, 1.0 / math.sqrt(d))
        ns = np.array([1, 2, 5])
        x = law.walk_scores(ns, 4000, np.random.default_rng(seed + 29), np, q=q)
        mu, se = x.mean(0), x.std(0, ddof=1) / math.sqrt(x.shape[0])
        theory = np.atleast_1d(law.mean_overlap(q, ns))
        rad = np.atleast_1d(law.mean_overlap_radius(q, ns))
        excess = np.abs(mu - theory) - _z(CONTRACT_LEVEL, ns.size) * se - rad - 1e-12
        return bool(np.all(excess <= 0)), (f"E[qᵀP_n q] at n = 1, 2, 5 (4000 chains) vs qᵀE[M]ⁿq "
                                           f"({law.theory_kind}): max excess {float(np.max(excess)):.3g}")

    def gap():
        g, w = law.spectral_gap, law.mixing_window(0.01)
        return 0.0 <= g <= 1.0 and w >= 1, f"γ = {g:.4g}, W(0.01) = {w:g}"

    for name, fn in (("shape", shape), ("reproducible", reproducible), ("invalid-input", invalid_input),
                     ("orthogonal", orthogonal), ("apply", apply), ("dense-oracle", dense_oracle), ("mean", mean),
                     ("walk-vs-mean", walk_vs_mean), ("gap", gap)):
        checks.append(_item(name, fn))
    failed = [c for c in checks if not c.passed]
    if failed and raise_on_fail:
        raise AssertionError(f"{law.name} (d = {d}) breaks the step-law contract: "
                             + "; ".join(f"{c.name}: {c.detail}" for c in failed))
    return checks
