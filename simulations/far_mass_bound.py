"""C4 — far-mass lower bound: ``ρ_D ≥ M_L / (M_L + K e^{2λ})`` whenever ``|logits| ≤ λ``, tight at the corner.

Each trial streams ``K`` near and ``M`` far logits (counter-based, never materialised, so ``M`` may
reach 10⁹) and computes ``ρ_D = expit(LSE(far) − LSE(near))``:

* random trials: every logit uniform in ``[−λ, λ]``;
* adversarial draws pushed toward the extreme configuration: near ``U[λ − 2λδ, λ]``, far
  ``U[−λ, −λ + 2λδ]`` for ``δ = 1, ½, …, 2^{−(adversarial−1)}``;
* the extreme configuration itself (near ``+λ``, far ``−λ``) through the same kernel: ``"equality"``.

``--backend cupy`` streams batches of trials through the array namespace: blocks of the same
counter-based logits generated on the GPU and folded into a running log-sum-exp, so memory stays
bounded for any ``M`` and the numbers equal the numpy backend's to rounding.

Rows: ``min over trials`` (the smallest ``ρ_D`` seen, a computed number: its interval is the rounding
interval of a blocked streamed sum, :func:`lse_rounding_tol`) and each adversarial draw, against the
*bound* (``bound``, ``bound_kind``); the extreme configuration against the *closed form* of ``ρ_D`` there
(``theory``, which equals the bound: that is its tightness).
Verdict: holds when no draw fell below the bound (beyond rounding) and the extreme configuration
equals the closed form to rounding.  Mutants: the bound loosened ×½ (never crossed, but no longer
attained), ``e^{λ}`` for ``e^{2λ}`` (crossed), logits reaching ``±1.05λ`` (crossed).

Why no ``--family``: the bound is a statement about logits alone — it holds for *any* logits in ``[−λ, λ]``,
whatever produced them — and every orthogonal step law produces such logits (``|λ qᵀP_{j→i}k_j| ≤ λ`` for unit
``q``, ``k_j``).  So the check draws the logits directly (uniform, adversarial, and the extreme configuration,
which no random law reaches) and covers every law at once; a law would only narrow the logits it tests.  The
check ``far-mass-growth`` counts crossings of this bound on the trials of any law; ``transfer`` reports it
beside its far-mass rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.core.montecarlo import check_positive_int, progress
from stylized.core.options import Float, Int
from stylized.engine.lse import adversarial_search, extreme_far_mass, lse_rounding_tol, streamed_far_masses
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, register
from stylized.theory.bounds import far_mass_lower_bound

from ._common import limits

NAME = "far-mass-bound"
_GROUP = 8  # random trials per batch (one progress step); numpy/cupy stream a batch in lock-step


def _check_params(params: dict) -> tuple[int, int, float, int, int]:
    K = check_positive_int("K", params["K"], 0)
    M = check_positive_int("M", params["M"], 0)
    if K + M < 1:
        raise ValueError(f"--K: must be ≥ 1 when --M is 0 (K near and M far sources: a softmax needs one), got K={K}, "
                         f"M={M}")
    if M > 10**10:
        raise ValueError(f"--M: must be ≤ 10¹⁰ (streamed, about 0.8 s per 10⁹), got {M}")
    lam = params["lam"]
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (λ) must be a finite number ≥ 0, got {lam!r}")
    trials = check_positive_int("trials", params["trials"], 1)
    adv = check_positive_int("adversarial", params["adversarial"], 0)
    if adv > 60:
        raise ValueError(f"adversarial must be in [0, 60] (δ = 2^−k), got {adv}")
    return K, M, float(lam), trials, adv


def _validate(params: dict) -> None:
    """``Check.validate``: :func:`_check_params` (``K + M ≥ 1``), before any work (``--dry-run`` too)."""
    _check_params(params)


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    K, M, lam, trials, adv = _check_params(params)
    bound = far_mass_lower_bound(K, M, lam)
    tol = lse_rounding_tol(max(K, M))  # relative rounding interval of one streamed ρ_D
    ss = np.random.SeedSequence(seed)
    keys = ss.generate_state(2 * (trials + adv), dtype=np.uint64).reshape(-1, 2)
    rand = np.concatenate([streamed_far_masses(K, M, lam, keys[t:min(t + _GROUP, trials)], backend=backend)
                           for t in _bar(range(0, trials, _GROUP), -(-trials // _GROUP), progress)])
    adv_rows = adversarial_search(K, M, lam, keys[trials:], backend=backend)
    equality = extreme_far_mass(K, M, lam, backend=backend)
    rho_min = float(min(rand.min(), min((r["rho"] for r in adv_rows), default=np.inf)))
    below = int(np.sum(rand < bound * (1 - tol)) + sum(r["rho"] < bound * (1 - tol) for r in adv_rows))
    eq_ok = abs(equality - bound) <= tol * max(bound, 1e-300)
    bkind = "lower bound M/(M+Ke^{2λ}) (any logits in [−λ, λ])"
    corner = {"K": K, "M": M, "lam": lam, "variant": "extreme configuration (near +λ, far −λ)", "estimate": equality,
              "ci_low": equality * (1 - tol), "ci_high": equality * (1 + tol), "n_samples": 1,
              "theory": bound, "theory_kind": "closed form", "in_verdict": True, "agrees": bool(eq_ok),
              "equality_rel_err": (equality - bound) / bound if bound else 0.0}
    row = {"K": K, "M": M, "lam": lam, "variant": "min over trials", "estimate": rho_min,
           "ci_low": rho_min * (1 - tol), "ci_high": rho_min * (1 + tol), "theory": None, "bound": bound,
           "bound_kind": bkind, "n_samples": trials + adv, "in_verdict": True, "agrees": below == 0,
           "random_min": float(rand.min()), "random_mean": float(rand.mean()), "random_max": float(rand.max()),
           "n_below_bound": below, "equality": equality, "equality_rel_err": corner["equality_rel_err"]}
    rows = [row, corner] + [{"K": K, "M": M, "lam": lam, "variant": f"adversarial δ=2^-{k}", "delta": r["delta"],
                             "estimate": r["rho"], "ci_low": r["rho"] * (1 - tol), "ci_high": r["rho"] * (1 + tol),
                             "theory": None, "bound": bound, "bound_kind": bkind, "n_samples": 1, "gap": r["gap"],
                             "in_verdict": True, "agrees": r["rho"] >= bound * (1 - tol)}
                            for k, r in enumerate(adv_rows)]
    last = adv_rows[-1] if adv_rows else None
    verdict = (f"K={K}, M={M:,}, λ={lam:g}: bound M/(M+Ke^(2λ)) = {bound:.6g}. Smallest ρ_D over {trials} random "
               f"trials (logits U[−λ,λ]) = {rand.min():.6g} (mean {rand.mean():.6g}); over {adv} adversarial draws "
               f"pushed to the corner the gap ρ_D − bound fell to {last['gap']:.3g} at δ=2^-{adv - 1}" if last else
               f"K={K}, M={M:,}, λ={lam:g}: bound = {bound:.6g}; smallest of {trials} random trials = {rand.min():.6g}")
    verdict += (f"; {below} draws below the bound. Extreme configuration (near +λ, far −λ), streamed: "
                f"ρ_D = {equality:.12g}, relative difference {row['equality_rel_err']:.2g} from the closed form "
                f"M/(M+Ke^(2λ)) (rounding tolerance {tol:.1g}): the bound is {'attained' if eq_ok else 'NOT attained'}.")
    return {
        "holds": below == 0 and eq_ok,
        "rows": rows,
        "random_rho": rand.tolist(),
        "headline": headline("min ρ_D over random + adversarial trials (≥ bound; = bound at the corner)", row, verdict,
                             theory=None, bound=bound, bound_kind=bkind, theory_kind=None),
    }


def _bar(it, total, enabled):
    return progress(it, total=total, desc=NAME, enabled=enabled)


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: ρ_D against δ (log x) with the bound: the adversarial draws at their δ, the random trials at δ = 1 (the
    same uniform logits), the extreme configuration at δ → 0 (the left edge); right: the gap ρ_D − bound against δ."""
    rows = result["rows"]
    main, adv = rows[0], [r for r in rows if str(r["variant"]).startswith("adversarial")]
    p = result["params"]
    with sp.theme():
        fig, (a1, a2) = sp.figure(1, 2, height=3.1, sharex=bool(adv))
        rand = np.asarray(result["random_rho"])
        a1.plot(np.ones(rand.size), rand, "o", mfc="none", ms=5, color="C0",
                label=f"random trials, δ = 1 (logits U[−λ, λ]; {rand.size})")
        if adv:
            d = np.array([r["delta"] for r in adv])
            a1.plot(d, [r["estimate"] for r in adv], "s-", ms=3.5, lw=0.8, color="C3",
                    label=r"adversarial draws at $\delta$")
            a1.set_xscale("log")
            a1.set_xlim(d.min() / 8, 4)
        a1.axhline(main["bound"], color="k", ls="--", lw=1.0, label=r"bound $M/(M + K e^{2\lambda})$")
        x0 = a1.get_xlim()[0] if adv else 0.0
        a1.plot([x0], [main["equality"]], "*", ms=11, color="C2", clip_on=False, zorder=4,
                label=r"extreme config ($\delta \to 0$: near $+\lambda$, far $-\lambda$)")
        a1.set_ylim(min(main["bound"], main["equality"]) - 0.06, 1.04)
        a1.set_xlabel(r"$\delta$ = band width / $2\lambda$")
        a1.set_ylabel(r"far mass $\rho_D$")
        a1.set_title(r"$\rho_D$ never falls below the bound")
        a1.legend(loc="center right", fontsize=6.5)
        if adv:
            g = np.array([r["gap"] for r in adv])
            pos = g > 0
            a2.loglog(d[pos], g[pos], "s-", ms=3.5, lw=0.8, color="C3", label=r"$\rho_D$ − bound (adversarial)")
            a2.loglog(d, d * g[-1] / d[-1], ":", color="0.4", label=r"$\propto \delta$ (reference)")
            a2.set_xlabel(r"$\delta$ = band width / $2\lambda$")
            a2.set_ylabel(r"gap $\rho_D$ − bound ($\geq 0$)")
            a2.set_title("tightness: the gap closes at the corner")
            a2.legend(loc="upper left")
        else:
            a2.set_axis_off()
        sp.caption(fig, f"C4. K={p['K']}, M={p['M']:,} (streamed, never materialised), λ={p['lam']}; {p['trials']} random "
                        f"trials, {p['adversarial']} adversarial draws δ = 2^−k, seed {p['seed']}; bound {main['bound']:.6g}, "
                        f"extreme config rel. diff {main['equality_rel_err']:.1e}; adversarial logits: near U[λ−2λδ, λ], "
                        "far U[−λ, −λ+2λδ] (δ = 1: the random trials' law; δ → 0: the extreme configuration)")
        return [sp.save(fig, Path(outdir) / NAME)]


