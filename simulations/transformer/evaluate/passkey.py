"""Passkey retrieval: a key of a few digits hidden in corpus text, asked for at the end.

A passkey sequence of ``L + 1`` byte tokens is ``filler[:a] · "<pk KEY>" · filler[a:] · "<pk " · KEY``:
the statement sits at depth ``d = a / len(filler)`` (0: the far start, 1: just before the
question).  Training mixes such sequences (filler from the training split, ``d`` uniform) into a
``fraction`` of every batch at ``L_train`` through :func:`.train.train`'s ``batch_transform``;
everything else about training is the preset's.  Test: at ``L = m·L_train`` and ``d`` in
:data:`DEPTHS`, ``trials`` sequences from the validation split; a trial is correct when the greedy
decoding of all key digits after the question matches (one teacher-forced pass: greedy decoding
reproduces the key iff the argmax is right at every digit).  Accuracy per (L, d) with a 95% Wilson
interval; chance is ``10^-n_digits``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import torch

from stylized.core.estimators import proportion_ci

from ..data.corpus import Corpus, load_corpus
from ..model.gpt import GPT
from ..model.presets import Preset
from ..paths import checkpoint_path, command_outputs
from ..train.checkpoints import check_dir, check_figure
from ..train.jobs import check_variants_and_workers, map_jobs
from ..train.loop import default_device, load_model, train
from ..train.readers import read_cache, read_json, write_cache
from .extrapolation import eval_cache_path, weights_digest

DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
OPEN, CLOSE = b"<pk ", b">"
#: preset -> passkey settings (digits, training fraction, trials per cell up to 16x / beyond 16x)
SETTINGS: dict[str, dict] = {
    "smoke": dict(n_digits=2, fraction=0.25, trials=4, trials_long=2),
    "cpu": dict(n_digits=4, fraction=0.25, trials=40, trials_long=16),
    "gpu": dict(n_digits=5, fraction=0.25, trials=50, trials_long=50),
    "paper": dict(n_digits=5, fraction=0.25, trials=50, trials_long=50),
}
LEVEL = 0.95


def overhead(n_digits: int) -> int:
    """Template tokens in one sequence of ``L + 1``: statement, question and answer."""
    return len(OPEN) + n_digits + len(CLOSE) + len(OPEN) + n_digits


def passkey_sequence(filler: np.ndarray, key: str, depth: float) -> np.ndarray:
    """``filler`` with ``<pk KEY>`` inserted at ``depth`` ∈ [0, 1], then ``<pk KEY`` (bytes, uint8)."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth={depth!r} must be in [0, 1]")
    if not key.isdigit():
        raise ValueError(f"key={key!r} must be a string of digits")
    a = int(round(depth * len(filler)))
    kb = key.encode()
    parts = [np.asarray(filler[:a], dtype=np.uint8), np.frombuffer(OPEN + kb + CLOSE, np.uint8),
             np.asarray(filler[a:], dtype=np.uint8), np.frombuffer(OPEN + kb, np.uint8)]
    return np.concatenate(parts)


def sample_sequences(tokens: np.ndarray, n: int, L: int, n_digits: int, rng: np.random.Generator,
                     depths: np.ndarray | None = None) -> tuple[np.ndarray, list[str]]:
    """``n`` passkey sequences of ``L + 1`` tokens (filler from ``tokens``); depth uniform unless given."""
    f = L + 1 - overhead(n_digits)
    if f < 1:
        raise ValueError(f"L={L} leaves no filler for a {n_digits}-digit passkey (needs L ≥ {overhead(n_digits)})")
    starts = rng.integers(0, len(tokens) - f, size=n)
    keys = ["".join(map(str, rng.integers(0, 10, size=n_digits))) for _ in range(n)]
    depths = rng.uniform(0.0, 1.0, size=n) if depths is None else np.broadcast_to(depths, (n,))
    seqs = np.stack([passkey_sequence(tokens[s: s + f], k, float(d)) for s, k, d in zip(starts, keys, depths)])
    return seqs.astype(np.int64), keys


