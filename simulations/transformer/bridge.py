"""The bridge: predict a trained transformer's extrapolation horizon from the stylized model.

Pipeline (``predict``): probe every checkpoint of a preset (:mod:`.probe`: λ, ρ_D(L), χ_b per
layer and head), feed the measured ``λ`` (at the training length), ``χ_b``, ``D`` and ``d_h`` into
the stylized single-layer model, and compare its horizon with (a) the length where the
transformer's own far mass ``ρ_D`` (query at ``i = L−1``) crosses ½ and (b) the length where its
perplexity ratio ``PPL(L)/PPL(L_train)`` crosses 1.5 (rows of ``<preset>_compare.json``).

Stylized horizon (:func:`predict_horizon`).  Near sources ``n = i−j < D`` all carry the query
(``k_j = q``, the farmass growth model's ``near="all"``), so the near partition sum is

    Z_N = E Σ_{n<D} exp(λ qᵀP_n q − m n),   qᵀP_n q = (1/B) Σ_b cos A_{n,b},  A_n = θ_1 + … + θ_n,

(Monte Carlo over the layer's step law: ``SO2Uniform(ω)`` for random angles, ``TokenAngles`` with
the validation token frequencies for learned tables, ``θ = ω`` for RoPE, ``A = 0`` without rotation);
far scores are ``λξ`` with ``ξ`` a Haar coordinate on ``S^{d_h−1}``, ``μ = E e^{λξ}`` (closed form
:func:`stylized.farmass.haar_mgf`).  ``ρ_D(L) = S(L)/(S(L) + Z_N)`` with the far sum
``S(L) = μ Σ_{n=D}^{L−1} e^{−mn}``, so ``ρ_D`` crosses ½ at

    L_{1/2} = D + Z_N/μ   (m = 0),      L_{1/2} = D − ln(1 − r)/m,  r = Z_N (1−e^{−m}) e^{mD}/μ  (ALiBi, ∞ if r ≥ 1),

where the near-signal coefficient ``1 − ρ_D`` falls below ½.  ``near="target"`` (only the key at
route length 0 carries the query, ``Z_N = e^λ + (D−1)μ``) gives the other end of the stylized
range; both are stored.  The bias-free worst case ``ρ_D ≥ M/(M + K e^{2λ})`` caps the horizon at
``L_bound = D(1 + e^{2λ})``.

Example
-------
>>> p = predict_horizon(lam=2.0, d=8, D=4, family=None, trials=1)
>>> round(p["L_half"], 6) == round(4 + 4 * math.exp(2.0) / p["mu"], 6)
True
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import time
from pathlib import Path

import numpy as np
from scipy import special

from stylized.families import as_generator
from stylized.farmass import haar_mgf, horizon_prediction
from stylized.results import atomic_write_text

from .cli import _guard
from .model import VARIANT_SPECS
from .probe import DEFAULT_MULTIPLES, probe_checkpoint

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results" / "transformer"
FIGURES_DIR = Path(__file__).resolve().parents[2] / "figures"
PPL_THRESHOLD = 1.5
ROTATION_ONLY = ("rope", "random-qk", "random-qkv", "learned-qk", "learned-qkv")
#: rotation + far-mass control: ALiBi bias, or a FoX forget gate (``fox`` alone is its control)
COMBINED = ("random-qkv-alibi", "learned-qkv-alibi", "fox", "learned-qkv-fox")


# ---------------------------------------------------------------------------
# the stylized prediction
# ---------------------------------------------------------------------------
def near_log_partition(lam: float, D: int, family=None, slope: float = 0.0, trials: int = 256,
                       seed: int = 0) -> tuple[float, float]:
    """``log E Z_N`` and its standard error (delta method) for near keys equal to the query.

    ``Z_N = Σ_{n<D} exp(λ (1/B) Σ_b cos A_{n,b} − m n)``; ``family=None`` means no rotation (``A = 0``).
    """
    n = np.arange(D, dtype=float)
    if family is None:
        return float(special.logsumexp(lam - slope * n)), 0.0
    rng = as_generator(seed)
    B = family.d // 2
    theta = np.asarray(family.rvs(trials * max(D - 1, 0), rng), dtype=float).reshape(trials, max(D - 1, 0), B)
    A = np.concatenate([np.zeros((trials, 1, B)), np.cumsum(theta, axis=1)], axis=1)  # [T, D, B]
    logz = special.logsumexp(lam * np.cos(A).mean(axis=-1) - slope * n, axis=1)  # [T]
    top = logz.max()
    z = np.exp(logz - top)
    mean = z.mean()
    se = z.std(ddof=1) / math.sqrt(trials) / mean if trials > 1 else 0.0
    return float(top + math.log(mean)), float(se)


def crossing_length(log_z: float, mu: float, D: int, slope: float = 0.0) -> float:
    """Smallest (continuous) ``L`` with ``S(L) = μ Σ_{n=D}^{L−1} e^{−mn} ≥ Z_N``; ``inf`` if never."""
    if slope <= 0.0:
        return horizon_prediction(math.exp(min(log_z, 700.0)), mu, D) if log_z < 700 else math.inf
    log_r = log_z + math.log(-math.expm1(-slope)) + slope * D - math.log(mu)
    if log_r >= 0.0:
        return math.inf
    return D - math.log1p(-math.exp(log_r)) / slope


def predicted_rho(L: float, log_z: float, mu: float, D: int, slope: float = 0.0) -> float:
    """Stylized ``ρ_D(L) = S(L)/(S(L) + Z_N)`` at the query ``i = L−1``."""
    M = max(L - D, 0.0)
    if M == 0:
        return 0.0
    far = mu * M if slope <= 0 else mu * math.exp(-slope * D) * -math.expm1(-slope * M) / -math.expm1(-slope)
    return float(special.expit(math.log(far) - log_z))


def predict_horizon(lam: float, d: int, D: int, family=None, slope: float = 0.0, trials: int = 256,
                    seed: int = 0) -> dict:
    """Stylized horizon for measured ``λ``, head dim ``d``, threshold ``D``, step law ``family``, ALiBi ``slope``.

    Returns ``L_half`` (near = all), ``L_half_target`` (near = target only), ``L_bound``
    (``D(1+e^{2λ})``, bias-free only), ``mu``, ``log_Z`` and its relative standard error.
    """
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (λ)={lam!r} must be a finite number ≥ 0")
    if D < 1 or d < 2:
        raise ValueError(f"D={D!r} must be ≥ 1 and d={d!r} ≥ 2")
    mu = haar_mgf(lam, d)
    log_z, se = near_log_partition(lam, D, family, slope, trials, seed)
    n = np.arange(1, D, dtype=float)
    log_zt = float(special.logsumexp(np.concatenate([[lam], math.log(mu) - slope * n])))
    return {
        "L_half": crossing_length(log_z, mu, D, slope),
        "L_half_target": crossing_length(log_zt, mu, D, slope),
        "L_bound": (D * (1.0 + math.exp(min(2 * lam, 700.0))) if slope <= 0 else math.inf),
        "mu": mu,
        "log_Z": log_z,
        "log_Z_rel_se": se,
        "log_Z_target": log_zt,
    }


# ---------------------------------------------------------------------------
# measured crossings
# ---------------------------------------------------------------------------
def crossing(xs, ys, threshold: float) -> float:
    """First ``x`` where ``y`` reaches ``threshold``, linear interpolation in ``log x``.

    ``inf`` if never reached; ``xs[0]`` if already reached at the first point.  NaN/None points are skipped.
    """
    pts = [(float(x), float(y)) for x, y in zip(xs, ys) if y is not None and np.isfinite(y)]
    pts.sort()
    for k, (x, y) in enumerate(pts):
        if y >= threshold:
            if k == 0:
                return x
            x0, y0 = pts[k - 1]
            f = (threshold - y0) / (y - y0)
            return float(math.exp(math.log(x0) + f * (math.log(x) - math.log(x0))))
    return math.inf


def ppl_horizons(rows: list[dict], threshold: float = PPL_THRESHOLD) -> dict[str, dict]:
    """Per variant: the multiple where ``PPL(L)/PPL(L_train)`` crosses ``threshold`` (``inf``: not reached)."""
    out: dict[str, dict] = {}
    for v in dict.fromkeys(r["variant"] for r in rows):
        rs = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["multiple"])
        ms, est = [r["multiple"] for r in rs], [r["estimate"] for r in rs]
        out[v] = {"multiple": crossing(ms, est, threshold), "max_multiple": max(ms),
                  "ratio_max": est[-1], "ppl_1x": next((r.get("ppl") for r in rs if r["multiple"] == 1), None)}
    return out


_LOG_RE = re.compile(r"\[compare\] (\S+): ppl@1x=([\d.]+) ratios=((?:\d+x:[\d.]+ ?)+)")


def rows_from_log(text: str) -> list[dict]:
    """Compare rows (variant, multiple, estimate, ppl at 1×) parsed from ``[compare]`` log lines (fallback)."""
    rows = []
    for v, ppl, ratios in _LOG_RE.findall(text.replace("\r", "\n")):
        for item in ratios.split():
            m, r = item.split("x:")
            rows.append({"variant": v, "multiple": int(m), "estimate": float(r),
                         "ppl": float(ppl) * float(r), "source": "log"})
    return rows


def load_measured(preset: str, results_dir: Path, compare_log: str | None = None) -> list[dict]:
    """Rows of ``<preset>_compare.json`` and ``<preset>_combined.json`` (and a log for missing variants)."""
    rows: list[dict] = []
    for name in (f"{preset}_compare.json", f"{preset}_combined.json"):
        p = results_dir / name
        if p.exists():
            have = {r["variant"] for r in rows}
            rows += [r for r in json.loads(p.read_text())["rows"] if r["variant"] not in have]
    if compare_log and Path(compare_log).exists():
        have = {r["variant"] for r in rows}
        rows += [r for r in rows_from_log(Path(compare_log).read_text(errors="replace")) if r["variant"] not in have]
    return rows


# ---------------------------------------------------------------------------
# probe -> rows
# ---------------------------------------------------------------------------
def layer_families(path: str | Path, tokens: np.ndarray) -> list:
    """The stylized step law of every layer of a checkpoint (see :func:`.probe.layer_family`)."""
    from .probe import layer_family, token_frequencies
    from .train import load_model

    model, _ = load_model(path, "cpu")
    probs = token_frequencies(tokens, model.config.vocab_size)
    return [layer_family(b.attn, probs) for b in model.blocks]


def _log_median(x: list[float]) -> float:
    a = np.sort(np.asarray(x, dtype=float))
    return float(a[(len(a) - 1) // 2]) if len(a) else math.nan  # lower median (robust to inf)


def bridge_rows(probe: dict, families: list, ppl: dict | None, trials: int = 256, seed: int = 0) -> list[dict]:
    """One row per (variant, layer): measured λ, ρ_D; predicted and measured horizons (multiples of L_train)."""
    Lt, D, d = probe["L_train"], probe["D"], probe["head_dim"]
    slopes = probe.get("alibi_slopes") or [0.0] * probe["n_head"]
    lens = sorted(probe["lengths"])
    rows = []
    for li, lay in enumerate(probe["layers"]):
        base = lay["lengths"][str(lens[0])]
        heads = []
        for h in range(probe["n_head"]):
            lam = float(base["lam"][h])
            pred = predict_horizon(lam, d, D, families[li], float(slopes[h]), trials, seed + 97 * li + h)
            rho_last = [0.0 if L <= D else lay["lengths"][str(L)]["rho_last"][h] for L in lens]
            rho_pred = [predicted_rho(L, pred["log_Z"], pred["mu"], D, float(slopes[h])) for L in lens]
            # semi-empirical: the same growth law with the measured Z_N and far mean e^{s} at the first L > D
            first = next((lay["lengths"][str(L)] for L in lens if L > D), None)
            emp = math.nan
            if first is not None and first["lse_near"] is not None and float(slopes[h]) == 0.0:
                emp = crossing_length(first["lse_near"][h], math.exp(first["log_mu_far"][h]), D, 0.0)
            heads.append({
                "log_mu_meas": math.nan if first is None or first["log_mu_far"] is None else first["log_mu_far"][h],
                "log_Z_meas": math.nan if first is None or first["lse_near"] is None else first["lse_near"][h],
                "lam": lam, "pred": pred, "emp": emp, "rho_last": rho_last, "rho_pred": rho_pred,
                "measured_rho_cross": crossing([L / Lt for L in lens], rho_last, 0.5),
            })
        chi = lay.get("chi")
        long = lay["lengths"][str(lens[-1])]
        v = probe["variant"]
        pv = (ppl or {}).get(v)
        row = {
            "variant": v,
            "layer": li,
            "alibi": bool(probe.get("alibi_slopes")),
            "step": probe.get("step"),
            "D": D,
            "head_dim": d,
            "lam_1x": [hd["lam"] for hd in heads],
            "lam_max_len": long["lam"],
            "rho_by_L": {str(L): lay["lengths"][str(L)]["rho"] for L in lens},
            "rho_last_by_L": {str(L): [hd["rho_last"][k] for hd in heads] for k, L in enumerate(lens)},
            "rho_pred_by_L": {str(L): [hd["rho_pred"][k] for hd in heads] for k, L in enumerate(lens)},
            "bound_holds": all(lay["lengths"][str(L)]["bound_holds"] in (True, None) for L in lens),
            "gap": None if chi is None else chi["gap"],
            "pred_heads": [hd["pred"]["L_half"] / Lt for hd in heads],
            "pred_multiple": _log_median([hd["pred"]["L_half"] / Lt for hd in heads]),
            "pred_multiple_target": _log_median([hd["pred"]["L_half_target"] / Lt for hd in heads]),
            "log_mu_far_measured": float(np.median([hd["log_mu_meas"] for hd in heads])),
            "log_mu_stylized": float(np.median([math.log(hd["pred"]["mu"]) for hd in heads])),
            "log_Z_measured": float(np.median([hd["log_Z_meas"] for hd in heads])),
            "log_Z_stylized": float(np.median([hd["pred"]["log_Z"] for hd in heads])),
            "emp_multiple": _log_median([hd["emp"] / Lt for hd in heads]),
            "bound_multiple": _log_median([hd["pred"]["L_bound"] / Lt for hd in heads]),
            "measured_rho_multiple": _log_median([hd["measured_rho_cross"] for hd in heads]),
            "measured_rho_heads": [hd["measured_rho_cross"] for hd in heads],
            "max_probed_multiple": lens[-1] / Lt,
            "measured_ppl_multiple": None if pv is None else pv["multiple"],
            "ppl_max_multiple": None if pv is None else pv["max_multiple"],
            "ppl_ratio_max": None if pv is None else pv["ratio_max"],
        }
        rows.append(row)
    return rows


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "never"
    return f"{x:.3g}"


def agreement(rows: list[dict], key: str, max_key: str) -> dict:
    """Does the prediction say "crosses within the measured range" when the measurement does?

    Also the log10 error where both cross inside the range.
    """
    n = agree = 0
    errs = []
    for r in rows:
        meas, top = r.get(key), r.get(max_key)
        if meas is None or top is None:
            continue
        n += 1
        pred_in, meas_in = r["pred_multiple"] <= top, math.isfinite(meas)
        agree += pred_in == meas_in
        if pred_in and meas_in:
            errs.append(math.log10(r["pred_multiple"] / meas))
    return {"n": n, "agree": agree, "log10_err": errs,
            "median_abs_log10_err": float(np.median(np.abs(errs))) if errs else None}


# ---------------------------------------------------------------------------
# predict: files
# ---------------------------------------------------------------------------
def checkpoints(preset: str, results_dir: Path) -> dict[str, Path]:
    """``variant -> checkpoint`` of seed 0 in ``checkpoints/<preset>/``."""
    folder = results_dir / "checkpoints" / preset
    out = {}
    for p in sorted(folder.glob("*.pt")):
        if not re.search(r"-s\d+$", p.stem):
            out[p.stem] = p
    return out


def predict(preset: str = "cpu", *, results_dir: str | Path | None = None, multiples=DEFAULT_MULTIPLES,
            D: int | None = None, n_windows: int = 4, n_queries: int = 32, trials: int = 256, seed: int = 0,
            compare_log: str | None = None, figure: str | Path | None = None, reuse: bool = True,
            variants: list[str] | None = None) -> dict:
    """Probe every checkpoint of ``preset``, predict, compare; write ``bridge_<preset>.json/.csv`` + figure."""
    from .data import corpus_for
    from .train import get_preset

    t0 = time.time()
    root = _root(results_dir, preset)
    cks = checkpoints(preset, root)
    gated = [v for v in cks if v in VARIANT_SPECS and VARIANT_SPECS[v].forget_gate]
    if gated:  # the probe recomputes scores without the forget-gate bias: it would mis-measure them
        print(f"[predict] skipping {', '.join(gated)}: the probe does not model the FoX forget gate", flush=True)
        cks = {v: p for v, p in cks.items() if v not in gated}
    if variants:
        cks = {v: p for v, p in cks.items() if v in variants}
    if not cks:
        raise ValueError(f"preset={preset!r}: no checkpoints under {root / 'checkpoints' / preset}")
    tc = get_preset(preset)["train"]
    corpus = corpus_for(tc)
    cache_path = root / f"probe_{preset}.json"
    cache = json.loads(cache_path.read_text()) if (reuse and cache_path.exists()) else {}
    key = {"multiples": list(multiples), "D": D, "n_windows": n_windows, "n_queries": n_queries, "seed": seed}
    ppl = ppl_horizons(load_measured(preset, root, compare_log))
    rows, probes = [], {}
    for v, path in cks.items():
        import torch

        step = int(torch.load(path, map_location="cpu", weights_only=True)["step"])
        c = cache.get(v)
        if c and c.get("step") == step and c.get("key") == key:
            pr = c["probe"]
        else:
            t1 = time.time()
            pr = probe_checkpoint(path, multiples, D, n_windows, n_queries, seed, tokens=corpus.val)
            print(f"[probe] {v} (step {step}) in {time.time() - t1:.0f}s", flush=True)
            cache[v] = {"step": step, "key": key, "probe": pr}
            atomic_write_text(cache_path, json.dumps(cache))
        probes[v] = pr
        rows += bridge_rows(pr, layer_families(path, corpus.val), ppl, trials, seed)
    ag_rho = agreement(rows, "measured_rho_multiple", "max_probed_multiple")
    ag_ppl = agreement(rows, "measured_ppl_multiple", "ppl_max_multiple")
    result = {
        "claim": "transformer-bridge",
        "params": {"preset": preset, "multiples": list(multiples), "D": D or "L_train", "n_windows": n_windows,
                   "n_queries": n_queries, "trials": trials, "seed": seed, "ppl_threshold": PPL_THRESHOLD,
                   "corpus": corpus.description},
        "rows": rows,
        "ppl_horizons": ppl,
        "agreement": {"rho": ag_rho, "ppl": ag_ppl},
        "seconds": time.time() - t0,
    }
    result["summary"] = summary_text(result)
    result["headline"] = {"quantity": "prediction says 'crosses within range' iff measurement does "
                                      "(layers, PPL 1.5x criterion)",
                          "estimate": ag_ppl["agree"], "n_samples": ag_ppl["n"], "verdict": result["summary"]}
    write_outputs(result, root, preset, figure)
    return result


def summary_text(res: dict) -> str:
    """2–4 sentences with the numbers (for paper_checks.md)."""
    rows = res["rows"]
    top = max(r["max_probed_multiple"] for r in rows)
    free = [r for r in rows if not r["alibi"]]
    biased = [r for r in rows if r["alibi"]]

    def rho_top(r):
        return float(np.median(r["rho_last_by_L"][max(r["rho_last_by_L"], key=int)]))

    def rng(xs, fmt="{:.2g}"):
        xs = [x for x in xs if math.isfinite(x)]
        return (fmt.format(min(xs)) + "–" + fmt.format(max(xs))) if xs else "n/a"

    def right(rs):
        return sum((r["pred_multiple"] <= r["max_probed_multiple"]) == math.isfinite(r["measured_rho_multiple"])
                   for r in rs)

    lam_v = {v: float(np.median([x for r in rows if r["variant"] == v for x in r["lam_1x"]]))
             for v in dict.fromkeys(r["variant"] for r in rows)}
    s = (f"Probe of {len(lam_v)} cpu checkpoints: logit scale λ = max|qᵀPk|/√d_h at L_train {rng(lam_v.values())} "
         f"(per-variant medians); far mass ρ_D (D = L_train, last query) at {top:g}× is {rng(map(rho_top, free))} "
         f"on bias-free layers and {rng(map(rho_top, biased))} with an ALiBi bias, and ρ_D ≥ M/(M + K e^{{2λ_i}}) "
         f"held on every probed query of {sum(bool(r['bound_holds']) for r in free)}/{len(free)} bias-free layers. ")
    if free:
        dz = np.nanmedian([r["log_Z_measured"] - r["log_Z_stylized"] for r in free])
        dmu = np.nanmedian([r["log_mu_far_measured"] - r["log_mu_stylized"] for r in free])
        s += (f"The stylized horizon D + Z_N/μ fed the measured λ and χ_b gets 'ρ_D crosses ½ within {top:g}×' right "
              f"on {right(biased)}/{len(biased)} ALiBi-biased layers but only {right(free)}/{len(free)} bias-free "
              f"ones: it predicts {rng([r['pred_multiple'] for r in free], '{:.0f}')}× where ρ_D measurably crosses at "
              f"{rng([r['measured_rho_multiple'] for r in free], '{:.1f}')}×, because the trained near sum Z_N is "
              f"e^{dz:+.1f} of the stylized one (near keys scoring λ) while the far mean e^s is e^{dmu:+.1f} of the "
              f"Haar μ. ")
    emp = [abs(math.log10(r["emp_multiple"] / r["measured_rho_multiple"])) for r in free
           if math.isfinite(r.get("emp_multiple", math.nan)) and math.isfinite(r["measured_rho_multiple"])]
    if emp:
        s += (f"The same law with the measured Z_N and far mean (first probed L > D) is within a factor "
              f"{10 ** float(np.median(emp)):.2f} (median) of the measured crossing on {len(emp)} layers. ")
    hz = res.get("ppl_horizons") or {}
    if hz:
        items = ", ".join(f"{v} {'never' if math.isinf(h['multiple']) else format(h['multiple'], '.1f') + '×'}"
                          for v, h in sorted(hz.items(), key=lambda kv: kv[1]["multiple"]))
        s += (f"Crossing ρ_D = ½ does not set the perplexity horizon: PPL(L)/PPL(L_train) reaches {PPL_THRESHOLD} at "
              f"{items} (up to {max(h['max_multiple'] for h in hz.values())}×).")
    return s


CSV_FIELDS = ("variant", "layer", "step", "D", "head_dim", "lam_1x_median", "lam_max_len_median", "gap",
              "rho_last_maxL_median", "rho_pred_maxL_median", "pred_multiple", "pred_multiple_target",
              "emp_multiple", "bound_multiple", "log_mu_far_measured", "log_mu_stylized",
              "log_Z_measured", "log_Z_stylized", "measured_rho_multiple", "measured_ppl_multiple", "ppl_ratio_max", "bound_holds")


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    wr.writeheader()
    for r in rows:
        top = max(r["rho_last_by_L"], key=int)
        wr.writerow({
            **{k: r.get(k) for k in CSV_FIELDS if k in r},
            "lam_1x_median": float(np.median(r["lam_1x"])),
            "lam_max_len_median": float(np.median(r["lam_max_len"])),
            "rho_last_maxL_median": float(np.median(r["rho_last_by_L"][top])),
            "rho_pred_maxL_median": float(np.median(r["rho_pred_by_L"][top])),
        })
    return buf.getvalue()


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else None)
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, np.generic):
        return _json_safe(x.item())
    return x


def _root(results_dir, preset: str) -> Path:
    """The results folder: the committed one for the cpu preset, ``runs/<preset>/`` otherwise (as ``compare``)."""
    if results_dir:
        return Path(results_dir)
    return RESULTS_DIR if preset == "cpu" else RESULTS_DIR / "runs" / preset


def write_outputs(result: dict, root: Path, preset: str, figure: str | Path | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    jp = root / f"bridge_{preset}.json"
    atomic_write_text(jp, json.dumps(_json_safe(result), indent=1))
    atomic_write_text(root / f"bridge_{preset}.csv", csv_text(result["rows"]))
    canonical = Path(root) == RESULTS_DIR and preset == "cpu"  # only the cpu preset's own run writes figures/
    fig = Path(figure) if figure else (FIGURES_DIR if canonical else root) / "transformer_bridge.png"
    plot_bridge(result, fig)
    result["files"] = {"json": str(jp), "csv": str(root / f"bridge_{preset}.csv"), "figure": str(fig)}


def _num(x) -> float:
    if x == "inf":
        return math.inf
    return math.nan if x is None else float(x)


def plot_bridge(result: dict, out_png: str | Path) -> Path:
    """Predicted vs measured horizon (multiples of L_train), log-log, y = x; off-scale points at the edges."""
    import matplotlib

    from .evaluate import save_png

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.8))
    lo, hi = 0.5, 1e6
    for ax, key, top_key, ylab in (
        (axes[0], "measured_rho_multiple", "max_probed_multiple", "measured: ρ_D (query L−1) crosses ½"),
        (axes[1], "measured_ppl_multiple", "ppl_max_multiple", f"measured: PPL ratio crosses {PPL_THRESHOLD}"),
    ):
        for vi, v in enumerate(variants):
            c = colors[vi % len(colors)]
            first = True
            for r in (r for r in rows if r["variant"] == v):
                x, y = _num(r["pred_multiple"]), _num(r.get(key))
                xt = _num(r["pred_multiple_target"])
                if math.isnan(y):
                    continue
                top = _num(r.get(top_key))
                xm, ym = min(max(x, lo), hi), (min(max(y, lo), hi) if math.isfinite(y) else top * 1.6)
                mk = "o"
                if not math.isfinite(y):
                    mk = "^"
                if x > hi:
                    mk = ">" if math.isfinite(y) else "$\\nearrow$"
                ax.plot([min(max(xt, lo), hi), xm], [ym, ym], "-", color=c, lw=0.8, alpha=0.5)
                ax.plot(xm, ym, marker=mk, ls="none", color=c, ms=8, label=v if first else None, mec="k", mew=0.4)
                xe = _num(r.get("emp_multiple"))
                if math.isfinite(xe):
                    ax.plot(min(max(xe, lo), hi), ym, "o", mfc="none", mec=c, ms=7, mew=1.2,
                            label="semi-empirical (measured Z_N, far mean)" if (vi == 0 and first) else None)
                ax.annotate(str(r["layer"]), (xm, ym), fontsize=6, xytext=(3, 3), textcoords="offset points")
                first = False
        tops = [_num(r.get(top_key)) for r in rows if r.get(top_key) is not None]
        ytop = 3.0 * max(tops) if tops else hi
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
        if tops:
            ax.axvspan(max(tops), hi * 1.5, color="gray", alpha=0.07, lw=0)
            ax.axhline(max(tops), color="gray", lw=0.6, ls=":")
            ax.text(max(tops) * 1.2, lo * 1.2, "predicted beyond the measured range", fontsize=7, color="gray")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi * 1.5)
        ax.set_ylim(lo, ytop)
        ax.set_xlabel("predicted horizon L_1/2 / L_train  (stylized, near = all; bar to near = target)")
        ax.set_ylabel(ylab + "  (L / L_train)")
        ax.grid(alpha=0.2, which="both")
    axes[0].legend(fontsize=7, loc="upper left")
    p = result["params"]
    fig.suptitle(
        f"Bridge, preset '{p['preset']}': one point per variant/layer (label = layer; median over heads). "
        f"▲ = not reached in the measured range (drawn just above it); ▶/↗ = prediction beyond {hi:g}×.\n"
        f"filled: stylized model fed the measured λ, χ_b; hollow: same law L = D + Z_N/μ with the measured near "
        f"sum and far mean e^s at the first L > D (bias-free heads).\n"
        f"λ measured at L_train on {p['n_windows']} held-out windows, ρ_D at {p['multiples']}× "
        f"({p['n_queries']} queries/window), stylized Z_N from {p['trials']} Monte Carlo route draws, D = {p['D']}",
        fontsize=8.5)
    return save_png(fig, out_png)


# ---------------------------------------------------------------------------
# combined variants
# ---------------------------------------------------------------------------
def combined(preset: str = "cpu", *, results_dir: str | Path | None = None, variants=COMBINED, seed: int = 0,
             steps: int | None = None, progress: bool = True) -> dict:
    """Train + evaluate the rotation + far-mass-control variants; write ``<preset>_combined.json/.csv``.

    Rows are in the compare row format.  A variant whose checkpoint already holds all the preset's
    steps is not retrained (``train(resume=True)`` loads it and returns); it is re-evaluated.  Rows of ALiBi and of the rotation-only variants are copied from ``<preset>_compare.json`` when it exists.
    Goal: ratio ≤ 1.05 at the largest multiple with PPL(L_train) ≤ the best rotation-only variant's.
    """
    from .data import load_corpus
    from .evaluate import evaluate_checkpoint
    from .train import checkpoint_path, make_configs, train

    t0 = time.time()
    root = _root(results_dir, preset)
    _, tcfg, ecfg = make_configs(variants[0], preset, steps=steps, seed=seed)
    corpus = load_corpus(tcfg.data, tcfg.max_bytes, tcfg.tokenizer, tcfg.bpe_vocab)
    rows = []
    for v in variants:
        path = checkpoint_path(preset, v, seed, root)
        info = train(v, preset, steps=tcfg.steps, seed=seed, resume=True, ckpt=path, corpus=corpus,
                     progress=progress, device="cpu")
        for r in evaluate_checkpoint(path, ecfg, corpus, seed, "cpu"):
            rows.append({"variant": r["variant"], "L": r["L"], "multiple": r["multiple"], "estimate": r["ratio"],
                         "ci_low": r["ci_low"], "ci_high": r["ci_high"], "theory": None,
                         "n_samples": r["n_tokens"], "ppl": r["ppl"], "loss_beyond": r["loss_beyond"],
                         "n_beyond_tokens": r["n_beyond_tokens"], "n_params": info["n_params"]})
    cmp_path = root / f"{preset}_compare.json"
    ref = [r for r in json.loads(cmp_path.read_text())["rows"]] if cmp_path.exists() else []
    goal = combined_goal(rows, ref)
    res = {"claim": "transformer-combined", "params": {"preset": preset, "variants": list(variants), "seed": seed,
                                                       "steps": tcfg.steps},
           "rows": rows, "reference_rows": [r for r in ref if r["variant"] in ("alibi", *ROTATION_ONLY)],
           "goal": goal, "holds": goal.get("met"), "seconds": time.time() - t0}
    atomic_write_text(root / f"{preset}_combined.json", json.dumps(_json_safe(res), indent=1))
    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=list(rows[0]) + ["source"])
    wr.writeheader()
    for r in rows:
        wr.writerow({**r, "source": "combined"})
    for r in res["reference_rows"]:
        wr.writerow({k: r.get(k) for k in list(rows[0])} | {"source": "compare"})
    atomic_write_text(root / f"{preset}_combined.csv", buf.getvalue())
    return res


def combined_goal(rows: list[dict], ref: list[dict], target: float = 1.05) -> dict:
    """Ratio ≤ ``target`` at the largest multiple and PPL(L_train) ≤ the best rotation-only variant's."""
    mmax = max(r["multiple"] for r in rows)
    rot = {r["variant"]: r for r in ref if r["variant"] in ROTATION_ONLY and r["multiple"] == 1}
    best = min(rot.values(), key=lambda r: r["ppl"]) if rot else None
    out = {"multiple": mmax, "target_ratio": target,
           "best_rotation_only": None if best is None else best["variant"],
           "best_rotation_only_ppl_1x": None if best is None else best["ppl"], "variants": {}}
    met = []
    for v in dict.fromkeys(r["variant"] for r in rows):
        top = next(r for r in rows if r["variant"] == v and r["multiple"] == mmax)
        one = next(r for r in rows if r["variant"] == v and r["multiple"] == 1)
        ok_ratio = top["estimate"] <= target
        ok_ppl = None if best is None else one["ppl"] <= best["ppl"]
        out["variants"][v] = {"ratio_max": top["estimate"], "ci": [top["ci_low"], top["ci_high"]],
                              "ppl_1x": one["ppl"], "ratio_ok": ok_ratio, "ppl_ok": ok_ppl}
        met.append(ok_ratio and bool(ok_ppl))
    out["met"] = any(met) if best is not None else None
    return out


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------
def _ints(s: str) -> list[int]:
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"lengths={s!r} must be comma-separated positive integers") from None
    if not out or min(out) < 1:
        raise ValueError(f"lengths={s!r} must be comma-separated positive integers")
    return out


