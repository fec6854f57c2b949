"""Run the recall forecast for every (variant, seed) of the sweep and judge it against two null forecasts.

Per (variant, seed): the checkpoint of :mod:`.recall_sweep`'s run (retrained with the same calibrated settings
and seed when it is not on disk, then saved under ``checkpoints/recall/``; training is deterministic on a
thread, and the retrained run's step count is compared with the committed one), :func:`.recall_forecast.measure`
on inputs of length ``L_train``, and :func:`.recall_forecast.forecast_accuracy` at every distance of the sweep
for each token process of :data:`.recall_forecast.VERSIONS` (unigram, Markov, the task's own sequences).

**Rule, fixed before any forecast was looked at.**  Horizons are the first grid distance with accuracy
``< 0.5`` (the seed mean; :func:`.recall_report.horizon`); a horizon beyond the grid counts as
:data:`CENSORED` (twice the longest distance).  A variant's forecast *holds* when its predicted horizon is
within a factor 2 of the measured one.  Overall, the forecast beats a null when its mean absolute
``ln`` error of the horizon over the variants is below the null's: ``keeps`` ("retrieval keeps its 1×
accuracy": horizon :data:`CENSORED`) and ``falls`` ("falls to chance at ``L_train``": the first distance past
``L_train``).  The token process kept is the one with the smaller error (both are reported).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylized.harness.results import atomic_write_text, to_jsonable

from .recall import CALIBRATED, RecallTask, train_recall
from .recall_forecast import SHORT_DISTANCES, VERSIONS, forecast_accuracy, measure
from .recall_report import L_TRAIN, horizon, table
from .recall_sweep import DEFAULT_DISTANCES, MAX_STEPS, RESULTS_PATH, STOP_ACC, VARIANTS_RECALL

__all__ = ["CENSORED", "FORECAST_PATH", "checkpoint_for", "trained_model", "forecast_run", "judge",
           "run_forecasts"]

CENSORED = 2 * max(DEFAULT_DISTANCES)
FORECAST_PATH = RESULTS_PATH.with_name("recall_forecast.json")


def checkpoint_for(variant: str, seed: int, root: Path | None = None) -> Path:
    from .train import results_root

    return Path(root or results_root()) / "checkpoints" / "recall" / f"{variant}-s{seed}.pt"


def trained_model(variant: str, seed: int, root: Path | None = None):
    """``(model, info)``: the saved checkpoint, or the calibrated run retrained (and saved) when it is missing."""
    from .fileio import save_checkpoint
    from .train import load_model

    path = checkpoint_for(variant, seed, root)
    if path.exists():
        model, ck = load_model(path, "cpu", label="recall checkpoint")
        return model, {"steps": int(ck["step"]), "retrained": False, "train_cpu_s": None}
    t0 = time.process_time()
    model, curve = train_recall(variant, RecallTask(), MAX_STEPS, seed, **CALIBRATED, cpu_budget=600.0,
                                stop_acc=STOP_ACC)
    steps = curve[-1]["step"] if curve else 0
    save_checkpoint(path, {"model": model.state_dict(), "model_config": model.config.to_dict(), "step": steps,
                           "variant": variant, "history": curve})
    return model, {"steps": steps, "retrained": True, "train_cpu_s": round(time.process_time() - t0, 2)}


def forecast_run(variant: str, seed: int, distances: Sequence[int] = DEFAULT_DISTANCES, trials: int = 256,
                 root: Path | None = None) -> dict:
    """One (variant, seed): the head read at ``L_train`` and both forecasts (JSON-ready)."""
    model, info = trained_model(variant, seed, root)
    t0 = time.process_time()
    rec = measure(model, RecallTask(), seed, variant)
    out = {"variant": variant, "seed": seed, **info, "head": rec.head, "offset": rec.offset,
           "top1_short": rec.top1_short, "slope": rec.slope, "forecast": {}}
    for v in VERSIONS:
        out["forecast"][v] = forecast_accuracy(rec, list(SHORT_DISTANCES) + [d for d in distances
                                                                             if d not in SHORT_DISTANCES],
                                               v, trials, seed=seed)
    out["forecast_cpu_s"] = round(time.process_time() - t0, 2)
    return to_jsonable(out)


def _ln_err(pred: float, meas: float) -> float:
    return abs(math.log(pred) - math.log(meas))


def judge(runs: Sequence[dict], measured: dict) -> dict:
    """Per variant: measured and predicted horizons (seed means) and the verdict; overall: the skill of the
    forecast against the two nulls (module doc).  ``measured``: the sweep's table (:func:`.recall_report.table`)."""
    past = min(d for d in DEFAULT_DISTANCES if d > L_TRAIN)
    per, errs = [], {v: [] for v in (*VERSIONS, "keeps", "falls")}
    for variant in sorted({r["variant"] for r in runs}):
        rs = [r for r in runs if r["variant"] == variant]
        if variant not in measured:
            continue
        h_meas = horizon(measured[variant]["cells"]) or CENSORED
        row = {"variant": variant, "seeds": sorted(r["seed"] for r in rs), "measured_horizon": h_meas,
               "heads": [(r["head"], r["offset"]) for r in rs]}
        for v in VERSIONS:
            cells = {}
            for r in rs:
                for c in r["forecast"][v]:
                    cells.setdefault(c["distance"], []).append(c["p1"])
            curve = {d: {"mean": float(np.mean(p))} for d, p in cells.items() if d in DEFAULT_DISTANCES}
            h = horizon(curve) or CENSORED
            row[v] = {"horizon": h, "curve": {d: curve[d]["mean"] for d in sorted(curve)},
                      "ln_error": _ln_err(h, h_meas), "holds": _ln_err(h, h_meas) <= math.log(2.0) + 1e-12}
        row["null_ln_error"] = {"keeps": _ln_err(CENSORED, h_meas), "falls": _ln_err(past, h_meas)}
        for k in errs:
            errs[k].append(row[k]["ln_error"] if k in VERSIONS else row["null_ln_error"][k])
        per.append(row)
    mae = {k: float(np.mean(e)) if e else None for k, e in errs.items()}
    kept = min(VERSIONS, key=lambda v: mae[v])
    skill = {n: (1.0 - mae[kept] / mae[n]) if mae[n] else None for n in ("keeps", "falls")}
    return {"rule": __doc__.split("**Rule, fixed before any forecast was looked at.**")[1].strip(),
            "censored": CENSORED, "falls_horizon": past, "variants": per, "mae_ln_horizon": mae, "kept": kept,
            "skill": skill, "n_holding": sum(r[kept]["holds"] for r in per), "n_variants": len(per),
            "beats_both_nulls": all(mae[kept] < mae[n] for n in ("keeps", "falls"))}


