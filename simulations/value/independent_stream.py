"""C5 — the author's QKV: values rotated by an angle stream independent of the Q/K angles.

Two transports of the same far values under the same weights: ``same`` (``P_{j→i}``, the keys'
route, the paper's QKV) and ``indep`` (an independent stream of steps of the same family, the
author's implementation).  Per trial the paired contrast ``Δ = ||F_same||² − ||F_indep||²``
(relative to ``ρ_D²||b||²``) is measured.

* Equal weights: both equal the exact finite-``M`` value, so ``E Δ = 0`` *(exact)*.
* Softmax weights: the independent stream is independent of the weights, so
  ``E[||F_indep||² | ᾱ] = ᾱᵀCᾱ + σ²dΣᾱ²`` *(exact)*.  Uniform keys: the same holds for ``same`` and
  ``E Δ = 0``.  Keys aligned with ``b̂``: the weights select routes that keep ``b̂`` and only ``same``
  keeps a coherent part, ``Δ > 0`` (one-sided test at the largest ``M``).  For Haar steps with keys
  ``= b̂`` both energies are exact at every ``M`` (:func:`stylized.theory.value_theory.haar_tilt_energy`), so
  ``Δ`` is tested against its exact value; for SO(2) only its ``M → ∞`` limit, the torus tilt floor
  (:func:`stylized.theory.value_theory.tilt_floor`), is known: it is reported, not tested (at ``M = 1024``,
  ``d = 64`` the measured ``Δ`` is still ≈ 6% below it, and at ``d = 8`` the gap still shrinks slower than
  ``1/M`` at ``M = 4096``).

Levels are also pooled over ``M`` on the independent stream (its rows are independent across ``M``):
``estimate/exact − 1`` with equal weights, ``excess/plug-in`` with softmax weights, and for Haar with
keys ``= b̂`` the same transport's ``estimate/exact − 1``.  With the default softmax weights the exact
equal-weight formula itself is *not* in the verdict: its generalisation to the drawn weights, the plug-in
``ᾱᵀCᾱ``, is (``weights="equal"`` tests the formula).  Any orthogonal law (odd ``d`` included); a law
without a closed-form ``E[M]`` gets the estimated theory, widened by its 95% radius.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from unittest import mock

import numpy as np

from stylized.core.options import Int, IntList
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, register
from stylized.theory.value_theory import haar_tilt_energy, tilt_floor

from .._common import family_from_params, family_options, finite, limits
from ._common import (
    COLORS,
    OPT_D,
    OPT_KA,
    OPT_LAM,
    OPT_NOISE,
    OPT_W,
    background,
    caption_params,
    check_common,
    check_law,
    check_laws,
    chi_scaled_pairs,
    chi_scaled_theory,
    energy_panel,
    energy_rows,
    equals_theory,
    far_counts,
    halving_bound,
    judge,
    label,
    level_theory,
    mean_scaled,
    no_transport,
    pooled_level,
    theory_scaled,
    with_default,
    zero_excess,
)

__all__ = ["run_independent"]


def _tests(rows: list[dict], params: dict, fam) -> tuple[list[tuple], dict | None]:
    w, ka, noise, big = params["weights"], params["key_align"], params["noise"], max(far_counts(params))
    by = {(r["variant"], r["M"]): r for r in rows}
    tests = []
    exact_tilt = w == "softmax" and ka == 1.0 and fam.mixes_in_one_step  # i.i.d. uniform routes: exact energies
    for r in rows:
        if r["theory"] is not None:  # equal weights: both transports and QK equal their exact values
            tests.append(equals_theory(r))
        elif r["variant"] == "qk" and noise == 0:  # softmax weights sum to 1: F_QK = ρ_D b exactly
            r.update(theory=1.0, theory_kind="closed form")
            tests.append(equals_theory(r))
        elif r["variant"] == "qkv-indep" or (r["variant"] == "qkv" and ka == 0.0):  # independent of the weights
            tests.append(zero_excess(r))
    floor = tilt_floor(fam, background(fam), params["lam"]) if w == "softmax" and ka == 1.0 else None
    for M in far_counts(params):
        r = by[("qkv", M)]
        if floor is not None:
            r.update(contrast_floor=floor, contrast_floor_kind="closed form (M → ∞ limit)")
        if w == "equal" or ka == 0.0:  # the two transports have the same law given the weights
            r.update(contrast_theory=0.0, contrast_theory_kind="closed form")
            tests.append((r, "contrast", "equals", 0.0))
        elif exact_tilt:
            total, diag = haar_tilt_energy(fam.d, params["lam"], M)
            r.update(theory=total + noise**2 * fam.d * diag, theory_kind="closed form",
                     contrast_theory=total - diag, contrast_theory_kind="closed form")
            tests += [equals_theory(r), (r, "contrast", "equals", total - diag)]
    if w == "softmax" and ka > 0 and not exact_tilt:  # directional: aligned-route weights favour the same transport
        r = by[("qkv", big)]
        r.update(contrast_bound=0.0, contrast_bound_kind="lower (one-sided: Δ > 0)")
        tests.append((r, "contrast", "above", 0.0))
    for v in ("qkv", "qkv-indep"):  # both incoherent: below half of QK at the largest M
        tests.append((by[(v, big)], "estimate", "below", halving_bound(by[("qk", big)]["estimate"])))
    # the level pooled over M, on rows independent across M (one variant): a few-percent theory error shows
    variant, field = ("qkv", "estimate") if exact_tilt else ("qkv-indep", "estimate" if w == "equal" else "excess")
    level = pooled_level([r for r in rows if r["variant"] == variant], field)
    if level is not None:
        tests.append((level, "estimate", "equals", 0.0, level.get("theory_radius", 0.0)))
    return tests, level


def _validate(params: dict) -> None:
    """``Check.validate``: the shared value options and the law (pathwise steps for softmax weights), before any work."""
    check_common(params)
    check_laws([family_from_params(params)], pathwise=params["weights"] != "equal")


def run_independent(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    check_common(params)
    fam = check_law(family_from_params(params), pathwise=params["weights"] != "equal")
    rows = energy_rows(fam, params, seed, ("qk", "qkv", "qkv-indep"), weights=params["weights"],
                       key_align=params["key_align"], show=progress, backend=backend)
    tests, level = _tests(rows, params, fam)
    n_pass, n_tests = judge(tests)
    label(rows)
    big = max(far_counts(params))
    same = next(r for r in rows if r["variant"] == "qkv" and r["M"] == big)
    ind = next(r for r in rows if r["variant"] == "qkv-indep" and r["M"] == big)
    ref = (f"exact {ind['theory']:.4g}" if ind["theory"] is not None else f"plug-in ᾱᵀCᾱ {ind['plugin']:.4g}")
    verdict = (f"{params['weights']} weights, key_align={params['key_align']}: at M={big} same-transport QKV "
               f"{same['estimate']:.4g} [{same['ci_low']:.4g}, {same['ci_high']:.4g}], independent stream "
               f"{ind['estimate']:.4g} [{ind['ci_low']:.4g}, {ind['ci_high']:.4g}] ({ref}); paired contrast Δ = "
               f"{same['contrast']:.3g} [{same['contrast_ci_low']:.3g}, {same['contrast_ci_high']:.3g}]")
    if "contrast_theory" in same:
        verdict += f" vs exactly {same['contrast_theory']:.4g}"
    if "contrast_bound" in same:
        verdict += f", one-sided > 0: {same['contrast_above_test']['passed']}"
    if "contrast_floor" in same:
        verdict += f" (its M → ∞ limit, the tilt floor: {same['contrast_floor']:.4g}; reported, not tested)"
    if level is not None:
        what = {"estimate": "estimate/exact − 1", "excess": "excess/plug-in"}[level["field"]]
        verdict += (f"; {level['variant']} {what} pooled over M: {level['estimate']:+.3g} [{level['ci_low']:+.3g}, "
                    f"{level['ci_high']:+.3g}] vs 0: {level['estimate_test']['passed']}")
    if params["weights"] != "equal":
        verdict += " (the exact equal-weight formula is not in this verdict: weights=equal tests it)"
    if fam.mean_radius > 0:
        verdict += f"; theory {fam.theory_kind}, comparisons widened by its 95% radius"
    verdict += f". All {n_tests} tests at a Bonferroni-joint 95% level: {n_pass}/{n_tests} pass."
    return {
        "holds": bool(n_pass == n_tests),
        "rows": rows,
        "levels": {level["variant"]: level} if level is not None else {},
        "headline": headline(
            f"paired contrast E||F_same||² − E||F_indep||² (÷ ρ_D²||b||²) at M={big} ({fam.name})", same, verdict,
            estimate=same["contrast"], ci_low=same["contrast_ci_low"], ci_high=same["contrast_ci_high"],
            theory=same.get("contrast_theory"),
            theory_kind=same.get("contrast_theory_kind"),
        ),
    }


@sp.themed
def plot_independent(result: dict, outdir: Path) -> list[Path]:
    fig, (ax, ax2) = sp.figure(2, 1, height=6.4)
    rows = result["rows"]
    energy_panel(ax, rows, ("qk", "qkv", "qkv-indep"))
    p = result["params"]
    ax.set_title("C5: same-transport QKV vs an independent value stream")
    rs = sorted((r for r in rows if r["variant"] == "qkv" and "contrast" in r), key=lambda r: r["M"])
    M = np.array([r["M"] for r in rs], float)
    e, lo, hi = (finite([r[k] for r in rs]) for k in ("contrast", "contrast_ci_low", "contrast_ci_high"))
    th = finite([r.get("contrast_theory") for r in rs])
    sp.theory_vs_measurement(ax2, M, e, lo, hi, theory=th, color=COLORS["qkv"], theory_label=r"exact $\mathbb{E}\Delta$",
                             label=r"measured $\Delta = \|F_{same}\|^2 - \|F_{indep}\|^2$ (paired)")
    if rs and rs[0].get("contrast_floor") is not None:
        ax2.axhline(rs[0]["contrast_floor"], color="0.4", ls=":", lw=1.1, label=r"$M \to \infty$ tilt floor (closed form)")
    ax2.axhline(0.0, color="k", lw=0.8)
    ax2.set_xscale("log")
    ax2.set_xlabel(r"$M$ (number of far sources)")
    ax2.set_ylabel(r"paired contrast $\mathbb{E}\Delta / (\rho_D^2\|b\|^2)$")
    ax2.set_title("the coherent part is kept only by the same transport")
    ax2.legend(loc="upper right")
    sp.caption(fig, caption_params(p, ("family", "d", "omega", "D", "weights", "lam", "key_align", "noise", "trials",
                                     "seed")) + "; bars: 95% CI; dotted: independent-weights plug-in ᾱᵀCᾱ")
    return [sp.save(fig, Path(outdir) / "value-independent-stream")]


def _halving_times(factor: float):
    """:attr:`Theory.perturb` of the bound: ``½ r_QK`` (both transports below it at the largest ``M``) times ``factor``."""
    return theory_scaled("simulations.value.independent_stream.halving_bound", factor)()


def same_stream(*args, **kwargs) -> dict[str, np.ndarray]:
    """Wrong model: the 'independent' stream replaced by the same route transport as the keys."""
    from stylized.engine import values
    out = values.far_energy_samples(*args, **kwargs)
    if "qkv-indep" in out:
        out["qkv-indep"] = out["qkv"].copy()
    return out


register(limits(Check(
    name="value-independent-stream", claim="C5",
    statement="Same far values and weights, transported by the keys' route (same) or by an independent stream "
              "(the author's QKV): the independent stream equals the plug-in ᾱᵀCᾱ of its weights (exact value "
              "with equal weights); the paired contrast Δ = ||F_same||² − ||F_indep||² is 0 when the weights are "
              "independent of the steps, and with keys = b̂ it is positive at the largest M (exact value for Haar steps; "
              "for SO(2) only its M → ∞ limit, the tilt floor Σ_p w_p(I_1(λw_p)/I_0(λw_p))², is known: reported, "
              "not tested); both stay below half of QK at the largest M; the independent stream's level pooled over M "
              "(estimate/exact − 1, or excess/plug-in) is 0.  With softmax weights (the default) the exact "
              "equal-weight formula itself is not in the verdict, only its plug-in ᾱᵀCᾱ (weights=equal tests it).",
    options=family_options("so2-uniform", 64) + (
        Option("M", [4, 16, 64, 256, 1024], "far counts M (comma list)", IntList(1, 10**7, size=True)), OPT_D,
        with_default((OPT_W,), weights="softmax")[0], OPT_LAM, with_default((OPT_KA,), key_align=1.0)[0], OPT_NOISE,
        Option("trials", 500, "Monte Carlo routes per M", Int(2, 10**7, size=True))),
    run=run_independent, plot=plot_independent, module="simulations.value.independent_stream",
    validate=_validate,
    extra={"order": 4, "needs": ("orthogonal",)},
    mutants=(
        Mutant("same-stream", "the independent value stream replaced by the keys' own route transport",
               patch=lambda: mock.patch("simulations.value._common.far_energy_samples", same_stream)),
        Mutant("no-value-transport", "QK-only sums in place of both transported sums",
               patch=lambda: mock.patch("simulations.value._common.far_energy_samples", no_transport)),
        Mutant("chi-off-3pct", "the plug-in ᾱᵀCᾱ with χ × 1.03",
               patch=lambda: mock.patch("stylized.engine.values.correlation_pairs", partial(chi_scaled_pairs, factor=1.03))),
        Mutant("chi-off-3pct-equal", "equal weights: the exact finite-M formula with χ × 1.03",
               patch=lambda: mock.patch("simulations.value._common.qkv_interference_theory",
                                        partial(chi_scaled_theory, factor=1.03)),
               params={"weights": "equal"}),
        Mutant("plugin-x0.97", "the plug-in ᾱᵀCᾱ × 0.97 (its level 3% low)",
               patch=theory_scaled("stylized.engine.values._plugin", 0.97)),
        Mutant("plugin-x1.03", "the plug-in ᾱᵀCᾱ × 1.03 (its level 3% high)",
               patch=theory_scaled("stylized.engine.values._plugin", 1.03)),
        Mutant("theory-x0.97-equal", "equal weights: the exact finite-M value × 0.97",
               patch=theory_scaled("simulations.value._common.qkv_interference_theory", 0.97),
               params={"weights": "equal"}),
        Mutant("mean-off-3pct-cayley", "cayley (estimated E[M]): the theory's E[M] × 0.97",
               patch=mean_scaled(0.97), params={"family": "cayley"}),
    ),
    reduced={"d": 16, "M": [16, 64, 256], "trials": 300},
    theories=(
        level_theory("ᾱᵀCᾱ", "the independent-weights plug-in ᾱᵀCᾱ of the drawn weights × factor at M ≥ 2 (M = 1: "
                     "C_00 = 1; its noise term σ²dΣᾱ² and the contrast's 0 left alone)", "stylized.engine.values._plugin", m_arg=3),
        level_theory("r_QKV(M)", "equal weights: the exact finite-M value (1/M²)Σ_{j,k} b̂ᵀE[M]^{|j−k|}b̂ × factor at M ≥ 2 "
                     "(M = 1 is 1 by orthogonality; the contrast's 0 left alone)",
                     "simulations.value._common.qkv_interference_theory", m_arg=2, params={"weights": "equal"}),
        level_theory("E_λ(M)", "Haar, keys = b̂: the exact tilted energy and its plug-in part E[Σᾱ²] × factor at M ≥ 2 "
                     "(so the exact contrast E_λ − E[Σᾱ²] too; M = 1 is 1)",
                     "simulations.value.independent_stream.haar_tilt_energy", m_arg=2, params={"family": "haar"}),
        Theory("½ r_QK", "the bound QKV, independent stream < ½·r_QK at the largest M, ½·r_QK × factor",
               _halving_times, sides=(-1,)),
    ),
)))
