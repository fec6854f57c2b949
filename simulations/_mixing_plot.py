"""The figure of the ``mixing`` check (kept apart from the experiment so both stay one screen each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import caption, errorbar_rows, finite, new_figure, save_figure

__all__ = ["plot_mixing"]


def plot_mixing(result: dict, outdir: Path, name: str) -> list[Path]:
    """Correlation vs route length (theory dashed, measured windows marked); window by context length; ‖E[P_n]‖_op."""
    fig, (ax, ax2, ax3) = new_figure(ncols=3, width=5.6, height=4.8)
    rows = result["rows"]
    p = result["params"]
    colors = {}
    for fam in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == fam and r["n"] > 0]
        n = np.array([r["n"] for r in rs])
        est, lo, hi, th = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high", "theory"))
        line = ax.errorbar(n, np.abs(est), yerr=[np.abs(est) - np.clip(np.abs(est) - (est - lo), 1e-12, None),
                                                   hi - est], fmt="o", ms=4, capsize=2, label=f"{fam}")
        colors[fam] = line[0].get_color()
        ax.plot(n, np.clip(np.abs(th), 1e-12, None), "--", color=colors[fam], lw=1.2)
    ax.axhline(p["eps"], color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.5)
    ax.set_xlabel("route length n = i − j (steps)")
    ax.set_ylabel("|E[qᵀ P_n q]|  (correlation with the query)")
    ax.set_title(f"C1: correlation decay (grey: ε = {p['eps']:g})", fontsize=10)
    ax.legend(fontsize=8, ncol=2, title="dashed: qᵀE[M]ⁿq", title_fontsize=8)
    wins = result.get("windows", [])
    fams = list(dict.fromkeys(w["family"] for w in wins))
    Ls = sorted(set(w["L"] for w in wins))
    for i, fam in enumerate(fams):
        c = colors.get(fam, f"C{i}")
        for j, L in enumerate(Ls):
            w = next(x for x in wins if x["family"] == fam and x["L"] == L)
            x = i + (j - (len(Ls) - 1) / 2) * 0.25
            if w["window"] is None:
                ax2.annotate("none < L", (x, 1.3), ha="center", fontsize=7, color=c, rotation=90)
                continue
            ax2.errorbar([x], [w["window"]], yerr=[[w["window"] - w["window_low"]], [w["window_high"] - w["window"]]],
                         fmt="os^v"[j % 4], color=c, ms=5, capsize=2, mfc="none" if j else c,
                         label=f"L = {L:,}" if i == 0 or not ax2.get_legend_handles_labels()[1] else None)
            if w["exact_crossing"] is not None:
                ax2.hlines(w["exact_crossing"], x - 0.1, x + 0.1, color="k", lw=1.2)
    ax2.set_xticks(range(len(fams)), fams, rotation=30, ha="right", fontsize=8)
    ax2.set_yscale("log")
    ax2.set_ylim(0.7, None)
    ax2.set_ylabel("measured window: first n with correlation < ε")
    ax2.set_title("window vs context length (black: exact crossing n*)", fontsize=10)
    handles, labels = ax2.get_legend_handles_labels()
    if handles:
        ax2.legend(handles[: len(Ls)], [f"L = {L:,}" for L in Ls], fontsize=8)
    op = result.get("op_norm", [])
    for fam in dict.fromkeys(r["family"] for r in op):
        rs = [r for r in op if r["family"] == fam]
        n = np.array([r["n"] for r in rs])
        errorbar_rows(ax3, n, rs, fmt="o", ms=4, capsize=2, color=colors.get(fam), label=fam)
        ax3.plot(n, np.clip([r["bound"] for r in rs], 1e-4, None), "--", color=colors.get(fam), lw=1)
    if op:
        ax3.axhline(2 / np.sqrt(op[0]["n_samples"]), color="0.5", ls=":", lw=1, label="noise level 2/√T")
    ax3.set_yscale("log")
    ax3.set_ylim(1e-3, 1.5)
    ax3.set_xlabel("route length n (steps)")
    ax3.set_ylabel("‖E[P_n]‖_op from sampled dense products")
    ax3.set_title(f"operator norm at d = {p.get('d_op', '?')} (dashed: bound (1 − γ)ⁿ)", fontsize=10)
    ax3.legend(fontsize=7, ncol=2)
    caption(fig, f"d={p['d']}, ω={p['omega']}, σ={p['sigma']}, p={p['p']}, base={p['base']}; {p['trials']} chains per family "
                 f"(left), {p.get('window_steps', 0):,} steps per family and L (middle), {p.get('trials_op', 0)} dense "
                 f"products (right); seed {p['seed']}; bars: 95% CI per row (left), crossing interval joint over windows at "
                 f"1−0.05/3 (middle), joint at 1−0.05/3 (right)")
    return [save_figure(fig, outdir, name)]