def mixer(tokens: np.ndarray, fraction: float, n_digits: int, seed: int):
    """A ``batch_transform`` replacing the first ``max(1, round(fraction·B))`` rows by passkey sequences.

    The sequences are a pure function of (``seed``, step), so a resumed run sees the same batches.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction={fraction!r} must be in (0, 1)")

    def transform(x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        k = max(1, int(round(fraction * x.shape[0])))
        rng = np.random.default_rng([seed, step, 7_919])
        seqs = torch.from_numpy(sample_sequences(tokens, k, x.shape[1], n_digits, rng)[0]).to(x.device)
        x, y = x.clone(), y.clone()
        x[:k], y[:k] = seqs[:, :-1], seqs[:, 1:]
        return x, y

    return transform


def score(logits: torch.Tensor, seqs: torch.Tensor, n_digits: int) -> np.ndarray:
    """Per trial: the argmax at each of the last ``n_digits`` input positions equals the next key digit."""
    pred = logits[:, -n_digits:].argmax(dim=-1)
    return (pred == seqs[:, -n_digits:]).all(dim=1).cpu().numpy()


@torch.no_grad()
def passkey_accuracy(model: GPT, tokens: np.ndarray, multiples: list[int], n_digits: int, trials: int,
                     trials_long: int, seed: int = 0, batch_tokens: int = 32768,
                     device: str | None = None) -> list[dict]:
    """Correct trials per (multiple, depth) from ``tokens`` (the validation split)."""
    device = device or default_device()
    model.eval()
    L_train = model.config.block_size
    gen = torch.Generator().manual_seed(30_011 + seed)
    rows = []
    for m in multiples:
        L = m * L_train
        n = trials if m <= 16 else trials_long
        for di, d in enumerate(DEPTHS):
            rng = np.random.default_rng([seed, m, di])
            seqs = torch.from_numpy(sample_sequences(tokens, n, L, n_digits, rng, np.array(d))[0])
            correct = []
            for s in range(0, n, max(1, batch_tokens // L)):
                x = seqs[s: s + max(1, batch_tokens // L)]
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
                    logits, _ = model(x[:, :-1].to(device), generator=gen)
                correct.append(score(logits.float(), x.to(device), n_digits))
            k = int(np.concatenate(correct).sum())
            rows.append({"multiple": m, "L": L, "depth": d, "correct": k, "trials": n})
    return rows


def with_intervals(rows: list[dict], variant: str) -> list[dict]:
    """Rows with accuracy and its Wilson interval (95%)."""
    out = []
    for r in rows:
        e = proportion_ci(r["correct"], r["trials"], LEVEL)
        out.append({"variant": variant, **r, "accuracy": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high})
    return out


def pooled_accuracy(rows: list[dict], multiple: int) -> dict:
    """Accuracy at one multiple over all depths, with its Wilson interval."""
    sel = [r for r in rows if r["multiple"] == multiple]
    k, n = sum(r["correct"] for r in sel), sum(r["trials"] for r in sel)
    e = proportion_ci(k, n, LEVEL)
    return {"multiple": multiple, "correct": k, "trials": n, "accuracy": e.estimate, "ci_low": e.ci_low,
            "ci_high": e.ci_high}


def output_paths(preset: str, results_dir: str | os.PathLike | None) -> tuple[Path, Path, Path, bool]:
    """(checkpoint root, results stem, figure, canonical?); canonical only for cpu with default dirs."""
    return command_outputs("passkey", "transformer_passkey.png", preset, results_dir)


def passkey_checkpoint(preset: str, variant: str, root: Path, fraction: float | None = None) -> Path:
    """``<root>/checkpoints/<preset>-passkey[-f<fraction>]/<variant>.pt`` (seed 0; the tag when not the preset's)."""
    tag = "" if fraction is None or fraction == SETTINGS[preset]["fraction"] else f"-f{fraction:g}"
    return checkpoint_path(f"{preset}-passkey{tag}", variant, 0, root)


def _rows_problem(saved: dict) -> str | None:
    """Why a passkey cache's ``rows`` cannot be used (``None``: they can)."""
    rows = saved.get("rows")
    ok = isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)
    return None if ok else "'rows' is not a non-empty list of accuracy rows"