def cmd_probe(args: argparse.Namespace) -> int:
    res = probe_checkpoint(args.checkpoint, _ints(args.lengths), args.D, args.windows, args.queries, args.seed)
    if args.json:
        print(json.dumps(_json_safe(res)))
        return 0
    print(f"{res['variant']} step {res['step']}: L_train={res['L_train']} D={res['D']} d_h={res['head_dim']}")
    for li, lay in enumerate(res["layers"]):
        chi = lay["chi"]
        if chi:
            print(f" layer {li}: γ={chi['gap']:.4g}  |χ_b| min/max={min(chi['chi_abs']):.3g}/"
                  f"{max(chi['chi_abs']):.3g}  W_b({chi['eps']}) finite planes="
                  f"{sum(w is not None for w in chi['windows'])}/{len(chi['windows'])}")
        for L, st in lay["lengths"].items():
            rho = " ".join(_fmt(x) for x in st["rho"])
            print(f"  layer {li} L={L:>6}: λ=" + " ".join(f"{x:.2f}" for x in st["lam"]) + f"  ρ_D={rho}"
                  + f"  bound_holds={st['bound_holds']}")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    res = predict(args.preset, results_dir=args.results_dir, multiples=_ints(args.lengths), D=args.D,
                  n_windows=args.windows, n_queries=args.queries, trials=args.trials, seed=args.seed,
                  compare_log=args.compare_log, figure=args.figure, reuse=not args.no_cache)
    print(f"{'variant':>18} {'layer':>5} {'λ(1x)':>6} {'ρ_last@max':>10} {'pred':>8} {'pred_tgt':>8} "
          f"{'meas_ρ':>8} {'meas_ppl':>8}")
    for r in res["rows"]:
        top = max(r["rho_last_by_L"], key=int)
        print(f"{r['variant']:>18} {r['layer']:5d} {np.median(r['lam_1x']):6.2f} "
              f"{np.median(r['rho_last_by_L'][top]):10.3f} {_fmt(r['pred_multiple']):>8} "
              f"{_fmt(r['pred_multiple_target']):>8} {_fmt(r['measured_rho_multiple']):>8} "
              f"{_fmt(r['measured_ppl_multiple']):>8}")
    print(res["summary"])
    print("wrote " + ", ".join(res["files"].values()))
    return 0


