"""Figures of the ``far-mass-growth`` check: ρ_D(L) per control against its prediction, the near signal, the horizon."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from stylized.harness import plotting as sp

NAME = "far-mass-growth"
_COLORS = {"none": "C0", "alibi": "C1", "log-scaling": "C2", "forget-gate": "C4", "contraction": "C3"}


def _rho_figure(out: Path, rows: list[dict], controls: list[str], p: dict, cap: str) -> Path:
    """ρ_D vs L per control (markers: measured, solid: predicted, dotted: bound), the streamed range shaded."""
    fig, (ax,) = sp.figure(height=4.6)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        th = sp.as_float([r.get("theory") for r in rs])
        kind = f"predicted ({rs[0]['theory_kind']})" if np.isfinite(th).any() else "no prediction"
        sp.theory_vs_measurement(ax, [r["L"] for r in rs], *([r[k] for r in rs] for k in ("estimate", "ci_low", "ci_high")),
                                 theory=th, theory_style="-", color=_COLORS[c], label=f"{c}: {kind}")
        if c in ("none", "alibi"):
            ax.plot([r["L"] for r in rs], sp.as_float([r.get("bound") for r in rs]), ":", color=_COLORS[c], lw=1.1)
    ax.axvspan(p["L_sim"], max(r["L"] for r in rows) * 1.5, color="0.94", lw=0, zorder=0,
               label=f"L > {p['L_sim']:,}: far part streamed from the exact law")
    ax.plot([], [], "k:", lw=1.1, label=r"bounds: none $\geq M/(M + K e^{2\lambda})$, ALiBi $\leq S/(S + Z_{min})$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(min(r["L"] for r in rows) / 1.5, max(r["L"] for r in rows) * 1.5)
    ax.set_ylim(1e-6, 1.5)
    ax.set_xlabel(r"context length $L$ (tokens; $K = D$ near, $M_L = L - D$ far)")
    ax.set_ylabel(r"far mass $\rho_D$")
    ax.set_title("C4: far mass vs context length, measured (95% CI) and predicted, per control")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside upper center", ncol=2)
    sp.caption(fig, cap)
    return sp.save(fig, out / NAME)


def _near_signal_figure(out: Path, rows: list[dict], controls: list[str], p: dict, cap: str) -> Path:
    fig, (a1, a2) = sp.figure(1, 2, height=3.4)
    for c in controls:
        rs = [r for r in rows if r["control"] == c]
        sp.theory_vs_measurement(a1, [r["L"] for r in rs], *([1 - r[k] for r in rs] for k in ("estimate", "ci_high", "ci_low")),
                                 theory=[None if r.get("theory") is None else 1 - r["theory"] for r in rs],
                                 theory_style="-", color=_COLORS[c], label=c)
    a1.set_xscale("log", base=2)
    a1.set_ylim(0, 1.05)
    a1.set_xlabel(r"context length $L$ (tokens)")
    a1.set_ylabel(r"near-signal coefficient $1 - \rho_D$")
    a1.set_title("what is left for the near signal")
    a1.legend(loc="lower left")
    rs = [r for r in rows if r["control"] == controls[0]]
    L = np.array([r["L"] for r in rs], float)
    for k, e in enumerate(p["eps"]):
        a2.plot(L, [r[f"lambda_required_eps{e:g}"] for r in rs], "-", color=f"C{k + 5}",
                label=rf"needed for $\rho_D \leq {e:g}$")
    a2.axhline(p["lam"], color="k", ls="--", lw=1, label=rf"model $\lambda = {p['lam']:g}$")
    a2.plot(L, p["lam"] * np.log(L) / math.log(p["L_train"]), ":", color=_COLORS["log-scaling"], lw=2,
            label=rf"log-scaling $\lambda \ln L / \ln {p['L_train']}$")
    a2.set_xscale("log", base=2)
    a2.set_xlabel(r"context length $L$ (tokens)")
    a2.set_ylabel(r"logit scale $\lambda$")
    a2.set_title(r"$\lambda \geq \frac{1}{2}\ln(M_L(1-\varepsilon)/(K\varepsilon))$ grows like $\frac{1}{2}\ln L$")
    a2.legend(loc="upper left")
    sp.caption(fig, cap)
    return sp.save(fig, out / f"{NAME}-near-signal")


def _horizon_figure(out: Path, hrows: list[dict], p: dict) -> Path:
    fig, (ax,) = sp.figure(width=5.0, height=4.2)
    th = np.array([h["theory"] for h in hrows])
    est = sp.as_float([h["estimate"] for h in hrows])
    sp.theory_vs_measurement(ax, th, est, [h["ci_joint_low"] for h in hrows], [h["ci_joint_high"] for h in hrows],
                             label="mean first crossing (joint 95% interval)")
    for h in hrows:
        ax.annotate(rf"$\lambda={h['lam']:g}$", (h["theory"], h["estimate"]), textcoords="offset points",
                    xytext=(7, -9), fontsize=7)
    lim = [min(th.min(), est.min()) / 1.5, max(th.max(), est.max()) * 1.5]
    ax.plot(lim, lim, "k--", lw=1, label="measured = predicted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"predicted $D + (\mathbb{E}N + \mathbb{E}X^2/2\mu)/\mu$ (Wald; tokens)")
    ax.set_ylabel(r"measured mean first $L$ with $\rho_D \geq \frac{1}{2}$")
    ax.set_title("horizon where half the attention is far")
    ax.legend(loc="upper left")
    sp.caption(fig, f"{p['family']}, d={p['d']}, D={p['D']}, near={p['near']}; {p['horizon_trials']} queries per λ, "
                    "far scores from the exact law; E N from the transport chain, μ = ₀F₁(; d/2; λ²/4)")
    return sp.save(fig, out / f"{NAME}-horizon")


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Three figures: ρ_D vs L per control with its prediction; near signal and required λ(L); the horizon."""
    p = result["params"]
    rows = [r for r in result["rows"] if "L" in r]
    hrows = [r for r in result["rows"] if r.get("quantity") == "L_1/2"]
    controls = list(dict.fromkeys(r["control"] for r in rows))
    cap = (f"{p['family']}, d={p['d']}, λ={p['lam']}, D={p['D']}, near keys={p['near']}, far keys uniform; ALiBi m={p['m']:.4g}, "
           f"L_train={p['L_train']}, gate~N({p['gate']},{p['gate_sd']}²), β={p['beta']}; {p['trials']} queries, seed "
           f"{p['seed']}; L > {p['L_sim']:,} streamed from the exact far law; bars: 95% CI; lines: predicted E[ρ_D(L)]")
    out = Path(outdir)
    paths = [_rho_figure(out, rows, controls, p, cap), _near_signal_figure(out, rows, controls, p, cap)]
    if hrows:
        paths.append(_horizon_figure(out, hrows, p))
    return paths