def _job(preset: str, variant: str, path: str, cfg: dict, threads: int | None, device: str | None,
         corpus: Corpus | None = None) -> tuple:
    """Train (resume) one variant with passkeys mixed in, then test it (cached by weights digest)."""
    if threads:
        torch.set_num_threads(threads)
    config = Preset.from_name(preset, variant=variant)
    tcfg, ecfg = config.train, config.eval
    corpus = corpus or load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    if corpus.tokenizer != "bytes":
        raise ValueError("tokenizer: the passkey task is defined on byte tokens")
    t0 = time.time()
    info = train(config, resume=True, ckpt=path, corpus=corpus, progress=False, device=device,
                 batch_transform=mixer(corpus.train, cfg["fraction"], cfg["n_digits"], tcfg.seed))
    t1 = time.time()
    model, ck = load_model(path, device)
    key = {"step": int(ck["step"]), "weights": weights_digest(model), "multiples": list(ecfg.multiples),
           **{k: cfg[k] for k in ("n_digits", "trials", "trials_long")}, "corpus": ck.get("corpus")}
    cpath = eval_cache_path(path)
    saved = read_cache(cpath, "passkey", key=key, check=_rows_problem)  # stale: silent; unusable: one line
    if saved is not None:
        rows = saved["rows"]
    else:
        rows = passkey_accuracy(model, corpus.val,
                                list(ecfg.multiples), cfg["n_digits"], cfg["trials"], cfg["trials_long"],
                                batch_tokens=ecfg.batch_tokens, device=device)
        write_cache(cpath, key, rows=rows)
    last = info["history"][-1][1] if info["history"] else None
    return variant, rows, {"train_s": round(t1 - t0, 1), "eval_s": round(time.time() - t1, 1), "last_loss": last}


def run_passkey(preset: str = "cpu", variants: list[str] | None = None, *, workers: int = 1,
                threads: int | None = 1, results_dir: str | os.PathLike | None = None, trials: int | None = None,
                fraction: float | None = None, device: str | None = None) -> dict:
    """Train the passkey checkpoints that are missing, test every variant, write JSON, CSV and the heatmap."""
    variants = check_variants_and_workers(variants, workers)
    if preset not in SETTINGS:
        raise ValueError(f"preset={preset!r} is not one of: {', '.join(SETTINGS)}")
    cfg = dict(SETTINGS[preset])
    if trials is not None:
        if trials < 1:
            raise ValueError(f"trials={trials!r} must be an integer ≥ 1")
        cfg["trials"] = cfg["trials_long"] = int(trials)
    if fraction is not None:
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"fraction={fraction!r} must be in (0, 1)")
        cfg["fraction"] = float(fraction)
    config = Preset.from_name(preset, variant=variants[0])
    mcfg, tcfg, ecfg = config.model, config.train, config.eval
    if mcfg.block_size + 1 - overhead(cfg["n_digits"]) < 1:
        raise ValueError(f"preset={preset!r}: L_train={mcfg.block_size} is too short for the passkey template")
    root, stem, fig, canonical = output_paths(preset, results_dir)
    check_dir(root, "--results-dir")  # before any work: the destinations can be written
    check_figure(fig, "--results-dir")
    if canonical and (trials is not None or fraction is not None):
        raise ValueError("--trials/--fraction: the canonical cpu run uses the preset's; pass --results-dir")
    t0 = time.time()
    jobs = [(v, str(passkey_checkpoint(preset, v, root, cfg['fraction']))) for v in variants]
    outs = map_jobs(_job, [(preset, v, p, cfg, threads, device) for v, p in jobs],
                    [(preset, v, p, cfg, 1, device) for v, p in jobs], workers)
    rows, timings, summary = [], {}, {}
    for v, r, t in outs:
        rs = with_intervals(r, v)
        rows += rs
        timings[v] = t
        summary[v] = {m: pooled_accuracy(rs, m)["accuracy"] for m in ecfg.multiples}
    pooled = [{"variant": v, **pooled_accuracy([r for r in rows if r["variant"] == v], m)}
              for v in variants for m in ecfg.multiples]
    result = {
        "claim": "transformer-passkey",
        "params": {"preset": preset, "variants": variants, "L_train": mcfg.block_size, "steps": tcfg.steps,
                   "multiples": list(ecfg.multiples), "depths": list(DEPTHS), **cfg,
                   "template": f"filler with '<pk KEY>' at depth d, then '<pk ' and the {cfg['n_digits']} key digits",
                   "chance": 10.0 ** -cfg["n_digits"], "level": LEVEL,
                   "interval": "95% Wilson score interval per cell", "correct": "greedy decoding of every digit",
                   "trials_note": f"{cfg['trials']} trials per cell up to 16x, {cfg['trials_long']} beyond",
                   "timings": timings},
        "rows": rows,
        "pooled": pooled,
        "canonical": canonical,
        "seconds": round(time.time() - t0, 1),
    }
    from stylized.harness.results import rows_csv, write_pair

    json_path, csv_path = write_pair(stem.with_suffix(".json"), result, rows_csv(rows))
    plot_passkey(json_path, fig)
    result["summary"] = summary
    result["files"] = {"json": str(json_path), "csv": str(csv_path), "figure": str(fig)}
    return result


