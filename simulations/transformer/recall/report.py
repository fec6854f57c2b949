"""The recall results across variants and seeds: a table, a retrieval horizon per variant, and the figure.

Reads ``recall_cpu.json`` (:mod:`.sweep`).  Per (variant, key → query distance) at 8 pairs: the mean
accuracy over seeds with the seed range; each seed's own 95% interval is a bootstrap over sequences
(:func:`.recall.evaluate_recall`), so the correlation of the 16 queries of one sequence is respected.
The *retrieval horizon* of a variant is the first evaluated distance at which the seed-mean accuracy falls
below 0.5 (``None``: never up to the longest distance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..train.readers import read_json

__all__ = ["N_PAIRS", "table", "horizon", "plot_recall", "summary_lines"]

N_PAIRS = 8
HORIZON_ACC = 0.5
L_TRAIN = 64


def table(data: dict, n_pairs: int = N_PAIRS) -> dict[str, dict]:
    """variant -> {"seeds": [...], "cells": {distance: {"mean", "lo", "hi", "per_seed", "ci"}}, "one_x": mean}."""
    out: dict[str, dict] = {}
    for run in data.get("runs", []):
        v = out.setdefault(run["variant"], {"seeds": [], "cells": {}, "one_x": []})
        v["seeds"].append(run["seed"])
        for r in run["rows"]:
            if r["n_pairs"] != n_pairs:
                continue
            if r["distance"] is None:
                v["one_x"].append(r["acc"])
                continue
            c = v["cells"].setdefault(int(r["distance"]), {"per_seed": [], "ci": []})
            c["per_seed"].append(r["acc"])
            c["ci"].append((r["lo"], r["hi"]))
    for v in out.values():
        for c in v["cells"].values():
            a = np.asarray(c["per_seed"])
            c.update(mean=float(a.mean()), lo=float(a.min()), hi=float(a.max()))
        v["one_x"] = float(np.mean(v["one_x"])) if v["one_x"] else None
    return out


def horizon(cells: dict[int, dict], level: float = HORIZON_ACC) -> int | None:
    """The first distance whose seed-mean accuracy is below ``level``."""
    for d in sorted(cells):
        if cells[d]["mean"] < level:
            return d
    return None


def plot_recall(path: Path, out_png: Path) -> Path:
    """Accuracy against the key → query distance per variant (seed mean, band: seed range), chance and
    value-guessing marked, L_train dashed; PNG and PDF in the project theme."""
    from stylized.harness import plotting as sp

    data = read_json(path, "recall")
    tab = table(data)
    base = data.get("baselines", {})
    with sp.theme():
        fig, axes = sp.figure(1, 1, height=3.6)
        ax = np.ravel(axes)[0]
        for i, (v, t) in enumerate(sorted(tab.items())):
            ds = sorted(t["cells"])
            st = sp.variant_style(v, 8 + i)  # the C6 variants keep their colours
            m = [t["cells"][d]["mean"] for d in ds]
            ax.plot(ds, m, "-", ms=3, lw=1.3, color=st.get("color"), marker=st.get("marker", "o"),
                    label=f"{v} ({len(t['seeds'])} seed{'s' if len(t['seeds']) > 1 else ''})")
            if len(t["seeds"]) > 1:
                ax.fill_between(ds, [t["cells"][d]["lo"] for d in ds], [t["cells"][d]["hi"] for d in ds],
                                color=st.get("color"), alpha=0.12, lw=0)
        ax.axhline(base.get("chance", 1 / 32), color="0.35", lw=0.8, ls=":")
        ax.axhline(base.get(f"value_guess_{N_PAIRS}_pairs", 1 / N_PAIRS), color="0.55", lw=0.8, ls="--")
        ax.axvline(L_TRAIN, color="0.4", lw=0.8, ls="--")
        ax.text(L_TRAIN * 1.05, 0.02, r"$L_{\mathrm{train}}$", fontsize=7, color="0.3")
        ax.set_xscale("log", base=2)
        ds_all = sorted({d for t in tab.values() for d in t["cells"]})
        ax.set_xticks(ds_all, [f"{d:,}" for d in ds_all], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("key → query distance (tokens)")
        ax.set_ylabel(f"answer accuracy, {N_PAIRS} pairs")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=6.5)
        sp.caption(fig, "Multi-query associative recall (keys, values and filler from disjoint token sets), 2 × 64 "
                        "models trained at L_train = 64 with the calibrated recipe; each line the mean over seeds (band: "
                        "seed range); each seed's cell is 64 sequences × 16 queries. Dotted: chance 1/32; dashed: "
                        "guessing one of the 8 values present.")
        return sp.save(fig, out_png)


def summary_lines(data: dict) -> list[str]:
    out = []
    for v, t in sorted(table(data).items()):
        cells = " ".join(f"{d}:{t['cells'][d]['mean']:.2f}" for d in sorted(t["cells"]))
        out.append(f"{v} (seeds {','.join(map(str, t['seeds']))}): 1x {t['one_x']:.3f}; {cells}; "
                   f"horizon {horizon(t['cells'])}")
    return out
