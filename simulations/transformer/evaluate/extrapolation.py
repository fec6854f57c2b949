"""Length-extrapolation evaluation, variant comparison, and the figure.

Protocol
--------
``n_windows`` end positions e are spread evenly over the validation stream.
For a length L = m·L_train the model reads the L tokens ending at e.  Two metrics:

* ``all`` (the author's): the mean loss over every position of the length-L window,
  as the author's evaluation scores a window of length L.  The paper's numbers are this
  quantity (at L_train = 512).
* ``target`` (ours): only the last L_train predictions are scored, so every length scores
  the *same* target tokens and PPL(L)/PPL(L_train) is a paired comparison of contexts.  ``loss_beyond`` is the
mean loss over all positions ≥ L_train of the length-L windows (positions never
seen in training).  Random variants draw fresh angles for every forward pass
(from a seeded generator, so evaluation is reproducible); ``n_samples`` > 1
averages the per-window loss over several draws.

Interval: paired percentile bootstrap over windows (``n_boot`` resamples of
the windows, the same resample at L and at L_train) of
exp(mean loss(L) - mean loss(L_train)); 95% percentile interval.  Seeds are pooled
and variants compared in :mod:`~simulations.transformer.c6.verdicts`; the comparison is run by :mod:`~simulations.transformer.c6.compare`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..data.corpus import Corpus, corpus_for
from ..model.gpt import GPT
from ..model.presets import EvalConfig
from ..train.loop import default_device, progress_bar
from ..train.readers import read_cache, write_cache

#: paper's PPL(L)/PPL(512) at multiples 2..128 of the training length
PAPER_RATIOS: dict[str, dict[int, float]] = {
    v: dict(zip((2, 4, 8, 16, 32, 64, 128), r))
    for v, r in {
        "rope": (1.82, 4.54, 9.51, 16.2, 25.5, 34.3, 38.5),
        "random-qk": (0.94, 0.93, 1.07, 1.60, 2.92, 4.44, 7.49),
        "random-qkv": (0.94, 0.91, 0.93, 1.03, 1.14, 1.19, 1.59),
        "learned-qk": (0.94, 0.91, 0.96, 1.17, 1.65, 2.85, 5.93),
        "learned-qkv": (0.94, 0.91, 0.97, 1.18, 1.59, 2.44, 4.34),
        "alibi": (0.90, 0.90, 0.91, 0.94, 0.97, 0.88, 0.96),
    }.items()
}


def paper_ratio(variant: str, multiple: int) -> float | None:
    """Paper's reported ratio (display only; 1.0 at 1×; None if not reported)."""
    if variant not in PAPER_RATIOS:
        return None
    return 1.0 if multiple == 1 else PAPER_RATIOS[variant].get(multiple)


def window_ends(n_tokens: int, max_len: int, n_windows: int) -> np.ndarray:
    """Evenly spread window ends e (exclusive) with e - max_len ≥ 0 and e < n_tokens."""
    if n_tokens - 1 < max_len:
        raise ValueError(
            f"multiples: the longest window ({max_len} tokens) exceeds the validation "
            f"set ({n_tokens} tokens); use smaller multiples or more data"
        )
    return np.linspace(max_len, n_tokens - 1, n_windows).astype(np.int64)


def author_window_ends(n_tokens: int, L: int, n_windows: int) -> np.ndarray:
    """The author's windows at length ``L``: ``n_windows`` random starts (seed ``42 + L``) in the last 10% of the
    validation tokens (the whole split when that tail is shorter than a window), as exclusive window ends."""
    lo = n_tokens - n_tokens // 10
    if n_tokens - 1 - lo < L:
        lo = 0
    if n_tokens - 1 - lo < L:
        raise ValueError(f"multiples: a {L}-token window exceeds the validation set ({n_tokens} tokens)")
    starts = np.random.default_rng(42 + L).integers(lo, n_tokens - 1 - L, size=n_windows, endpoint=True)
    return (starts + L).astype(np.int64)


