"""Far-context use: does a trained model's loss on the same targets improve with context beyond L_train?

Protocol
--------
The evaluation windows of :mod:`~simulations.transformer.evaluate.extrapolation` (``n_windows`` ends ``e`` spread over the validation
stream, the same for every variant).  At ``L = m·L_train`` the model reads the L tokens
``[e − L, e)``; the targets are the last ``T_L = min(T, L − L_train + 1)`` positions (``T_1 = 1``),
so every target sees at least ``L_train`` tokens.  By default ``T = L_train``: for ``m ≥ 2`` the
targets are then exactly C6's same-target positions (the last ``L_train`` of each window, the same
tokens at every L), and their full-context losses are C6's cached per-window losses.  Each
target's loss is taken twice:

* *full*: from the length-L pass (its context is everything of the window before it);
* *truncated*: from a pass over only the ``L_train`` tokens ending at it (a sliding window).

At ``L = L_train`` the two contexts coincide (ratio 1 up to the random variants' fresh draws; a
correctness check).  Per window
``D(w) = mean_full(w) − mean_truncated(w)``; the far-context ratio is
``exp(mean_w D)``: below 1 the far context helps, 1 the variant ignores it, above 1 it hurts.
Interval: 95% paired percentile bootstrap over windows; per variant pooled over seeds with
windows and seeds resampled (:func:`.verdicts.pooled_log_ratio`).  Per-window results are cached
beside the C6 caches, keyed by the weights digest.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..c6.verdicts import pooled_log_ratio
from ..data.corpus import corpus_for, load_corpus
from ..model.gpt import GPT
from ..model.presets import EvalConfig, Preset
from ..paths import checkpoint_path, command_outputs
from ..train.checkpoints import check_dir, check_figure, read_checkpoint
from ..train.jobs import check_variants_and_workers, map_jobs
from ..train.loop import default_device, load_model, train
from ..train.readers import read_json
from .extrapolation import (
    evaluate_checkpoint,
    load_window_losses,
    read_loss_cache,
    weights_digest,
    window_ends,
    write_loss_cache,
)

#: targets scored per window (the last T positions); None: L_train, C6's same-target positions
N_TARGETS: int | None = None
#: seeds per variant, as in the C6 comparison (:mod:`~simulations.transformer.c6.compare`)
SEEDED_VARIANTS = ("rope", "random-qk", "random-qkv", "learned-qk", "learned-qkv")
LEVEL = 0.95


def n_targets_at(L: int, L_train: int, n_targets: int | None = N_TARGETS) -> int:
    """``T_L``: targets at length L (every one with at least ``L_train`` tokens of context)."""
    return max(1, min(L_train if n_targets is None else n_targets, L - L_train + 1))


def _losses(model: GPT, x: torch.Tensor, y: torch.Tensor, gen: torch.Generator, device: str) -> torch.Tensor:
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
        logits, _ = model(x.to(device), generator=gen)
    return F.cross_entropy(logits.float().transpose(1, 2), y.to(device), reduction="none").double().cpu()


@torch.no_grad()
def sliding_losses(model: GPT, tokens: np.ndarray, ends: np.ndarray, n_targets: int, width: int,
                   gen: torch.Generator, batch_tokens: int = 32768, device: str = "cpu") -> np.ndarray:
    """Loss of each of the last ``n_targets`` targets of every window, given the ``width`` tokens ending at it.

    Returns [n_windows, n_targets]; column ``j`` is the target at input position ``e − n_targets + j``
    (predicting token ``e − n_targets + j + 1``).
    """
    out = np.zeros((len(ends), n_targets))
    seqs = [(w, j) for w in range(len(ends)) for j in range(n_targets)]
    bs = max(1, batch_tokens // width)
    for s in range(0, len(seqs), bs):
        chunk = seqs[s: s + bs]
        starts = [int(ends[w]) - n_targets + j - width + 1 for w, j in chunk]
        x = torch.from_numpy(np.stack([tokens[a: a + width] for a in starts]).astype(np.int64))
        y = torch.from_numpy(np.stack([tokens[a + 1: a + width + 1] for a in starts]).astype(np.int64))
        loss = _losses(model, x, y, gen, device)[:, -1].numpy()
        for (w, j), v in zip(chunk, loss):
            out[w, j] = v
    return out


@torch.no_grad()
def far_context_losses(model: GPT, tokens: np.ndarray, multiples: list[int], n_windows: int,
                       n_targets: int | None = N_TARGETS, batch_tokens: int = 32768, seed: int = 0,
                       device: str | None = None, full: dict[int, np.ndarray] | None = None,
                       ) -> dict[int, dict[str, np.ndarray]]:
    """Per-window mean losses of the same targets with the full and the truncated context.

    ``full``: per-window full-context mean losses already known (multiple -> [n_windows], over the
    same ``T_L`` targets, e.g. C6's cache); those passes are skipped.

    Returns
    -------
    dict
        multiple -> {"full": [n_windows], "truncated": [n_windows], "n_targets": T_L}.
    """
    device = device or default_device()
    model.eval()
    L_train = model.config.block_size
    ends = window_ends(len(tokens), L_train * max(multiples), n_windows)
    gen = torch.Generator().manual_seed(20_011 + seed)
    t_max = max(n_targets_at(m * L_train, L_train, n_targets) for m in multiples)
    # short sequences run faster in small batches on a CPU (cache); measured 18 s vs 32 s at 32K tokens
    trunc = sliding_losses(model, tokens, ends, t_max, L_train, gen, min(batch_tokens, 8192), device)
    out: dict[int, dict[str, np.ndarray]] = {}
    for m in multiples:
        L = m * L_train
        t = n_targets_at(L, L_train, n_targets)
        if full is not None and m in full:
            out[m] = {"full": np.asarray(full[m]), "truncated": trunc[:, -t:].mean(axis=1), "n_targets": t}
            continue
        bs = max(1, batch_tokens // L)
        f = np.zeros(n_windows)
        for s in range(0, n_windows, bs):
            e = ends[s: s + bs]
            x = torch.from_numpy(np.stack([tokens[i - L: i] for i in e]).astype(np.int64))
            y = torch.from_numpy(np.stack([tokens[i - L + 1: i + 1] for i in e]).astype(np.int64))
            f[s: s + bs] = _losses(model, x, y, gen, device)[:, -t:].mean(dim=1).numpy()
        out[m] = {"full": f, "truncated": trunc[:, -t:].mean(axis=1), "n_targets": t}
    return out


def far_cache_path(ckpt: str | os.PathLike) -> Path:
    """``<checkpoints>/../eval/<preset>-far/<name>.json`` (beside the C6 caches)."""
    ckpt = Path(ckpt)
    return ckpt.parent.parent.parent / "eval" / f"{ckpt.parent.name}-far" / f"{ckpt.stem}.json"


def evaluate_far_context(path: str | os.PathLike, ecfg: EvalConfig, n_targets: int | None = N_TARGETS,
                         seed: int = 0, device: str | None = None, cache: bool = True, corpus=None) -> dict:
    """Per-window far-context losses of one checkpoint (cached by weights digest and settings).

    With ``n_targets=None`` the full-context side is C6's per-window same-target losses
    (:func:`.evaluate.evaluate_checkpoint`, which evaluates and caches them if needed).
    """
    multiples, n_windows, batch_tokens = list(ecfg.multiples), ecfg.n_windows, ecfg.batch_tokens
    model, ck = load_model(path, device)
    key = {"step": int(ck["step"]), "multiples": list(multiples), "n_windows": n_windows, "n_targets": n_targets,
           "seed": seed, "corpus": ck.get("corpus"), "weights": weights_digest(model)}
    cpath = far_cache_path(path)
    saved = read_loss_cache(cpath, key, scalars=("n_targets",), fields=("full", "truncated", "n_targets")) \
        if cache else None
    if saved is not None:
        return saved
    corpus = corpus or corpus_for(ck.get("train_config", {}))
    full = None
    if n_targets is None:
        evaluate_checkpoint(path, ecfg, corpus, seed, device)
        full = {m: d["target"] for m, d in load_window_losses(path).items() if m > 1}
    losses = far_context_losses(model, corpus.val, multiples, n_windows, n_targets, batch_tokens, seed, device,
                                full)
    if cache:
        write_loss_cache(cpath, key, losses)
    return losses


def summarize_variant(variant: str, per_seed: dict[int, dict], L_train: int, n_boot: int = 2000,
                      seed: int = 0) -> list[dict]:
    """One row per multiple: the seed-pooled far-context ratio with its 95% interval, and per-seed ratios.

    ``use``: ``"helps"`` (interval below 1), ``"hurts"`` (above 1) or ``"ignored"`` (contains 1).
    """
    seeds = sorted(per_seed)
    mults = sorted(set.intersection(*(set(per_seed[s]) for s in seeds)))
    n_windows = len(per_seed[seeds[0]][mults[0]]["full"])
    rng = np.random.default_rng(seed)
    widx = rng.integers(0, n_windows, size=(n_boot, n_windows))
    q = [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2]
    rows = []
    for m in mults:
        diffs = np.stack([per_seed[s][m]["full"] - per_seed[s][m]["truncated"] for s in seeds])
        lo, hi = np.exp(np.percentile(pooled_log_ratio(diffs, widx, rng), q))
        seed_rows = []
        for i, s in enumerate(seeds):
            b = np.exp(diffs[i][widx].mean(axis=1))
            slo, shi = np.percentile(b, q)
            seed_rows.append({"seed": s, "ratio": float(np.exp(diffs[i].mean())), "ci_low": float(slo),
                              "ci_high": float(shi)})
        est = float(np.exp(diffs.mean()))
        rows.append({
            "variant": variant, "multiple": m, "L": m * L_train, "seeds": len(seeds),
            "ratio": est, "ci_low": float(lo), "ci_high": float(hi),
            "use": "helps" if hi < 1 else "hurts" if lo > 1 else "ignored",
            "loss_full": float(np.mean([per_seed[s][m]["full"].mean() for s in seeds])),
            "loss_truncated": float(np.mean([per_seed[s][m]["truncated"].mean() for s in seeds])),
            "n_targets_per_window": int(per_seed[seeds[0]][m]["n_targets"]), "n_windows": n_windows,
            "per_seed": seed_rows,
        })
    return rows


def output_paths(preset: str, results_dir: str | os.PathLike | None) -> tuple[Path, Path, Path, bool]:
    """(checkpoint root, results file stem, figure, canonical?): canonical only for cpu with default dirs."""
    return command_outputs("far_context", "transformer_far_context.png", preset, results_dir)


def _job(preset: str, variant: str, seed: int, path: str, threads: int | None, device: str | None) -> tuple:
    """Train (if missing) and evaluate one checkpoint; a worker process when ``workers`` > 1."""
    if threads:
        torch.set_num_threads(threads)
    config = Preset.from_name(preset, variant=variant, seed=seed)
    tcfg, ecfg = config.train, config.eval
    t0 = time.time()
    if not Path(path).exists() or read_checkpoint(path, "cpu")["step"] < tcfg.steps:
        corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
        train(config, resume=True, ckpt=path, corpus=corpus, progress=False, device=device)
    t1 = time.time()
    losses = evaluate_far_context(path, ecfg, device=device)
    return variant, seed, losses, {"train_s": round(t1 - t0, 1), "eval_s": round(time.time() - t1, 1)}


def run_far_context(preset: str = "cpu", variants: list[str] | None = None, *, workers: int = 1,
                    threads: int | None = 1, results_dir: str | os.PathLike | None = None,
                    device: str | None = None) -> dict:
    """Train missing checkpoints, evaluate far-context use of every (variant, seed), write JSON, CSV, figure."""
    variants = check_variants_and_workers(variants, workers)
    config = Preset.from_name(preset, variant=variants[0])
    mcfg, ecfg = config.model, config.eval
    t0 = time.time()
    root, stem, fig, canonical = output_paths(preset, results_dir)
    check_dir(root, "--results-dir")  # before any work: the destinations can be written
    check_figure(fig, "--results-dir")
    jobs = [(v, s, str(checkpoint_path(preset, v, s, root))) for v in variants
            for s in ((0, 1, 2) if v in SEEDED_VARIANTS else (0,))]
    results: dict[str, dict[int, dict]] = {}
    timings: dict[str, dict] = {}
    outs = map_jobs(_job, [(preset, v, s, p, threads, device) for v, s, p in jobs],
                    [(preset, v, s, p, 1, device) for v, s, p in jobs], workers)
    for v, s, losses, t in outs:
        results.setdefault(v, {})[s] = losses
        timings[f"{v}/s{s}"] = t
    rows = [r for v in variants for r in summarize_variant(v, results[v], mcfg.block_size)]
    result = {
        "claim": "transformer-far-context",
        "params": {"preset": preset, "variants": variants, "L_train": mcfg.block_size,
                   "multiples": list(ecfg.multiples), "n_windows": ecfg.n_windows,
                   "n_targets": N_TARGETS or mcfg.block_size,
                   "level": LEVEL, "n_boot": 2000,
                   "ratio": "exp(mean loss with the full L-token window − mean loss with the last L_train tokens), "
                            "same targets",
                   "interval": "95% percentile bootstrap: windows resampled, and seeds per variant",
                   "timings": timings},
        "rows": rows,
        "canonical": canonical,
        "seconds": round(time.time() - t0, 1),
    }
    from stylized.harness.results import rows_csv, write_pair

    flat = [{k: v for k, v in r.items() if k != "per_seed"} | {"per_seed_ratio": ";".join(
        f"{p['ratio']:.4f}" for p in r["per_seed"])} for r in rows]
    json_path, csv_path = write_pair(stem.with_suffix(".json"), result, rows_csv(flat))
    plot_far_context(json_path, fig)
    result["files"] = {"json": str(json_path), "csv": str(csv_path), "figure": str(fig)}
    return result


def plot_far_context(result_json: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """Far-context ratio vs L/L_train per variant (log-log), 95% intervals as bands; PNG and PDF.

    Drawn and saved through :mod:`stylized.harness.plotting` (the project's theme); each variant keeps its hue and
    marker of every transformer figure (:func:`stylized.harness.plotting.variant_style`).
    """
    from matplotlib.ticker import NullLocator

    from stylized.harness import plotting as sp
    res = read_json(result_json, "far-context")
    p = res["params"]
    with sp.theme():
        fig, (ax,) = sp.figure(1, 1, width=5.6, height=3.3)
        for i, v in enumerate(p["variants"]):
            rs = sorted((r for r in res["rows"] if r["variant"] == v), key=lambda r: r["multiple"])
            if not rs:
                continue
            st = sp.variant_style(v, i)
            m = [r["multiple"] for r in rs]
            ax.plot(m, [r["ratio"] for r in rs], "-", marker=st["marker"], ms=3.5, color=st["color"],
                    label=f"{v} ({rs[0]['seeds']} seed{'s' if rs[0]['seeds'] > 1 else ''})")
            ax.fill_between(m, [r["ci_low"] for r in rs], [r["ci_high"] for r in rs], color=st["color"], alpha=0.12,
                            lw=0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        sp.readable_log_axis(ax.yaxis, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0))
        ms = p["multiples"]
        ax.set_xticks(ms, [f"{m}" for m in ms])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.axhline(1.0, color="0.4", lw=0.6)
        ax.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
        ax.set_ylabel("far-context ratio\n" + r"$e^{\,\bar\ell(\mathrm{full}\ L) - \bar\ell(\mathrm{last}\ L_{\mathrm{train}})}$")
        ax.set_title("far-context use (< 1: the far context helps)")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize=6.5)
        sp.caption(fig, f"Preset '{p['preset']}' (L_train = {p['L_train']}): loss on the last L_train targets of each window "
                        "read with the full length-L context against a sliding window of the last L_train tokens "
                        "(ratio = exp of the mean per-window loss difference); pooled over seeds; band: 95% paired "
                        "bootstrap interval over windows and seeds.")
        return sp.save(fig, out_png)
