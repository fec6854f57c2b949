"""Figure of the far-retrieval check: passkey score, rank-1 rate and weight against the route length ``n``.

Drawn and saved (PNG and PDF) through :mod:`stylized.harness.plotting`, in the project's theme.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.harness import plotting as sp

__all__ = ["plot"]


def errorbar_rows(ax, x, rows, floor=None, **kw):
    """Estimates with their 95% intervals.  On a log axis (``floor`` given) an estimate at or below the floor, or
    whose interval reaches 0, is not drawn as data: only its interval's upper end, as a hollow downward triangle."""
    x = np.asarray(x, float)
    est, lo, hi = (np.array([r[k] for r in rows], float) for k in ("estimate", "ci_low", "ci_high"))
    below = np.zeros(est.shape, bool) if floor is None else (est <= floor) | (lo <= 0)
    if below.any():
        ax.plot(x[below], np.maximum(hi[below], floor), "v", mfc="none", ms=kw.get("ms", 4), color=kw.get("color"),
                ls="none", zorder=3)
    ok = ~below
    return ax.errorbar(x[ok], est[ok], yerr=[np.maximum(est[ok] - lo[ok], 0), np.maximum(hi[ok] - est[ok], 0)],
                       **kw)


CONTROL_COLORS = {"none": "0.2", "alibi": sp.QUALITATIVE[3], "forget-gate": sp.QUALITATIVE[4],
                  "log-scaling": sp.QUALITATIVE[5]}


def _panel(ax, rows, key, floor=None, colors=None):
    for i, g in enumerate(dict.fromkeys(r[key] for r in rows)):
        rs = [r for r in rows if r[key] == g]
        col = (colors or {}).get(g, f"C{i}")
        n = np.array([r["n"] for r in rs], float)
        errorbar_rows(ax, n, rs, floor=floor, fmt="o", ms=3.5, color=col, label=str(g))
        th = np.array([r["theory"] for r in rs], float)
        ax.plot(n, th if floor is None else np.maximum(th, floor), "-", color=col, lw=1)
    ax.set_xscale("log", base=2)


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Three stacked panels (one column): mean passkey score with the non-mixing floor, the rank-1
    rate with chance, and the passkey weight per far-mass control for the first family."""
    p, rows = result["params"], result["rows"]
    fig, (a1, a2, a3) = sp.figure(3, 1, height=7.6, sharex=True)
    sc = [r for r in rows if r["kind"] == "score"]
    _panel(a1, sc, "family")
    for i, f in enumerate(dict.fromkeys(r["family"] for r in sc)):
        rs = [r for r in sc if r["family"] == f]
        if any(r["floor"] > 0 for r in rs):
            a1.plot([r["n"] for r in rs], [r["floor"] for r in rs], ":", color=f"C{i}", lw=1.2,
                    label=f"{f}: non-mixing planes")
    a1.set_ylabel(r"$\lambda\, q^\top P_n q$")
    a1.set_title(r"passkey score (lines: $\lambda\, q^\top E[M]^n q$)")
    a1.legend(loc="upper right")
    rk = [r for r in rows if r["kind"] == "rank1" and r["control"] is None]
    floor = min(0.2 / p["trials"], rk[0]["chance"] / 3)
    _panel(a2, rk, "family", floor=floor)
    a2.axhline(rk[0]["chance"], color="0.3", ls="--", lw=1, label=r"chance $1/(M+1)$")
    a2.set_yscale("log")
    a2.set_ylabel(r"$P(\mathrm{rank}\ 1)$")
    a2.set_title(rf"passkey outranks all $M = {p['M']:,}$ random keys (lines: $E[F_H(s_n)^M]$)")
    f0 = rows[0]["family"]
    top = [r for r in rows if r["kind"] == "rank1" and r["control"] is not None and r["family"] == f0]
    for i, c in enumerate(dict.fromkeys(r["control"] for r in top)):
        rs = [r for r in top if r["control"] == c]
        col = CONTROL_COLORS.get(c, f"C{i + 6}")
        a2.plot([r["n"] for r in rs], [max(r["theory"], floor) for r in rs], "--", color=col, lw=1,
                label=f"{f0}: top logit under {c}")
        errorbar_rows(a2, [r["n"] for r in rs], rs, floor=floor, fmt="s", ms=3, color=col)
    a2.legend(loc="lower left", fontsize=6.0, ncol=2)
    wt = [r for r in rows if r["kind"] == "weight" and r["family"] == f0]
    _panel(a3, wt, "control", floor=1e-12, colors=CONTROL_COLORS)
    a3.axhline(wt[0]["chance"], color="0.3", ls="--", lw=1, label=r"$1/(M+1)$")
    a3.set_yscale("log")
    a3.set_ylim(1e-12, 1.5)
    a3.set_xlabel(r"route length $n$ of the passkey")
    a3.set_ylabel(r"$E[\alpha_n]$")
    a3.set_title(rf"passkey weight, {f0}, per control (lines: closed form)")
    a3.legend(loc="lower left", ncol=2)
    sp.caption(fig, f"d={p['d']}, λ={p['lam']:g}, M={p['M']:,}, {p['trials']} contexts per family, seed {p['seed']}; "
                 f"95% intervals (Clopper–Pearson / t); ALiBi m={p['m']:g}, gate σ({p['gate']:g}), L_train={p['L_train']}; "
                 f"▽: no success in any trial (drawn at the interval's upper end); theory below {floor:.1g} (rank) or 1e-12 "
                    f"(weight) drawn at that floor")
    return [sp.save(fig, Path(outdir) / "far-retrieval")]
