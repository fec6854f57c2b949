"""C4 (PaTH contraction) — ``log ||P_n k||`` under ``M = I − β w wᵀ`` is an exact sum of i.i.d. increments.

The step is not orthogonal: ``||M x||² = ||x||²(1 − a c²)``, ``a = β(2−β)``, ``c = w·x/||x||`` with
``c² ~ Beta(½, (d−1)/2)`` independent of the past, so along a route ``log ||P_n k|| = Σ_{s≤n} X_s`` with
``X_s = ½ log(1 − a c_s²)`` i.i.d. (:mod:`stylized.theory.contraction_theory`): mean ``n μ₁``, variance
``n σ₁²``, ``μ₁ < 0``.  Scores ``λ qᵀ P_n k`` therefore shrink to 0 rather than only decorrelating.

Measured: ``--samples`` chains of the law's own transport (:meth:`StepLaw.apply`, renormalised each
step so the log-norm is accumulated without underflow), ``log ||P_n k||`` at every ``n`` in ``--n``; per
``n`` a row for the mean (Student-t) and one for the variance (the mean of squared deviations, its
Bonett's interval for a non-normal law, :func:`variance_ci`), against ``n μ₁`` and ``n σ₁²``; and two rows
for one increment ``X_s``, pooled over every step of every chain with the chain as the unit of its
interval (:func:`increment_estimates`), against ``μ₁`` and ``σ₁²`` themselves: ``N·max(n)`` increments
resolve σ₁² to a fraction of a percent, where one ``n`` row's ``N`` sums resolve it to a few percent.
All ``2·len(n) + 2`` intervals at a joint 95% (Bonferroni).

Far mass: ``ρ_D(L)`` for the contraction and for the orthogonal law with the same gap ``γ = β/d``
(``lazy-haar`` with ``p = β/d``), ``--far-trials`` contexts each (:mod:`simulations._contraction_far`),
against the C4 lower bound ``M/(M + K e^{2λ})``: the contraction's logits stay in ``[−λ, λ]`` (``||P_n|| ≤ 1``),
so the bound holds for it too; its far logits collapse to 0 (``e^0 = 1`` per far key instead of
``E e^{λξ} > 1``), which lowers ``ρ_D`` at a given ``L`` without stopping ``ρ_D → 1``.

Verdict: every norm row agrees (joint 95%).  The far-mass rows are *reported* (``in_verdict = false``): with
``|logits| ≤ λ`` no context can fall below the bound, so they cannot fail.  Default ``β = 0.5`` (``a = 0.75``): at
``β = 1``, ``a = β(2 − β) = β`` and a missing ``(2 − β)`` factor would be invisible.
Mutants: a reflection ``β = 2`` in the model, the steps frozen along the route, ``c² ~ Beta(½, d/2)``
in the theory, the theory's ``μ₁`` 3% off, the shrink rate ``a = β`` (the ``(2 − β)`` factor missing).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from simulations._contraction_far import far_mass_draws
from stylized.core.backend import array_namespace, to_numpy, xp_generator
from stylized.core.estimators import Estimate, bonferroni_level, mean_ci
from stylized.core.montecarlo import check_positive_int
from stylized.core.options import Float, Int, IntList
from stylized.engine.lse import lse_rounding_tol
from stylized.engine.sampling import equal_energy_query
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.laws.base import StepLaw
from stylized.laws.contraction import Contraction
from stylized.laws.families import make_family
from stylized.theory.bounds import far_mass_lower_bound
from stylized.theory.contraction_theory import increment_moments, shrink_rate

from ._common import limits

NAME = "contraction-norm"
LEVEL = 0.95
_ELEMS = 1 << 22


def walk_log_norms(law: StepLaw, ns, size: int, xrng, xp=np, *, increments: bool = False):
    """``(size, len(ns))`` draws of ``log ||P_n k||`` (``k`` the equal-energy unit vector), one chain per row,
    by the law's transport ``x ← M x`` on fresh draws, the norm factored out at every step.

    ``increments=True`` also returns ``(size, 2)``: per chain ``Σ_s X_s`` and ``Σ_s X_s²`` over its
    ``max(ns)`` increments ``X_s = log ||P_s k|| − log ||P_{s−1} k||`` (for :func:`increment_rows`)."""
    ns = [int(n) for n in ns]
    want = {n: c for c, n in enumerate(ns)}
    out = xp.empty((size, len(ns)))
    u = xp.broadcast_to(xp.asarray(equal_energy_query(law.d)), (size, law.d)).copy()
    acc, acc2 = xp.zeros(size), xp.zeros(size)
    if 0 in want:
        out[:, want[0]] = 0.0
    block = max(1, _ELEMS // (size * law.d))
    n, nmax = 0, max(ns)
    while n < nmax:
        steps = law.sample(xrng, (size, min(block, nmax - n)), xp)
        for t in range(steps.shape[1]):
            u = law.apply(steps[:, t], u, xrng=xrng)
            r = xp.sqrt(xp.sum(u * u, axis=1))
            x = xp.log(r)
            acc, acc2 = acc + x, acc2 + x * x
            u = u / r[:, None]
            n += 1
            if n in want:
                out[:, want[n]] = acc
    if increments:
        return to_numpy(out), to_numpy(xp.stack([acc, acc2], axis=1))
    return to_numpy(out)


def increment_estimates(sums: np.ndarray, steps: int, level: float) -> tuple[Estimate, Estimate]:
    """Mean and variance of one increment ``X_s``, pooled over every step of every chain (``sums`` from
    :func:`walk_log_norms` with ``increments=True``, ``steps`` increments per chain).

    Pooled: ``μ̂ = ΣΣX/(N T)``, ``σ̂² = ΣΣ(X − μ̂)²/(N T)``.  The intervals treat the chain, not the step,
    as the unit (Student-t over the ``N`` per-chain means ``S1/T`` and ``Σ_s(X_s − μ̂)²/T``), so they stay
    valid if a model's increments were dependent along a route; under the claim they are ``√T`` narrower
    than the per-``n`` rows, which is what gives the σ₁² row its power."""
    s1, s2 = sums[:, 0], sums[:, 1]
    T = float(steps)
    mu = float(s1.sum() / (T * s1.size))
    return mean_ci(s1 / T, level), mean_ci((s2 - 2.0 * mu * s1 + T * mu * mu) / T, level)


def variance_ci(x: np.ndarray, level: float) -> Estimate:
    """The sample variance ``s²`` with Bonett's (2006) interval for a non-normal law:
    ``exp(ln(c s²) ± z·c·√((γ̂₄ − (N−3)/N)/(N−1)))``, ``c = N/(N − z)``, ``γ̂₄`` the kurtosis about a trimmed mean
    (trim ``1/(2√(N−4))``).  The plain delta-method interval on squared deviations under-covers here (the
    increments' left tail makes ``s²`` right-skewed); this one holds its level from ``N ≈ 1000``."""
    x = np.asarray(x, dtype=float)
    N = x.size
    if N < 6:
        raise ValueError(f"samples: the variance interval needs at least 6 samples, got {N}")
    z = float(stats.norm.ppf(0.5 + level / 2))
    s2 = float(x.var(ddof=1))
    if s2 == 0.0:
        return Estimate(0.0, 0.0, 0.0, N, level)
    m = float(stats.trim_mean(x, 1.0 / (2.0 * math.sqrt(N - 4))))
    g4 = N * float(np.sum((x - m) ** 4)) / float(np.sum((x - x.mean()) ** 2)) ** 2
    c = N / (N - z)
    se = c * math.sqrt(max(g4 - (N - 3) / N, 0.0) / (N - 1))
    return Estimate(s2, math.exp(math.log(c * s2) - z * se), math.exp(math.log(c * s2) + z * se), N, level)


def _orthogonal_twin(law: Contraction) -> StepLaw:
    """The orthogonal isotropic law with the same gap ``γ = β/d``: lazy Haar steps with ``p = β/d``."""
    return make_family("lazy-haar", law.d, p=law.spectral_gap)


def _validate(params: dict) -> None:
    if any(L <= params["D"] for L in params["far_L"]):
        raise ValueError(f"--far-L: every context length must exceed D = {params['D']}, got {params['far_L']}")


def _norm_rows(law: Contraction, ns: list[int], samples: int, rng, backend: str) -> list[dict]:
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    x, sums = walk_log_norms(law, ns, samples, xrng, xp, increments=True)
    mu, var = increment_moments(law.d, law.beta)
    lvl = bonferroni_level(LEVEL, 2 * len(ns) + 2)
    kind = "closed form (digamma)" if law.beta == 1.0 else "exact law (quadrature)"
    rows = []
    for c, n in enumerate(ns):
        xc = x[:, c]
        e, v = mean_ci(xc, lvl), variance_ci(xc, lvl)
        for what, est, th in (("mean", e, n * mu), ("variance", v, n * var)):
            rows.append({"n": n, "quantity": f"{what} of log||P_n k||", **est.as_row(), "theory": th,
                         "theory_kind": kind, "level": lvl, "in_verdict": True, "agrees": bool(est.contains(th))})
    T = max(ns)
    for what, est, th in zip(("mean", "variance"), increment_estimates(sums, T, lvl), (mu, var)):
        rows.append({"n": 1, "quantity": f"{what} of one increment X_s (pooled over s ≤ {T}, chains as units)",
                     **est.as_row(), "n_increments": samples * T, "theory": th, "theory_kind": kind, "level": lvl,
                     "in_verdict": True, "agrees": bool(est.contains(th))})
    return rows


def _far_rows(law: Contraction, params: dict, rng, backend: str) -> list[dict]:
    if params["far_trials"] == 0:
        return []
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    Ls, lam, D = sorted(params["far_L"]), float(params["lam"]), int(params["D"])
    rows = []
    for lw in (law, _orthogonal_twin(law)):
        r = far_mass_draws(lw, Ls, lam, D, params["far_trials"], xrng, xp)
        for k, L in enumerate(Ls):
            b = far_mass_lower_bound(D, L - D, lam)
            rho = r["rho"][:, k]
            e = mean_ci(rho, LEVEL) if rho.size > 1 else None
            tol = lse_rounding_tol(L)
            rows.append({"n": None, "quantity": "far mass ρ_D(L)", "law": lw.name, "orthogonal": lw.orthogonal,
                         "gamma": lw.spectral_gap, "L": L, "lam": lam, "D": D,
                         **(e.as_row() if e else {"estimate": float(rho[0]), "ci_low": None, "ci_high": None,
                                                  "n_samples": 1}),
                         "theory": None, "bound": b, "bound_kind": "lower bound M/(M+Ke^{2λ}) (|logits| ≤ λ)",
                         "min_rho": float(rho.min()), "far_logit_rms": float(r["far_rms"][:, k].mean()),
                         "max_abs_logit": float(r["max_abs_logit"].max()), "lse_near_mean": float(r["lse_near"].mean()),
                         "in_verdict": False, "role": "reported (holds by construction: |logits| ≤ λ; cannot fail)",
                         "agrees": bool(rho.min() >= b * (1 - tol) and r["max_abs_logit"].max() <= lam * (1 + 1e-12))})
    return rows


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    law = Contraction(d=check_positive_int("d", params["d"], 2), beta=float(params["beta"]))
    ns = sorted({check_positive_int("n", n, 1) for n in params["n"]})
    samples = check_positive_int("samples", params["samples"], 6)
    _validate(params)
    r_norm, r_far = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    rows = _norm_rows(law, ns, samples, r_norm, backend)
    far = _far_rows(law, params, r_far, backend)
    mu, var = increment_moments(law.d, law.beta)
    ok_norm = all(r["agrees"] for r in rows)
    ok_far = all(r["agrees"] for r in far)
    top = next(r for r in reversed(rows) if r["quantity"] == "mean of log||P_n k||")
    inc = rows[-1]
    verdict = (f"contraction d={law.d}, β={law.beta:g} (a = β(2−β) = {shrink_rate(law.beta):.4g}, γ = β/d = "
               f"{law.spectral_gap:.4g}): one increment ½log(1−a c²) has μ₁ = {mu:.6g}, σ₁² = {var:.6g}; "
               f"{sum(r['agrees'] for r in rows)}/{len(rows)} rows of mean and variance of log||P_n k|| agree with "
               f"n μ₁, n σ₁² (joint {LEVEL:.0%}, {samples} chains); at n = {top['n']}: {top['estimate']:.5g} "
               f"[{top['ci_low']:.5g}, {top['ci_high']:.5g}] vs {top['theory']:.5g}, so ||P_n k|| ≈ "
               f"e^{{{top['theory']:.3g}}}: scores shrink to 0. One increment, pooled over {inc['n_increments']:,}: "
               f"variance {inc['estimate']:.6g} [{inc['ci_low']:.6g}, {inc['ci_high']:.6g}] vs σ₁² = {var:.6g}.")
    if far:
        per = {}
        for r in far:
            per.setdefault(r["L"], {})[r["law"]] = r
        verdict += " Far mass ρ_D(L) (λ={:g}, D={}), contraction vs lazy-haar p=β/d (same γ): ".format(
            float(params["lam"]), params["D"]) + "; ".join(
            f"L={L}: {v[law.name]['estimate']:.4g} vs {v['lazy-haar']['estimate']:.4g} (far-logit rms "
            f"{v[law.name]['far_logit_rms']:.3g} vs {v['lazy-haar']['far_logit_rms']:.3g}; bound {v[law.name]['bound']:.3g})"
            for L, v in per.items()) + (f"; bound {'respected' if ok_far else 'CROSSED'} by every context "
                                        "(reported, not in the verdict: |logits| ≤ λ makes it hold by construction).")
    return {"holds": ok_norm, "rows": rows + far, "mu1": mu, "sigma1_sq": var,
            "headline": headline(f"mean log||P_n k|| at n = {top['n']} (theory n μ₁)", top, verdict,
                                 theory_kind=top["theory_kind"])}


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: mean ``log ||P_n k||`` against ``n μ₁``; right: ``ρ_D(L)`` of both laws and the bound."""
    rows = [r for r in result["rows"] if r["quantity"] == "mean of log||P_n k||"]
    far = [r for r in result["rows"] if r["quantity"].startswith("far")]
    p = result["params"]
    fig, (a1, a2) = sp.figure(1, 2, height=3.3)
    n = [r["n"] for r in rows]
    sp.theory_vs_measurement(a1, n, *([r[k] for r in rows] for k in ("estimate", "ci_low", "ci_high", "theory")),
                             color="C3", label="measured (joint 95%)", theory_label=r"$n\mu_1$")
    a1.set_xscale("log")
    a1.set_xlabel("route length n")
    a1.set_ylabel(r"$E\,\log\|P_n k\|$")
    a1.set_title(rf"contraction $I-\beta ww^T$, d={p['d']}, β={p['beta']:g}")
    a1.legend()
    for c, name in enumerate(dict.fromkeys(r["law"] for r in far)):
        sel = [r for r in far if r["law"] == name]
        sp.theory_vs_measurement(a2, [r["L"] for r in sel], *([r[k] for r in sel] for k in ("estimate", "ci_low", "ci_high")),
                                 color=f"C{c}", label=f"{name} (γ={sel[0]['gamma']:.3g})")
    if far:
        sel = [r for r in far if r["law"] == far[0]["law"]]
        a2.plot([r["L"] for r in sel], [r["bound"] for r in sel], "k--", lw=1, label=r"bound $M/(M+Ke^{2\lambda})$")
        a2.set_xscale("log")
        a2.set_yscale("log")
        a2.legend()
    a2.set_xlabel("context length L")
    a2.set_ylabel(r"far mass $\rho_D(L)$")
    sp.caption(fig, f"{p['samples']} chains; far mass: {p['far_trials']} contexts per law, λ={p['lam']}, D={p['D']}; seed {p['seed']}")
    return [sp.save(fig, Path(outdir) / NAME)]


# -- mutants ------------------------------------------------------------------------------------
_walk = walk_log_norms
_moments = increment_moments


def _reflection_walk(law, ns, size, xrng, xp=np, **kw):
    """Model mutant: orthogonal reflections ``I − 2wwᵀ`` walked in place of the contraction (β = 2)."""
    return _walk(make_family("householder", law.d), ns, size, xrng, xp, **kw)


def _frozen_walk(law, ns, size, xrng, xp=np, **kw):
    """Model mutant: no transport along the route: one step ``M`` per chain, repeated (``Mⁿ k``)."""
    step = law.sample(xrng, (size, 1), xp)
    return _walk(_Frozen(law, step), ns, size, xrng, xp, **kw)


class _Frozen:
    """A view of ``law`` whose every draw is the chain's first one (``step`` ``(size, 1, d)``)."""

    def __init__(self, law, step):
        self.law, self.step, self.d = law, step, law.d

    def sample(self, xrng, shape, xp=np):
        return xp.broadcast_to(self.step, tuple(shape) + self.step.shape[2:])

    def apply(self, step, x, **kw):
        return self.law.apply(step, x, **kw)


def _off_by_one(d, beta, method="quad"):
    """Theory mutant: ``c² ~ Beta(½, d/2)`` (the increment law of dimension ``d + 1``)."""
    return _moments(d + 1, beta, method)


def _missing_two_minus_beta(d, beta, method="quad"):
    """Theory mutant: the shrink rate ``a = β`` for ``β(2 − β)`` (a missing ``(2 − β)`` factor; invisible at ``β = 1``):
    the moments of the ``β'`` with ``β'(2 − β') = β``."""
    return _moments(d, 1.0 - math.sqrt(1.0 - min(beta, 1.0)), method)


def _moments_times(mean: float = 1.0, variance: float = 1.0):
    """Theory mutant factory: ``(μ₁, σ₁²)`` times ``(mean, variance)``."""
    def moments(d, beta, method="quad"):
        mu, var = _moments(d, beta, method)
        return mean * mu, variance * var

    return moments


def _perturb_moment(which: str):
    """:attr:`Theory.perturb` of ``μ₁`` (``which = "mean"``) or ``σ₁²`` (``"variance"``)."""
    return lambda factor: patched(__name__, "increment_moments", _moments_times(**{which: factor}))()


MUTANTS = (
    Mutant("orthogonal reflection", "model: β = 2 (Householder I − 2wwᵀ) walked as the contraction: no shrinkage",
           patched(__name__, "walk_log_norms", _reflection_walk)),
    Mutant("no transport (frozen steps)", "model: one step per chain repeated, Mⁿk (no fresh w along the route)",
           patched(__name__, "walk_log_norms", _frozen_walk)),
    Mutant("c² ~ Beta(½, d/2)", "theory: off-by-one dimension in the increment law",
           patched(__name__, "increment_moments", _off_by_one)),
    Mutant("mean off 3%", "theory: μ₁ × 1.03", patched(__name__, "increment_moments", _moments_times(mean=1.03))),
    Mutant("(2 − β) missing", "theory: shrink rate a = β instead of β(2 − β) (invisible at β = 1; the default β = 0.5)",
           patched(__name__, "increment_moments", _missing_two_minus_beta)),
)

THEORIES = (
    Theory("μ₁", "the per-step mean ½E log(1 − β(2−β)c²) of log||P_n k|| (the rows' theory n μ₁)", _perturb_moment("mean")),
    Theory("σ₁²", "the per-step variance of log||P_n k|| (the rows' theory n σ₁²)", _perturb_moment("variance")),
)

REDUCED = {"d": 16, "n": [8, 32, 128], "samples": 1000, "far_L": [64, 256], "far_trials": 4}

CHECK = register(limits(Check(
    name=NAME,
    claim="C4",
    statement=("Under PaTH's contraction I − β w wᵀ (β ∈ (0, 2), w uniform), log||P_n k|| has mean n μ₁ and "
               "variance n σ₁² with μ₁ = ½E log(1 − β(2−β)c²), c² ~ Beta(½, (d−1)/2), and one increment, pooled along "
               "the routes, has mean μ₁ and variance σ₁² (joint 95%): scores shrink "
               "to 0; the contraction's far mass ρ_D(L) still respects M/(M+Ke^{2λ}), measured against the "
               "orthogonal law with the same γ (reported: it holds by construction)."),
    options=(
        Option("d", 64, "dimension d ≥ 2 (odd allowed)", Int(2, 4096, size=True)),
        Option("beta", 0.5, "contraction I − β w wᵀ, β ∈ (0, 2) (default 0.5: a = β(2−β) = 0.75 ≠ β, so a missing "
               "(2 − β) shows)", Float(0, 2, lo_open=True, hi_open=True)),
        Option("n", [4, 16, 64, 256, 1024], "route lengths n ≥ 1 (comma list)", IntList(1, 10**6, size=True)),
        Option("samples", 4000, "chains (Monte Carlo samples of log||P_n k|| per n)", Int(6, 10**7, size=True)),
        Option("lam", 8.0, "far mass: logit scale λ", Float(0, 100)),
        Option("D", 16, "far mass: near routes n < D (K = D)", Int(1, 10**6)),
        Option("far_L", [256, 1024, 4096, 16384], "far mass: context lengths L > D (comma list)",
               IntList(2, 10**7, size=True)),
        Option("far_trials", 32, "far mass: contexts per law (0: skip)", Int(0, 10**5, size=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.contraction_norm",
    extra={"order": 3},
    mutants=MUTANTS,
    reduced=REDUCED,
    theories=THEORIES,
    validate=_validate,
)))
