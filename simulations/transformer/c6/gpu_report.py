"""The ``gpu`` preset's comparison (one H200 run of ``scripts/gpu_check.sh``) against the paper at equal absolute lengths.

Each call trains variants at ``L_train = 256`` and evaluates them to 256× = 65,536 tokens on the author's 20 random
windows per length (seed 42 + L, the same windows for every variant and seed).  Seed 0 is committed in ``gpu/``,
seed k in ``gpu/seed<k>/``.  Each paper row is reported as

* its verdict under the project's rule (:func:`.verdicts.welch` on the per-seed log-ratios, where both arms have
  ≥ 2 seeds; *undecided (1 seed)* otherwise), with the rule's level measured at the row's own seeds per arm under a
  null built from these runs' own per-window losses (:func:`measure_level`, ``gpu/verdict_level.json``), and
* seed 0's window-level difference Δ = log PPL-ratio(A) − log PPL-ratio(B) with a 95% percentile bootstrap over
  the evaluation windows (resampled jointly for both variants, which share them): evaluation noise only, not the
  variance between training seeds, so it describes one run and is no verdict on the paper.

Run ``python -m simulations.transformer.c6.gpu_report`` to re-measure the level (about 10 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..evaluate.extrapolation import paper_ratio
from ..train.readers import read_json
from .verdicts import PAPER_ROWS

__all__ = ["GPU_DIR", "paper_at_tokens", "window_deltas", "gpu_rows", "plot_gpu", "seed_losses", "measure_level"]

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
    saved = read_json(path, "gpu", need=("losses",), check=_losses_problem)
    return {int(m): np.asarray(d["all"], dtype=float) for m, d in saved["losses"].items()}


def _losses_problem(saved: dict) -> str | None:
    """Why a GPU run's per-window losses cannot be read (``None``: they can)."""
    from ..evaluate.extrapolation import cache_problem

    return cache_problem(saved, ("all",))


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


def seed_runs(directory: Path) -> list[tuple[int, Path, dict]]:
    """(seed, folder, summary) of every committed seed: seed 0 in ``gpu/``, seed k in ``gpu/seed<k>/``."""
    root = directory.joinpath(*GPU_DIR)
    folders = [(0, root)] + sorted((int(f.name[4:]), f) for f in root.glob("seed[0-9]*") if f.name[4:].isdigit())
    return [(k, f, json.loads((f / "summary.json").read_text())) for k, f in folders if (f / "summary.json").exists()]


def seed_losses(directory: Path, variant: str, multiple: int) -> np.ndarray | None:
    """``D[s, w]``: per seed and evaluation window, loss at ``multiple`` minus loss at 1× (the author's metric; the
    windows differ per length, so the two are paired by index, as in :func:`window_deltas`); None under 1 seed."""
    rows = []
    for _, folder, _ in seed_runs(directory):
        path = folder / "eval" / "gpu" / f"{variant}-author-windows.json"
        if not path.exists():
            continue
        losses = read_json(path, "gpu", need=("losses",), check=_losses_problem)["losses"]
        if str(multiple) in losses:
            rows.append(np.asarray(losses[str(multiple)]["all"], float) - np.asarray(losses["1"]["all"], float))
    return np.stack(rows) if rows else None


def measure_level(directory: Path, reps: int = 4000, seed: int = 0) -> dict:
    """The Welch rule's false-decision rate at each paper row's seeds per arm, under the gpu runs' own null.

    The null of :mod:`.verdict_level` (window effects shared, seed effects ``N(0, v_seed)``, residuals resampled),
    built at the longest evaluated multiple from every variant with ≥ :data:`.verdict_level.MIN_SEEDS` seeds, two
    arms of one law decided ``reps`` times per variant; rates pooled over variants with Clopper–Pearson intervals."""
    from .verdict_level import MIN_SEEDS, add_counts, decision_rates, false_decisions

    seeds = seed_runs(directory)
    counts = {v: sum(1 for _, _, sm in seeds if any(r["variant"] == v for r in sm["rows"])) for a in PAPER_ROWS for v in a}
    multiple = max(e["multiple"] for _, _, sm in seeds for r in sm["rows"] for e in r["eval"])
    laws = {v: D for v in sorted(counts) if (D := seed_losses(directory, v, multiple)) is not None
            and D.shape[0] >= MIN_SEEDS}
    configs = sorted({(counts[a], counts[b]) for a, b in PAPER_ROWS if counts[a] >= 2 and counts[b] >= 2})
    level = {}
    for na, nb in configs:
        total: dict[str, int] = {}
        for j, D in enumerate(laws.values()):
            x = false_decisions(D, reps, seed + 17 * j, na, nb)
            add_counts(total, {k: x[k] for k in ("agrees", "contradicts", "undecided")})
        level[f"{na}x{nb}"] = decision_rates(total)
    return {"claim": "gpu verdict level", "multiple": multiple, "reps_per_variant": reps,
            "laws": {v: int(D.shape[0]) for v, D in laws.items()}, "level": level,
            "nominal": {"decided": 0.05, "contradicts": 0.025}}


