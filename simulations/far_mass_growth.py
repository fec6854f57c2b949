"""C4 — far mass grows with context length under rotation only; what each far-mass control does.

Stylized model (:class:`stylized.farmass.GrowthModel`): unit query ``q`` (equal energy) at ``i``;
near keys aligned with ``q`` (``--near all``: every near key equals ``q``; ``target``: only the key
at route length 0); far keys uniform on ``S^{d−1}``; logits ``λ qᵀ P_{j→i} k_j`` plus the control:

* ``none``        rotation only (``|logits| ≤ λ``): ``ρ_D`` must stay above ``M/(M + K e^{2λ})`` and → 1;
* ``alibi``       ``− m n``: ``ρ_D ≤ S/(S + Z_min)`` for every ``L`` (``S`` the geometric far sum);
* ``log-scaling`` logits × ``ln L / ln L_train``: the lower bound with ``λ κ(L)`` applies;
* ``forget-gate`` ``+ Σ_route log σ(g_t)``, ``g_t ~ N(gate, gate_sd²)`` per token (FoX-style); no bound;
* ``contraction`` PaTH-style steps ``I − β w wᵀ`` (not orthogonal; logits still ``≤ λ`` in size).

Routes up to ``--L-sim`` are simulated literally (steps, keys, transport); longer contexts are
streamed from the exact far law: a uniform far key makes ``qᵀ P k`` one coordinate of a uniform
point for every orthogonal ``P`` (and ``||P_nᵀq||`` times one for the contraction), so those rows
are exact in law, not an approximation.  Each ``L`` uses a prefix of the same draws.

Horizon ``L_{1/2}`` (``ρ_D = ½`` without control): measured per query as the first ``L`` with
``Σ_far e^s ≥ Z_N``, predicted as ``D + Z̄_N/μ``, ``μ = E[e^{λξ}]`` in closed form.

``--backend cupy`` runs all queries of a chunk at once through the array namespace
(:func:`stylized.farmass.growth_trials`, :func:`stylized.farmass.horizon_trials`): near window
``n < D`` as above, every far score (also below ``L_sim``) drawn on the GPU from the exact far law.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from stylized.bounds import far_mass_lower_bound, lambda_required
from stylized.estimators import mean_ci
from stylized.farmass import (
    CONTROLS,
    GrowthModel,
    alibi_far_mass_bound,
    growth_trials,
    haar_mgf,
    horizon_prediction,
    horizon_trials,
)
from stylized.montecarlo import check_positive_int, chunked_generators, progress
from stylized.registry import Check, Option, float_list, headline, int_list, register, str_list

from ._common import caption, family_from_params, family_options, finite, new_figure, save_figure

NAME = "far-mass-growth"
_COLORS = {"none": "C0", "alibi": "C1", "log-scaling": "C2", "forget-gate": "C4", "contraction": "C3"}


def _model(params: dict) -> tuple[GrowthModel, np.ndarray, list[str]]:
    fam = family_from_params(params)
    lam = params["lam"]
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (λ) must be a finite number ≥ 0, got {lam!r}")
    D = check_positive_int("D", params["D"], 1)
    Ls = np.asarray(sorted(set(params["L"])), dtype=np.int64)
    if Ls.size == 0 or Ls[0] <= D or Ls[-1] > 2**24:
        raise ValueError(f"L must be context lengths in (D, 2^24] = ({D}, 16777216], got {params['L']!r}")
    controls = list(dict.fromkeys(params["control"]))
    bad = [c for c in controls if c not in CONTROLS]
    if bad or not controls:
        raise ValueError(f"control must be a list of {', '.join(CONTROLS)}; got {params['control']!r}")
    if params["near"] not in ("all", "target"):
        raise ValueError(f"near must be 'all' or 'target', got {params['near']!r}")
    if not (params["m"] > 0 and np.isfinite(params["m"])):
        raise ValueError(f"m (ALiBi slope) must be a finite number > 0, got {params['m']!r}")
    if not (0 < params["beta"] < 2):
        raise ValueError(f"beta (contraction) must lie in (0, 2), got {params['beta']!r}")
    check_positive_int("L_train", params["L_train"], 2)
    check_positive_int("L_sim", params["L_sim"], D + 1)
    if not (np.isfinite(params["gate"]) and params["gate_sd"] >= 0):
        raise ValueError("gate must be finite and gate_sd ≥ 0")
    model = GrowthModel(fam, float(lam), D, params["near"], float(params["m"]), int(params["L_train"]),
                        float(params["gate"]), float(params["gate_sd"]), float(params["beta"]))
    return model, Ls, controls


def _forget_mean(gate: float, sd: float) -> float:
    """``φ = E[σ(g)]``, ``g ~ N(gate, sd²)`` (Gauss–Hermite, 80 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w / (1.0 + np.exp(-(gate + sd * x)))) / math.sqrt(2 * math.pi))


