"""The contested C6 row, ``learned-qk > learned-qkv``, as a function of the tables' learning-rate multiplier.

The cpu preset trains the learned angle tables at ``angle_lr_mult = 3`` (×3), picked by the in-distribution
rule of :mod:`.lr_sweep` before any extrapolation number was looked at.  The sweep showed, at one seed,
that the row's sign moves with that multiplier; this module measures it at ≥ 3 seeds per multiplier
(×1, ×3, ×10, ×30; seeds 0, 1, 2) on both metrics, at 64× and 128× ``L_train``, with the verdict rule of
:mod:`.verdicts` (Welch's t-test on the per-seed mean log-ratios, two-sided, level 0.05).  ×3 reuses the
comparison's own runs (the same checkpoints and evaluation caches); the other multipliers are the sweep's
runs (``checkpoints/cpu-lr-sweep/``).  Nothing here chooses a setting: the chosen multiplier is marked.

Absolute lengths: the cpu preset's ``L_train`` is 64, so 64× and 128× are 4,096 and 8,192 tokens, inside
the range where the paper's Q/K and Q/K/V rows are tied (≤ 16K tokens; they split only at 32K–65K).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..model.presets import CPU_ANGLE_LR_MULT, Preset
from ..paths import results_root
from ..train.readers import read_json
from .compare import paired_diffs
from .lr_sweep import MULTS, SWEEP_VARIANTS, sweep_checkpoint, train_and_evaluate
from .verdicts import ALPHA, RULE, seed_means, verdict_row

__all__ = ["SEEDS", "MULTIPLES", "robustness", "write_robustness", "plot_robustness", "missing_runs", "train_missing"]

SEEDS: tuple[int, ...] = (0, 1, 2)
MULTIPLES: tuple[int, ...] = (64, 128)
METRICS = {"all": "author's metric (every position)", "target": "our metric (the last L_train positions)"}


def _have(variant: str, mult: float, seed: int, root: Path | None) -> bool:
    from ..evaluate.extrapolation import eval_cache_path

    return eval_cache_path(sweep_checkpoint(variant, mult, seed, root)).exists()


def missing_runs(mults=MULTS, seeds=SEEDS, root: Path | None = None) -> list[tuple[str, float, int]]:
    """(variant, multiplier, seed) whose evaluation cache is absent."""
    return [(v, m, s) for m in mults for s in seeds for v in SWEEP_VARIANTS if not _have(v, m, s, root)]


def train_missing(mults=MULTS, seeds=SEEDS, root: Path | None = None, workers: int = 1,
                  progress: bool = True) -> int:
    """Train (resuming) and evaluate every missing run; returns how many ran."""
    from ..train.jobs import map_jobs

    todo = missing_runs(mults, seeds, root)
    jobs = [(v, m, s, str(sweep_checkpoint(v, m, s, root))) for v, m, s in todo]
    map_jobs(train_and_evaluate, [(v, m, s, p, progress, 1) for v, m, s, p in jobs],
             [(v, m, s, p, False, 1) for v, m, s, p in jobs], workers,
             on_result=lambda _: print(".", end="", flush=True) if progress else None)
    return len(jobs)


def robustness(mults=MULTS, seeds=SEEDS, root: Path | None = None) -> dict:
    """Every (metric, multiplier, length) row of ``learned-qk > learned-qkv`` from the evaluation caches."""
    rows, L_train = [], Preset.from_name("cpu").model.block_size
    for metric in METRICS:
        for m in mults:
            paths = {v: [sweep_checkpoint(v, m, s, root) for s in seeds if _have(v, m, s, root)]
                     for v in SWEEP_VARIANTS}
            for L in MULTIPLES:
                diffs = paired_diffs(paths, L, metric)
                if set(diffs) != set(SWEEP_VARIANTS):
                    continue
                r = verdict_row(*SWEEP_VARIANTS, seed_means(diffs[SWEEP_VARIANTS[0]]), seed_means(diffs[SWEEP_VARIANTS[1]]))
                r.update(metric=metric, mult=float(m), multiple=int(L),
                         tokens=int(L * L_train),
                         chosen=float(m) == CPU_ANGLE_LR_MULT, seeds=[s for s in seeds if _have(SWEEP_VARIANTS[0], m, s, root)])
                rows.append(r)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("agrees", "contradicts", "undecided")}
    return {"claim": "transformer-lr-robustness", "row": f"{SWEEP_VARIANTS[0]} > {SWEEP_VARIANTS[1]}",
            "rule": RULE, "level": ALPHA, "chosen": CPU_ANGLE_LR_MULT, "mults": [float(m) for m in mults],
            "seeds": list(seeds), "rows": rows, "counts": counts,
            "regime": "cpu preset: L_train = 64, so 64x and 128x are 4,096 and 8,192 tokens, inside the paper's "
                      "tied regime (Q/K and Q/K/V tied up to 16K tokens; split at 32K-65K)"}


def write_robustness(result: dict, root: Path | None = None, figure: Path | None = None) -> Path:
    from stylized.harness.results import atomic_write_text, to_jsonable

    path = Path(root or results_root()) / "cpu_lr_robustness.json"
    atomic_write_text(path, json.dumps(to_jsonable(result), indent=1) + "\n")
    if figure is not None:
        plot_robustness(path, figure)
    return path


def plot_robustness(path: Path, out_png: Path) -> Path:
    """Δ = mean log-ratio(learned-qk) − mean log-ratio(learned-qkv) per multiplier, per-seed points and the
    Welch 95% interval, at 64× and 128×, one panel per metric; the chosen multiplier shaded."""
    from stylized.harness import plotting as sp

    res = read_json(path, "lr-robustness")
    with sp.theme():
        fig, axes = sp.figure(1, 2, height=3.3, sharey=True)
        for ax, metric in zip(axes, METRICS):
            for k, L in enumerate(MULTIPLES):
                rs = sorted((r for r in res["rows"] if r["metric"] == metric and r["multiple"] == L), key=lambda r: r["mult"])
                if not rs:
                    continue
                x = np.array([r["mult"] for r in rs]) * (1.0 + 0.08 * (k - 0.5))
                y = np.array([r["delta_log"] for r in rs])
                err = np.array([[r["delta_log"] - r["ci_low"], r["ci_high"] - r["delta_log"]] for r in rs]).T
                ax.errorbar(x, y, yerr=err, fmt="o-", ms=4, lw=1.2, capsize=3, color=f"C{k}",
                            label=f"{L}× ({L * 64:,} tokens): Δ, Welch 95% CI")
                for xi, r in zip(x, rs):
                    pts = np.asarray(r["per_seed_a"]) - np.mean(r["per_seed_b"])
                    ax.plot(np.full(len(pts), xi), pts, ".", ms=3, color=f"C{k}", alpha=0.45)
                for xi, r in zip(x, rs):
                    ax.annotate(r["verdict"][0].upper(), (xi, r["ci_high"]), textcoords="offset points", xytext=(0, 3),
                                ha="center", fontsize=6.5, color=f"C{k}")
            ax.axvspan(res["chosen"] / 1.25, res["chosen"] * 1.25, color="0.85", zorder=0, label=f"chosen ×{res['chosen']:g}")
            ax.axhline(0, color="0.3", lw=0.7)
            ax.set_xscale("log")
            ax.set_xticks(res["mults"], [f"×{m:g}" for m in res["mults"]])
            ax.set_xlabel("angle-table lr multiplier")
            ax.set_title(METRICS[metric])
        axes[0].set_ylabel("Δ log PPL ratio, learned-qk − learned-qkv\n(> 0: the paper's side)")
        axes[0].legend(loc="best", fontsize=6.5)
        sp.caption(fig, f"Seeds {', '.join(map(str, res['seeds']))} per multiplier; letters: verdict of the Welch test "
                        "(A agrees, C contradicts, U undecided, level 0.05). Small dots: each learned-qk seed minus "
                        "the learned-qkv mean. " + res["regime"] + ".")
        return sp.save(fig, out_png)


def summary_lines(res: dict) -> list[str]:
    out = []
    for r in res["rows"]:
        out.append(f"{r['metric']:>6} x{r['mult']:<4g} {r['multiple']:>3}x: Δ={r['delta_log']:+.3f} "
                   f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] p={r['p']:.3f} ({len(r['seeds'])} seeds) {r['verdict']}"
                   + (" (chosen)" if r["chosen"] else ""))
    return out
