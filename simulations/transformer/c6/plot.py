"""The C6 figure ``transformer_ppl_ratio``: PPL(L)/PPL(L_train) against L/L_train per variant.

Kept apart from :mod:`.compare` (which trains and evaluates) so that the figure can be redrawn from a saved
``<preset>_compare.json`` alone.  Drawn and saved (PNG and PDF) through :mod:`stylized.harness.plotting`; every
variant has its own hue and marker (:func:`stylized.harness.plotting.variant_style`), the same as in the other
transformer figures, and the log ratio axis is labelled at 1, 2, 5, 10, 20, ….
"""

from __future__ import annotations

import os
from pathlib import Path

from ..train.readers import read_json

__all__ = ["plot_compare"]


def plot_compare(result_json_path: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """PPL(L)/PPL(L_train) vs L/L_train (log-log), the author's metric left and ours right; the paper dashed.

    Parameters
    ----------
    result_json_path : path
        A comparison result (``<preset>_compare.json``, written by ``stylized transformer compare``).
    out_png : path
        Where the PNG goes; the PDF is written beside it.

    Returns
    -------
    Path
        The PNG's path.
    """
    from matplotlib.ticker import NullLocator

    from stylized.harness import plotting as sp
    res = read_json(result_json_path, "--figure")
    p = res["params"]
    with sp.theme():
        fig, axes = sp.figure(1, 2, height=3.2, sharey=True)
        for ax, metric in zip(axes, ("all", "target")):
            for i, v in enumerate(p["variants"]):
                rs = sorted((r for r in res["rows"] if r["variant"] == v and r["metric"] == metric),
                            key=lambda r: r["multiple"])
                if not rs:
                    continue
                st = sp.variant_style(v, i)
                m = [r["multiple"] for r in rs]
                ax.plot(m, [r["estimate"] for r in rs], "-", marker=st["marker"], color=st["color"], ms=3.5,
                        lw=1.2, label=f"{v} ({rs[0]['seeds']} seed{'s' if rs[0]['seeds'] > 1 else ''})")
                ax.fill_between(m, [min(r["per_seed"]) for r in rs], [max(r["per_seed"]) for r in rs],
                                color=st["color"], alpha=0.12, lw=0)
                th = [(r["multiple"], r["theory"]) for r in rs if r["theory"] is not None]
                if metric == "all" and len(th) > 1:
                    ax.plot(*zip(*th), "--", color=st["color"], alpha=0.8, lw=0.9)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ms = sorted({r["multiple"] for r in res["rows"]})
            ax.set_xticks(ms, [f"{x:g}" for x in ms])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.axhline(1.0, color="0.4", lw=0.6)
            ax.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
            ax.set_title("author's metric (all positions)" if metric == "all" else r"same targets (last $L_{train}$)")
        sp.readable_log_axis(axes[0].yaxis)
        axes[0].plot([], [], "--", color="0.3", lw=0.9, label="paper (dashed, same colour)")
        axes[0].set_ylabel(r"$\mathrm{PPL}(L)\,/\,\mathrm{PPL}(L_{\mathrm{train}})$")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncol=3, fontsize=6.5)
        mmax = max(r["multiple"] for r in res["rows"])
        sp.caption(fig, f"C6, preset '{p['preset']}': L_train = {p['model']['block_size']}, {p['train']['steps']} steps; "
                        f"{mmax:g}× is {mmax * int(p['model']['block_size']):,} tokens here, {mmax * 512:,} in the paper. "
                        "Lines: mean over seeds; band: seed range (min to max); dashed: the paper's reported ratio "
                        "(L_train = 512). Left: every position of the length-L window; right: the last L_train "
                        "positions (the same targets at every length).")
        return sp.save(fig, out_png)
