"""C5 — value-side incoherence: transported far values cancel, QK-only far values add up.

Far values share a background, ``v_j = b + ξ_j``.  QK-only, the far output ``F = Σ_far α_j v_j``
adds the background coherently (``||F||² = ρ_D²||b||²``); QKV transports each value along its
route, ``F = Σ_far α_j P_{j→i} v_j``, and the transported backgrounds cancel.  The exact finite-``M``
value ``r(M) = E||F||²/(ρ_D²||b||²)`` is :func:`stylized.theory.value_theory.qkv_interference_theory`.

* ``value-incoherence``: ``r`` per (variant, M) against the exact value (equal weights), or the
  paired excess over the independent-weights plug-in ``ᾱᵀCᾱ`` (softmax, uniform keys);
* ``value-scaling``: the exponent of ``r_QKV ∝ M^β`` against the exponent of the exact formula
  fitted the same way, with fixed equal weights on the ``log M`` grid (→ −1; never weighted by the measurement's
  intervals), and QK-only's (0), and the level: ``estimate/theory − 1`` pooled over the
  ``M`` grid (inverse-variance weights) is 0 (a fitted exponent alone does not see a theory ×0.97).

Both pool the level over ``M`` (:func:`simulations.value._common.pooled_level`) besides the row-by-row
tests.  Any orthogonal law (odd ``d`` included); a law without a closed-form ``E[M]`` (``cayley``, a
user's) is compared with the estimated theory, widened by its 95% radius.

The other value checks (``value-snr``, ``value-noncommutative``, ``value-independent-stream``) are in
their own modules; all share :mod:`simulations.value._common`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from unittest import mock

import numpy as np
from scipy import stats

from stylized.core.options import Int, IntList
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.theory.value_theory import coherent_sum, correlation_pairs

from .._common import family_from_params, family_options, limits
from ._common import (
    LEVEL,
    NO_VALUE_TRANSPORT,
    OPT_D,
    OPT_KA,
    OPT_LAM,
    OPT_NOISE,
    OPT_W,
    REPEATED_STEPS,
    asymptote_theory,
    caption_params,
    check_common,
    check_law,
    check_laws,
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
    passed,
    pooled_level,
    theory_scaled,
    zero_excess,
)

__all__ = ["fit_exponent", "run_incoherence", "run_scaling", "sqrt_law_theory"]


# ---------------------------------------------------------------------------------------
# 1. value-incoherence
# ---------------------------------------------------------------------------------------
def _validate_incoherence(params: dict) -> None:
    """``Check.validate``: the shared value options and the law (pathwise steps for softmax weights), before any work."""
    check_common(params)
    check_laws([family_from_params(params)], pathwise=params["weights"] != "equal")


def run_incoherence(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    check_common(params)
    w, ka = params["weights"], params["key_align"]
    fam = check_law(family_from_params(params), pathwise=w != "equal")
    rows = energy_rows(fam, params, seed, ("qk", "qkv"), weights=w, key_align=ka, show=progress, backend=backend)
    big = max(far_counts(params))
    qk = next(r for r in rows if r["variant"] == "qk" and r["M"] == big)
    qkv = next(r for r in rows if r["variant"] == "qkv" and r["M"] == big)
    tests = []
    for r in rows:
        if r["theory"] is not None:  # equal weights: the exact value
            tests.append(equals_theory(r))
        elif r["variant"] == "qk" and params["noise"] == 0:  # softmax weights sum to 1: F_QK = ρ_D b exactly
            r.update(theory=1.0, theory_kind="closed form")
            tests.append(equals_theory(r))
        elif r["variant"] == "qkv" and ka == 0.0:  # weights independent of the steps: E[r | ᾱ] = ᾱᵀCᾱ exactly
            tests.append(zero_excess(r))
    qkv_rows = [r for r in rows if r["variant"] == "qkv"]
    level = pooled_level(qkv_rows, "estimate") if w == "equal" else (pooled_level(qkv_rows, "excess")
                                                                      if ka == 0.0 else None)
    if level is not None:  # the level pooled over M: a few-percent theory error shows at small sizes
        tests.append((level, "estimate", "equals", 0.0, level.get("theory_radius", 0.0)))
    tests.append((qkv, "estimate", "below", halving_bound(qk["estimate"])))  # transport at least halves the far energy
    n_pass, n_tests = judge(tests)
    label(rows)
    chi_txt = (f"χ={np.real(fam.chi()).mean():.4g} (plane mean)" if fam.planes else
               f"E[M]=({fam.theory_mean()[0, 0]:.4g})·I" if fam.isotropic else f"γ={fam.spectral_gap:.4g}")
    if fam.mean_radius > 0:
        chi_txt += f" ({fam.theory_kind}, theory widened by its 95% radius)"
    n_exact = sum(1 for t in tests if t[1:3] == ("estimate", "equals"))
    n_exact_ok = sum(1 for t in tests if t[1:3] == ("estimate", "equals") and passed(t))
    verdict = (f"{fam.name} d={fam.d}, {w} weights (key_align={ka}): at M={big} far sources QKV keeps "
               f"{qkv['estimate']:.4g} [{qkv['ci_low']:.4g}, {qkv['ci_high']:.4g}] of the coherent far energy, QK "
               f"{qk['estimate']:.4g}; {chi_txt}. {n_exact_ok}/{n_exact} rows match the exact value")
    if level is not None:
        what = "estimate/theory − 1" if level["field"] == "estimate" else "excess/plug-in"
        verdict += (f"; {what} pooled over M: {level['estimate']:+.3g} [{level['ci_low']:+.3g}, "
                    f"{level['ci_high']:+.3g}] vs 0: {passed(tests[-2])}")
    if any(t[1] == "excess" for t in tests):
        n_exc = sum(1 for t in tests if t[1] == "excess")
        ok_exc = sum(1 for t in tests if t[1] == "excess" and passed(t))
        verdict += (f"; {ok_exc}/{n_exc} QKV rows have zero excess over the independent-weights plug-in ᾱᵀCᾱ "
                    f"(at M={big}: {qkv['excess']:.3g} [{qkv['excess_ci_low']:.3g}, {qkv['excess_ci_high']:.3g}])")
    elif w == "softmax":
        verdict += f"; keys aligned with b̂ (key_align={ka}): no closed form for QKV, only the halving is tested"
    verdict += (f"; QKV below half of QK at M={big}: {passed(tests[-1])}. "
                f"All {n_tests} tests at a Bonferroni-joint 95% level: {n_pass}/{n_tests} pass.")
    return {
        "holds": bool(n_pass == n_tests),
        "rows": rows,
        "levels": {"qkv": level},
        "headline": headline(f"E||F_QKV||²/(ρ_D²||b||²) at M={big} ({fam.name})", qkv, verdict,
                             theory_kind=qkv.get("theory_kind") if qkv["theory"] is not None else None),
    }


@sp.themed
def plot_incoherence(result: dict, outdir: Path) -> list[Path]:
    fig, (ax,) = sp.figure(height=4.0)
    energy_panel(ax, result["rows"], ("qk", "qkv"))
    p = result["params"]
    ax.set_title(f"C5: far interference energy vs M ({p['family']}, {p['weights']} weights)")
    sp.caption(fig, caption_params(p, ("family", "d", "omega", "sigma", "p", "base", "D", "weights", "lam",
                                     "key_align", "noise", "trials", "seed"))
            + "; bars: 95% CI; dashed: exact finite-M value")
    return [sp.save(fig, Path(outdir) / "value-incoherence")]


# ---------------------------------------------------------------------------------------
# 2. value-scaling
# ---------------------------------------------------------------------------------------
def fit_exponent(M: np.ndarray, est: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 theory: np.ndarray | None = None) -> tuple[float, float, float, float | None]:
    """Least squares of ``log r`` on ``log M`` with fixed (equal) weights; ``σ(log r) ≈ (hi − lo)/(2·1.96·r)``
    enters only the slope's interval.

    Returns the slope, its 95% interval (``Var β̂ = Σ c_i² σ_i²`` for the fixed coefficients ``c_i``), and the slope of
    ``log theory`` fitted with the same fixed weights: a function of the exact curve and the ``M`` grid alone, never
    of the measurement (the finite-``M`` curve is not a pure power law, so both are fitted the same way).  Rows with
    zero spread (QK without noise) give an exact slope, zero width.
    """
    x, y = np.log(M), np.log(est)
    sd = np.maximum((hi - lo) / (2 * 1.96 * est), 0.0)
    c = (x - x.mean()) / np.sum((x - x.mean()) ** 2)  # slope = Σ c_i y_i
    slope = float(c @ y)
    th = None if theory is None else float(c @ np.log(theory))
    if np.all(sd == 0):
        resid = y - (y.mean() + slope * (x - x.mean()))
        half = 0.0 if np.allclose(resid, 0) else float("inf")
    else:
        half = 1.96 * float(np.sqrt(np.sum(c**2 * sd**2)))
    return slope, slope - half, slope + half, th


def qk_noise_level(rows: list[dict]) -> dict | None:
    """QK-only's noise term on its own: ``δ_i = (estimate_i − 1)/(theory_i − 1) − 1`` pooled over ``M`` by
    :func:`pooled_level` (inverse-variance weights), theory 0; ``None`` without value noise.

    The level ``1 + σ²d/(M||b||²)`` pooled as a whole is dominated by the large-``M`` rows, where the noise term is
    a fraction of a percent of it; relative to the noise term itself, the small-``M`` rows carry the weight."""
    use = [r for r in rows if r.get("theory") is not None and r["theory"] - 1.0 > 1e-9]
    if not use:
        return None
    shifted = [{**r, "estimate": r["estimate"] - 1.0, "ci_low": r["ci_low"] - 1.0, "ci_high": r["ci_high"] - 1.0,
                "theory": r["theory"] - 1.0} for r in use]
    out = pooled_level(shifted, "estimate")
    return None if out is None else {**out, "variant": "qk", "quantity": "noise term σ²d/(M||b||²), relative"}


def sqrt_law_theory(family, b: np.ndarray, M: int, noise: float = 0.0) -> float:
    """Wrong theory: the ``1/M`` law replaced by ``1/√M`` (``S(χ, M)/M^{3/2}``, noise term ``/√M``)."""
    w, z = correlation_pairs(family, b)
    return float(np.real(coherent_sum(z, M)) @ w) / M**1.5 + noise**2 * family.d / (np.sqrt(M) * float(b @ b))


def _validate_scaling(params: dict) -> None:
    """``Check.validate``: the shared value options and the law, before any work."""
    check_common(params)
    check_laws([family_from_params(params)], pathwise=False)


def run_scaling(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    params = {**params, "weights": "equal", "key_align": 0.0, "lam": 0.0}
    check_common(params)
    fam = check_law(family_from_params(params), pathwise=False)
    rows = energy_rows(fam, params, seed, ("qk", "qkv"), weights="equal", key_align=0.0, show=progress,
                       backend=backend)
    label(rows)  # the rows are reported; the verdict tests the fitted exponents and the pooled levels
    fits, levels = {}, {}
    for v in ("qk", "qkv"):
        rs = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["M"])
        M, est, lo, hi, th = (np.array([r[k] for r in rs], float) for k in ("M", "estimate", "ci_low", "ci_high", "theory"))
        slope, s_lo, s_hi, th_slope = fit_exponent(M, est, lo, hi, th)
        fits[v] = {"exponent": slope, "ci_low": s_lo, "ci_high": s_hi, "theory_exponent": th_slope,
                   "theory_kind": rs[0]["theory_kind"], "se": (s_hi - slope) / 1.96}
        levels[v] = pooled_level(rs, "estimate")
    noise_term = qk_noise_level([r for r in rows if r["variant"] == "qk"])
    q, k = fits["qkv"], fits["qk"]
    # joint 95% over the tests with spread: β_QKV = β_exact, β_QK = β_exact (exact when noise = 0), β_QKV < 0,
    # and the pooled levels (estimate/theory − 1 = 0) of QKV and of QK (exact rows when noise = 0)
    lv = [levels[v] for v in ("qkv", "qk") if levels[v] is not None]
    m = 2 + (k["se"] > 0) + len(lv) + (noise_term is not None)
    z2, z1 = stats.norm.ppf(1 - 0.025 / m), stats.norm.ppf(1 - 0.05 / m)
    tol = 1e-9
    q["matches"] = bool(abs(q["exponent"] - q["theory_exponent"]) <= z2 * q["se"] + tol)
    k["matches"] = bool(abs(k["exponent"] - k["theory_exponent"]) <= z2 * k["se"] + tol)
    q["negative"] = bool(q["exponent"] + z1 * q["se"] < 0)
    for v in ("qkv", "qk"):
        L = levels[v]
        if L is None:  # every row exact (QK without noise): each must equal its theory to rounding
            ok = all(abs(r["estimate"] - r["theory"]) <= 1e-12 * max(1.0, abs(r["theory"])) for r in rows
                     if r["variant"] == v)
            levels[v] = {"variant": v, "field": "estimate", "exact_rows": True, "matches": bool(ok)}
            continue
        se = (L["ci_high"] - L["estimate"]) / stats.t.ppf(0.5 + LEVEL / 2, L["n_samples"] - 1)
        L["matches"] = bool(abs(L["estimate"]) <= z2 * se + L.get("theory_radius", 0.0) + tol)
        L["in_verdict"] = True
    if noise_term is not None:
        se = (noise_term["ci_high"] - noise_term["estimate"]) / stats.t.ppf(0.5 + LEVEL / 2, noise_term["n_samples"] - 1)
        noise_term["matches"] = bool(abs(noise_term["estimate"]) <= z2 * se + tol)
        noise_term["in_verdict"] = True
        levels["qk_noise"] = noise_term
    holds = (q["matches"] and k["matches"] and q["negative"] and levels["qkv"]["matches"] and levels["qk"]["matches"]
             and (noise_term is None or noise_term["matches"]))
    Ms = far_counts(params)
    lq = levels["qkv"]
    lq_txt = (f"{lq['estimate']:+.3g} [{lq['ci_low']:+.3g}, {lq['ci_high']:+.3g}]" if "estimate" in lq
              else "exact rows")
    widened = f", theory widened by its 95% radius ({fam.theory_kind})" if fam.mean_radius > 0 else ""
    return {
        "holds": bool(holds),
        "rows": rows,
        "fits": fits,
        "levels": levels,
        "headline": {
            "quantity": f"exponent β of E||F_QKV||²/(ρ_D²||b||²) ∝ M^β, M={Ms[0]}…{Ms[-1]} ({fam.name})",
            "estimate": q["exponent"], "ci_low": q["ci_low"], "ci_high": q["ci_high"],
            "n_samples": rows[0]["n_samples"] * len(Ms), "theory": q["theory_exponent"],
            "theory_kind": q["theory_kind"],
            "verdict": (f"QKV interference falls like M^{q['exponent']:.3f} [{q['ci_low']:.3f}, {q['ci_high']:.3f}] "
                        f"(the exact finite-M formula fitted the same way, equal weights: {q['theory_exponent']:.3f}; → −1 as "
                        f"M → ∞): matches {q['matches']}, below 0 {q['negative']}; its level, estimate/theory − 1 "
                        f"pooled over M: {lq_txt} vs 0: {lq['matches']}; QK-only M^{k['exponent']:.3f} "
                        f"[{k['ci_low']:.3f}, {k['ci_high']:.3f}] vs {k['theory_exponent']:.3f}: {k['matches']}, "
                        f"level {levels['qk']['matches']}" + (
                            "" if noise_term is None else
                            f"; its noise term σ²d/(M||b||²), (estimate − 1)/(exact − 1) − 1 pooled over M: "
                            f"{noise_term['estimate']:+.3g} [{noise_term['ci_low']:+.3g}, {noise_term['ci_high']:+.3g}]"
                            f" vs 0: {noise_term['matches']}") + f" (joint 95% over {m} tests{widened})."),
        },
    }


@sp.themed
def plot_scaling(result: dict, outdir: Path) -> list[Path]:
    fig, (ax,) = sp.figure(height=4.0)
    energy_panel(ax, result["rows"], ("qk", "qkv"))
    f = result["fits"]
    ax.set_title(f"C5: scaling with M: QKV exponent {f['qkv']['exponent']:.3f} "
                 f"[{f['qkv']['ci_low']:.3f}, {f['qkv']['ci_high']:.3f}], QK {f['qk']['exponent']:.3f}")
    p = result["params"]
    sp.caption(fig, caption_params(p, ("family", "d", "omega", "sigma", "p", "base", "D", "noise", "trials", "seed"))
            + "; equal weights; exponent: weighted LS of log r on log M")
    return [sp.save(fig, Path(outdir) / "value-scaling")]


# ---------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------
_THEORY = "simulations.value._common.qkv_interference_theory"
_PLUGIN = "stylized.engine.values._plugin"

# the exact finite-M QKV value, scaled at M ≥ 2 (M = 1: r(1) = 1 by orthogonality)
_R_EXACT = level_theory(
    "r_QKV(M)", "the exact finite-M QKV value (1/M²)Σ_{j,k} b̂ᵀE[M]^{|j−k|}b̂ (+σ²d/(M||b||²)) × factor at every M ≥ 2 "
    "(M = 1 is 1 by orthogonality; QK-only's 1 and the sampled energies left alone)", _THEORY, m_arg=2)


def _halving_times(factor: float):
    """:attr:`Theory.perturb` of the bound: ``½ r_QK`` (QKV must stay below it at the largest ``M``) times ``factor``."""
    return theory_scaled("simulations.value.incoherence.halving_bound", factor)()


def _qk_noise_times(factor: float):
    """:attr:`Theory.perturb` of QK-only's exact level ``1 + σ²d/(M||b||²)``: its noise term times ``factor`` (the 1,
    ``ρ_D b`` from weights summing to 1, is fixed by definition)."""
    import simulations.value._common as vc

    orig = vc.qk_interference_theory

    def times(d: int, b: np.ndarray, M: int, noise: float = 0.0) -> float:
        v = orig(d, b, M, noise)
        return v if factor == 1.0 else 1.0 + factor * (v - 1.0)
    return patched("simulations.value._common", "qk_interference_theory", times)()


register(limits(Check(
    name="value-incoherence", claim="C5",
    statement="Equal weights: E||F||²/(ρ_D²||b||²) equals 1 for QK-only and the exact finite-M value "
              "(1/M²)Σ_{j,k} b̂ᵀE[M]^{|j−k|}b̂ (+σ²d/(M||b||²)) for QKV at every M, and QKV's estimate/exact − 1 "
              "pooled over M is 0; softmax weights with uniform keys: QKV equals the plug-in ᾱᵀCᾱ of its drawn "
              "weights (row by row and pooled over M); and QKV is below half of QK at the largest M.",
    options=family_options("so2-uniform", 64) + (
        Option("M", [1, 4, 16, 64, 256, 1024], "far counts M (comma list)", IntList(1, 10**7, size=True)), OPT_D, OPT_W, OPT_LAM,
        OPT_KA, OPT_NOISE, Option("trials", 1000, "Monte Carlo routes per M", Int(2, 10**7, size=True))),
    run=run_incoherence, plot=plot_incoherence, module="simulations.value.incoherence",
    validate=_validate_incoherence,
    extra={"order": 0, "needs": ("orthogonal",)},
    mutants=(
        NO_VALUE_TRANSPORT,
        Mutant("chi-off-3pct", "the exact formula with χ × 1.03",
               patch=lambda: mock.patch(_THEORY, partial(chi_scaled_theory, factor=1.03))),
        Mutant("large-M-form-as-exact", "the large-M form (1+χ)/((1−χ)M) in place of the exact finite-M sum",
               patch=lambda: mock.patch(_THEORY, asymptote_theory)),
        REPEATED_STEPS,
        Mutant("theory-x0.97", "the exact finite-M value × 0.97 (its level 3% low)", patch=theory_scaled(_THEORY, 0.97)),
        Mutant("theory-x1.03", "the exact finite-M value × 1.03 (its level 3% high)", patch=theory_scaled(_THEORY, 1.03)),
        Mutant("mean-off-3pct-cayley", "cayley (estimated E[M]): the theory's E[M] × 0.97", patch=mean_scaled(0.97),
               params={"family": "cayley"}),
    ),
    reduced={"d": 16, "M": [1, 4, 16, 64, 256], "trials": 400},
    theories=(
        _R_EXACT,
        level_theory("ᾱᵀCᾱ", "softmax weights, uniform keys: the independent-weights plug-in ᾱᵀCᾱ of the drawn weights "
                     "× factor at every M ≥ 2 (M = 1: C_00 = 1; its noise term σ²dΣᾱ² left alone)", _PLUGIN, m_arg=3,
                     params={"weights": "softmax"}),
        Theory("½ r_QK", "the bound QKV < ½·r_QK at the largest M, ½·r_QK × factor (the measured energies left alone)",
               _halving_times, sides=(-1,)),
    ),
)))

register(limits(Check(
    name="value-scaling", claim="C5",
    statement="Equal weights: the fitted exponent β of E||F_QKV||²/(ρ_D²||b||²) ∝ M^β over the M grid equals the "
              "exponent of the exact finite-M formula fitted the same way (least squares on log M with fixed equal "
              "weights, never the measurement's; → −1 as M → ∞) and is below 0, and its "
              "level, estimate/exact − 1 pooled over the M grid, is 0; QK-only's exponent equals its exact "
              "exponent (0 without noise) and its level the exact 1 + σ²d/(M||b||²), its noise term pooled on "
              "its own too.",
    options=family_options("so2-uniform", 64) + (
        Option("M", [16, 32, 64, 128, 256, 512, 1024, 2048, 4096], "far counts M (comma list; ≥ 2 distinct to fit the exponent)",
               IntList(1, 10**7, size=True, min_len=2)), OPT_D,
        OPT_NOISE, Option("trials", 800, "Monte Carlo routes per M", Int(2, 10**7, size=True))),
    run=run_scaling, plot=plot_scaling, module="simulations.value.incoherence",
    validate=_validate_scaling,
    extra={"order": 1, "needs": ("orthogonal",)},
    mutants=(
        NO_VALUE_TRANSPORT,
        Mutant("sqrt-M-law", "the 1/M law replaced by 1/√M (S(χ, M)/M^{3/2})",
               patch=lambda: mock.patch(_THEORY, sqrt_law_theory)),
        Mutant("chi-off-3pct", "the exact formula with χ × 1.03",
               patch=lambda: mock.patch(_THEORY, partial(chi_scaled_theory, factor=1.03))),
        REPEATED_STEPS,
        Mutant("theory-x0.97", "the exact finite-M value × 0.97 (same exponent, level 3% low)",
               patch=theory_scaled(_THEORY, 0.97)),
        Mutant("theory-x1.03", "the exact finite-M value × 1.03 (same exponent, level 3% high)",
               patch=theory_scaled(_THEORY, 1.03)),
        Mutant("mean-off-3pct-cayley", "cayley (estimated E[M]): the theory's E[M] × 0.97", patch=mean_scaled(0.97),
               params={"family": "cayley"}),
    ),
    # M = 2, 4: where QK-only's noise term σ²d/(M||b||²) is a large part of its level (its power, issue 23)
    reduced={"d": 16, "M": [2, 4, 16, 64, 256, 1024], "trials": 200},
    theories=(
        _R_EXACT,
        Theory("1 + σ²d/(M||b||²)", "QK-only's exact level with value noise (σ = 0.5): its noise term σ²d/(M||b||²) × "
               "factor (the 1 from weights summing to 1 left alone; QKV's exact value too)", _qk_noise_times,
               params={"noise": 0.5}),
    ),
)))