def _predicted(c: str, model: GrowthModel, L: int, Z: float, d: int) -> float | None:
    """Mean-field ``F/(F + Z̄_N)`` with ``F`` the expected far weight sum (``None`` if not available)."""
    D, lam = model.D, model.lam
    mu = haar_mgf(lam, d)
    if c == "none":
        F = (L - D) * mu
    elif c == "alibi":
        F = mu * math.exp(-model.m * D) * -math.expm1(-model.m * (L - D)) / -math.expm1(-model.m)
    elif c == "forget-gate":
        phi = _forget_mean(model.gate, model.gate_sd)
        F = mu * phi**D * (1 - phi ** (L - D)) / (1 - phi)
    elif c == "log-scaling":
        F = (L - D) * haar_mgf(lam * math.log(L) / math.log(model.L_train), d)
    else:  # contraction: far logits shrink to 0, weights → 1 (uniform-weight limit)
        F = float(L - D)
    return F / (F + Z)


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    model, Ls, controls = _model(params)
    trials = check_positive_int("trials", params["trials"], 2)
    d, D, lam = model.family.d, model.D, model.lam
    rho = {c: [] for c in controls}
    zn = {c: [] for c in controls}
    cross = []
    chunk = 256 if backend == "cupy" else 4  # queries per generator (cupy: one device batch)
    for size, rng in _bar(chunked_generators(trials, seed, chunk=chunk), -(-trials // chunk), progress, "growth"):
        for out in growth_trials(model, Ls, int(params["L_sim"]), size, rng, backend, tuple(controls)):
            for c in controls:
                rho[c].append(out["rho"][c])
                zn[c].append(np.exp(out["lse_near"][c]))
            cross.append(out["cross"])
    rows, checks = [], {}
    for c in controls:
        R = np.asarray(rho[c])  # (trials, len(Ls))
        Z = np.asarray(zn[c]).mean(axis=0)
        viol = []
        for k, L in enumerate(Ls):
            M = int(L - D)
            if c in ("none", "contraction"):
                theory, kind = far_mass_lower_bound(D, M, lam), "lower bound M/(M+Ke^{2λ})"
            elif c == "log-scaling":
                theory, kind = far_mass_lower_bound(D, M, lam * math.log(L) / math.log(model.L_train)), "lower bound, λκ(L)"
            elif c == "alibi":
                theory, kind = alibi_far_mass_bound(lam, model.m, D), "upper bound S/(S+Z_min), any L"
            else:
                theory, kind = None, "none (logits unbounded below)"
            z = float(Z[k]) if np.ndim(Z) else float(Z)
            est = mean_ci(R[:, k])
            if theory is not None:
                viol.append(int(np.sum(R[:, k] > theory * (1 + 1e-9))) if c == "alibi"
                            else int(np.sum(R[:, k] < theory * (1 - 1e-9))))
            rows.append({"control": c, "L": int(L), **est.as_row(), "theory": theory, "theory_kind": kind,
                         "trial_min": float(R[:, k].min()), "trial_max": float(R[:, k].max()),
                         "predicted": _predicted(c, model, int(L), z, d), "Z_N": z,
                         "streamed": bool(backend == "cupy" or L > params["L_sim"]), "near_signal": 1.0 - est.estimate,
                         **{f"lambda_required_eps{e:g}": lambda_required(D, M, e) for e in params["eps"]}})
        checks[c] = sum(viol) if viol else None
    # horizon L_1/2: measured (per query) vs D + Z̄_N/μ, for each λ in horizon_lam
    hrows = []
    h_trials = check_positive_int("horizon_trials", params["horizon_trials"], 2)
    for j, hl in enumerate(params["horizon_lam"]):
        hm = GrowthModel(model.family, float(hl), D, model.near)
        zs, ls = [], []
        for size, rng in chunked_generators(h_trials, seed + 7919 * (j + 1)):
            for z, ell in horizon_trials(hm, size, rng, backend):
                zs.append(z)
                ls.append(ell)
        mu = haar_mgf(float(hl), d)
        zci = mean_ci(zs)
        est = mean_ci(ls)
        hrows.append({"control": "none", "quantity": "L_1/2", "lam": float(hl), **est.as_row(),
                      "theory": horizon_prediction(zci.estimate, mu, D),
                      "theory_low": horizon_prediction(zci.ci_low, mu, D),
                      "theory_high": horizon_prediction(zci.ci_high, mu, D), "mu": mu, "Z_N": zci.estimate})
    cr = np.asarray(cross, dtype=float)
    cross_est = mean_ci(cr[np.isfinite(cr)]) if np.isfinite(cr).sum() >= 2 else None

    by = {(r["control"], r["L"]): r for r in rows}
    Lmax = int(Ls[-1])
    top = by.get(("none", Lmax))
    none_ok = True
    if "none" in controls:
        ests = [by[("none", int(L))]["estimate"] for L in Ls]
        none_ok = checks["none"] == 0 and top["ci_low"] > 0.5 and all(np.diff(ests) >= 0)
    alibi_ok = checks.get("alibi", 0) == 0
    other_ok = all(checks.get(c, 0) in (0, None) for c in ("contraction", "log-scaling"))
    herr = [abs(h["estimate"] / h["theory"] - 1) for h in hrows]
    parts = [f"{c}: ρ_D {by[(c, int(Ls[0]))]['estimate']:.3g} at L={Ls[0]:,} → {by[(c, Lmax)]['estimate']:.3g} "
             f"[{by[(c, Lmax)]['ci_low']:.3g}, {by[(c, Lmax)]['ci_high']:.3g}] at L={Lmax:,}" for c in controls]
    verdict = (f"{model.family.name}, d={d}, λ={lam:g}, D={D}, near={model.near}, {trials} queries. " + "; ".join(parts)
               + f". Trials below the lower bound: none {checks.get('none')}, contraction {checks.get('contraction')}, "
               f"log-scaling {checks.get('log-scaling')}; ALiBi trials above S/(S+Z_min)="
               f"{alibi_far_mass_bound(lam, model.m, D):.3g}: {checks.get('alibi')}. ")
    if backend == "cupy":
        verdict += "(cupy: far scores from the exact law at every L, not only past L_sim.) "
    if hrows:
        verdict += ("Horizon L_1/2 measured vs D+Z_N/μ: " + ", ".join(
            f"λ={h['lam']:g}: {h['estimate']:.4g} vs {h['theory']:.4g}" for h in hrows)
            + f" (max rel. diff {max(herr):.2g}).")
    return {
        "holds": bool(none_ok and alibi_ok and other_ok),
        "rows": rows + hrows,
        "violations": checks,
        "horizon_literal": cross_est.as_row() if cross_est else None,
        "headline": headline(f"ρ_D, no control, L={Lmax:,}", top or {}, verdict, n_samples=trials),
    }


def _bar(it, total, enabled, desc):
    return progress(it, total=total, desc=f"{NAME} {desc}", enabled=enabled)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Three figures: ρ_D vs L per control; near signal and required λ(L); predicted vs measured horizon."""
    p = result["params"]
    rows = [r for r in result["rows"] if r.get("quantity") != "L_1/2"]
    hrows = [r for r in result["rows"] if r.get("quantity") == "L_1/2"]
    controls = list(dict.fromkeys(r["control"] for r in rows))
    cap = (f"{p['family']}, d={p['d']}, λ={p['lam']}, D={p['D']}, near keys={p['near']}, far keys uniform; ALiBi m={p['m']:.4g}, "
           f"L_train={p['L_train']}, gate~N({p['gate']},{p['gate_sd']}²), β={p['beta']}; {p['trials']} queries, seed "
           f"{p['seed']}; L > {p['L_sim']:,} streamed from the exact far law; bars: 95% CI")
    paths = []
    # 1. ρ_D vs L
    fig, (ax,) = new_figure(width=8.5, height=5.2)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        L = np.array([r["L"] for r in rs])
        est, lo, hi = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high"))
        ax.errorbar(L, est, yerr=[est - lo, hi - est], fmt="o-", ms=4, capsize=2, color=_COLORS[c], label=f"{c} (MC)")
        th = finite([r["theory"] for r in rs])
        if c == "alibi":
            ax.plot(L, th, ":", color=_COLORS[c], lw=1.5, label="alibi: upper bound S/(S+Z_min)")
        elif c == "log-scaling":
            ax.plot(L, th, ":", color=_COLORS[c], lw=1.5, label="log-scaling: lower bound at λκ(L)")
        elif c == "none":
            ax.plot(L, th, "k--", lw=1.5, label="lower bound M/(M + K e^{2λ})")
    ax.axvline(p["L_sim"], color="0.5", lw=0.8)
    ax.text(p["L_sim"] * 1.1, 2e-6, "streamed (exact law) →", fontsize=8, color="0.4")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1.5)
    ax.set_xlabel("context length L (tokens; K = D near, M_L = L − D far)")
    ax.set_ylabel("far mass ρ_D (log scale)")
    ax.set_title("C4: far mass vs context length, per far-mass control")
    ax.legend(fontsize=8, loc="lower left", ncol=2)
    caption(fig, cap)
    paths.append(save_figure(fig, outdir, NAME))
    # 2. near-signal coefficient and required λ(L)
    fig, (a1, a2) = new_figure(ncols=2, width=6.2, height=4.6)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        L = np.array([r["L"] for r in rs])
        a1.plot(L, finite([r["near_signal"] for r in rs]), "o-", ms=4, color=_COLORS[c], label=c)
    a1.set_xscale("log", base=2)
    a1.set_ylim(0, 1.05)
    a1.set_xlabel("context length L (tokens)")
    a1.set_ylabel("near-signal coefficient 1 − ρ_D")
    a1.set_title("what is left for the near signal")
    a1.legend(fontsize=8)
    rs = [r for r in rows if r["control"] == controls[0]]
    L = np.array([r["L"] for r in rs])
    for k, e in enumerate(p["eps"]):
        a2.plot(L, [r[f"lambda_required_eps{e:g}"] for r in rs], "-", color=f"C{k + 5}", label=f"λ needed for ρ_D ≤ {e:g} (bound)")
    a2.axhline(p["lam"], color="k", ls="--", lw=1, label=f"model λ = {p['lam']}")
    a2.plot(L, p["lam"] * np.log(L) / math.log(p["L_train"]), ":", color=_COLORS["log-scaling"], lw=2,
            label=f"log-scaling λ·ln L/ln {p['L_train']}")
    a2.set_xscale("log", base=2)
    a2.set_xlabel("context length L (tokens)")
    a2.set_ylabel("logit scale λ")
    a2.set_title("λ ≥ ½ ln(M_L(1−ε)/(Kε)) grows like ½ ln L")
    a2.legend(fontsize=8)
    caption(fig, cap)
    paths.append(save_figure(fig, outdir, f"{NAME}-near-signal"))
    # 3. horizon
    if hrows:
        fig, (ax,) = new_figure(width=6.4, height=5.0)
        th = np.array([h["theory"] for h in hrows])
        est = np.array([h["estimate"] for h in hrows])
        ax.errorbar(th, est, yerr=[est - finite([h["ci_low"] for h in hrows]), finite([h["ci_high"] for h in hrows]) - est],
                    xerr=[th - finite([h["theory_low"] for h in hrows]), finite([h["theory_high"] for h in hrows]) - th],
                    fmt="o", capsize=3, label="queries (95% CI)")
        for h in hrows:
            ax.annotate(f"λ={h['lam']:g}", (h["theory"], h["estimate"]), textcoords="offset points", xytext=(6, -10), fontsize=8)
        lim = [min(th.min(), est.min()) / 1.5, max(th.max(), est.max()) * 1.5]
        ax.plot(lim, lim, "k--", lw=1, label="measured = predicted")
        lit = result.get("horizon_literal")
        if lit:
            ax.axhline(lit["estimate"], color="C3", ls=":", lw=1, label=f"literal simulation, λ={p['lam']}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("predicted L_1/2 = D + Z̄_N/μ  (tokens)")
        ax.set_ylabel("measured L_1/2: first L with ρ_D ≥ ½ (tokens)")
        ax.set_title("horizon where half the attention is far")
        ax.legend(fontsize=8)
        caption(fig, f"{p['family']}, d={p['d']}, D={p['D']}, near={p['near']}; {p['horizon_trials']} queries per λ, "
                     f"far scores from the exact law; μ = E[e^(λξ)] closed form")
        paths.append(save_figure(fig, outdir, f"{NAME}-horizon"))
    return paths


CHECK = register(Check(
    name=NAME,
    claim="C4",
    statement="Rotation only: ρ_D(L) → 1 above the lower bound; ALiBi keeps ρ_D bounded; horizon L_1/2 ≈ D + Z_N/μ.",
    options=family_options("householder", 64) + (
        Option("lam", 10.0, "logit scale λ ≥ 0", float),
        Option("D", 16, "near window D (K = D near sources)", int),
        Option("near", "all", "near keys aligned with q: 'all' (every near key = q) or 'target' (route length 0 only)", str),
        Option("L", [2**k for k in range(9, 21)], "context lengths L (comma list, > D)", int_list),
        Option("L_sim", 65536, "longest context simulated literally; longer ones streamed from the exact far law", int),
        Option("control", list(CONTROLS), f"controls (comma list of {', '.join(CONTROLS)})", str_list),
        Option("m", 1 / 16, "ALiBi slope m > 0", float),
        Option("L_train", 512, "log-scaling training length (logits × ln L / ln L_train)", int),
        Option("gate", 4.0, "forget-gate logit mean (f = σ(g), g ~ N(gate, gate_sd²))", float),
        Option("gate_sd", 1.0, "forget-gate logit standard deviation ≥ 0", float),
        Option("beta", 0.5, "contraction I − β w wᵀ, β ∈ (0, 2)", float),
        Option("trials", 20, "queries (independent contexts)", int),
        Option("horizon_lam", [4.0, 6.0, 8.0, 10.0, 12.0], "λ values of the horizon figure (comma list)", float_list),
        Option("horizon_trials", 64, "queries per λ for the horizon", int),
        Option("eps", [0.5, 0.1, 0.01], "targets ε of the required-λ curves (comma list)", float_list),
    ),
    run=run,
    plot=plot,
    module="simulations.far_mass_growth",
    extra={"order": 1},
))
