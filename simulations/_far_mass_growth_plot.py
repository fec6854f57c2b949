"""Figures of the ``far-mass-growth`` check: ρ_D(L) per control against its prediction, the near signal, the horizon."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ._common import caption, finite, new_figure, save_figure

NAME = "far-mass-growth"
_COLORS = {"none": "C0", "alibi": "C1", "log-scaling": "C2", "forget-gate": "C4", "contraction": "C3"}


def plot(result: dict, outdir: Path) -> list[Path]:
    """Three figures: ρ_D vs L per control with its prediction; near signal and required λ(L); the horizon."""
    p = result["params"]
    rows = [r for r in result["rows"] if r.get("quantity") != "L_1/2"]
    hrows = [r for r in result["rows"] if r.get("quantity") == "L_1/2"]
    controls = list(dict.fromkeys(r["control"] for r in rows))
    cap = (f"{p['family']}, d={p['d']}, λ={p['lam']}, D={p['D']}, near keys={p['near']}, far keys uniform; ALiBi m={p['m']:.4g}, "
           f"L_train={p['L_train']}, gate~N({p['gate']},{p['gate_sd']}²), β={p['beta']}; {p['trials']} queries, seed "
           f"{p['seed']}; L > {p['L_sim']:,} streamed from the exact far law; bars: 95% CI; lines: predicted E[ρ_D(L)]")
    paths = []
    fig, (ax,) = new_figure(width=8.5, height=5.2)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        L = np.array([r["L"] for r in rs])
        est, lo, hi = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high"))
        ax.errorbar(L, est, yerr=[est - lo, hi - est], fmt="o", ms=4, capsize=2, color=_COLORS[c], label=f"{c} (MC)")
        th = finite([r.get("theory") for r in rs])
        if np.isfinite(th).any():
            ax.plot(L, th, "-", color=_COLORS[c], lw=1.2, label=f"{c}: predicted ({rs[0]['theory_kind']})")
        if c in ("none", "alibi"):
            ax.plot(L, finite([r.get("bound") for r in rs]), ":", color=_COLORS[c], lw=1,
                    label="lower bound M/(M + K e^{2λ})" if c == "none" else "ALiBi upper bound S/(S+Z_min)")
    ax.axvline(p["L_sim"], color="0.5", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1.5)
    ax.set_xlabel("context length L (tokens; K = D near, M_L = L − D far)")
    ax.set_ylabel("far mass ρ_D (log scale)")
    ax.set_title("C4: far mass vs context length: measured and predicted, per control")
    ax.legend(fontsize=7, loc="lower left", ncol=2)
    caption(fig, cap)
    paths.append(save_figure(fig, outdir, NAME))
    fig, (a1, a2) = new_figure(ncols=2, width=6.2, height=4.6)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        a1.plot([r["L"] for r in rs], [1 - r["estimate"] for r in rs], "o-", ms=4, color=_COLORS[c], label=c)
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
    if hrows:
        fig, (ax,) = new_figure(width=6.4, height=5.0)
        th = np.array([h["theory"] for h in hrows])
        est = finite([h["estimate"] for h in hrows])
        ax.errorbar(th, est, yerr=[est - finite([h["ci_joint_low"] for h in hrows]), finite([h["ci_joint_high"] for h in hrows]) - est],
                    fmt="o", capsize=3, label="mean first crossing (joint interval)")
        for h in hrows:
            ax.annotate(f"λ={h['lam']:g}", (h["theory"], h["estimate"]), textcoords="offset points", xytext=(6, -10), fontsize=8)
        lim = [min(th.min(), est.min()) / 1.5, max(th.max(), est.max()) * 1.5]
        ax.plot(lim, lim, "k--", lw=1, label="measured = predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("predicted D + (E N + E X²/2μ)/μ  (Wald; tokens)")
        ax.set_ylabel("measured mean first L with ρ_D ≥ ½ (tokens)")
        ax.set_title("horizon where half the attention is far")
        ax.legend(fontsize=8)
        caption(fig, f"{p['family']}, d={p['d']}, D={p['D']}, near={p['near']}; {p['horizon_trials']} queries per λ, "
                     "far scores from the exact law; E N from the transport chain, μ = ₀F₁(; d/2; λ²/4)")
        paths.append(save_figure(fig, outdir, f"{NAME}-horizon"))
    return paths
