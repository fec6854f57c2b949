"""The figure of the ``mixing`` check (kept apart from the experiment so both stay one screen each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.harness import plotting as sp

__all__ = ["plot_mixing"]


def _correlation_panel(ax, rows: list[dict], eps: float) -> dict:
    """|E[qᵀP_n q]| per family with 95% intervals beside qᵀE[M]ⁿq; rows whose interval holds 0 go to the floor."""
    colors = {}
    unresolved = [r for r in rows if r["n"] > 0 and r["ci_low"] <= 0 <= r["ci_high"]]
    floor = max((max(-r["ci_low"], r["ci_high"]) for r in unresolved), default=None)
    for fam in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == fam and r["n"] > 0]
        n = np.array([r["n"] for r in rs], float)
        est, lo, hi, th = (sp.as_float([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high", "theory"))
        sign = np.sign(est)
        a_lo, a_hi = np.sort(np.stack([lo * sign, hi * sign]), axis=0)
        ok = ~np.array([r in unresolved for r in rs])
        colors[fam] = sp.theory_vs_measurement(ax, n[ok], np.abs(est[ok]), a_lo[ok], a_hi[ok], label=fam)
        ax.plot(n, np.clip(np.abs(th), 1e-12, None), "--", color=colors[fam], lw=1.0)
        if (~ok).any():
            ax.plot(n[~ok], np.maximum(np.abs(lo[~ok]), np.abs(hi[~ok])), "v", mfc="none", ms=4, color=colors[fam])
    ax.axhline(eps, color="0.2", lw=0.9, ls="-.")
    ax.text(1.05, eps * 1.15, rf"$\varepsilon = {eps:g}$", fontsize=7, color="0.2", va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.6)
    if floor is not None:
        sp.noise_floor(ax, floor, label="noise floor: 95% CI contains 0 (▽ = upper end)")
    kind = sp.reference_label([r.get("theory_kind", "closed form") for r in rows], "").strip()
    ax.plot([], [], "k--", lw=1.0, label=r"theory $q^\top \mathbb{E}[M]^n q$" + ("" if kind == "exact" else f" ({kind})"))
    ax.set_xlabel(r"route length $n = i - j$ (steps)")
    ax.set_ylabel(r"$|\mathbb{E}[q^\top P_n q]|$")
    ax.set_title("C1: correlation with the query decays with the route length")
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside upper center", ncol=4)
    return colors


def _window_panel(ax, wins: list[dict], colors: dict) -> None:
    fams = list(dict.fromkeys(w["family"] for w in wins))
    Ls = sorted(set(w["L"] for w in wins))
    for j, L in enumerate(Ls):
        ax.plot([], [], "os^v"[j % 4], color="0.3", mfc="0.3" if j == 0 else "none", label=f"measured, L = {L:,}")
    kind = sp.reference_label([w.get("theory_kind", "closed form") for w in wins], r"crossing $n^*$")
    ax.plot([], [], "_", color="k", ms=10, mew=1.5, label=f"theory: {kind}")
    for i, fam in enumerate(fams):
        c = colors.get(fam, f"C{i}")
        if all(x["window"] is None for x in wins if x["family"] == fam):
            ax.text(i, 1.0, "no crossing\nbefore L", ha="center", va="bottom", fontsize=6, color=c, rotation=90)
        for j, L in enumerate(Ls):
            w = next(x for x in wins if x["family"] == fam and x["L"] == L)
            x = i + (j - (len(Ls) - 1) / 2) * 0.28
            if w["window"] is None:
                continue
            lo = w["window_low"] if w["window_low"] is not None else w["window"]
            hi = w["window_high"] if w["window_high"] is not None else w["nmax"]  # unresolved: up to the last route
            ax.errorbar([x], [w["window"]], yerr=[[w["window"] - lo], [max(0, hi - w["window"])]],
                        fmt="os^v"[j % 4], color=c, mfc=c if j == 0 else "none")
            if w["window_high"] is None:  # the upper end lies beyond nmax
                ax.plot([x], [hi], "^", color=c, ms=4)
            if w["exact_crossing"] is not None:
                ax.hlines(w["exact_crossing"], x - 0.12, x + 0.12, color="k", lw=1.5, zorder=4)
            if w.get("crossing_low") is not None and w.get("crossing_high") != w.get("crossing_low"):
                # an estimated E[M]: the theory's own interval of n*
                top = w["crossing_high"] if w["crossing_high"] is not None else w["nmax"]
                ax.vlines(x + 0.1, w["crossing_low"], top, color="k", lw=0.8, zorder=4)
    ax.set_xticks(range(len(fams)), fams, rotation=35, ha="right")
    ax.set_yscale("log")
    top = max((w["window_high"] or 1 for w in wins), default=10)
    ax.set_ylim(0.8, top * 30)
    ax.set_ylabel(r"window $W(\varepsilon)$: first $n$ with correlation $< \varepsilon$")
    ax.set_title("window vs context length L")
    ax.legend(loc="upper left")


def _opnorm_panel(ax, op: list[dict], colors: dict, d_op) -> None:
    noise = 2 / np.sqrt(op[0]["n_samples"]) if op else None
    for fam in dict.fromkeys(r["family"] for r in op):
        rs = [r for r in op if r["family"] == fam]
        n = [r["n"] for r in rs]
        sp.theory_vs_measurement(ax, n, *([r[k] for r in rs] for k in ("estimate", "ci_low", "ci_high")),
                                 theory=np.clip([r["bound"] for r in rs], 1e-4, None), color=colors.get(fam), floor=noise)
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.6)
    if noise is not None:
        sp.noise_floor(ax, noise, label=r"noise level $2/\sqrt{T}$ (▽: upper end of CI)")
        ax.legend(loc="lower left")
    ax.set_xlabel(r"route length $n$ (steps)")
    ax.set_ylabel(r"$\|\mathbb{E}[P_n]\|_{op}$ (dense products)")
    ax.set_title(rf"operator norm, $d = {d_op}$; dashed: $(1-\gamma)^n$")


@sp.themed
def plot_mixing(result: dict, outdir: Path, name: str) -> list[Path]:
    """Correlation vs route length (theory dashed, noise floor shaded); window by context length; ‖E[P_n]‖_op."""
    p = result["params"]
    fig, ax = sp.mosaic([["corr", "corr"], ["win", "op"]], height=6.6, height_ratios=[1.1, 1.0])
    colors = _correlation_panel(ax["corr"], result["rows"], p["eps"])
    _window_panel(ax["win"], result.get("windows", []), colors)
    _opnorm_panel(ax["op"], result.get("op_norm", []), colors, p.get("d_op", "?"))
    sp.caption(fig, f"d={p['d']}, ω={p['omega']}, σ={p['sigma']}, p={p['p']}, base={p['base']}; {p['trials']} chains per "
                    f"family (top), {p.get('window_steps', 0):,} steps per family and L (bottom left), "
                    f"{p.get('trials_op', 0)} dense products (bottom right); seed {p['seed']}. Bars: 95% CI per row "
                    "(top), crossing interval joint over windows at 1−0.05/3 (bottom left), joint at 1−0.05/3 "
                    "(bottom right).")
    return [sp.save(fig, Path(outdir) / name)]
