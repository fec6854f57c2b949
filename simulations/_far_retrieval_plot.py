"""Figure of the far-retrieval check: passkey score, rank-1 rate and weight against the route length ``n``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import caption, save_figure

__all__ = ["plot"]


def errorbar_rows(ax, x, rows, floor=None, **kw):
    """Estimates with their 95% intervals; on a log axis everything below ``floor`` is drawn at the floor."""
    est, lo, hi = (np.array([r[k] for r in rows], float) for k in ("estimate", "ci_low", "ci_high"))
    if floor is not None:
        est, lo, hi = np.maximum(est, floor), np.maximum(lo, floor), np.maximum(hi, floor)
    return ax.errorbar(x, est, yerr=[np.maximum(est - lo, 0), np.maximum(hi - est, 0)], **kw)


CONTROL_COLORS = {"none": "0.2", "alibi": "C3", "forget-gate": "C4", "log-scaling": "C5"}


def _panel(ax, rows, key, floor=None, colors=None):
    for i, g in enumerate(dict.fromkeys(r[key] for r in rows)):
        rs = [r for r in rows if r[key] == g]
        col = (colors or {}).get(g, f"C{i}")
        n = np.array([r["n"] for r in rs], float)
        errorbar_rows(ax, n, rs, floor=floor, fmt="o", ms=3.5, capsize=2, color=col, label=str(g))
        th = np.array([r["theory"] for r in rs], float)
        ax.plot(n, th if floor is None else np.maximum(th, floor), "-", color=col, lw=1)
    ax.set_xscale("log", base=2)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Three stacked panels (one column, 6.8 in wide): mean passkey score with the non-mixing floor, the rank-1
    rate with chance, and the passkey weight per far-mass control for the first family."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p, rows = result["params"], result["rows"]
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(6.8, 9.0), sharex=True)
    sc = [r for r in rows if r["kind"] == "score"]
    _panel(a1, sc, "family")
    for i, f in enumerate(dict.fromkeys(r["family"] for r in sc)):
        rs = [r for r in sc if r["family"] == f]
        if any(r["floor"] > 0 for r in rs):
            a1.plot([r["n"] for r in rs], [r["floor"] for r in rs], ":", color=f"C{i}", lw=1.2,
                    label=f"{f}: non-mixing planes")
    a1.set_ylabel(r"$\lambda\, q^\top P_n q$")
    a1.set_title(r"passkey score (lines: $\lambda\, q^\top E[M]^n q$)", fontsize=10)
    a1.legend(fontsize=7)
    rk = [r for r in rows if r["kind"] == "rank1" and r["control"] is None]
    floor = min(0.2 / p["trials"], rk[0]["chance"] / 3)
    _panel(a2, rk, "family", floor=floor)
    a2.axhline(rk[0]["chance"], color="0.3", ls="--", lw=1, label=r"chance $1/(M+1)$")
    a2.set_yscale("log")
    a2.set_ylabel(r"$P(\mathrm{rank}\ 1)$")
    a2.set_title(rf"passkey outranks all $M = {p['M']:,}$ random keys (lines: $E[F_H(s_n)^M]$)", fontsize=10)
    f0 = rows[0]["family"]
    top = [r for r in rows if r["kind"] == "rank1" and r["control"] is not None and r["family"] == f0]
    for i, c in enumerate(dict.fromkeys(r["control"] for r in top)):
        rs = [r for r in top if r["control"] == c]
        col = CONTROL_COLORS.get(c, f"C{i + 6}")
        a2.plot([r["n"] for r in rs], [max(r["theory"], floor) for r in rs], "--", color=col, lw=1,
                label=f"{f0}: top logit under {c}")
        errorbar_rows(a2, [r["n"] for r in rs], rs, floor=floor, fmt="s", ms=3, capsize=2, color=col)
    a2.legend(fontsize=6.5, loc="lower left", framealpha=0.6)
    wt = [r for r in rows if r["kind"] == "weight" and r["family"] == f0]
    _panel(a3, wt, "control", floor=1e-12, colors=CONTROL_COLORS)
    a3.axhline(wt[0]["chance"], color="0.3", ls="--", lw=1, label=r"$1/(M+1)$")
    a3.set_yscale("log")
    a3.set_ylim(1e-12, 1.5)
    a3.set_xlabel(r"route length $n$ of the passkey")
    a3.set_ylabel(r"$E[\alpha_n]$")
    a3.set_title(rf"passkey weight, {f0}, per control (lines: closed form)", fontsize=10)
    a3.legend(fontsize=7)
    caption(fig, f"d={p['d']}, λ={p['lam']:g}, M={p['M']:,}, {p['trials']} contexts per family, seed {p['seed']}; "
                 f"95% intervals (Clopper–Pearson / t); ALiBi m={p['m']:g}, gate σ({p['gate']:g}), L_train={p['L_train']}; "
                 f"values below {floor:.1g} (rank) or 1e-12 (weight) drawn at the floor")
    return [save_figure(fig, outdir, "far-retrieval")]
