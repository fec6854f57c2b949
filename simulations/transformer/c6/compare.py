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
from typing import TYPE_CHECKING

import numpy as np

from stylized.core.errors import InvalidInput
from stylized.harness.results import figures_dir

from ..data.corpus import load_corpus
from ..evaluate.extrapolation import (
    EVAL_FIELDS,
    cache_problem,
    eval_cache_path,
    evaluate_checkpoint,
    load_window_losses,
    paper_ratio,
    parse_losses,
    summarize,
    window_ends,
)
from ..model.presets import Preset
from ..paths import checkpoint_path, run_root
from ..train.checkpoints import check_dir, check_figure
from ..train.jobs import check_variants_and_workers, map_jobs
from ..train.loop import check_corpus, train
from .plot import plot_compare
from .verdicts import RULE, paper_verdicts

if TYPE_CHECKING:
    from ..data.corpus import Corpus
    from ..model.config import GPTConfig
    from ..model.presets import EvalConfig, TrainConfig

#: the variants whose paper rows need several seeds
SEEDED_VARIANTS = ("rope", "random-qk", "random-qkv", "learned-qk", "learned-qkv")
#: the cpu preset's default seeds per variant: five where the contested row (learned-qk > learned-qkv) hangs
#: on them, three for every other variant (ALiBi, NoPE and PaTH included); a variant not named here gets seed 0
CPU_SEEDS: dict[str, tuple[int, ...]] = {
    "rope": (0, 1, 2), "random-qk": (0, 1, 2), "random-qkv": (0, 1, 2), "learned-qk": (0, 1, 2, 3, 4),
    "learned-qkv": (0, 1, 2, 3, 4), "nope": (0, 1, 2), "alibi": (0, 1, 2), "path": (0, 1, 2),
}
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


def paired_diffs(paths: dict[str, list[Path]], multiple: int, metric: str) -> dict[str, np.ndarray]:
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


def seeds_of(variant: str, preset: str, seeds: list[int] | None, extra_seeds: list[int] | None) -> list[int]:
    """The seeds ``compare`` runs for ``variant``: ``seeds`` (for :data:`SEEDED_VARIANTS`) or ``extra_seeds`` (the
    others) when given, else the preset's defaults (:data:`CPU_SEEDS` for cpu; 0, 1, 2 and 0 otherwise)."""
    given = seeds if variant in SEEDED_VARIANTS else extra_seeds
    if given is not None:
        return list(given)
    if preset == "cpu":
        return list(CPU_SEEDS.get(variant, (0,)))
    return [0, 1, 2] if variant in SEEDED_VARIANTS else [0]


def _has_tables(variant: str, mcfg: GPTConfig) -> bool:
    """Whether ``variant`` trains angle tables, the only parameters ``angle_lr_mult`` reaches."""
    from dataclasses import replace

    from ..model.gpt import GPT

    return any(n.endswith("angle_table") for n, _ in GPT(replace(mcfg, variant=variant)).named_parameters())


def _same_preset(previous: Path, model: dict, train: dict, variant: str | None = None,
                 mcfg: GPTConfig | None = None) -> bool:
    """Whether the comparison last written at ``previous`` ran this preset's model and training settings: the
    evaluation caches carry no model settings, so without checkpoints only then are they this preset's.

    With ``variant`` (and its ``mcfg``) the question is asked for that variant alone: a variant without angle
    tables is untouched by the tables' multiplier ``angle_lr_mult``, so a change of it alone keeps its caches.
    """
    try:
        prev = json.loads(previous.read_text(encoding="utf-8"))["params"]
        prev_model, same_train = dict(prev["model"]), prev["train"] == train
    except (OSError, ValueError, KeyError, TypeError):
        return False
    now = dict(model)
    if variant is not None and mcfg is not None and not _has_tables(variant, mcfg):
        prev_model.pop("angle_lr_mult", None)
        now.pop("angle_lr_mult", None)
    same = same_train and prev_model == now
    if not same:
        who = f"{variant}: " if variant else ""
        print(f"[compare] {who}{previous} ran other model or training settings: its evaluation caches are not "
              "reused without checkpoints", flush=True)
    return same


