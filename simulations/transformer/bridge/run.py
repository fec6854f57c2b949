"""The bridge, end to end: predict every checkpoint's far mass from L ≤ L_train, compare, map to perplexity.

:func:`run_bridge` (``stylized transformer bridge --preset cpu``):

1. every evaluated checkpoint (variant, seed) of the preset: the inputs of :mod:`~simulations.transformer.bridge.predict` on
   ``n_heldout`` held-out windows of length ``L_train`` (none overlapping the comparison windows), and
   the predicted ρ̂_D(L) per layer and head at the C6 multiples with its window-bootstrap interval;
2. for seed 0 of every variant, the measured ρ_D(L) at the last queries of ``n_compare`` comparison
   windows of every length (the only measurement beyond ``L_train``, used for the comparison alone),
   and the held-out bound check ``ρ_D ≥ M/(M + K e^{2λ})`` with λ from the held-out windows;
3. the perplexity law of :mod:`~simulations.transformer.bridge.ppl`, leave-one-variant-out, and its verdict;
4. the combined-variant table of :mod:`~simulations.transformer.bridge.combined`.

Predictions and measurements are cached in the result JSON, keyed by the checkpoint's weights digest
and the settings, so a rerun only computes what changed.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from ..model.config import MAIN_VARIANTS
from . import combined as bc
from . import ppl as bppl
from . import predict as bpred

__all__ = ["BRIDGE_VARIANTS", "SETTINGS", "run_bridge", "checkpoint_entries", "output_root"]

#: every variant the bridge reads (main comparison and far-mass controls)
BRIDGE_VARIANTS = tuple(dict.fromkeys(MAIN_VARIANTS + bc.CONTROLS))
#: predictor / comparison settings (the cache key)
SETTINGS = {"D_fraction": 4, "n_heldout": 48, "keys_per_query": 8, "n_compare": 4, "n_last": 4, "n_boot": 1000,
            "seed": 0}


#: the token process of a learned table's route characteristic (``chi-markov``'s kept one), part of those
#: variants' prediction key
TOKEN_PROCESS = "markov: the training stream's bigram chain"


def checkpoint_entries(root: Path, preset: str, seeds=(0, 1, 2), absent: bool = False) -> list[tuple[str, int, Path]]:
    """(variant, seed, checkpoint) for every checkpoint with an evaluation cache; ``absent=True``: also those whose
    checkpoint is gone but whose evaluation cache is on disk (their predictions can only come from the previous
    result, :func:`_reused`)."""
    from ..evaluate.extrapolation import eval_cache_path
    from ..paths import checkpoint_path

    out = []
    for v in BRIDGE_VARIANTS:
        for s in seeds:
            ck = checkpoint_path(preset, v, s, root)
            if (ck.exists() or absent) and eval_cache_path(ck).exists():
                out.append((v, s, ck))
    return out


def _variant_key(variant: str, key: dict) -> dict:
    """The prediction key of ``variant``: the settings, and the token process where its angles are a learned table."""
    from ..model.config import VARIANT_SPECS

    return {**key, "token_process": TOKEN_PROCESS} if VARIANT_SPECS[variant].angle_source == "learned" else key


def _evaluated_digest(ck: Path) -> str | None:
    """The weights digest in the evaluation cache of ``ck`` (``None`` when unreadable)."""
    from ..evaluate.extrapolation import eval_cache_path
    from ..train.readers import saved_key

    key = saved_key(eval_cache_path(ck))
    return None if key is None else key.get("weights")


def _reused(v: str, s: int, ck: Path, key: dict, old_pred: dict, old_meas: dict) -> tuple | None:
    """A (prediction, measurement) pair from the previous result for a checkpoint that is not on disk: only when
    both were computed from the weights the evaluation cache holds and with today's settings ``key`` (the
    prediction under :func:`_variant_key`: a learned table's names its token process, so its old unigram
    predictions never match; the measurement, which no token process enters, under ``key`` itself)."""
    dig = _evaluated_digest(ck)
    p = old_pred.get(f"{v}/s{s}")
    if dig is None or not isinstance(p, dict) or p.get("digest") != dig or p.get("key") != _variant_key(v, key):
        return None
    m = old_meas.get(v) if s == 0 else None
    if s == 0 and not (isinstance(m, dict) and m.get("digest") == dig and m.get("key") == key):
        return None
    return p, m


def _cache_valid(path: Path, model) -> bool:
    """The evaluation cache of ``path`` belongs to these weights."""
    from ..evaluate.extrapolation import weights_digest

    digest = _evaluated_digest(path)
    return digest is not None and digest == weights_digest(model)


def _ratios(path: Path, metric: str = "target") -> tuple[list[int], np.ndarray]:
    from ..evaluate.extrapolation import load_window_losses

    w = load_window_losses(path)
    ms = sorted(w)
    return ms, np.array([float(np.mean(w[m][metric] - w[1][metric])) for m in ms])


def _entry_problem(c, axis: int, n_lengths: int) -> str | None:
    """Why a saved prediction (``axis`` 1) or measurement (``axis`` 0) cannot be reused, or ``None``: ρ_D and its
    band are arrays of one shape with ``n_lengths`` lengths on ``axis``, finite or ``null`` (no far source)."""
    if not isinstance(c, dict):
        return "not an object"
    shapes = set()
    for k in ("rho", "lo", "hi") + (("lam", "profile") if axis == 1 else ()):
        try:
            a = np.array([np.nan if x is None else x for x in np.ravel(np.array(c.get(k), dtype=object))],
                         dtype=float).reshape(np.shape(c.get(k)))
        except (TypeError, ValueError):
            return f"'{k}' is not an array of numbers"
        if a.size == 0 or np.isinf(a).any() or (k in ("lam", "profile") and np.isnan(a).any()):
            return f"'{k}' is empty or holds non-finite numbers"
        if k in ("rho", "lo", "hi"):
            shapes.add(a.shape)
    (shape,) = shapes if len(shapes) == 1 else ((),)
    if len(shape) != 3 or shape[axis] != n_lengths:
        return f"'rho' has shape {list(shape)}, not 3 axes with {n_lengths} lengths"
    if axis == 1 and not (isinstance(c.get("input_len"), int) and c["input_len"] >= 1):
        return "'input_len' is not a positive integer"
    return None


def _previous(json_path: Path, n_lengths: int) -> dict:
    """The previous run's ``bridge_<preset>.json`` (its predictions are reused), ``{}`` when missing or unusable;
    a damaged prediction or measurement in it is named in one line and left out (recomputed)."""
    from ..train.readers import read_cache

    old = read_cache(json_path, "bridge")
    if old is None:
        return {}
    for field, axis in (("predictions", 1), ("measured", 0)):
        entries = old.get(field) if isinstance(old.get(field), dict) else {}
        for name in list(entries):
            why = _entry_problem(entries[name], axis, n_lengths)
            if why:
                print(f"[bridge] {json_path}: {field} {name!r} unusable ({why}); recomputing it", flush=True)
                del entries[name]
    return old


def output_root(results_dir, preset: str) -> Path:
    """The results folder: the committed one for the cpu preset, ``runs/<preset>/`` otherwise (as ``compare``)."""
    from ..paths import run_root

    return run_root(preset, results_dir)[0]


def run_bridge(preset: str = "cpu", *, results_dir=None, figure=None, reuse: bool = True, progress: bool = True,
               settings: dict | None = None) -> dict:
    """Run the bridge and write ``bridge_<preset>.{json,csv}`` and its figure (see the module docstring)."""
    import torch

    from stylized.harness.results import atomic_write_text, figures_dir, to_jsonable

    from ..data.corpus import load_corpus
    from ..evaluate.extrapolation import weights_digest, window_ends
    from ..model.presets import Preset
    from ..train.checkpoints import check_dir, check_figure
    from ..train.loop import load_model
    from .plot import plot_bridge
    from .report import csv_text, summary_text

    t0 = time.time()
    cfg = {**SETTINGS, **(settings or {})}
    bad = [k for k in cfg if k not in SETTINGS]
    if bad:
        raise ValueError(f"settings: unknown keys {bad}; allowed: {', '.join(SETTINGS)}")
    canonical = results_dir is None and preset == "cpu"
    root = output_root(results_dir, preset)
    fig = Path(figure) if figure else (figures_dir() if canonical else root) / "transformer_bridge.png"
    check_dir(root, "--results-dir")  # before any work: the destinations can be written
    check_figure(fig, "--figure")
    config = Preset.from_name(preset)
    Lt, tcfg = config.model.block_size, config.train
    D = max(1, Lt // cfg["D_fraction"])
    mults = list(config.eval.multiples)
    lengths = [m * Lt for m in mults]
    entries = checkpoint_entries(root, preset, absent=True)
    if not entries:
        raise ValueError(f"preset={preset!r}: no evaluated checkpoints under {root / 'checkpoints' / preset}; "
                         "run 'stylized transformer compare' first")
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    val = corpus.val
    ends_cmp = window_ends(len(val), max(lengths), cfg["n_compare"])
    ends_in = bpred.heldout_ends(len(val), Lt, ends_cmp, max(lengths), cfg["n_heldout"])
    json_path = root / f"bridge_{preset}.json"
    previous = _previous(json_path, len(lengths))  # (its names are read even with --no-cache: what is lost)
    old = previous if reuse else {}
    old_pred, old_meas = (x if isinstance(x, dict) else {} for x in (old.get("predictions"), old.get("measured")))
    key = {**cfg, "D": D, "lengths": lengths}
    preds, meas, samples = {}, {}, []
    reused, skipped = [], []
    for v, s, ck in entries:
        name = f"{v}/s{s}"
        if not ck.exists():  # evaluated, checkpoint gone: the previous prediction, if it is still today's
            got = _reused(v, s, ck, key, old_pred, old_meas)
            if got is None:
                print(f"[bridge] skip {v} s{s}: no checkpoint, and no prediction of today's settings for the "
                      "weights its evaluation cache holds", flush=True)
                skipped.append(name)
                continue
            preds[name] = got[0]
            if s == 0:
                meas[v] = got[1]
            reused.append(name)
            _add_sample(samples, v, s, ck, preds[name], lengths, Lt)
            continue
        torch.set_num_threads(1)
        model, _ = load_model(ck, "cpu")
        if not _cache_valid(ck, model):
            print(f"[bridge] skip {v} s{s}: its evaluation cache is for other weights", flush=True)
            skipped.append(name)
            continue
        dig = weights_digest(model)
        vkey = _variant_key(v, key)
        c = old_pred.get(name)
        if isinstance(c, dict) and c.get("digest") == dig and c.get("key") == vkey:
            preds[name] = c
        else:
            t1 = time.time()
            st = bpred.train_length_stats(model, val, ends_in, D, cfg["keys_per_query"], cfg["seed"],
                                          train_tokens=corpus.train)
            pr = bpred.predict_rho(st, lengths, cfg["n_boot"], cfg["seed"])
            preds[name] = {"digest": dig, "key": vkey, "variant": v, "seed": s, "input_len": st["input_len"],
                           "rho": [x["rho"].tolist() for x in pr], "lo": [x["lo"].tolist() for x in pr],
                           "hi": [x["hi"].tolist() for x in pr], "lam": [lay["lam"].tolist() for lay in st["layers"]],
                           "profile": [lay["profile"].tolist() for lay in st["layers"]]}
            if progress:
                print(f"[bridge] predicted {name} in {time.time() - t1:.0f}s", flush=True)
        assert preds[name]["input_len"] <= bpred.MAX_INPUT_LEN * Lt, "a prediction input was measured beyond L_train"
        if s == 0:
            c = old_meas.get(v)
            if isinstance(c, dict) and c.get("digest") == dig and c.get("key") == key:
                meas[v] = c
            else:
                t1 = time.time()
                meas[v] = _measure(model, val, ends_cmp, lengths, D, cfg, preds[name]["lam"])
                meas[v].update({"digest": dig, "key": key})
                if progress:
                    print(f"[bridge] measured {v} at {len(lengths)} lengths in {time.time() - t1:.0f}s", flush=True)
        _add_sample(samples, v, s, ck, preds[name], lengths, Lt)
        del model
    lovo = bppl.leave_one_variant_out(samples)
    verdict = bppl.verdict(lovo)
    losses = bc.window_loss_table(root, preset, bc.CONTROLS + bc.ROTATION_ONLY)
    combined = bc.combined_table(losses)
    result = {
        "claim": "transformer-bridge",
        "params": {"preset": preset, "L_train": Lt, "D": D, "multiples": mults, **cfg,
                   "corpus": corpus.description, "ppl_metric": "target (the last L_train positions)",
                   "heldout_windows": len(ends_in), "compare_windows": len(ends_cmp),
                   "token_process": TOKEN_PROCESS, "reused_without_checkpoint": reused,
                   "inputs_max_length": max(pv["input_len"] for pv in preds.values())},
        "holds": verdict["holds"],
        "verdict": verdict,
        "lovo": lovo,
        "combined": combined,
        "rho_agreement": _rho_agreement(preds, meas, lengths),
        "predictions": preds,
        "measured": meas,
        "seconds": round(time.time() - t0, 1),
    }
    result["summary"] = summary_text(result)
    lost = [n for n in skipped if n in (previous.get("predictions") or {})]  # in the previous result, not here
    if results_dir is None and lost:  # a bridge that would shrink the committed one (:mod:`~simulations.transformer.paths`)
        from ..paths import exploratory_root

        root = exploratory_root("bridge")
        json_path, fig = root / json_path.name, (root / fig.name if figure is None else fig)
        print(f"[bridge] exploratory run ({len(lost)} checkpoint(s) of the previous result left out: "
              f"{', '.join(lost[:3])}{'…' if len(lost) > 3 else ''}): results under {root}; committed results "
              "untouched", flush=True)
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(json_path, json.dumps(to_jsonable(result), indent=1) + "\n")
    atomic_write_text(root / f"bridge_{preset}.csv", csv_text(result))
    plot_bridge(result, fig)
    result["files"] = {"json": str(json_path), "csv": str(root / f"bridge_{preset}.csv"), "figure": str(fig)}
    return result


def _add_sample(samples: list, v: str, s: int, ck: Path, pred: dict, lengths: list[int], Lt: int) -> None:
    """The perplexity law's sample of one checkpoint: features of its predicted ρ̂ and its measured log-ratios."""
    ms, lr = _ratios(ck)
    rho = np.array(pred["rho"])  # [layers, lengths, H]
    x = [bppl.features(rho[:, lengths.index(m * Lt)], rho[:, 0]) for m in ms]
    samples.append({"variant": v, "seed": s, "multiples": ms, "x": np.array(x), "log_ratio": lr})