def _wrong_bound(factor: float = 1.0, exponent: float = 2.0):
    """Theory mutant: ``factor · M/(M + K e^{exponent·λ})`` in place of the bound."""
    from unittest import mock

    from stylized.theory import bounds
    def wrong(K, M, lam):
        return factor * bounds.far_mass_lower_bound(K, M, lam * exponent / 2.0)

    return mock.patch(f"{__name__}.far_mass_lower_bound", wrong)


def _logits_past_lambda(excess: float = 1.05):
    """Model mutant: the adversarial draws reach ``±1.05 λ`` (logits not bounded by ``λ``)."""
    from unittest import mock

    from stylized.engine import lse
    from stylized.theory import bounds

    def wrong(K, M, lam, keys, backend="numba"):
        rows = lse.adversarial_search(K, M, lam * excess, keys, backend=backend)
        b = bounds.far_mass_lower_bound(K, M, lam)
        return [{**r, "gap": r["rho"] - b} for r in rows]

    return mock.patch(f"{__name__}.adversarial_search", wrong)


CHECK = register(limits(Check(
    name=NAME,
    claim="C4",
    statement="Under full softmax with |logits| ≤ λ, no random or adversarial draw gives ρ_D < M_L/(M_L + K e^{2λ}), "
              "and the extreme configuration (near +λ, far −λ) attains it to rounding.",
    options=(
        Option("K", 16, "near sources K (≥ 0)", Int(0, 10**6, size=True)),
        Option("M", 10**8, "far sources M_L (≥ 0, up to 10¹⁰; streamed)", Int(0, 10**10, size=True)),
        Option("lam", 8.0, "logit bound λ ≥ 0", Float(0, 100)),
        Option("trials", 32, "random trials (logits uniform in [−λ, λ])", Int(1, 10**5, size=True)),
        Option("adversarial", 30, "adversarial draws δ = 2^−k, k < adversarial", Int(0, 60)),
    ),
    run=run,
    plot=plot,
    module="simulations.far_mass_bound",
    validate=_validate,
    extra={"order": 0},
    mutants=(
        Mutant("bound-loosened-x2", "theory: the lower bound halved (M/(M+Ke^{2λ}) / 2): never crossed, but no longer "
               "attained at the corner", patch=lambda: _wrong_bound(factor=0.5)),
        Mutant("exponent-lambda", "theory: e^{λ} instead of e^{2λ} in the bound (too high: the corner falls below it)",
               patch=lambda: _wrong_bound(exponent=1.0)),
        Mutant("logits-exceed-lambda", "model: adversarial logits reach ±1.05λ (the bound's hypothesis |logits| ≤ λ "
               "violated)", patch=lambda: _logits_past_lambda(1.05)),
    ),
    reduced={"M": 10**5, "trials": 8, "adversarial": 20},
    theories=(Theory("M_L/(M_L+Ke^{2λ})", "the bound, which the extreme configuration must attain (so an error of "
                     "either sign flips it: raised, the corner falls below it; lowered, it is no longer attained)",
                     lambda factor: _wrong_bound(factor=factor)),),
)))