def _level(directory: Path) -> dict:
    path = directory.joinpath(*GPU_DIR, "verdict_level.json")
    try:
        return json.loads(path.read_text())["level"]
    except (OSError, ValueError, KeyError):
        return {}


def log_ratio(summary: dict, variant: str, multiple: int) -> float | None:
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

    seeds = [(k, sm) for k, _, sm in seed_runs(directory)]
    if not seeds:
        return None
    s = seeds[0][1]
    level = _level(directory)
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
            xa = [x for x in (log_ratio(sm, a, m) for _, sm in seeds) if x is not None]
            xb = [x for x in (log_ratio(sm, b, m) for _, sm in seeds) if x is not None]
            if len(xa) >= 2 and len(xb) >= 2:
                w = welch(np.array(xa), np.array(xb))
                welch_cells.append({"multiple": m, "tokens": m * L_train, "seeds_a": len(xa), "seeds_b": len(xb),
                                    **{k: float(w[k]) for k in ("delta", "ci_low", "ci_high", "p", "df")},
                                    "level": level.get(f"{len(xa)}x{len(xb)}"),
                                    "verdict": str(decide(w["delta"], w["p"]))})
        verdict = welch_cells[-1]["verdict"] + f" ({welch_cells[-1]['tokens']:,} tok.)" if welch_cells else \
            "undecided (1 seed)"
        rows.append({"row": f"{a} > {b}", "verdict": verdict, "cells": cells, "welch": welch_cells})
    return {"preset": s["preset"], "L_train": L_train, "runs": runs, "rows": rows,
            "seed_runs": [(k, {r["variant"]: r for r in sm["rows"]}) for k, sm in seeds]}


def _seed_band(per_seed: list[dict]) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """Lengths reached by every seed, and the geometric mean ratio with its 95% t interval over seeds."""
    from scipy import stats

    lengths = sorted(set.intersection(*({e["L"] for e in x["eval"]} for x in per_seed)))
    logs = np.array([[np.log(next(e["ratio_all"] for e in x["eval"] if e["L"] == t)) for t in lengths]
                     for x in per_seed])
    m = logs.mean(0)
    if len(per_seed) < 2:
        return lengths, np.exp(m), np.exp(m), np.exp(m)
    half = stats.t.ppf(0.975, len(per_seed) - 1) * logs.std(0, ddof=1) / np.sqrt(len(per_seed))
    return lengths, np.exp(m), np.exp(m - half), np.exp(m + half)


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
                per_seed = [sr[v] for _, sr in r["seed_runs"] if v in sr]
                if not per_seed:
                    continue
                style = sp.variant_style(v, i)
                L, mean, lo, hi = _seed_band(per_seed)
                ax.plot(L, mean, "-", ms=3, lw=1.4, label=f"{v} ({len(per_seed)} seed{'s' * (len(per_seed) > 1)})",
                        **style)
                if len(per_seed) > 1:
                    ax.fill_between(L, lo, hi, alpha=0.15, color=style.get("color"), lw=0)
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
        sp.caption(fig, f"gpu preset on one H200, L_train = {r['L_train']}: solid, the geometric mean over training "
                        "seeds (shaded: the 95% t interval over seeds where there are ≥ 2); dashed, the paper (L_train = 512, "
                        "16 × 768, OpenWebText) at the same absolute lengths. Dotted: 16K and 32K, the edges of the "
                        "paper's tied (≤ 16K) and split (≥ 32K) regimes for Q/K vs Q/K/V.")
        return sp.save(fig, out_png)


def main(argv: list[str] | None = None) -> int:
    """Measure the Welch rule's level at the gpu runs' seed counts; write ``gpu/verdict_level.json``."""
    import argparse

    from stylized.harness.results import atomic_write_text, to_jsonable

    from ..paths import results_root

    ap = argparse.ArgumentParser(prog="python -m simulations.transformer.c6.gpu_report", description=main.__doc__)
    ap.add_argument("--reps", type=int, default=4000, help="null replicates per variant and configuration")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 1_000_000:
        ap.exit(2, "--reps: must be an integer in [1, 1000000]\n")
    root = results_root().parent
    if not root.joinpath(*GPU_DIR, "summary.json").exists():
        ap.exit(2, f"no gpu run committed under {root.joinpath(*GPU_DIR)}\n")
    res = measure_level(root, args.reps)
    atomic_write_text(root.joinpath(*GPU_DIR, "verdict_level.json"), json.dumps(to_jsonable(res), indent=1) + "\n")
    for cfg, x in res["level"].items():
        print(f"{cfg} seeds per arm: decided {x['decided_rate']:.4f} [{x['decided_ci'][0]:.4f}, {x['decided_ci'][1]:.4f}]"
              f", contradicts {x['contradicts_rate']:.4f} ({x['reps']} null replicates, laws {res['laws']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