@torch.no_grad()
def window_losses(
    model: GPT,
    tokens: np.ndarray,
    multiples: list[int],
    n_windows: int,
    batch_tokens: int = 32768,
    n_samples: int = 1,
    seed: int = 0,
    device: str | None = None,
    windows: str = "grid",
    on_multiple: Callable[[dict[int, dict[str, np.ndarray]]], None] | None = None,
    progress: bool = False,
) -> dict[int, dict[str, np.ndarray]]:
    """Per-window losses at every length multiple (``windows``: see :class:`~.presets.EvalConfig`).

    ``on_multiple``, if given, is called with the losses so far after each multiple (a long
    evaluation under a wall-clock guard then keeps the lengths it finished).  ``progress`` shows a bar on
    stderr counting the evaluated tokens (the training bar's style).

    Returns
    -------
    dict
        multiple -> {"target": mean loss on the fixed L_train targets [n_windows],
        "all": mean loss over every position of the window [n_windows],
        "beyond_sum": summed loss at positions ≥ L_train [n_windows],
        "beyond_n": number of such positions [n_windows]}.
    """
    device = device or default_device()
    model.eval()
    L_train = model.config.block_size
    if windows not in ("grid", "author"):
        raise ValueError(f"windows={windows!r} is not one of: grid, author")
    ends = window_ends(len(tokens), L_train * max(multiples), n_windows)
    gen = torch.Generator().manual_seed(10_007 + seed)
    bar = progress_bar(n_windows * L_train * sum(multiples), 0, "evaluate to "
                       f"{max(multiples)}x L_train (tokens)", progress)
    out: dict[int, dict[str, np.ndarray]] = {}
    for m in multiples:
        L = m * L_train
        if windows == "author":
            ends = author_window_ends(len(tokens), L, n_windows)
        bs = max(1, batch_tokens // L)
        tgt = np.zeros(n_windows)
        allp = np.zeros(n_windows)
        bsum = np.zeros(n_windows)
        bn = np.zeros(n_windows)
        for s in range(0, n_windows, bs):
            e = ends[s: s + bs]
            x = torch.from_numpy(np.stack([tokens[i - L: i] for i in e]).astype(np.int64))
            y = torch.from_numpy(np.stack([tokens[i - L + 1: i + 1] for i in e]).astype(np.int64))
            x, y = x.to(device), y.to(device)
            loss = torch.zeros(x.shape, dtype=torch.float64, device=device)
            for _ in range(n_samples):
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
                    logits, _ = model(x, generator=gen)
                loss += F.cross_entropy(
                    logits.float().transpose(1, 2), y, reduction="none"
                ).double()
            loss = (loss / n_samples).cpu().numpy()
            tgt[s: s + bs] = loss[:, -L_train:].mean(axis=1)
            allp[s: s + bs] = loss.mean(axis=1)
            bsum[s: s + bs] = loss[:, L_train:].sum(axis=1)
            bn[s: s + bs] = L - L_train
            if bar is not None:
                bar.update(len(e) * L)
        out[m] = {"target": tgt, "all": allp, "beyond_sum": bsum, "beyond_n": bn}
        if on_multiple is not None:
            on_multiple(out)
    if bar is not None:
        bar.close()
    return out


def _ratio_ci(diff: np.ndarray, idx: np.ndarray) -> tuple[float, float, float]:
    boots = np.exp(diff[idx].mean(axis=1))
    return float(math.exp(diff.mean())), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def summarize(
    losses: dict[int, dict[str, np.ndarray]],
    variant: str,
    L_train: int,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[dict]:
    """Rows (one per multiple): PPL and PPL(L)/PPL(L_train) in both metrics, with bootstrap CIs.

    ``ratio`` (ours, ``target``: the same L_train target tokens at every length) and
    ``ratio_all`` (the author's, ``all``: every position of the length-L window); each with a
    95% paired percentile bootstrap interval over windows (the same resample at L and L_train).
    """
    one = losses[1] if 1 in losses else losses[min(losses)]
    n = len(one["target"])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    rows = []
    for m, d in sorted(losses.items()):
        t = d["target"]
        a = d.get("all", t)
        ratio, lo, hi = _ratio_ci(t - one["target"], idx)
        ratio_all, lo_all, hi_all = _ratio_ci(a - one.get("all", one["target"]), idx)
        nb = float(d["beyond_n"].sum())
        lb = float(d["beyond_sum"].sum() / nb) if nb > 0 else float("nan")
        rows.append({
            "variant": variant,
            "L": m * L_train,
            "multiple": m,
            "loss": float(t.mean()),
            "ppl": float(math.exp(t.mean())),
            "ratio": ratio,
            "ci_low": lo,
            "ci_high": hi,
            "ppl_all": float(math.exp(a.mean())),
            "ratio_all": ratio_all,
            "ci_low_all": lo_all,
            "ci_high_all": hi_all,
            "loss_beyond": lb,
            "ppl_beyond": float(math.exp(lb)) if nb > 0 else float("nan"),
            "n_tokens": int(n * L_train),
            "n_beyond_tokens": int(nb),
            "n_windows": int(n),
            "theory": paper_ratio(variant, m),
        })
    return rows


def weights_digest(model: GPT) -> str:
    """SHA-256 (16 hex digits) of the model's parameters and buffers: the cache is valid for these weights only."""
    import hashlib

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def eval_cache_path(ckpt: str | os.PathLike) -> Path:
    """Per-window losses of a checkpoint: ``<checkpoints>/../eval/<preset>/<name>.json``."""
    ckpt = Path(ckpt)
    return ckpt.parent.parent.parent / "eval" / ckpt.parent.name / f"{ckpt.stem}.json"


#: the per-window arrays of a C6 evaluation cache (:func:`window_losses`)
EVAL_FIELDS = ("target", "all", "beyond_sum", "beyond_n")


def json_type(x) -> str:
    """JSON's name for the type of a parsed value: object, array, string, number, boolean, null."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(x), "number" if isinstance(x, (int, float)) else type(x).__name__)


def _finite_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def cache_problem(saved, fields: tuple[str, ...] | None = None, scalars: tuple[str, ...] = ()) -> str | None:
    """Why the parsed cache ``saved`` (``{"key": {…}, "losses": {multiple: {name: [per window]}}}``) cannot be
    used, or ``None``: every multiple a positive integer (those of its key, when it names them), every array a
    list of finite numbers ≥ 0 (``n_windows`` of them when the key says so, else equally many), ``fields``
    present, the names in ``scalars`` finite numbers."""
    if not isinstance(saved, dict):
        return f"a JSON {json_type(saved)}, not an object"
    key, losses = saved.get("key"), saved.get("losses")
    if not isinstance(key, dict):
        return "no 'key' object"
    if not isinstance(losses, dict) or not losses:
        return "no 'losses' object"
    n = key.get("n_windows") if isinstance(key.get("n_windows"), int) else None
    for m, d in losses.items():
        if not (m.isdigit() and int(m) >= 1):
            return f"multiple {m[:20]!r} is not a positive integer"
        if not isinstance(d, dict) or not d:
            return f"multiple {m}: not an object of per-window losses"
        missing = [f for f in fields or () if f not in d]
        if missing:
            return f"multiple {m}: no {missing[0]!r}"
        sizes = set()
        for name, v in d.items():
            if name in scalars:
                if not _finite_number(v):
                    return f"multiple {m}: {name[:20]!r} is not a finite number"
                continue
            if not isinstance(v, list) or not v or not all(_finite_number(x) and x >= 0 for x in v):
                return f"multiple {m}: {name[:20]!r} is not a non-empty list of finite numbers ≥ 0"
            sizes.add(len(v))
        if len(sizes) > 1 or (n is not None and sizes and sizes != {n}):
            return (f"multiple {m}: {'/'.join(map(str, sorted(sizes)))} windows, expected "
                    f"{n if n is not None else 'equal lengths'}")
    mults = key.get("multiples")
    if (isinstance(mults, list) and all(isinstance(x, int) for x in mults)
            and sorted(int(m) for m in losses) != sorted(mults)):
        return f"multiples {sorted(int(m) for m in losses)}, its key says {mults}"
    return None


def parse_losses(d: dict, scalars: tuple[str, ...] = ()) -> dict[int, dict]:
    """A cache's ``losses`` as ``{multiple: {name: array}}`` (names in ``scalars`` kept as they are)."""
    return {int(m): {k: v if k in scalars else np.asarray(v, dtype=float) for k, v in x.items()} for m, x in d.items()}


def read_loss_cache(cpath: Path, key: dict, scalars: tuple[str, ...] = (),
                    fields: tuple[str, ...] | None = None) -> dict | None:
    """Per-window losses ``{multiple: {name: array}}`` from the cache ``cpath`` if its ``key`` (weights digest and
    settings) equals ``key``, else ``None``: missing, stale, or unusable (not JSON, not an object, garbage
    losses: :func:`cache_problem`; one line on stderr says so); names in ``scalars`` stay scalars."""
    saved = read_cache(cpath, "eval", key=key, check=lambda d: cache_problem(d, fields, scalars))
    return None if saved is None else parse_losses(saved["losses"], scalars)


def write_loss_cache(cpath: Path, key: dict, losses: dict) -> None:
    """Write per-window losses with their ``key`` to the cache ``cpath`` (atomically)."""
    write_cache(cpath, key, losses={str(m): {k: np.asarray(v).tolist() for k, v in d.items()}
                                    for m, d in losses.items()})


def evaluate_checkpoint(
    path: str | os.PathLike,
    ecfg: EvalConfig,
    corpus: Corpus | None = None,
    seed: int = 0,
    device: str | None = None,
    cache: bool = True,
    on_rows: Callable[[list[dict]], None] | None = None,
    cache_tag: str | None = None,
    progress: bool = False,
    cache_dir: str | os.PathLike | None = None,
) -> list[dict]:
    """Load a checkpoint and return its summary rows (per-window losses cached beside it).

    ``cache_tag`` names a cache of its own (``<name>-<tag>.json``) for an evaluation outside the preset's
    multiples, so that it never replaces the comparison's cache.

    ``cache_dir`` puts that cache in another folder (an exploratory run's, never beside the committed caches).

    ``on_rows``, if given, receives the summary rows of the multiples evaluated so far after each one.
    ``progress`` shows a bar of the evaluated tokens when the losses are computed (not read from the cache).

    The cache (``eval_cache_path``) is reused when the checkpoint's weights (a digest) and the
    evaluation settings are unchanged; it holds the per-window losses the seed-pooled verdicts need.
    """
    from ..train.loop import load_model

    model, ck = load_model(path, device)
    key = {"step": int(ck["step"]), "multiples": list(ecfg.multiples), "n_windows": ecfg.n_windows,
           "n_samples": ecfg.n_samples, "seed": seed, "corpus": ck.get("corpus"), "weights": weights_digest(model)}
    if ecfg.windows != "grid":  # (the grid's caches keep their key)
        key["windows"] = ecfg.windows
    cpath = eval_cache_path(path)
    if ecfg.windows != "grid":
        cpath = cpath.with_name(f"{cpath.stem}-{ecfg.windows}-windows.json")
    if cache_tag:
        cpath = cpath.with_name(f"{cpath.stem}-{cache_tag}.json")
    if cache_dir is not None:
        cpath = Path(cache_dir) / cpath.name
    losses = read_loss_cache(cpath, key, fields=EVAL_FIELDS) if cache else None
    if losses is None:
        if cache:  # before the work: the cache can be written beside the checkpoints
            from ..train.checkpoints import check_dir

            check_dir(cpath.parent, "--results-dir")
        corpus = corpus or corpus_for(ck.get("train_config", {}))
        partial = None if on_rows is None else (
            lambda so_far: on_rows(summarize(so_far, ck["variant"], model.config.block_size, ecfg.n_boot, seed)))
        losses = window_losses(model, corpus.val, ecfg.multiples, ecfg.n_windows,
                               ecfg.batch_tokens, ecfg.n_samples, seed, device, ecfg.windows, partial, progress)
        if cache:
            write_loss_cache(cpath, key, losses)
    rows = summarize(losses, ck["variant"], model.config.block_size, ecfg.n_boot, seed)
    for r in rows:
        r["train_steps"] = ck["step"]
    return rows


def load_window_losses(path: str | os.PathLike) -> dict[int, dict[str, np.ndarray]]:
    """The cached per-window losses of an evaluated checkpoint (an unusable cache: one line naming it)."""
    import json

    from stylized.core.errors import InvalidInput

    cpath = eval_cache_path(path)
    try:
        saved = json.loads(cpath.read_text(encoding="utf-8"))
        why = cache_problem(saved, EVAL_FIELDS)
    except (OSError, ValueError) as e:
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    if why is not None:
        raise InvalidInput(f"--results-dir: the evaluation cache {cpath} is unusable ({why}); delete it and "
                           "evaluate again")
    return parse_losses(saved["losses"])
