"""The bridge figure: predicted vs measured perplexity ratio (left), predicted vs measured ρ_D(L) (right).

Drawn and saved (PNG and PDF) through :mod:`stylized.harness.plotting`.  The left panel's variants are grouped by what
they change (:data:`GROUPS`): one hue per group, one marker per member (three marker types in all), each
variant's lengths joined in order, the grouped legend outside the panels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_bridge", "example_heads", "GROUPS", "group_style"]

#: (group title, its members): the variants grouped by what they change; a member's marker is its place in the group
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("position code", ("rope", "nope", "path")),
    ("random rotation", ("random-qk", "random-qkv")),
    ("learned rotation", ("learned-qk", "learned-qkv")),
    ("far-mass control", ("alibi", "fox", "ssmax")),
    ("learned-qkv + control", ("learned-qkv-alibi", "learned-qkv-fox", "learned-qkv-ssmax")),
)
_GROUP_MARKERS = ("o", "s", "^")


def group_style(variant: str) -> dict:
    """``{"color", "marker", "group", "label"}`` of ``variant`` in the bridge figure (an unknown one: group "other").

    >>> group_style("learned-qkv-fox")["label"]
    '+ fox'
    """
    from stylized.harness import plotting as sp
    for g, (title, members) in enumerate(GROUPS):
        if variant in members:
            label = variant.removeprefix("learned-qkv-") if title.startswith("learned-qkv +") else variant
            return {"color": sp.QUALITATIVE[[0, 1, 4, 2, 3][g]], "marker": _GROUP_MARKERS[members.index(variant)],
                    "group": title, "label": ("+ " + label) if label != variant else variant}
    return {"color": sp.QUALITATIVE[7], "marker": "D", "group": "other", "label": variant}


def _grouped_legend(fig, ax, styles: dict[str, dict]) -> None:
    """One legend column per group (its title first), above the panels."""
    from matplotlib.lines import Line2D

    order = [t for t, _ in GROUPS] + ["other"]
    cols = {t: [v for v in styles if styles[v]["group"] == t] for t in order}
    cols = {t: vs for t, vs in cols.items() if vs}
    rows = max(len(vs) for vs in cols.values()) + 1
    handles, labels = [], []
    for title, vs in cols.items():
        entries = [(Line2D([], [], ls="none"), title)]
        entries += [(Line2D([], [], ls="-", lw=0.8, marker=styles[v]["marker"], color=styles[v]["color"], ms=4),
                     styles[v]["label"]) for v in vs]
        entries += [(Line2D([], [], ls="none"), "")] * (rows - len(entries))
        for h, lab in entries:
            handles.append(h)
            labels.append(lab)
    leg = fig.legend(handles, labels, loc="outside upper center", ncol=len(cols), fontsize=6.5, frameon=False,
                     handlelength=1.6, handletextpad=0.4, columnspacing=1.2)
    for text, lab in zip(leg.get_texts(), labels):
        if lab in cols:
            text.set_fontweight("bold")


def example_heads(result: dict, n: int = 3) -> list[tuple[str, int, int]]:
    """(variant, layer, head) of ``n`` heads to draw: the first layer of rope, learned-qkv and alibi when present."""
    out = []
    for v in ("rope", "learned-qkv", "alibi", "nope", "ssmax"):
        if v in result.get("measured", {}) and f"{v}/s0" in result.get("predictions", {}):
            meas = np.array(result["measured"][v]["rho"], dtype=float)  # [lengths, layers, H]
            h = int(np.argmax(meas[-1, 0]))  # the layer-0 head with the most far mass at the longest length
            out.append((v, 0, h))
        if len(out) == n:
            break
    return out


def plot_bridge(result: dict, out_png: str | Path) -> Path:
    """Draw the bridge figure from a ``bridge_<preset>.json`` result; writes PNG and PDF."""
    from matplotlib.ticker import FuncFormatter

    from stylized.harness import plotting as sp
    if "lovo" not in result or "verdict" not in result:  # a result of the old stylized-horizon bridge
        with sp.theme():
            fig, (ax,) = sp.figure(1, 1, height=1.2)
            ax.set_axis_off()
            ax.text(0.5, 0.5, "stale bridge result (old format): rerun 'stylized transformer bridge --preset cpu'",
                    ha="center", va="center", fontsize=8, transform=ax.transAxes)
            return sp.save(fig, out_png)
    p = result["params"]
    with sp.theme():
        fig, (ax1, ax2) = sp.figure(1, 2, height=3.4)
        colors = [sp.QUALITATIVE[i] for i in (0, 4, 2)]
        allv, styles = [], {}
        for r in result["lovo"]["rows"]:
            meas, pred = np.asarray(r["measured"]), np.asarray(r["predicted"])
            keep = np.asarray(r["multiples"]) > 1
            allv += list(meas[keep]) + list(pred[keep])
            st = styles[r["variant"]] = group_style(r["variant"])
            ax1.plot(meas[keep], pred[keep], "-", marker=st["marker"], color=st["color"], ms=3.5, lw=0.7,
                     alpha=0.9, zorder=3)
        if allv:
            lo, hi = 0.9 * min(allv), 1.1 * max(allv)
            xs = np.geomspace(lo, hi, 50)
            tol = result["verdict"]["tolerance"]
            ax1.fill_between(xs, xs * (1 - tol), xs * (1 + tol), color="0.9", lw=0, zorder=0)
            ax1.text(0.97, 0.04, f"grey band: ±{tol:.0%} of the diagonal", transform=ax1.transAxes, ha="right",
                     va="bottom", fontsize=6.5, color="0.35")
            ax1.plot(xs, xs, color="0.4", lw=0.8, zorder=1)
            ax1.set_xlim(lo, hi)
            ax1.set_ylim(lo, hi)
        ax1.set_xscale("log")
        ax1.set_yscale("log")
        plain = FuncFormatter(lambda x, _: f"{x:g}")
        for axis in (ax1.xaxis, ax1.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(FuncFormatter(lambda x, _: f"{x:g}" if round(x, 6) in (1.5, 3, 5) else ""))
        ax1.set_xlabel(r"measured $\mathrm{PPL}(L)/\mathrm{PPL}(L_{\mathrm{train}})$")
        ax1.set_ylabel("predicted (leave one variant out)")
        ax1.set_title(f"perplexity ratio, 2×–{max(p['multiples'])}× (lines join lengths)")
        _grouped_legend(fig, ax1, styles)
        Lt = p["L_train"]
        mults = np.asarray(p["multiples"])
        for k, (v, layer, h) in enumerate(example_heads(result)):
            c = group_style(v)["color"] if group_style(v)["group"] != "other" else colors[k % len(colors)]
            pr = result["predictions"][f"{v}/s0"]
            rho, lo, hi = (np.asarray(pr[key], dtype=float)[layer, :, h] for key in ("rho", "lo", "hi"))
            ax2.plot(mults, rho, "--", color=c, lw=1.1)
            ax2.fill_between(mults, lo, hi, color=c, alpha=0.15, lw=0)
            m = result["measured"][v]
            mr, mlo, mhi = (np.asarray(m[key], dtype=float)[:, layer, h] for key in ("rho", "lo", "hi"))
            ax2.errorbar(mults, mr, yerr=[np.clip(mr - mlo, 0, None), np.clip(mhi - mr, 0, None)], fmt="o", ms=3,
                         color=c, label=f"{v} L{layer}H{h}")
        ax2.set_xscale("log", base=2)
        ax2.xaxis.set_major_formatter(plain)
        ax2.set_ylim(0, 1.02)
        ax2.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
        ax2.set_ylabel(rf"far mass $\rho_D$ (D = {p['D']}, query $L-1$)")
        ax2.set_title("per head: predicted (dashed) vs measured")
        ax2.legend(fontsize=6.5, loc="lower right")
        v = result["verdict"]
        sp.caption(fig, f"Left: each point is one variant at one length (seed mean); the law is fitted on the other "
                        f"variants. Verdict: {v['n_ok']}/{v['n']} variants within ±{v['tolerance']:.0%} at "
                        f"{' and '.join(f'{m}×' for m in v['multiples'])} — "
                        f"{'holds' if v['holds'] else 'does not hold'}. Right: prediction from windows of "
                        f"L_train = {Lt} tokens only (band: window bootstrap); measured at the last queries of "
                        f"{p['compare_windows']} windows (bars: 95%).")
        return sp.save(fig, out_png)
