"""The learned angle tables' learning-rate budget: a sweep of ``angle_lr_mult`` and the rule that picks it.

The author's tables train at the model's lr over 200K steps (Σ lr ≈ 62.5); the cpu preset's
whole schedule has Σ lr ≈ 1.1, so at the author's ratio (×1) the tables barely move and the
model stays RoPE.  This module trains ``learned-qk`` and ``learned-qkv`` at several multipliers
and records, per multiplier, only in-distribution quantities for the choice:

* validation loss at ``L_train``: every position of every non-overlapping ``L_train`` window of the
  whole validation stream (≈ 9,500 windows on the builtin corpus), 95% bootstrap interval over windows;
* how far the tables moved: ``|Δθ|`` (token-frequency weighted mean and max over used tokens);
* how many planes mix within ``L_train``: planes of every (layer, head) whose
  ``|χ_b| = |Σ_v p_v e^{iθ_{v,b}}|`` gives a window ``W_b(0.01) = ln 0.01 / ln|χ_b| ≤ L_train``.

**Rule (fixed before any extrapolation number was looked at):** among the multipliers whose
tables are *active* (weighted mean movement ≥ 0.1 rad and at least one plane mixing within
``L_train``), take the smallest whose ``learned-qk`` validation loss lies inside the 95% bootstrap
interval of the best (lowest) one.  The whole extrapolation curve is reported for every
multiplier, after the choice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from ..data.corpus import load_corpus
from ..evaluate.extrapolation import evaluate_checkpoint
from ..model.gpt import GPT
from ..model.presets import CPU_ANGLE_LR_MULT, Preset
from ..paths import results_root
from ..train.jobs import map_jobs
from ..train.loop import train
from ..train.readers import read_json

MULTS: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0)
SWEEP_VARIANTS = ("learned-qk", "learned-qkv")
WINDOW_EPS = 0.01
ACTIVE_MOVE_RAD = 0.1


#: the presets the sweep runs under (their tables' multiplier is ``CPU_ANGLE_LR_MULT``)
SWEEP_PRESETS = ("cpu", "cpu-long")


def sweep_checkpoint(variant: str, mult: float, seed: int = 0, root: Path | None = None, preset: str = "cpu") -> Path:
    """The sweep's checkpoint; at the cpu preset's own multiplier it is the comparison's checkpoint (same run)."""
    from ..paths import checkpoint_path

    if mult == CPU_ANGLE_LR_MULT and preset == "cpu":
        return checkpoint_path("cpu", variant, seed, root)
    return Path(root or results_root()) / "checkpoints" / f"{preset}-lr-sweep" / f"{variant}-x{mult:g}-s{seed}.pt"


def sweep_result_path(preset: str = "cpu", root: Path | None = None) -> Path:
    """The committed sweep result of ``preset``."""
    return Path(root or results_root()) / f"{preset}_lr_sweep.json"


def train_and_evaluate(v: str, m: float, seed: int, path: str, progress: bool, threads: int | None,
                corpus=None, preset: str = "cpu") -> list[dict]:
    """Train (resume) and evaluate one (variant, multiplier); runs in a worker process when ``workers`` > 1."""
    if threads:
        torch.set_num_threads(threads)
    config = Preset.from_name(preset, variant=v, seed=seed, angle_lr_mult=float(m))
    tcfg, ecfg = config.train, config.eval
    corpus = corpus or load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    train(config, resume=True, ckpt=path, corpus=corpus, progress=progress, device="cpu")
    return evaluate_checkpoint(path, ecfg, corpus, 0, "cpu")


