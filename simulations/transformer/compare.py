"""C6: train what is missing, evaluate every (variant, seed), decide the paper's rows, draw the figure.

Canonical output (preset ``cpu``, default directories) goes to
``simulations/results/transformer/cpu_compare.{json,csv}`` and
``figures/transformer_ppl_ratio.png``; any other preset, or an explicit ``results_dir``,
writes under that run's own directory (``results/transformer/runs/<preset>/`` by default),
never over the committed results or figures.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from stylized.errors import InvalidInput
from stylized.results import figures_dir

from .data import load_corpus
from .evaluate import evaluate_checkpoint, load_window_losses, paper_ratio, window_ends
from .fileio import check_dir, check_figure
from .jobs import check_variants_and_workers, map_jobs
from .train import check_corpus, checkpoint_path, get_preset, make_configs, run_root, train
from .verdicts import paper_verdicts

FIGURES_DIR = figures_dir()  # fixed at import: prefer figures_dir(), which follows --out
#: the variants whose paper rows need several seeds
SEEDED_VARIANTS = ("rope", "random-qk", "random-qkv", "learned-qk", "learned-qkv")
METRICS = {"all": "the author's: every position of the length-L window",
           "target": "ours: the last L_train positions (the same targets at every length)"}


def output_paths(preset: str, results_dir: str | os.PathLike | None, figure: str | os.PathLike | None,
                 name: str = "compare"):
    """(results root, figure path, canonical?) for a comparison run.

    ``name`` other than ``"compare"`` (e.g. ``"combined"``) keeps the canonical checkpoints'
    root but draws its figure next to its own ``<preset>_<name>.json``, never over C6's.
    """
    root, canonical = run_root(preset, results_dir)
    if name != "compare":
        default = root / f"{preset}_{name}.png"
    else:
        default = (figures_dir() if canonical else root) / "transformer_ppl_ratio.png"
    return root, Path(figure) if figure else default, canonical and figure is None


def _pooled_rows(per_seed: dict[str, dict[int, list[dict]]], metric: str) -> list[dict]:
    """One row per (variant, multiple): the seed-mean ratio in ``metric`` and the per-seed values."""
    key = "ratio_all" if metric == "all" else "ratio"
    out = []
    for v, by_seed in per_seed.items():
        mults = sorted({r["multiple"] for rows in by_seed.values() for r in rows})
        for m in mults:
            vals = [r[key] for rows in by_seed.values() for r in rows if r["multiple"] == m]
            ppl = [r["ppl_all" if metric == "all" else "ppl"] for rows in by_seed.values() for r in rows
                   if r["multiple"] == m]
            out.append({"variant": v, "metric": metric, "multiple": m, "seeds": len(vals),
                        "estimate": float(np.exp(np.mean(np.log(vals)))), "per_seed": vals,
                        "ppl": float(np.exp(np.mean(np.log(ppl)))), "theory": paper_ratio(v, m)})
    return out


def _diffs(paths: dict[str, list[Path]], multiple: int, metric: str) -> dict[str, np.ndarray]:
    out = {}
    for v, ps in paths.items():
        rows = []
        for p in ps:
            w = load_window_losses(p)
            if multiple in w:
                rows.append(w[multiple][metric] - w[1][metric])
        if rows:
            out[v] = np.stack(rows)
    return out


def _job(preset: str, v: str, s: int, steps: int, data, path: str, device, progress: bool, threads: int | None,
         tok: dict | None = None, corpus=None):
    """Train (resume) and evaluate one (variant, seed); runs in a worker process when ``workers`` > 1."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    tok = tok or {}
    _, tcfg, ecfg = make_configs(v, preset, steps=steps, data=data, **tok)
    corpus = corpus or load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    t1 = time.time()
    info = train(v, preset, steps=steps, seed=s, data=data, resume=True, ckpt=path, corpus=corpus,
                 progress=progress, device=device, **tok)
    t2 = time.time()
    rows = evaluate_checkpoint(path, ecfg, corpus, 0, device)
    for r in rows:
        r["n_params"], r["seed"] = info["n_params"], s
    return v, s, rows, {"train_s": round(t2 - t1, 1), "eval_s": round(time.time() - t2, 1)}