def cached_rows(path: Path, variant: str, seed: int, mcfg: GPTConfig, tcfg: TrainConfig, ecfg: EvalConfig,
                corpus: Corpus) -> list[dict] | None:
    """Summary rows of (variant, seed) from its committed evaluation cache when its checkpoint is absent.

    The cache is used only when it is well formed (:func:`.evaluate.cache_problem`) and its key matches this
    run's settings (steps, multiples, windows, samples, evaluation seed 0, corpus); it cannot be checked against
    the weights' digest (no checkpoint).  ``None`` otherwise: the job trains and evaluates as usual.
    """
    cpath = eval_cache_path(path)
    if path.exists() or not cpath.exists():
        return None
    try:
        saved = json.loads(cpath.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    key = saved.get("key", {}) if isinstance(saved, dict) else {}
    want = {"step": tcfg.steps, "multiples": list(ecfg.multiples), "n_windows": ecfg.n_windows,
            "n_samples": ecfg.n_samples, "seed": 0, "corpus": corpus.description}
    if cache_problem(saved, EVAL_FIELDS) is not None or any(key.get(k) != x for k, x in want.items()):
        print(f"[compare] {variant} s{seed}: the cache {cpath} does not match this run; training", flush=True)
        return None
    from dataclasses import replace

    from ..model.gpt import GPT

    rows = summarize(parse_losses(saved["losses"]), variant, mcfg.block_size, ecfg.n_boot, 0)
    n_params = GPT(replace(mcfg, variant=variant)).num_params()
    for r in rows:
        r["train_steps"], r["n_params"], r["seed"] = int(key["step"]), n_params, seed
    return rows


def _job(preset: str, v: str, s: int, steps: int, data, path: str, device, progress: bool, threads: int | None,
         tok: dict | None = None, corpus=None):
    """Train (resume) and evaluate one (variant, seed); runs in a worker process when ``workers`` > 1."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    tok = tok or {}
    config = Preset.from_name(preset, variant=v, steps=steps, seed=s, data=data, **tok)
    tcfg, ecfg = config.train, config.eval
    corpus = corpus or load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    t1 = time.time()
    info = train(config, resume=True, ckpt=path, corpus=corpus, progress=progress, device=device)
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
    out_root: str | os.PathLike | None = None,
) -> dict:
    """Train missing checkpoints, evaluate all, decide the paper rows; write JSON + CSV + figure.

    ``name`` sets the output files ``<preset>_<name>.{json,csv}`` (the combined variants use
    ``"combined_seeds"``); checkpoints stay under ``<root>/checkpoints/<preset>/`` for every name.

    ``seeds`` apply to :data:`SEEDED_VARIANTS`, ``extra_seeds`` to the others; each defaults to the
    preset's (:func:`seeds_of`: :data:`CPU_SEEDS` for cpu, else 0, 1, 2 and 0).  A (variant, seed) whose
    checkpoint is absent but whose evaluation cache is committed and matches the run's settings is read
    from that cache (:func:`cached_rows`), not retrained.  ``workers`` > 1 runs that many (variant, seed)
    jobs at once in separate processes with one torch thread each (the cpu preset on 2 cores: ``workers=2``).
    ``out_root``: where the JSON, CSV and figure go instead of the results root (a subset run,
    :mod:`~simulations.transformer.paths`); checkpoints and evaluation caches stay under the results root.
    """
    t0 = time.time()
    variants = check_variants_and_workers(variants, workers)
    tok = {k: v for k, v in (("tokenizer", tokenizer), ("bpe_vocab", bpe_vocab)) if v is not None}
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"name={name!r} must be a non-empty word of letters, digits, '-' or '_'")
    root, fig_path, canonical = output_paths(preset + ("-bpe" if tokenizer == "bpe" else ""), results_dir, figure,
                                             name)
    if out_root is not None:
        out_root, canonical = Path(out_root), False
        fig_path = Path(figure) if figure else out_root / fig_path.name
        check_dir(out_root, "results")
    config = Preset.from_name(preset, variant=variants[0], steps=steps, data=data, **tok)
    mcfg, tcfg, ecfg = config.model, config.train, config.eval
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
    seed_lists = {v: seeds_of(v, preset, seeds, extra_seeds) for v in variants}
    all_jobs = [(v, s, checkpoint_path(preset, v, s, root)) for v in variants for s in seed_lists[v]]
    for v, _s, path in all_jobs:
        paths.setdefault(v, []).append(path)

    def done(v, s, rows, t) -> None:
        timings[f"{v}/s{s}"] = t
        per_seed.setdefault(v, {})[s] = rows
        print(f"[compare] {v} s{s}: ppl@1x={rows[0]['ppl']:.3f} author ratios "
              + " ".join(f"{r['multiple']}x:{r['ratio_all']:.2f}" for r in rows), flush=True)

    record = config.record()  # the preset's settings as the result records them
    train_params = {**record["train"], "steps": tcfg.steps, "data": tcfg.data or "builtin"}
    previous = root / f"{preset}_{name}.json"
    use_caches = {v: _same_preset(previous, record["model"], train_params, v, mcfg) for v in variants}
    jobs = []
    for v, s, path in all_jobs:
        rows = cached_rows(path, v, s, mcfg, tcfg, ecfg, corpus) if use_caches[v] else None
        if rows is None:
            jobs.append((v, s, path))
        else:
            done(v, s, rows, {"train_s": None, "eval_s": None, "source": "committed eval cache (no checkpoint)"})
    map_jobs(_job, [(preset, v, s, tcfg.steps, data, str(path), device, progress, None, tok, corpus) for v, s, path in jobs],
             [(preset, v, s, tcfg.steps, data, str(path), device, False, 1, tok) for v, s, path in jobs], workers,
             on_result=lambda r: done(*r))
    per_seed = {v: dict(sorted(per_seed[v].items())) for v in variants if v in per_seed}
    top = max(ecfg.multiples)
    verdicts = {m: paper_verdicts(paired_diffs(paths, top, m), top) for m in METRICS}
    result = {
        "claim": "transformer-compare",
        "params": {
            "preset": preset, "variants": variants, "seeds": seed_lists,
            "model": record["model"], "train": train_params,
            "eval": record["eval"], "corpus": corpus.description,
            "tokens_trained": tcfg.steps * tcfg.batch_size * mcfg.block_size,
            "tokenizer": tcfg.tokenizer, "bpe_vocab": tcfg.bpe_vocab if tcfg.tokenizer == "bpe" else None,
            "metrics": METRICS,
            "interval": RULE,
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
    from stylized.harness.results import rows_csv, write_pair

    json_path, csv_path = write_pair(Path(out_root or root) / f"{preset}_{name}.json", result,
                                     rows_csv(result["per_seed"]))
    plot_compare(json_path, fig_path)
    result["files"] = {"csv": str(csv_path), "json": str(json_path), "figure": str(fig_path)}
    return result