def _measure(model, val, ends, lengths, D, cfg, lam_heldout) -> dict:
    """Measured ρ_D per layer/head at every length: mean over windows of the last-query mean, 95 % Student-t
    interval over windows; and the held-out bound check (bias-free variants)."""
    out = {"rho": [], "lo": [], "hi": [], "bound_ok": [], "bound_n": []}
    bias_free = not (model.blocks[0].attn.use_alibi or getattr(model.blocks[0].attn, "use_fox", False))
    for L in lengths:
        m = bpred.measure_rho(model, val, ends, L, D, cfg["n_last"], cfg["seed"])
        rows, lo, hi, ok, n = [], [], [], 0, 0
        for li, lay in enumerate(m["layers"]):
            r = lay["rho"].mean(axis=2).T  # [H, windows]: queries of one window are not independent
            mu = r.mean(axis=1)
            se = r.std(axis=1, ddof=1) / math.sqrt(r.shape[1]) if r.shape[1] > 1 else np.ones_like(mu)
            t = float(student_t.ppf(0.975, r.shape[1] - 1)) if r.shape[1] > 1 else math.inf  # one window: no interval
            rows.append(mu.tolist())
            lo.append(np.clip(mu - t * se, 0.0, 1.0).tolist())
            hi.append(np.clip(mu + t * se, 0.0, 1.0).tolist())
            if bias_free and L > D:
                lam = np.asarray(lam_heldout[li])[None, :, None]
                good = bpred.bound_on_queries(lam, lay["rho"], L, D)
                ok, n = ok + int(good.sum()), n + good.size
        out["rho"].append(rows)
        out["lo"].append(lo)
        out["hi"].append(hi)
        out["bound_ok"].append(ok)
        out["bound_n"].append(n)
    return out


def _rho_agreement(preds: dict, meas: dict, lengths: list[int]) -> dict:
    """Per variant (seed 0) and length: median |ρ̂ − ρ| over layers × heads, and interval coverage."""
    out = {}
    for v, m in meas.items():
        p = preds.get(f"{v}/s0")
        if p is None:
            continue
        pr = np.array(p["rho"])  # [layers, lengths, H]
        mr, mlo, mhi = (np.array(m[k], dtype=float).transpose(1, 0, 2) for k in ("rho", "lo", "hi"))  # [layers, lengths, H]
        plo, phi = np.array(p["lo"], dtype=float), np.array(p["hi"], dtype=float)
        overlap = (plo <= mhi) & (mlo <= phi)
        out[v] = {"median_abs_err": np.median(np.abs(pr - mr), axis=(0, 2)).tolist(),
                  "overlap_frac": overlap.mean(axis=(0, 2)).tolist(), "lengths": lengths,
                  "bound_ok": m["bound_ok"], "bound_n": m["bound_n"]}
    return out
