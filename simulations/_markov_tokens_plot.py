"""The figure of the ``markov-tokens`` check: measured ``E[qᵀP_n q]`` against the Markov and i.i.d. theories,
and the per-plane windows of both (kept apart from the experiment)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.harness import plotting as sp

__all__ = ["plot_markov_tokens"]


def _curve_panel(ax, result: dict) -> None:
    """``E[qᵀP_n q]`` with 95% intervals beside the exact Markov curve (solid) per law, and the i.i.d. ``χ_bⁿ`` (dashed)."""
    first_iid = None
    for i, cur in enumerate(result["curves"]):
        rs = [r for r in result["rows"] if r["switch"] == cur["switch"]]
        color = sp.theory_vs_measurement(ax, [r["n"] for r in rs], *([r[k] for r in rs] for k in ("estimate", "ci_low", "ci_high")),
                                         color=f"C{i}", label=f"s = {cur['switch']:g}: measured")
        ax.plot(cur["n"], cur["markov"], "-", color=color, lw=1.1, label=f"s = {cur['switch']:g}: Markov (exact)")
        if first_iid is None or not np.allclose(cur["iid"], first_iid):  # same π and table: one i.i.d. curve
            ax.plot(cur["n"], cur["iid"], "--", color="0.25" if first_iid is None else color, lw=0.9,
                    label=r"i.i.d. shortcut $\sum_b w_b\,\mathrm{Re}\,\chi_b^n$")
            first_iid = cur["iid"] if first_iid is None else first_iid
    ax.set_xscale("symlog", linthresh=1.0)
    ax.axhline(0.0, color="0.5", lw=0.6)
    ax.set_xlabel(r"route length $n$")
    ax.set_ylabel(r"$\mathbb{E}[q^\top P_n q]$")
    ax.set_title("measured vs exact (twisted operator)")
    ax.legend(loc="upper right")


def _window_panel(ax, wins: list[dict]) -> None:
    """Per-plane windows: Markov ``⌈ln ε/ln ρ_b⌉`` (filled) vs i.i.d. ``⌈ln ε/ln|χ_b|⌉`` (open)."""
    labels = list(dict.fromkeys(w["switch"] for w in wins))
    for i, lab in enumerate(labels):
        ws = [w for w in wins if w["switch"] == lab]
        b = np.array([w["plane"] for w in ws], float) + (i - (len(labels) - 1) / 2) * 0.2
        ax.plot(b, sp.as_float([w["W_markov"] for w in ws]), "o", color=f"C{i}", label=rf"s = {lab:g}: Markov, $\rho_b$")
    ws = [w for w in wins if w["switch"] == labels[0]] if labels else []
    ax.plot([w["plane"] for w in ws], sp.as_float([w["W_iid"] for w in ws]), "s", mfc="none", color="0.25",
            label=r"i.i.d., $|\chi_b|$")
    ax.set_yscale("log")
    ax.set_xlabel(r"plane $b$ (wide → narrow angles)")
    ax.set_ylabel(r"window $W_b(\varepsilon)$ (steps)")
    ax.set_title(rf"per-plane windows, $\varepsilon = {wins[0]['eps']:g}$" if wins else "per-plane windows")
    ax.legend(loc="upper left")


@sp.themed
def plot_markov_tokens(result: dict, outdir: Path, name: str) -> list[Path]:
    """Left: measured vs exact ``E[qᵀP_n q]`` and the i.i.d. shortcut; right: per-plane windows, Markov vs i.i.d."""
    p = result.get("params", {})
    fig, (ax, aw) = sp.figure(1, 2, height=3.2)
    _curve_panel(ax, result)
    _window_panel(aw, result["windows"])
    sp.caption(fig, f"Markov token chains T = (1−s)I + s·1πᵀ, V = {p.get('vocab', '?')}, Zipf π (exponent "
                    f"{p.get('zipf', '?')}), d = {p.get('d', '?')}; {p.get('trials', '?')} chains per law, seed "
                    f"{p.get('seed', '?')}. Bars: 95% CI per row; the verdict uses joint (Bonferroni) intervals. "
                    "Right: windows from the spectral radius ρ_b = ρ(T D_b) (Markov) and |χ_b| (i.i.d.).")
    return [sp.save(fig, Path(outdir) / name)]