def compare(
    preset: str = "cpu",
    variants: list[str] | None = None,
    *,
    seeds: list[int] | None = None,
    extra_seeds: list[int] | None = None,
    steps: int | None = None,
    data: str | None = None,
    results_dir: str | os.PathLike | None = None,
    figure: str | os.PathLike | None = None,
    device: str | None = None,
    progress: bool = True,
    workers: int = 1,
    tokenizer: str | None = None,
    bpe_vocab: int | None = None,
    name: str = "compare",
) -> dict:
    """Train missing checkpoints, evaluate all, decide the paper rows; write JSON + CSV + figure.

    ``name`` sets the output files ``<preset>_<name>.{json,csv}`` (the combined variants use
    ``"combined_seeds"``); checkpoints stay under ``<root>/checkpoints/<preset>/`` for every name.

    ``seeds`` (default 0, 1, 2) apply to :data:`SEEDED_VARIANTS`; ``extra_seeds`` (default 0)
    to the others.  ``workers`` > 1 runs that many (variant, seed) jobs at once in separate
    processes with one torch thread each (the cpu preset on 2 cores: ``workers=2``).
    """
    t0 = time.time()
    variants = check_variants_and_workers(variants, workers)
    seeds = list(seeds if seeds is not None else [0, 1, 2])
    extra_seeds = list(extra_seeds if extra_seeds is not None else [0])
    tok = {k: v for k, v in (("tokenizer", tokenizer), ("bpe_vocab", bpe_vocab)) if v is not None}
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"name={name!r} must be a non-empty word of letters, digits, '-' or '_'")
    root, fig_path, canonical = output_paths(preset + ("-bpe" if tokenizer == "bpe" else ""), results_dir, figure,
                                             name)
    mcfg, tcfg, ecfg = make_configs(variants[0], preset, steps=steps, data=data, **tok)
    check_dir(root / "checkpoints" / preset, "--results-dir")  # before any work: the destinations can be written
    check_figure(fig_path, "--figure")
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)  # workers load their own
    check_corpus(corpus, mcfg.block_size)
    try:  # the evaluation's longest window must fit the held-out split, before any training
        window_ends(len(corpus.val), mcfg.block_size * max(ecfg.multiples), ecfg.n_windows)
    except ValueError as e:
        raise InvalidInput(f"--data: the corpus ({corpus.description}): {e}") from None
    per_seed: dict[str, dict[int, list[dict]]] = {}
    paths: dict[str, list[Path]] = {}
    timings: dict[str, dict[str, float]] = {}
    jobs = [(v, s, checkpoint_path(preset, v, s, root)) for v in variants
            for s in (seeds if v in SEEDED_VARIANTS else extra_seeds)]
    for v, _s, path in jobs:
        paths.setdefault(v, []).append(path)

    def done(v, s, rows, t) -> None:
        timings[f"{v}/s{s}"] = t
        per_seed.setdefault(v, {})[s] = rows
        print(f"[compare] {v} s{s}: ppl@1x={rows[0]['ppl']:.3f} author ratios "
              + " ".join(f"{r['multiple']}x:{r['ratio_all']:.2f}" for r in rows), flush=True)

    map_jobs(_job, [(preset, v, s, tcfg.steps, data, str(path), device, progress, None, tok, corpus) for v, s, path in jobs],
             [(preset, v, s, tcfg.steps, data, str(path), device, False, 1, tok) for v, s, path in jobs], workers,
             on_result=lambda r: done(*r))
    per_seed = {v: dict(sorted(per_seed[v].items())) for v in variants if v in per_seed}
    top = max(ecfg.multiples)
    verdicts = {m: paper_verdicts(_diffs(paths, top, m), top, seed=0) for m in METRICS}
    p = get_preset(preset)
    result = {
        "claim": "transformer-compare",
        "params": {
            "preset": preset, "variants": variants, "seeds": seeds, "extra_seeds": extra_seeds,
            "model": p["model"], "train": {**p["train"], "steps": tcfg.steps, "data": tcfg.data or "builtin"},
            "eval": {**p["eval"]}, "corpus": corpus.description,
            "tokens_trained": tcfg.steps * tcfg.batch_size * p["model"]["block_size"],
            "tokenizer": tcfg.tokenizer, "bpe_vocab": tcfg.bpe_vocab if tcfg.tokenizer == "bpe" else None,
            "metrics": METRICS,
            "interval": "95% percentile bootstrap: windows resampled jointly for all variants, seeds per variant",
            "theory_source": "paper's reported PPL(L)/PPL(512), train length 512, the author's metric",
            "timings": timings,
        },
        "holds": verdicts["all"]["holds"],
        "verdicts": verdicts,
        "rows": _pooled_rows(per_seed, "all") + _pooled_rows(per_seed, "target"),
        "per_seed": [r for v in per_seed.values() for rows in v.values() for r in rows],
        "canonical": canonical,
        "seconds": round(time.time() - t0, 1),
    }
    from stylized.results import rows_csv, write_pair

    json_path, csv_path = write_pair(root / f"{preset}_{name}.json", result, rows_csv(result["per_seed"]))
    plot_compare(json_path, fig_path)
    result["files"] = {"csv": str(csv_path), "json": str(json_path), "figure": str(fig_path)}
    return result