def run_forecasts(variants: Sequence[str] = VARIANTS_RECALL, seeds: Sequence[int] = (0, 1, 2),
                  trials: int = 256, path: Path = FORECAST_PATH, log=print) -> dict:
    """Forecast every (variant, seed), judge against the sweep's measurement, write ``path`` after each run."""
    import json

    sweep = json.loads(RESULTS_PATH.read_text())
    measured = table(sweep)
    steps_sweep = {(r["variant"], r["seed"]): r["train"]["steps"] for r in sweep["runs"]}
    old = json.loads(path.read_text()) if path.exists() else {}
    runs = [r for r in old.get("runs", []) if r["variant"] in variants and r["seed"] in seeds and r.get("trials") == trials]
    done = {(r["variant"], r["seed"]) for r in runs}
    for s in seeds:
        for v in variants:
            if (v, s) in done:
                continue
            t0 = time.time()
            r = forecast_run(v, s, trials=trials)
            r["trials"] = trials
            r["steps_sweep"] = steps_sweep.get((v, s))
            runs.append(r)
            log(f"{v} seed {s}: head {r['head']}+{r['offset']}, steps {r['steps']} (sweep {r['steps_sweep']}), "
                f"{time.time() - t0:.0f} s; unigram " + " ".join(f"{c['distance']}:{c['p1']:.2f}"
                                                             for c in r["forecast"]["unigram"]))
            res = {"runs": runs, "verdict": judge(runs, measured)}
            atomic_write_text(path, json.dumps(to_jsonable(res), indent=1) + "\n")
    res = {"runs": runs, "verdict": judge(runs, measured)}
    atomic_write_text(path, json.dumps(to_jsonable(res), indent=1) + "\n")
    return res
