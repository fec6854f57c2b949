"""Far-mass controls in the transformer: the combined-variant table and its goal row.

Variants: ALiBi, FoX, Scalable-Softmax (``ssmax``), each alone and with the learned Q/K/V rotation.
Every (variant, seed) is read from its evaluation cache (:func:`.evaluate.load_window_losses`: the
per-window losses on the C6 windows, the same windows for every variant), so the comparisons are
paired.  For a variant ``v`` with seeds ``S_v`` and windows ``w``:

* ratio at the top multiple: ``exp(mean_s mean_w [ℓ_top(s, w) − ℓ_1(s, w)])`` (metric "target": the last
  ``L_train`` targets), with the 95 % percentile bootstrap of :func:`.verdicts.pooled_log_ratio`
  (windows resampled jointly for all variants, seeds per variant);
* ``PPL(L_train) = exp(mean_s mean_w ℓ_1)`` and its paired difference with the best rotation-only
  variant (lowest ``PPL(L_train)``), same bootstrap.

Goal (issue 14): ratio ≤ 1.05 — the upper end of its 95 % interval — and ``PPL(L_train)`` no worse than
the best rotation-only variant's — the lower end of the 95 % interval of ``log PPL_v − log PPL_best``
at most 0 (not resolved worse at this size).  Level: two-sided 95 % percentile intervals.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..c6.verdicts import pooled_log_ratio

__all__ = ["CONTROLS", "ROTATION_ONLY", "GOAL_RATIO", "window_loss_table", "combined_table"]

#: the far-mass controls, alone and with learned Q/K/V rotations
CONTROLS = ("alibi", "fox", "ssmax", "learned-qkv-alibi", "learned-qkv-fox", "learned-qkv-ssmax")
ROTATION_ONLY = ("rope", "random-qk", "random-qkv", "learned-qk", "learned-qkv")
GOAL_RATIO = 1.05


def window_loss_table(root: Path, preset: str, variants, seeds=(0, 1, 2)) -> dict[str, dict[int, dict]]:
    """``variant -> seed -> {multiple: {metric: per-window losses}}`` for every evaluated checkpoint.

    A (variant, seed) counts when both its checkpoint and its evaluation cache exist; the caller
    (:func:`.bridge.run_bridge`) checks that the cache belongs to the checkpoint's weights.
    """
    from ..evaluate.extrapolation import eval_cache_path, load_window_losses
    from ..paths import checkpoint_path

    out: dict[str, dict[int, dict]] = {}
    for v in variants:
        for s in seeds:
            ck = checkpoint_path(preset, v, s, root)
            if eval_cache_path(ck).exists():
                out.setdefault(v, {})[s] = load_window_losses(ck)
    return out


def _stack(by_seed: dict[int, dict], multiple: int, metric: str) -> np.ndarray:
    return np.stack([w[multiple][metric] for _, w in sorted(by_seed.items())])


def combined_table(losses: dict[str, dict[int, dict]], metric: str = "target", goal: float = GOAL_RATIO,
                   n_boot: int = 4000, seed: int = 0) -> dict:
    """The combined-variant table and the goal decision (see the module docstring).

    Parameters
    ----------
    losses : dict
        ``variant -> seed -> window losses`` (:func:`window_loss_table`), controls and rotation-only.
    metric : str
        ``"target"`` (ours) or ``"all"`` (the author's).
    """
    if metric not in ("target", "all"):
        raise ValueError(f"metric={metric!r} is not one of: target, all")
    if not 1.0 <= goal < 2.0:
        raise ValueError(f"goal={goal!r} must be in [1, 2)")
    have = {v: d for v, d in losses.items() if d}
    if not have:
        return {"rows": [], "goal": {"met": None, "reason": "no evaluated checkpoints"}}
    top = min(max(m for w in d.values() for m in w) for d in have.values())
    n_windows = len(next(iter(next(iter(have.values())).values()))[1]["all"])
    rng = np.random.default_rng(seed)
    widx = rng.integers(0, n_windows, size=(n_boot, n_windows))
    ratio_draw, ppl_draw, rows = {}, {}, {}
    for v, d in have.items():
        diff = _stack(d, top, metric) - _stack(d, 1, metric)
        base = _stack(d, 1, "all")
        ratio_draw[v] = pooled_log_ratio(diff, widx, rng)
        ppl_draw[v] = pooled_log_ratio(base, widx, rng)
        lo, hi = np.exp(np.percentile(ratio_draw[v], [2.5, 97.5]))
        plo, phi = np.exp(np.percentile(ppl_draw[v], [2.5, 97.5]))
        rows[v] = {"variant": v, "seeds": sorted(d), "multiple": top, "ratio": float(np.exp(diff.mean())),
                   "ratio_ci": [float(lo), float(hi)],
                   "ratio_per_seed": [float(np.exp(x)) for x in diff.mean(axis=1)],
                   "ppl_1x": float(np.exp(base.mean())), "ppl_1x_ci": [float(plo), float(phi)]}
    rot = [v for v in ROTATION_ONLY if v in rows]
    best = min(rot, key=lambda v: rows[v]["ppl_1x"]) if rot else None
    met = []
    for v in CONTROLS:
        if v not in rows:
            continue
        r = rows[v]
        r["ratio_ok"] = r["ratio_ci"][1] <= goal
        if best is not None:
            dl = ppl_draw[v] - ppl_draw[best]
            r["dlog_ppl_vs_best"] = float(np.log(r["ppl_1x"]) - np.log(rows[best]["ppl_1x"]))
            r["dlog_ppl_ci"] = [float(x) for x in np.percentile(dl, [2.5, 97.5])]
            r["ppl_ok"] = r["dlog_ppl_ci"][0] <= 0.0
        else:
            r["ppl_ok"] = None
        r["goal"] = bool(r["ratio_ok"] and r["ppl_ok"])
        met.append(r["goal"])
    order = [v for v in CONTROLS if v in rows] + [v for v in rot]
    return {"rows": [rows[v] for v in order], "metric": metric, "n_boot": n_boot, "n_windows": n_windows,
            "goal": {"met": (any(met) if met and best is not None else None), "ratio": goal, "multiple": top,
                     "best_rotation_only": best, "met_by": [v for v in CONTROLS if rows.get(v, {}).get("goal")],
                     "rule": f"upper 95% bound of PPL({top}×)/PPL(L_train) ≤ {goal} and the lower 95% bound of "
                             f"log PPL_v(L_train) − log PPL_best(L_train) ≤ 0 (paired bootstrap over windows "
                             f"and seeds, {n_boot} resamples)"}}


def fmt_ci(x: float, ci, digits: int = 3) -> str:
    """``x [lo, hi]`` with ``digits`` significant digits."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g} [{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"
