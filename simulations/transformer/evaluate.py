"""Length-extrapolation evaluation, variant comparison, and the figure.

Protocol
--------
``n_windows`` end positions e are spread evenly over the validation stream.
The scored targets of a window are fixed: the L_train tokens ending at e.  For
a length L = m·L_train the model reads the L tokens ending there and only the
last L_train predictions are scored, so every length scores the *same* target
tokens and PPL(L)/PPL(L_train) is a paired comparison.  ``loss_beyond`` is the
mean loss over all positions ≥ L_train of the length-L windows (positions never
seen in training).  Random variants draw fresh angles for every forward pass
(from a seeded generator, so evaluation is reproducible); ``n_samples`` > 1
averages the per-window loss over several draws.

Interval: paired percentile bootstrap over windows (``n_boot`` resamples of
the windows, the same resample at L and at L_train) of
exp(mean loss(L) - mean loss(L_train)); 95% percentile interval.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .data import Corpus, load_corpus
from .model import GPT, MAIN_VARIANTS, VARIANTS
from .train import (
    RESULTS_DIR,
    EvalConfig,
    checkpoint_path,
    default_device,
    get_preset,
    load_model,
    make_configs,
    train,
)

FIGURES_DIR = Path(__file__).resolve().parents[2] / "figures"

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
) -> dict[int, dict[str, np.ndarray]]:
    """Per-window losses at every length multiple.

    Returns
    -------
    dict
        multiple -> {"target": mean loss on the fixed L_train targets [n_windows],
        "beyond_sum": summed loss at positions ≥ L_train [n_windows],
        "beyond_n": number of such positions [n_windows]}.
    """
    device = device or default_device()
    model.eval()
    L_train = model.config.block_size
    ends = window_ends(len(tokens), L_train * max(multiples), n_windows)
    gen = torch.Generator().manual_seed(10_007 + seed)
    out: dict[int, dict[str, np.ndarray]] = {}
    for m in multiples:
        L = m * L_train
        bs = max(1, batch_tokens // L)
        tgt = np.zeros(n_windows)
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
            bsum[s: s + bs] = loss[:, L_train:].sum(axis=1)
            bn[s: s + bs] = L - L_train
        out[m] = {"target": tgt, "beyond_sum": bsum, "beyond_n": bn}
    return out


def summarize(
    losses: dict[int, dict[str, np.ndarray]],
    variant: str,
    L_train: int,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[dict]:
    """Rows (one per multiple): ppl, ratio PPL(L)/PPL(L_train) with bootstrap CI, loss_beyond."""
    base = losses[1]["target"] if 1 in losses else losses[min(losses)]["target"]
    n = len(base)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    rows = []
    for m, d in sorted(losses.items()):
        t = d["target"]
        diff = t - base
        boots = np.exp(diff[idx].mean(axis=1))
        nb = float(d["beyond_n"].sum())
        lb = float(d["beyond_sum"].sum() / nb) if nb > 0 else float("nan")
        rows.append({
            "variant": variant,
            "L": m * L_train,
            "multiple": m,
            "loss": float(t.mean()),
            "ppl": float(math.exp(t.mean())),
            "ratio": float(math.exp(diff.mean())),
            "ci_low": float(np.percentile(boots, 2.5)),
            "ci_high": float(np.percentile(boots, 97.5)),
            "loss_beyond": lb,
            "ppl_beyond": float(math.exp(lb)) if nb > 0 else float("nan"),
            "n_tokens": int(n * L_train),
            "n_beyond_tokens": int(nb),
            "n_windows": int(n),
            "theory": paper_ratio(variant, m),
        })
    return rows


def evaluate_checkpoint(
    path: str | os.PathLike,
    ecfg: EvalConfig,
    corpus: Corpus | None = None,
    seed: int = 0,
    device: str | None = None,
) -> list[dict]:
    """Load a checkpoint and return its summary rows."""
    model, ck = load_model(path, device)
    corpus = corpus or load_corpus(ck["train_config"].get("data"),
                                   ck["train_config"].get("max_bytes"))
    losses = window_losses(model, corpus.val, ecfg.multiples, ecfg.n_windows,
                           ecfg.batch_tokens, ecfg.n_samples, seed, device)
    rows = summarize(losses, ck["variant"], model.config.block_size, ecfg.n_boot, seed)
    for r in rows:
        r["train_steps"] = ck["step"]
    return rows


def ordering(rows: list[dict]) -> tuple[dict, bool | None]:
    """The paper's qualitative claim at the largest multiple, component by component."""
    mmax = max(r["multiple"] for r in rows)
    ratio = {r["variant"]: r["ratio"] for r in rows if r["multiple"] == mmax}
    comp: dict[str, bool | None] = {"multiple": mmax}  # type: ignore[dict-item]

    def gt(a: str, b: str) -> bool | None:
        return None if a not in ratio or b not in ratio else bool(ratio[a] > ratio[b])

    comp["rope>random-qk"] = gt("rope", "random-qk")
    comp["random-qk>random-qkv"] = gt("random-qk", "random-qkv")
    comp["alibi<=1.2"] = None if "alibi" not in ratio else bool(ratio["alibi"] <= 1.2)
    parts = [v for k, v in comp.items() if k != "multiple"]
    holds = None if any(p is None for p in parts) else all(parts)
    return comp, holds