def cmd_combined(args: argparse.Namespace) -> int:
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    bad = [v for v in variants if v not in COMBINED]
    if bad or not variants:
        raise ValueError(f"variants={args.variants!r}: each must be one of {', '.join(COMBINED)}")
    res = combined(args.preset, results_dir=args.results_dir, seed=args.seed, steps=args.steps, variants=variants)
    print(json.dumps(_json_safe(res["goal"]), indent=1))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``probe``, ``predict`` and ``combined`` to the ``stylized transformer`` sub-parsers."""
    p = sub.add_parser("probe", help="λ, ρ_D(L), χ_b per layer/head of a checkpoint")
    p.add_argument("checkpoint")
    p.add_argument("--lengths", default=",".join(map(str, DEFAULT_MULTIPLES)),
                   help="comma-separated multiples of the training length (default 1,4,16,64)")
    p.add_argument("--D", type=int, default=None, help="near/far threshold (default: training length)")
    p.add_argument("--windows", type=int, default=2, help="held-out windows per length")
    p.add_argument("--queries", type=int, default=32, help="query positions per window for ρ_D")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.set_defaults(func=_guard(cmd_probe))

    q = sub.add_parser("predict", help="stylized horizon vs measured (bridge_<preset>.json/.csv + figure)")
    q.add_argument("--preset", default="cpu")
    q.add_argument("--lengths", default=",".join(map(str, DEFAULT_MULTIPLES)))
    q.add_argument("--D", type=int, default=None)
    q.add_argument("--windows", type=int, default=4)
    q.add_argument("--queries", type=int, default=32)
    q.add_argument("--trials", type=int, default=256, help="Monte Carlo route draws for Z_N")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    q.add_argument("--results-dir", default=None)
    q.add_argument("--compare-log", default=None, help="fallback: '[compare]' log lines for variants missing "
                                                         "from <preset>_compare.json")
    q.add_argument("--figure", default=None, help="default figures/transformer_bridge.png")
    q.add_argument("--no-cache", action="store_true", help="re-probe even if probe_<preset>.json matches")
    q.set_defaults(func=_guard(cmd_predict))

    c = sub.add_parser("combined", help="train+evaluate " + ", ".join(COMBINED) + " (<preset>_combined.json)")
    c.add_argument("--preset", default="cpu")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    c.add_argument("--steps", type=int, default=None)
    c.add_argument("--variants", default=",".join(COMBINED), help="comma-separated subset of the default")
    c.add_argument("--results-dir", default=None)
    c.set_defaults(func=_guard(cmd_combined))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulations.transformer.bridge")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_parsers(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
