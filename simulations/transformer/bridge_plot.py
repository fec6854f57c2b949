"""The bridge figure: predicted vs measured perplexity ratio (left), predicted vs measured ρ_D(L) (right)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_bridge", "example_heads"]


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
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from stylized import plotting as sp

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
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        markers = "osD^v<>ph*"
        allv = []
        for i, r in enumerate(result["lovo"]["rows"]):
            meas, pred = np.asarray(r["measured"]), np.asarray(r["predicted"])
            keep = np.asarray(r["multiples"]) > 1
            allv += list(meas[keep]) + list(pred[keep])
            ax1.plot(meas[keep], pred[keep], markers[i % len(markers)], color=colors[i % len(colors)], ms=4,
                     mfc="none" if i >= len(colors) else None, label=r["variant"], ls="none")
        if allv:
            lo, hi = 0.9 * min(allv), 1.1 * max(allv)
            xs = np.geomspace(lo, hi, 50)
            tol = result["verdict"]["tolerance"]
            ax1.fill_between(xs, xs * (1 - tol), xs * (1 + tol), color="0.9", lw=0, zorder=0,
                             label=f"±{tol:.0%}")
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
        ax1.set_title(f"perplexity ratio, 2×–{max(p['multiples'])}×", fontsize=8)
        fig.legend(*ax1.get_legend_handles_labels(), loc="outside upper center", ncol=7, fontsize=6, frameon=False,
                   handletextpad=0.2, columnspacing=0.8)
        Lt = p["L_train"]
        mults = np.asarray(p["multiples"])
        for k, (v, layer, h) in enumerate(example_heads(result)):
            c = colors[k % len(colors)]
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
        ax2.set_title("per head: predicted (dashed, band) vs measured", fontsize=8)
        ax2.legend(fontsize=6, loc="lower right", frameon=False)
        v = result["verdict"]
        sp.caption(fig, f"Left: each point is one variant at one length (seed mean); the law is fitted on the other "
                        f"variants. Verdict: {v['n_ok']}/{v['n']} variants within ±{v['tolerance']:.0%} at "
                        f"{' and '.join(f'{m}×' for m in v['multiples'])} — "
                        f"{'holds' if v['holds'] else 'does not hold'}. Right: prediction from windows of "
                        f"L_train = {Lt} tokens only (band: window bootstrap); measured at the last queries of "
                        f"{p['compare_windows']} windows (bars: 95%).")
        return sp.save(fig, out_png)