def compare(
    preset: str = "cpu",
    variants: list[str] | None = None,
    *,
    seed: int = 0,
    steps: int | None = None,
    data: str | None = None,
    results_dir: str | os.PathLike | None = None,
    figure: str | os.PathLike | None = None,
    device: str | None = None,
    progress: bool = True,
) -> dict:
    """Train missing variants, evaluate all, write CSV + JSON + figure; return the JSON dict."""
    t0 = time.time()
    variants = list(variants or MAIN_VARIANTS)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"variants: {v!r} is not one of: {', '.join(VARIANTS)}")
    root = Path(results_dir) if results_dir else RESULTS_DIR
    _, tcfg, ecfg = make_configs(variants[0], preset, steps=steps, seed=seed, data=data)
    corpus = load_corpus(tcfg.data, tcfg.max_bytes)
    rows: list[dict] = []
    timings: dict[str, dict[str, float]] = {}
    for v in variants:
        path = checkpoint_path(preset, v, seed, root)
        t1 = time.time()
        info = train(v, preset, steps=tcfg.steps, seed=seed, data=data, resume=True,
                     ckpt=path, corpus=corpus, progress=progress, device=device)
        t2 = time.time()
        vrows = evaluate_checkpoint(path, ecfg, corpus, seed, device)
        t3 = time.time()
        timings[v] = {"train_s": t2 - t1, "eval_s": t3 - t2}
        for r in vrows:
            r["n_params"] = info["n_params"]
        rows.extend(vrows)
        last = {r["multiple"]: r["ratio"] for r in vrows}
        print(f"[compare] {v}: ppl@1x={vrows[0]['ppl']:.3f} ratios="
              + " ".join(f"{m}x:{x:.2f}" for m, x in last.items())
              + f" (train {t2 - t1:.0f}s, eval {t3 - t2:.0f}s)", flush=True)
    comp, holds = ordering(rows)
    p = get_preset(preset)
    result = {
        "claim": "transformer-compare",
        "params": {
            "preset": preset,
            "variants": variants,
            "seeds": [seed],
            "model": p["model"],
            "train": {**p["train"], "steps": tcfg.steps, "data": tcfg.data or "builtin"},
            "eval": {**p["eval"]},
            "corpus": corpus.description,
            "tokens_trained": tcfg.steps * tcfg.batch_size * p["model"]["block_size"],
            "interval": "95% paired percentile bootstrap over evaluation windows "
                        f"({ecfg.n_boot} resamples)",
            "theory_source": "paper's reported PPL(L)/PPL(512), train length 512 (display only)",
            "timings": timings,
        },
        "holds": holds,
        "ordering": comp,
        "rows": [
            {"variant": r["variant"], "L": r["L"], "multiple": r["multiple"],
             "estimate": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
             "theory": r["theory"], "n_samples": r["n_tokens"], "ppl": r["ppl"],
             "loss_beyond": r["loss_beyond"], "n_beyond_tokens": r["n_beyond_tokens"]}
            for r in rows
        ],
        "seconds": time.time() - t0,
    }
    root.mkdir(parents=True, exist_ok=True)
    csv_path = root / f"{preset}_compare.csv"
    with open(csv_path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    json_path = root / f"{preset}_compare.json"
    tmp = json_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, json_path)
    fig = Path(figure) if figure else FIGURES_DIR / "transformer_ppl_ratio.png"
    plot_compare(json_path, fig)
    result["files"] = {"csv": str(csv_path), "json": str(json_path), "figure": str(fig)}
    return result


def save_png(fig, out_png: str | os.PathLike) -> Path:
    """Lay out ``fig``, write it to ``out_png`` (folders created) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_compare(result_json_path: str | os.PathLike, out_png: str | os.PathLike) -> Path:
    """Ratio PPL(L)/PPL(L_train) vs length multiple (log-log), paper lines dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = json.loads(Path(result_json_path).read_text())
    rows = res["rows"]
    variants = res["params"]["variants"]
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, v in enumerate(variants):
        rs = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["multiple"])
        if not rs:
            continue
        c = colors[i % len(colors)]
        m = [r["multiple"] for r in rs]
        ax.plot(m, [r["estimate"] for r in rs], "o-", color=c, label=v, ms=3)
        ax.fill_between(m, [r["ci_low"] for r in rs], [r["ci_high"] for r in rs],
                        color=c, alpha=0.12, lw=0)
        th = [(r["multiple"], r["theory"]) for r in rs if r["theory"] is not None]
        if len(th) > 1:
            ax.plot(*zip(*th), "--", color=c, alpha=0.6, lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.axhline(1.0, color="gray", lw=0.5)
    ax.set_xlabel("evaluation length / training length  (L / L_train)")
    ax.set_ylabel("PPL(L) / PPL(L_train)  (same target tokens)")
    p = res["params"]
    L_train = p["model"]["block_size"]
    n_tok = rows[0]["n_samples"] if rows else 0
    ax.set_title(
        f"Length extrapolation, preset '{p['preset']}' (L_train={L_train}, "
        f"{p['train']['steps']} steps, {p.get('tokens_trained', 0):,} train tokens)\n"
        f"solid: this run ({n_tok} scored tokens/length, 95% bootstrap band); "
        f"dashed: paper (L_train=512)",
        fontsize=8.5,
    )
    ax.legend(fontsize=8, ncol=2)
    return save_png(fig, out_png)