def plot_compare(result_json_path: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """PPL(L)/PPL(L_train) vs L/L_train (log-log), the author's metric left and ours right; paper dashed.

    Writes ``out_png`` and the PDF beside it in the project's plot theme (:mod:`stylized.plotting`).
    """
    import matplotlib.pyplot as plt

    from stylized import plotting as sp

    res = json.loads(Path(result_json_path).read_text())
    p = res["params"]
    with sp.theme():
        fig, axes = sp.figure(1, 2, height=3.3, sharey=True)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for ax, metric in zip(axes, ("all", "target")):
            for i, v in enumerate(p["variants"]):
                rs = sorted((r for r in res["rows"] if r["variant"] == v and r["metric"] == metric),
                            key=lambda r: r["multiple"])
                if not rs:
                    continue
                c = colors[i % len(colors)]
                m = [r["multiple"] for r in rs]
                ax.plot(m, [r["estimate"] for r in rs], "o-", color=c, ms=3, lw=1.2,
                        label=f"{v} ({rs[0]['seeds']} seed{'s' if rs[0]['seeds'] > 1 else ''})")
                ax.fill_between(m, [min(r["per_seed"]) for r in rs], [max(r["per_seed"]) for r in rs], color=c,
                                alpha=0.15, lw=0)
                th = [(r["multiple"], r["theory"]) for r in rs if r["theory"] is not None]
                if metric == "all" and len(th) > 1:
                    ax.plot(*zip(*th), "--", color=c, alpha=0.7, lw=0.9)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.axhline(1.0, color="0.4", lw=0.6)
            ax.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
            ax.set_title("author's metric (all positions)" if metric == "all" else r"same targets (last $L_{train}$)")
        axes[0].plot([], [], "k--", lw=0.9, alpha=0.7, label="paper, same colour")
        axes[0].set_ylabel(r"$\mathrm{PPL}(L)\,/\,\mathrm{PPL}(L_{\mathrm{train}})$")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncol=3)
        sp.caption(fig, f"C6, preset '{p['preset']}': L_train = {p['model']['block_size']}, {p['train']['steps']} steps. "
                        "Lines: mean over seeds; band: seed range (min to max); dashed: the paper's reported ratio "
                        "(L_train = 512). Left: every position of the length-L window; right: the last L_train "
                        "positions (the same targets at every length).")
        return sp.save(fig, out_png)
