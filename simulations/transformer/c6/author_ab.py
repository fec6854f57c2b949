"""The author's model points, one at a time, against the cpu preset's choice: a measured A/B (3 seeds each).

The ``paper`` preset takes every point of the author's code (README "C6: the author's model"); the ``cpu``
preset keeps nanoGPT's choices where they differ.  Each deviation kept is measured here on ``learned-qk``
(the variant whose row is contested), seeds 0, 1, 2, everything else the cpu preset:

* ``angle-tokens``: the route accumulates the angles of tokens ``j … i−1`` (the author's) instead of
  ``j+1 … i``;
* ``head-init``: an untied output head with a bias and PyTorch's default initialisation;
* ``dropout``: 0.1 on attention probabilities, attention output and MLP output (and the embeddings);
* ``eval-windows``: the author's evaluation (20 random windows per length from the last 10% of the validation
  tokens, seed ``42 + L``) of the *baseline* checkpoints, instead of 32 evenly spread windows.

The baseline is retrained here (``checkpoints/cpu-ab/learned-qk-base-s*.pt``, the cpu preset unchanged) so
that both arms come from the same host and the committed comparison's caches are never touched.  Per arm and
seed: the validation PPL at ``L_train`` and the log-ratio ``log PPL(L)/PPL(L_train)`` at 64× and 128× on both
metrics; per deviation, Welch's difference of the per-seed means (95% interval, p) against the baseline.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..paths import results_root
from .verdicts import welch

__all__ = ["DEVIATIONS", "VARIANT", "SEEDS", "trains", "checkpoint", "run_one", "missing", "ab_table", "write_ab"]

VARIANT = "learned-qk"
SEEDS: tuple[int, ...] = (0, 1, 2)
MULTIPLES: tuple[int, ...] = (64, 128)
#: deviation -> (model overrides, eval overrides)
DEVIATIONS: dict[str, tuple[dict, dict]] = {
    "angle-tokens": ({"angle_tokens": "key"}, {}),
    "head-init": ({"lm_head": "untied", "init": "torch"}, {}),
    "dropout": ({"dropout": 0.1}, {}),
    "eval-windows": ({}, {"windows": "author", "n_windows": 20}),
}


def trains(arm: str) -> bool:
    """Whether the arm trains its own checkpoint (the evaluation-only deviations use the baseline's)."""
    return arm == "base" or bool(DEVIATIONS[arm][0])


def _trained_as(arm: str) -> str:
    return arm if trains(arm) and arm != "base" else "base"


def checkpoint(arm: str, seed: int, root: Path | None = None) -> Path:
    return Path(root or results_root()) / "checkpoints" / "cpu-ab" / f"{VARIANT}-{_trained_as(arm)}-s{seed}.pt"


def _cache(arm: str, seed: int, root: Path | None = None) -> Path:
    from ..evaluate.extrapolation import eval_cache_path

    c = eval_cache_path(checkpoint(arm, seed, root))
    ev = DEVIATIONS.get(arm, ({}, {}))[1]
    return c.with_name(f"{c.stem}-author-windows.json") if ev.get("windows") == "author" else c


def missing(root: Path | None = None) -> list[tuple[str, int]]:
    return [(a, s) for a in ("base", *DEVIATIONS) for s in SEEDS if not _cache(a, s, root).exists()]


def run_one(arm: str, seed: int, root: str | None = None, threads: int = 1) -> str:
    """Train (resume) the arm's checkpoint and evaluate it as the arm says; returns the arm."""
    import torch

    from ..data.corpus import load_corpus
    from ..evaluate.extrapolation import evaluate_checkpoint
    from ..model.presets import Preset
    from ..train.loop import train

    torch.set_num_threads(threads)
    model_kw, eval_kw = DEVIATIONS.get(arm, ({}, {}))
    config = Preset.from_name("cpu", variant=VARIANT, seed=seed, **model_kw, **eval_kw)
    tcfg, ecfg = config.train, config.eval
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    path = checkpoint(arm, seed, Path(root) if root else None)
    train(config, resume=True, ckpt=path, corpus=corpus, progress=False, device="cpu")
    evaluate_checkpoint(path, ecfg, corpus, 0, "cpu")
    return arm


def _per_seed(arm: str, root: Path | None) -> dict | None:
    from ..evaluate.extrapolation import EVAL_FIELDS, cache_problem, parse_losses
    from ..train.readers import read_cache

    out: dict[str, list[float]] = {}
    for s in SEEDS:
        saved = read_cache(_cache(arm, s, root), "author-ab", check=lambda d: cache_problem(d, EVAL_FIELDS))
        if saved is None:  # missing or unusable (named): evaluated again
            return None
        w = parse_losses(saved["losses"])
        out.setdefault("ppl_1x", []).append(math.exp(float(np.mean(w[1]["all"]))))
        for metric in ("all", "target"):
            for L in MULTIPLES:
                out.setdefault(f"{metric}@{L}", []).append(float(np.mean(w[L][metric]) - np.mean(w[1][metric])))
    return out


def ab_table(root: Path | None = None) -> dict:
    base = _per_seed("base", root)
    rows = []
    for arm in DEVIATIONS:
        dev = _per_seed(arm, root)
        if base is None or dev is None:
            rows.append({"deviation": arm, "missing": True})
            continue
        r: dict = {"deviation": arm, "missing": False, "model": DEVIATIONS[arm][0], "eval": DEVIATIONS[arm][1]}
        for key in base:
            a, b = np.asarray(dev[key]), np.asarray(base[key])
            if key == "ppl_1x":
                a, b = np.log(a), np.log(b)
            w = welch(a, b)
            r[key] = {"author_choice": dev[key], "cpu_choice": base[key], "delta": float(w["delta"]),
                      "ci_low": float(w["ci_low"]), "ci_high": float(w["ci_high"]), "p": float(w["p"])}
        rows.append(r)
    return {"claim": "transformer-author-ab", "variant": VARIANT, "seeds": list(SEEDS), "preset": "cpu",
            "multiples": list(MULTIPLES), "rows": rows,
            "note": "delta = mean(author's choice) - mean(cpu choice) of per-seed log PPL ratios (ppl_1x: of log PPL "
                    "at L_train), Welch 95% interval; the cpu preset keeps its choice, stated with this A/B"}


def write_ab(res: dict, root: Path | None = None) -> Path:
    from stylized.harness.results import atomic_write_text, to_jsonable

    path = Path(root or results_root()) / "cpu_author_ab.json"
    atomic_write_text(path, json.dumps(to_jsonable(res), indent=1) + "\n")
    return path


def summary_lines(res: dict) -> list[str]:
    out = []
    for r in res["rows"]:
        if r["missing"]:
            out.append(f"{r['deviation']}: runs missing")
            continue
        bits = [f"PPL@1x x{math.exp(r['ppl_1x']['delta']):.3f}"]
        for metric in ("all", "target"):
            for L in res["multiples"]:
                x = r[f"{metric}@{L}"]
                bits.append(f"{metric}@{L}x Δ={x['delta']:+.3f} [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}]")
        out.append(f"{r['deviation']}: " + "; ".join(bits))
    return out