def table_activity(model: GPT, token_probs: np.ndarray, L_train: int, eps: float = WINDOW_EPS) -> dict:
    """Movement of the learned tables from zero (θ − θ_init, rad) and the planes mixing within ``L_train``."""
    moves, maxes, mixing, planes = [], [], 0, 0
    for blk in model.blocks:
        att = blk.attn
        if not hasattr(att, "angle_table"):
            continue
        with torch.no_grad():
            delta = (math.pi * torch.tanh(att.angle_table.double())).cpu().numpy()  # θ − θ(E=0)
        omega = att.omega.double().cpu().numpy()
        heads = delta.shape[1] // len(omega)
        theta = delta - np.tile(omega, heads)
        used = token_probs > 0
        moves.append(float(token_probs @ np.abs(delta).mean(axis=1)))
        maxes.append(float(np.abs(delta[used]).max()))
        chi = np.abs(token_probs @ np.exp(1j * theta))
        with np.errstate(divide="ignore"):
            win = np.where(chi < 1 - 1e-12, math.log(eps) / np.log(np.clip(chi, 1e-300, 1 - 1e-12)), np.inf)
        mixing += int(np.count_nonzero(win <= L_train))
        planes += len(chi)
    return {"move_mean_rad": float(np.mean(moves)) if moves else 0.0,
            "move_max_rad": float(np.max(maxes)) if maxes else 0.0,
            "planes_mixing": mixing, "planes": planes}


@torch.no_grad()
def validation_loss(model: GPT, tokens: np.ndarray, n_boot: int = 4000, batch: int = 256) -> tuple[float, float, float]:
    """Mean loss over every non-overlapping ``L_train`` window of ``tokens`` and its 95% bootstrap interval."""
    L = model.config.block_size
    n = (len(tokens) - 1) // L
    x = torch.from_numpy(np.asarray(tokens[: n * L], dtype=np.int64).reshape(n, L))
    y = torch.from_numpy(np.asarray(tokens[1: n * L + 1], dtype=np.int64).reshape(n, L))
    gen = torch.Generator().manual_seed(10_007)
    per = []
    model.eval()
    for a in range(0, n, batch):
        logits, _ = model(x[a: a + batch], generator=gen)
        per.append(torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), y[a: a + batch],
                                                     reduction="none").double().mean(dim=1))
    t = torch.cat(per).numpy()
    b = t[np.random.default_rng(0).integers(0, n, size=(n_boot, n))].mean(axis=1)
    return float(t.mean()), float(np.percentile(b, 2.5)), float(np.percentile(b, 97.5))


def choose(rows: list[dict], variant: str = "learned-qk") -> float | None:
    """The rule of the module docstring, on ``rows`` of :func:`run_sweep`."""
    rs = [r for r in rows if r["variant"] == variant]
    if not rs:
        return None
    best = min(rs, key=lambda r: r["val_loss"])
    ok = [r for r in rs if r["active"] and r["val_loss"] <= best["val_ci_high"]]
    return min(r["mult"] for r in ok) if ok else None


def run_sweep(mults=MULTS, variants=SWEEP_VARIANTS, seed: int = 0, root: Path | None = None,
              progress: bool = True, workers: int = 1, preset: str = "cpu") -> dict:
    """Train (what is missing) and evaluate every (variant, multiplier) under ``preset``; return the sweep result.

    ``workers`` > 1 trains and evaluates that many (variant, multiplier) runs at once in
    separate processes, one torch thread each.  The rule reads ``learned-qk`` only, so
    ``variants=("learned-qk",)`` is enough to make the choice.
    """
    if preset not in SWEEP_PRESETS:
        raise ValueError(f"preset={preset!r} is not one of: {', '.join(SWEEP_PRESETS)}")
    config = Preset.from_name(preset, variant="learned-qk")
    tcfg = config.train
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    counts = np.bincount(corpus.train, minlength=256).astype(float)
    probs = counts / counts.sum()
    jobs = [(v, m, str(sweep_checkpoint(v, m, seed, root, preset))) for v in variants for m in mults]
    evals = map_jobs(train_and_evaluate, [(v, m, seed, p, progress, None, corpus, preset) for v, m, p in jobs],
                     [(v, m, seed, p, False, 1, None, preset) for v, m, p in jobs], workers)
    from ..train.loop import load_model

    rows = []
    for (v, m, path), ev in zip(jobs, evals):
        model, _ = load_model(path, "cpu")
        act = table_activity(model, probs[: model.config.vocab_size], model.config.block_size)
        loss, lo, hi = validation_loss(model, corpus.val)
        rows.append({"variant": v, "mult": m, "seed": seed, "val_loss": loss, "val_ci_low": lo, "val_ci_high": hi,
                     "ppl": math.exp(loss), **act,
                     "active": act["move_mean_rad"] >= ACTIVE_MOVE_RAD and act["planes_mixing"] > 0,
                     "lr_budget": sum(_lr_sum(tcfg)) * m,
                     "curve_all": {r["multiple"]: r["ratio_all"] for r in ev},
                     "curve_target": {r["multiple"]: r["ratio"] for r in ev}})
    chosen = choose(rows)
    return {"claim": "transformer-lr-sweep", "rule": " ".join(__doc__.split("**Rule")[1].split("\n\n")[0].split(":**", 1)[-1].split()),
            "rows": rows, "chosen": chosen, "author_budget": 62.5, "preset": preset,
            "L_train": int(config.model.block_size)}


