"""The perplexity bridge judged by skill against null forecasts (issue 26, item 3).

A forecast of ``r_v(k) = PPL(k·L_train)/PPL(L_train)`` for variant ``v`` at length multiples ``k > 1`` is scored by
its mean absolute log error ``E_v = mean_k |ln r̂_v(k) − ln r_v(k)|``.  Two null forecasts get the same score:

* ``flat``: ``r̂ ≡ 1`` (no degradation);
* ``like-rope``: ``r̂_v(k) = r_rope(k)``, the measured RoPE curve at the same ``L_train`` (every variant degrades
  like RoPE; undefined for RoPE itself, which is left out of that comparison);
* ``others-median``: ``r̂_v(k) = median_{u ≠ v} r_u(k)``, the median of the other variants' measured curves — the
  same information as the bridge's perplexity law, which is fitted on the other variants' measured ratios.

The skill against a null is ``1 − E/E_null`` (1: perfect, 0: no better than the null, < 0: worse), per variant and
pooled over the held-out variants as ``1 − Σ_v E_v / Σ_v E_null,v``.  The pooled skill's 95% interval is a
percentile bootstrap over variants (resampled with replacement, ``n_boot`` draws).  The bridge forecasts
have positive skill when the pooled skill's interval lies above 0 against every null available (``like-rope``
needs a RoPE row, ``others-median`` two rows).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NULLS", "log_errors", "skill_table"]

NULLS = ("flat", "like-rope", "others-median")


def log_errors(measured, predicted, multiples, use) -> float:
    """Mean absolute log error of ``predicted`` against ``measured`` at the multiples in ``use``."""
    idx = [i for i, k in enumerate(multiples) if k in use]
    m, p = np.asarray(measured, float)[idx], np.asarray(predicted, float)[idx]
    if not idx or not (np.all(m > 0) and np.all(p > 0)):
        raise ValueError("bridge skill: measured and predicted ratios must be positive at every multiple used")
    return float(np.mean(np.abs(np.log(p) - np.log(m))))


def _pooled(errors: np.ndarray, nulls: np.ndarray) -> float:
    return float(1.0 - errors.sum() / nulls.sum()) if nulls.sum() > 0 else float("nan")


def skill_table(lovo_rows: list[dict], *, n_boot: int = 4000, seed: int = 0) -> dict:
    """Per-variant and pooled skill of the bridge's left-out forecasts (``lovo.rows`` of a bridge result) against
    :data:`NULLS`, at every multiple ``k > 1`` of the rows."""
    rows = [r for r in lovo_rows if r.get("measured") and r.get("predicted")]
    if not rows:
        raise ValueError("bridge skill: no forecast rows")
    multiples = rows[0]["multiples"]
    use = [k for k in multiples if k > 1]
    rope = next((r for r in rows if r["variant"] == "rope"), None)
    per = []
    for r in rows:
        if r["multiples"] != multiples:
            raise ValueError(f"bridge skill: {r['variant']} has multiples {r['multiples']}, expected {multiples}")
        e = log_errors(r["measured"], r["predicted"], multiples, use)
        others = [o["measured"] for o in rows if o is not r]
        nulls = {"flat": log_errors(r["measured"], [1.0] * len(multiples), multiples, use),
                 "like-rope": (None if rope is None or r is rope else
                               log_errors(r["measured"], rope["measured"], multiples, use)),
                 "others-median": (log_errors(r["measured"], np.median(np.asarray(others, float), axis=0), multiples,
                                              use) if others else None)}
        per.append({"variant": r["variant"], "error": e, **{f"error_{k}": v for k, v in nulls.items()},
                    **{f"skill_{k}": (None if v is None or v == 0 else 1.0 - e / v) for k, v in nulls.items()}})
    rng = np.random.default_rng(seed)
    pooled = {}
    for k in NULLS:
        sel = [p for p in per if p[f"error_{k}"] is not None]
        if not sel:  # no RoPE row to forecast like: that null is not available
            continue
        e, n0 = np.array([p["error"] for p in sel]), np.array([p[f"error_{k}"] for p in sel])
        if n0.sum() <= 0:  # the null is exact on every variant: no forecast can be shown to beat it
            pooled[k] = {"skill": None, "ci_low": None, "ci_high": None, "n_variants": len(sel), "n_boot": n_boot,
                         "positive": False}
            continue
        idx = rng.integers(0, len(sel), size=(n_boot, len(sel)))
        boot = np.array([_pooled(e[i], n0[i]) for i in idx])
        lo, hi = np.nanpercentile(boot, [2.5, 97.5])
        pooled[k] = {"skill": _pooled(e, n0), "ci_low": float(lo), "ci_high": float(hi), "n_variants": len(sel),
                     "n_boot": n_boot, "positive": bool(lo > 0)}
    return {"multiples": use, "metric": "mean |ln r̂ − ln r| over the multiples", "variants": per, "pooled": pooled,
            "positive_skill": all(p["positive"] for p in pooled.values())}