def plot_passkey(result_json: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """Passkey accuracy (all depths pooled) against L/L_train, one line per variant, with chance; PNG and PDF.

    One panel on a log accuracy axis: a variant's pooled accuracy with its 95% Wilson interval; a length at
    which no trial succeeded is drawn as a hollow downward triangle at the interval's upper end (what was
    measured: accuracy below that bound), the variants nudged apart along x so that none hides another.
    Drawn and saved through :mod:`stylized.harness.plotting` (the project's theme).
    """
    from stylized.harness import plotting as sp
    res = read_json(result_json, "passkey")
    p = res["params"]
    vs, ms = p["variants"], p["multiples"]
    pooled = res.get("pooled") or []
    chance = float(p.get("chance", 10.0 ** -p["n_digits"]))
    with sp.theme():
        fig, (ax,) = sp.figure(1, 1, width=5.2, height=3.2)
        spread = 0.6  # log2 units between the first and the last variant at one length
        tops = [chance]
        for i, v in enumerate(vs):
            rs = sorted((r for r in pooled if r["variant"] == v), key=lambda r: r["multiple"])
            if not rs:
                continue
            st = sp.variant_style(v, i)
            x = np.array([r["multiple"] for r in rs], float) * 2.0 ** (spread * (i / max(len(vs) - 1, 1) - 0.5))
            acc, lo, hi = (np.array([r[k] for r in rs], float) for k in ("accuracy", "ci_low", "ci_high"))
            tops += list(hi)
            zero = np.array([r["correct"] == 0 for r in rs])
            ax.plot(x, np.where(zero, np.nan, acc), "-", color=st["color"], lw=0.9)
            if (~zero).any():
                ax.errorbar(x[~zero], acc[~zero], yerr=[acc[~zero] - lo[~zero], hi[~zero] - acc[~zero]],
                            fmt=st["marker"], ms=4, color=st["color"], ls="none")
            if zero.any():  # an upper limit: the hollow marker at the bound, an arrow down
                ax.errorbar(x[zero], hi[zero], yerr=hi[zero] * 0.45, uplims=True, fmt=st["marker"], mfc="none",
                            ms=4, color=st["color"], ls="none", elinewidth=0.7, capsize=1.5)
            ax.plot([], [], st["marker"], color=st["color"], ms=4, label=v)  # legend: the variant's hue and marker
        ax.axhline(chance, color="0.3", ls="--", lw=0.9, label=f"chance $10^{{-{p['n_digits']}}}$")
        ax.plot([], [], "o", mfc="none", ms=4, color="0.3", label="hollow ↓: 0 correct,\n95% upper bound")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ms, [f"{m:g}" for m in ms])
        ax.minorticks_off()
        ax.set_yscale("log")
        ax.set_ylim(chance / 3, 1.3)
        ax.set_xlabel(r"$L\,/\,L_{\mathrm{train}}$")
        ax.set_ylabel(f"passkey accuracy ({p['n_digits']} digits, all depths)")
        n_ok = sum(r["correct"] for r in pooled)
        ax.set_title("no variant retrieved the key at any length" if pooled and n_ok == 0 else
                     "passkey retrieval past the training length")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize=6.5)
        n_short = len(p["depths"]) * p["trials"]
        n_long = len(p["depths"]) * p["trials_long"]
        sp.caption(fig, f"Preset '{p['preset']}': L_train = {p['L_train']}, {p['steps']} steps, "
                        f"{p['fraction']:.0%} of training sequences carry a passkey. Accuracy pooled over key depths "
                        f"{', '.join(f'{d:g}' for d in p['depths'])}: {n_short} trials per point up to 16×, "
                        f"{n_long} beyond; bars: 95% Wilson interval (hollow markers with an arrow: its upper end when no trial succeeded). Variants nudged apart along x.")
        return sp.save(fig, out_png)
