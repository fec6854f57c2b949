"""From predicted far mass to perplexity: a two-coefficient law judged leave-one-variant-out.

For a checkpoint, the predictor (:mod:`~simulations.transformer.bridge.predict`) gives ρ̂_{ℓ,h}(L) per layer ℓ and head h at
the query ``i = L − 1``.  The measured ratio is the C6 metric "target" (the last ``L_train`` positions
of a length-``L`` window: the queries the prediction is made for), ``r(L) = PPL(L)/PPL(L_train)``.
The law, with no intercept (``r(L_train) = 1``) and non-negative coefficients:

    log r̂(L) = β₁ x₁(L) + β₂ x₂(L),
    x₁ = mean_{ℓ,h} [ρ̂(L) − ρ̂(L_train)],   x₂ = mean_{ℓ,h} [log(1 − ρ̂(L_train)) − log(1 − ρ̂(L))],

(the far mass gained, and the log of the near mass lost).  Leave-one-variant-out: β is fitted (NNLS,
every seed and multiple ≥ 2 of the other variants) and the left-out variant's seed-mean ratio
``exp(mean_seeds log r̂)`` is compared with its measurement.  Verdict: the bridge holds when, for every
left-out variant, the predicted ratio at 16× and at 64× is within ``±TOLERANCE`` (25 %) of the measured one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import nnls

from .skill import skill_table

__all__ = ["TOLERANCE", "CHECK_MULTIPLES", "features", "fit", "leave_one_variant_out", "verdict", "rejudged",
           "crossing"]

#: relative tolerance of the predicted PPL ratio
TOLERANCE = 0.25
#: the multiples the verdict reads
CHECK_MULTIPLES = (16, 64)
#: the horizon threshold reported beside the verdict (PPL ratio 1.5; within a factor 2 counts as right)
HORIZON_RATIO, HORIZON_FACTOR = 1.5, 2.0


def features(rho: np.ndarray, rho_train: np.ndarray) -> np.ndarray:
    """``[x₁, x₂]`` from ρ̂ at ``L`` and at ``L_train`` (arrays over layers and heads, any equal shape)."""
    rho = np.clip(np.asarray(rho, float), 0.0, 1.0 - 1e-9)
    rt = np.clip(np.asarray(rho_train, float), 0.0, 1.0 - 1e-9)
    return np.array([np.mean(rho - rt), np.mean(np.log1p(-rt) - np.log1p(-rho))])


def fit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``y ≈ X β`` (``X`` [n, 2], ``y`` log ratios)."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    if X.ndim != 2 or len(X) != len(y) or len(y) == 0:
        raise ValueError(f"X/y: need X [n, k] and y [n] with n ≥ 1, got {X.shape} and {y.shape}")
    return nnls(X, y)[0]


def crossing(xs, ys, threshold: float) -> float:
    """First ``x`` where ``y`` reaches ``threshold`` (linear in ``log x``); ``inf`` if never."""
    pts = sorted((float(x), float(y)) for x, y in zip(xs, ys) if y is not None and np.isfinite(y))
    for k, (x, y) in enumerate(pts):
        if y >= threshold:
            if k == 0:
                return x
            x0, y0 = pts[k - 1]
            f = (threshold - y0) / (y - y0)
            return float(math.exp(math.log(x0) + f * (math.log(x) - math.log(x0))))
    return math.inf


def leave_one_variant_out(samples: list[dict]) -> dict:
    """LOVO predictions.

    Parameters
    ----------
    samples : list of dict
        One per (variant, seed): ``variant``, ``seed``, ``multiples`` [m], ``x`` [m, 2] (features at
        those multiples) and ``log_ratio`` [m] (measured).

    Returns
    -------
    dict
        ``rows``: per variant ``multiples``, ``measured``/``predicted`` seed-mean ratios, ``seeds``,
        ``beta`` (fitted without it), ``err`` (pred/meas − 1 per multiple), the horizons at
        ``HORIZON_RATIO``; ``beta_all`` (fitted on every variant).
    """
    variants = list(dict.fromkeys(s["variant"] for s in samples))
    if len(variants) < 3:
        raise ValueError(f"samples: leave-one-variant-out needs ≥ 3 variants, got {len(variants)}")

    def design(rows):
        X = np.concatenate([np.asarray(s["x"], float)[np.asarray(s["multiples"]) >= 2] for s in rows])
        y = np.concatenate([np.asarray(s["log_ratio"], float)[np.asarray(s["multiples"]) >= 2] for s in rows])
        return X, y

    out = []
    for v in variants:
        beta = fit(*design([s for s in samples if s["variant"] != v]))
        mine = [s for s in samples if s["variant"] == v]
        ms = sorted(set.intersection(*(set(map(int, s["multiples"])) for s in mine)))
        pred, meas = [], []
        for m in ms:
            lp = [float(np.asarray(s["x"])[list(s["multiples"]).index(m)] @ beta) for s in mine]
            lm = [float(np.asarray(s["log_ratio"])[list(s["multiples"]).index(m)]) for s in mine]
            pred.append(math.exp(np.mean(lp)))
            meas.append(math.exp(np.mean(lm)))
        hp, hm = crossing(ms, pred, HORIZON_RATIO), crossing(ms, meas, HORIZON_RATIO)
        out.append({
            "variant": v, "seeds": sorted(int(s["seed"]) for s in mine), "multiples": ms, "measured": meas,
            "predicted": pred, "beta": beta.tolist(), "err": {str(m): p / q - 1.0 for m, p, q in zip(ms, pred, meas)},
            "horizon_measured": hm, "horizon_predicted": hp,
            "horizon_ok": _horizon_ok(hp, hm, max(ms)),
        })
    return {"rows": out, "beta_all": fit(*design(samples)).tolist()}


def _horizon_ok(pred: float, meas: float, top: float) -> bool:
    """Within a factor ``HORIZON_FACTOR``; one side "not reached by ``top``" agrees when the other is beyond ``top/2``."""
    if math.isinf(meas) and math.isinf(pred):
        return True
    if math.isinf(meas) or math.isinf(pred):
        return min(pred, meas) * HORIZON_FACTOR > top
    return 1.0 / HORIZON_FACTOR <= pred / meas <= HORIZON_FACTOR


def verdict(lovo: dict, tolerance: float = TOLERANCE, multiples=CHECK_MULTIPLES) -> dict:
    """The bridge row: holds iff every left-out variant's ratio at ``multiples`` is within ``±tolerance``."""
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance={tolerance!r} must be in (0, 1)")
    have = set.intersection(*(set(r["multiples"]) for r in lovo["rows"])) if lovo["rows"] else set()
    multiples = [m for m in multiples if m in have] or ([max(have)] if have else [])  # small presets: the top one
    per = {}
    for r in lovo["rows"]:
        errs = {m: r["err"].get(str(m)) for m in multiples}
        per[r["variant"]] = {"errors": errs,
                             "ok": all(e is not None and abs(e) <= tolerance for e in errs.values())}
    n_ok = sum(p["ok"] for p in per.values())
    skill = skill_table(lovo["rows"]) if lovo["rows"] else None
    return {"holds": bool(per) and n_ok == len(per) and bool(skill and skill["positive_skill"]), "n_ok": n_ok,
            "n": len(per), "tolerance": tolerance, "multiples": list(multiples), "variants": per, "skill": skill,
            "horizon_ok": sum(bool(r["horizon_ok"]) for r in lovo["rows"]),
            "rule": f"every left-out variant's predicted PPL(L)/PPL(L_train) within ±{tolerance:.0%} of the "
                    f"measured at {' and '.join(f'{m}×' for m in multiples)} (metric: the last L_train targets), "
                    "and the pooled skill against every null forecast (≡ 1; degrades like RoPE; the median of the other "
                    "variants' measured curves, the same information as the PPL law) above 0 (95%)"}


def rejudged(result: dict) -> dict:
    """The verdict of a saved bridge result recomputed by the current rule (:func:`verdict`) from its left-out
    forecasts, so a result saved before the skill rule is judged by it too."""
    v = result["verdict"]
    return verdict(result["lovo"], tolerance=v["tolerance"], multiples=v["multiples"])
