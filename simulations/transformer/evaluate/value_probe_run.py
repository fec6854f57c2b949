"""``stylized transformer value-probe``: C5 measured in the cpu checkpoints, summarised per head and per variant.

Per (variant, seed): the cpu checkpoint (retrained with the preset's code and seed when it is not on disk; its
weights digest is compared with the one its committed evaluation recorded), :func:`.value_probe.probe_values` on
held-out windows, then per length, layer and head the means over the (window, query) rows and per length the
sums over heads.  Every ratio of means carries a 95% percentile bootstrap interval over the windows (the
windows resampled, the same draw for every head: rows of one window share its text).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .value_probe import DEFAULT_MULTIPLES, FIELDS, VARIANTS_C5, probe_values

__all__ = ["N_BOOT", "summarize", "probe_variant", "run_value_probe"]

#: bootstrap draws of every interval
N_BOOT = 2000
#: mean fields reported per head
MEANS = ("M", "rho", "far", "coherent", "noise", "pred", "pred_swap", "near", "b2", "v2")


def _ratio(num: np.ndarray, den: np.ndarray, idx: np.ndarray) -> dict:
    """``Σ num / Σ den`` over windows [W] with a bootstrap interval (``idx`` [n_boot, W] window resamples)."""
    est = float(np.nansum(num) / np.nansum(den)) if np.nansum(den) > 0 else None
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.nansum(num[idx], axis=1) / np.nansum(den[idx], axis=1)
    boot = boot[np.isfinite(boot)]
    lo, hi = (np.percentile(boot, [2.5, 97.5]) if boot.size else (np.nan, np.nan))
    return {"estimate": est, "ci": [float(lo), float(hi)]}


def _per_window(rows: dict[str, np.ndarray], field: str) -> np.ndarray:
    """Per-window mean over queries of ``field`` ([W, Q] → [W]); NaN rows (queries without far sources) skipped."""
    return np.nanmean(rows[field], axis=-1)


def _transported(rotate_v: bool, rows: dict, which: str) -> np.ndarray:
    """The C5 plug-in with (``qkv``) or without (``qk``) value transport, whichever of pred / pred_swap it is."""
    own = "pred" if (which == "qkv") == rotate_v else "pred_swap"
    return rows[own]


def summarize(raw: dict, rotate_v: bool, seed: int = 0) -> list[dict]:
    """Rows per (length, layer, head) and per length (``head = "all"``) from :func:`.value_probe.probe_values`."""
    out = []
    W = raw["n_windows"]
    idx = np.random.default_rng(seed).integers(0, W, size=(N_BOOT, W))
    for L, x in raw["lengths"].items():
        pooled: dict[str, np.ndarray] = {}
        for layer, rows in enumerate(x["layers"]):
            rows = {**rows, "pred_qkv": _transported(rotate_v, rows, "qkv"), "pred_qk": _transported(rotate_v, rows, "qk")}
            H = rows["rho"].shape[1]
            for h in range(H):
                r = {f: rows[f][:, h] for f in (*FIELDS, "pred_qkv", "pred_qk")}
                if np.all(np.isnan(r["rho"])):
                    continue
                w = {f: _per_window(r, f) for f in r}
                for f, v in w.items():
                    pooled[f] = pooled.get(f, 0.0) + v
                out.append(_row(int(L), x["multiple"], layer, h, r, w, idx))
        if pooled:
            n = int(np.sum([np.isfinite(rows["rho"]).sum() for rows in x["layers"]]))
            out.append({"L": int(L), "multiple": x["multiple"], "layer": "all", "head": "all", "n_rows": n,
                        **{f"sum_{f}": float(np.nansum(pooled[f])) / W for f in ("far", "pred", "coherent", "near")},
                        **_ratios(pooled, idx)})
    return out


def _ratios(w: dict[str, np.ndarray], idx: np.ndarray) -> dict:
    return {"far_over_pred": _ratio(w["far"], w["pred"], idx),
            "far_over_coherent": _ratio(w["far"], w["coherent"], idx),
            "coherent_share_of_pred": _ratio(w["coherent"], w["pred"], idx),
            "background_share": _ratio(w["b2"], w["v2"], idx),
            "suppression": _ratio(w["pred_qkv"], w["pred_qk"], idx),
            "far_over_untransported": _ratio(w["far"], w["pred_qk"], idx),
            "far_over_near": _ratio(w["far"], w["near"], idx)}


def _row(L: int, multiple: int, layer: int, head: int, r: dict, w: dict, idx: np.ndarray) -> dict:
    return {"L": L, "multiple": multiple, "layer": layer, "head": head, "n_rows": int(np.isfinite(r["rho"]).sum()),
            **{f: float(np.nanmean(r[f])) for f in MEANS}, **_ratios(w, idx)}


def probe_variant(variant: str, seed: int, multiples: Sequence[int], n_windows: int, n_queries: int, D: int | None,
                  log=print) -> dict:
    """One (variant, seed) of the cpu preset: the checkpoint (retrained when absent), its digest, the probe."""
    from ..data.corpus import corpus_for
    from ..model.presets import Preset
    from ..paths import checkpoint_path
    from ..train.loop import load_model, train
    from ..train.readers import saved_key
    from .extrapolation import eval_cache_path, weights_digest

    path = checkpoint_path("cpu", variant, seed)
    t0 = time.time()
    retrained = not path.exists()
    if retrained:
        log(f"[value-probe] {variant} seed {seed}: no checkpoint at {path}; retraining with the cpu preset's code and seed")
        train(Preset.from_name("cpu", variant=variant, seed=seed), progress=False)
    train_s = round(time.time() - t0, 1)
    model, ck = load_model(path)
    digest = weights_digest(model)
    committed = (saved_key(eval_cache_path(path)) or {}).get("weights")
    tokens = corpus_for(ck.get("train_config", {})).val
    t1 = time.time()
    raw = probe_values(model, tokens, multiples, D, n_windows, n_queries, seed)
    rotate_v = bool(model.blocks[0].attn.rotate_v)
    res = {"variant": variant, "seed": seed, "rotate_v": rotate_v, "D": raw["D"], "L_train": raw["L_train"],
           "n_windows": raw["n_windows"], "n_queries": raw["n_queries"], "digest": digest,
           "committed_digest": committed, "digest_matches": digest == committed, "retrained": retrained,
           "train_s": train_s if retrained else None, "probe_s": round(time.time() - t1, 1),
           "chi_abs": raw["chi"], "rows": summarize(raw, rotate_v, seed)}
    log(f"[value-probe] {variant} seed {seed}: digest {digest} (committed {committed}), probe {res['probe_s']} s")
    return res


def run_value_probe(variants: Sequence[str] = VARIANTS_C5, seeds: Sequence[int] = (0, 1, 2),
                    multiples: Sequence[int] = DEFAULT_MULTIPLES, n_windows: int = 8, n_queries: int = 8,
                    D: int | None = None, out: Path | None = None, log=print) -> dict:
    """Every (variant, seed); writes ``out`` (JSON) after each when given."""
    from stylized.harness.results import atomic_write_text, to_jsonable

    t0 = time.time()
    res: dict = {"claim": "C5 inside the trained models", "preset": "cpu",
                 "params": {"variants": list(variants), "seeds": list(seeds), "multiples": list(multiples),
                            "n_windows": n_windows, "n_queries": n_queries, "D": D, "n_boot": N_BOOT},
                 "runs": []}
    for s in seeds:
        for v in variants:
            res["runs"].append(probe_variant(v, s, multiples, n_windows, n_queries, D, log))
            res["seconds"] = round(time.time() - t0, 1)
            if out is not None:
                atomic_write_text(out, json.dumps(to_jsonable(res), indent=1) + "\n")
    return res


def cmd_value_probe(args) -> int:
    """``stylized transformer value-probe``: the full default run writes ``value_probe_cpu.json`` and the figure."""
    from stylized.core.errors import InvalidInput

    from ..paths import destination
    from ..train.checkpoints import check_dir
    from .value_probe_report import plot_value_probe, value_probe_section

    variants = [v.strip() for v in args.variants.split(",")] if args.variants else list(VARIANTS_C5)
    bad = [v for v in variants if v not in VARIANTS_C5]
    if bad:
        raise InvalidInput(f"--variants: {', '.join(bad)} not one of {', '.join(VARIANTS_C5)} (C5 describes the "
                           "value transport of the rotation variants)")
    if args.D is not None and args.D >= 64 * min(args.lengths):
        raise InvalidInput(f"--D: must be an integer in [1, {64 * min(args.lengths) - 1}] (below the shortest probed "
                           f"length {64 * min(args.lengths)}), got {args.D}")
    dest = destination("value-probe", args)
    out = dest.root / "value_probe_cpu.json"
    check_dir(out.parent, "results")
    check_dir(dest.figures, "figures/")
    res = run_value_probe(variants, args.seeds, args.lengths, args.windows, args.queries, args.D, out)
    fig = plot_value_probe(res, dest.figures / "transformer_value_probe.png")
    print("\n".join(value_probe_section(res)))
    print(f"wrote {out}, {fig}")
    return 0

