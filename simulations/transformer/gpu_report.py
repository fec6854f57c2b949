"""The ``gpu`` preset's comparison (one H200 run of ``scripts/gpu_check.sh``) against the paper at equal absolute lengths.

The run trains each variant once (seed 0) at ``L_train = 256`` and evaluates it to 256× = 65,536 tokens on the
author's 20 random windows per length (seed 42 + L, the same windows for every variant). With one training seed
no seed-level verdict can be decided (:mod:`.verdicts` needs ≥ 2 seeds per arm), so each paper row is reported as

* its verdict under the project's rule: *undecided (1 seed)*, and
* a window-level difference Δ = log PPL-ratio(A) − log PPL-ratio(B) with a 95% percentile bootstrap over the
  evaluation windows (resampled jointly for both variants, which share them): evaluation noise only, not the
  variance between training seeds, so it describes this run and is no verdict on the paper.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .evaluate import paper_ratio
from .verdicts import PAPER_ROWS

__all__ = ["GPU_DIR", "paper_at_tokens", "window_deltas", "gpu_rows", "plot_gpu"]

#: where ``scripts/gpu_check.sh``'s results are committed (relative to the results directory)
GPU_DIR = ("transformer", "gpu")
#: the paper's training length: its ratios are to PPL(512)
PAPER_L_TRAIN = 512
#: bootstrap resamples of the evaluation windows
N_BOOT = 4000


def paper_at_tokens(variant: str, tokens: int) -> float | None:
    """The paper's PPL(L)/PPL(512) at ``tokens`` absolute tokens (None where it reports none)."""
    return None if tokens % PAPER_L_TRAIN else paper_ratio(variant, tokens // PAPER_L_TRAIN)


def _losses(directory: Path, variant: str) -> dict[int, np.ndarray] | None:
    path = directory.joinpath(*GPU_DIR, "eval", "gpu", f"{variant}-author-windows.json")
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    return {int(m): np.asarray(d["all"], dtype=float) for m, d in saved["losses"].items()}


def window_deltas(a: dict[int, np.ndarray], b: dict[int, np.ndarray], multiple: int, seed: int = 0) -> dict:
    """Δ = log ratio(A) − log ratio(B) at ``multiple`` (author's metric), with a window bootstrap interval."""
    rng = np.random.default_rng(seed)
    n_l, n_1 = len(a[multiple]), len(a[1])
    il = rng.integers(0, n_l, size=(N_BOOT, n_l))
    i1 = rng.integers(0, n_1, size=(N_BOOT, n_1))

    def delta(x: dict[int, np.ndarray], y: dict[int, np.ndarray], jl, j1) -> np.ndarray:
        return (x[multiple][jl].mean(-1) - x[1][j1].mean(-1)) - (y[multiple][jl].mean(-1) - y[1][j1].mean(-1))

    est = float(delta(a, b, np.arange(n_l), np.arange(n_1)))
    boots = delta(a, b, il, i1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return {"delta": est, "ci_low": float(lo), "ci_high": float(hi), "n_windows": int(n_l)}


def _seed_runs(directory: Path) -> list[tuple[Path, dict]]:
    """(folder, summary) of every committed seed: seed 0 in ``gpu/``, seed k in ``gpu/seed<k>/``."""
    root = directory.joinpath(*GPU_DIR)
    folders = [root] + sorted(root.glob("seed[0-9]*"), key=lambda f: int(f.name[4:]))
    return [(f, json.loads((f / "summary.json").read_text())) for f in folders if (f / "summary.json").exists()]


def _log_ratio(summary: dict, variant: str, multiple: int) -> float | None:
    for r in summary["rows"]:
        if r["variant"] == variant:
            e = next((e for e in r["eval"] if e["multiple"] == multiple), None)
            return None if e is None else float(np.log(e["ratio_all"]))
    return None


def gpu_rows(directory: Path) -> dict | None:
    """The committed GPU run as table rows and per-paper-row differences (None if never run).

    Each row gets the window-level Δ of seed 0 at every length ≥ 8,192 tokens and, where both arms have ≥ 2
    seeds, the project's verdict (:func:`.verdicts.welch` on the per-seed log-ratios, level 0.05) per length."""
    from .verdicts import decide, welch

    seeds = _seed_runs(directory)
    if not seeds:
        return None
    s = seeds[0][1]
    runs = {r["variant"]: r for r in s["rows"]}
    L_train = next((e["L"] // e["multiple"] for r in runs.values() for e in r["eval"]), 256)
    losses = {v: _losses(directory, v) for v in runs}
    rows = []
    for a, b in PAPER_ROWS:
        la, lb = losses.get(a), losses.get(b)
        if la is None or lb is None:
            rows.append({"row": f"{a} > {b}", "verdict": "not run"})
            continue
        cells, welch_cells = [], []
        for m in sorted(set(la) & set(lb)):
            if m * L_train < 8192:
                continue
            cells.append({"multiple": m, "tokens": m * L_train, **window_deltas(la, lb, m)})
            xa = [x for x in (_log_ratio(sm, a, m) for _, sm in seeds) if x is not None]
            xb = [x for x in (_log_ratio(sm, b, m) for _, sm in seeds) if x is not None]
            if len(xa) >= 2 and len(xb) >= 2:
                w = welch(np.array(xa), np.array(xb))
                welch_cells.append({"multiple": m, "tokens": m * L_train, "seeds_a": len(xa), "seeds_b": len(xb),
                                    **{k: float(w[k]) for k in ("delta", "ci_low", "ci_high", "p", "df")},
                                    "verdict": str(decide(w["delta"], w["p"]))})
        verdict = welch_cells[-1]["verdict"] + f" ({welch_cells[-1]['tokens']:,} tok.)" if welch_cells else \
            "undecided (1 seed)"
        rows.append({"row": f"{a} > {b}", "verdict": verdict, "cells": cells, "welch": welch_cells})
    return {"preset": s["preset"], "L_train": L_train, "runs": runs, "rows": rows,
            "seed_runs": [{r["variant"]: r for r in sm["rows"]} for _, sm in seeds]}


def plot_gpu(directory: Path, out_png: Path) -> Path | None:
    """PPL(L)/PPL(L_train) against absolute length per variant: the gpu run (solid, window interval shaded) and
    the paper at the same lengths (dashed); one panel per family of variants. PNG and PDF in the project theme."""
    r = gpu_rows(directory)
    if r is None:
        return None
    from matplotlib.ticker import FuncFormatter

    from stylized.harness import plotting as sp

    panels = (("position and far-mass controls", ("rope", "nope", "alibi", "path")),
              ("random accumulated angles", ("rope", "random-qk", "random-qkv")),
              ("learned token-dependent angles", ("rope", "learned-qk", "learned-qkv")))
    with sp.theme():
        fig, axes = sp.figure(1, 3, height=3.3, sharey=True)
        for ax, (title, variants) in zip(axes, panels):
            for i, v in enumerate(variants):
                x = r["runs"].get(v)
                if x is None:
                    continue
                style = sp.variant_style(v, i)
                ev = sorted(x["eval"], key=lambda e: e["L"])
                L = [e["L"] for e in ev]
                ax.plot(L, [e["ratio_all"] for e in ev], "-", ms=3, lw=1.4, label=f"{v} ({x['steps']:,} steps)",
                        **style)
                ax.fill_between(L, [e["ci_low_all"] for e in ev], [e["ci_high_all"] for e in ev], alpha=0.15,
                                color=style.get("color"), lw=0)
                paper = [(t, paper_at_tokens(v, t)) for t in L]
                paper = [(t, p) for t, p in paper if p is not None]
                if paper:
                    ax.plot(*zip(*paper), "--", lw=1.0, alpha=0.8, color=style.get("color"))
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t / 1024:g}K" if t >= 1024 else f"{t:g}"))
            ax.set_yscale("log")
            sp.readable_log_axis(ax.yaxis)
            ax.axhline(1, color="0.4", lw=0.6)
            for edge in (16_384, 32_768):
                ax.axvline(edge, color="0.75", lw=0.6, ls=":")
            ax.set_title(title)
            ax.set_xlabel("evaluation length L (tokens)")
            ax.legend(loc="upper left", fontsize=6.5)
        axes[0].set_ylabel(r"$\mathrm{PPL}(L)/\mathrm{PPL}(L_{\mathrm{train}})$ (author's metric)")
        sp.caption(fig, f"gpu preset on one H200, seed 0, L_train = {r['L_train']}: solid, this run (shaded: 95% "
                        "bootstrap over the 20 evaluation windows, not over seeds); dashed, the paper (L_train = 512, "
                        "16 × 768, OpenWebText) at the same absolute lengths. Dotted: 16K and 32K, the edges of the "
                        "paper's tied (≤ 16K) and split (≥ 32K) regimes for Q/K vs Q/K/V.")
        return sp.save(fig, out_png)