def _lr_sum(tcfg) -> list[float]:
    from ..train.loop import lr_at

    return [lr_at(s, tcfg) for s in range(tcfg.steps)]


def write_sweep(result: dict, root: Path | None = None, figure: Path | None = None) -> Path:
    from stylized.harness.results import atomic_write_text, to_jsonable

    path = sweep_result_path(result.get("preset", "cpu"), root)
    atomic_write_text(path, json.dumps(to_jsonable(result), indent=1) + "\n")
    if figure is not None:
        plot_sweep(path, figure)
    return path


def plot_sweep(path: Path, out_png: Path) -> Path:
    """PPL(L)/PPL(L_train) per angle-table lr multiplier (the chosen one bold); PNG and PDF in the project theme."""
    from matplotlib.ticker import FuncFormatter

    from stylized.harness import plotting as sp
    res = read_json(path, "lr-sweep")
    with sp.theme():
        variants = [v for v in SWEEP_VARIANTS if any(r["variant"] == v for r in res["rows"])]
        fig, axes = sp.figure(1, len(variants), height=3.4, sharey=True,
                              width=sp.MAX_WIDTH if len(variants) > 1 else sp.MAX_WIDTH * 0.6)
        axes = np.atleast_1d(axes)
        for ax, v in zip(axes, variants):
            for i, r in enumerate(r for r in res["rows"] if r["variant"] == v):
                c = sorted(((int(k), x) for k, x in r["curve_all"].items()))
                ci = (f" [{math.exp(r['val_ci_low']):.2f}, {math.exp(r['val_ci_high']):.2f}]"
                      if r.get("val_ci_low") is not None else "")
                lab = (f"×{r['mult']:g}: PPL {r['ppl']:.2f}{ci}, {r['planes_mixing']}/{r['planes']} mix"
                       + (" (chosen)" if r["mult"] == res["chosen"] else ""))
                ax.plot(*zip(*c), "o-", ms=3, color=f"C{i}", lw=2.2 if r["mult"] == res["chosen"] else 1.1, label=lab)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}" if round(y, 6) in (1.5, 2.0, 3.0, 4.0) else ""))
            ax.axhline(1, color="0.4", lw=0.6)
            ax.set_title(f"{v}: angle-table lr multiplier")
            ax.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
            ax.legend(loc="upper left", fontsize=6.5)
        axes[0].set_ylabel(r"$\mathrm{PPL}(L)/\mathrm{PPL}(L_{\mathrm{train}})$ (author's metric)")
        preset = res.get("preset", "cpu")
        sp.caption(fig, f"{preset} preset (L_train = {res.get('L_train', 64)}). One seed per multiplier; legend: validation PPL at L_train with its 95% bootstrap interval "
                        "over windows, and how many rotation planes mix within L_train. Chosen multiplier drawn bold.")
        return sp.save(fig, out_png)
