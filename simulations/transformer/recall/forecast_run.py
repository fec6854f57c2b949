"""Run the recall forecast for every (variant, seed) of the sweep and judge it against two null forecasts.

Per (variant, seed): the checkpoint of :mod:`.sweep`'s run (retrained with the same calibrated settings
and seed when it is not on disk, then saved under ``checkpoints/recall/``; training is deterministic on a
thread, and the retrained run's step count is compared with the committed one), :func:`.recall_forecast.measure`
on inputs of length ``L_train``, and :func:`.recall_forecast.forecast_accuracy` at every distance of the sweep
for each token process of :data:`.recall_forecast.VERSIONS` (unigram, Markov, the task's own sequences:
``task-layout``).

**Rule.**  Horizons are the first grid distance with accuracy ``< 0.5`` (the seed mean;
:func:`.recall_report.horizon`); a horizon beyond the grid counts as :data:`CENSORED` (twice the longest
distance).  The forecast scored is the one of the **Markov** token process (:data:`SCORED`), fixed by a rule that
reads no horizon, measured or forecast: of the token processes fitted on the ``L_train`` streams alone, the one
that nests the other (its bigram transitions carry the unigram frequencies as their stationary law); the
``task-layout`` process reads the evaluation distribution's layout and is reported, never scored.  A variant's
forecast *holds* when its predicted horizon is within a factor 2 of the measured one.  Overall, the forecast beats
a null when its mean absolute ``ln`` error of the horizon over the variants is below the null's: ``keeps``
("retrieval keeps its 1× accuracy": horizon :data:`CENSORED`) and ``falls`` ("falls to chance at ``L_train``":
the first distance past ``L_train``).  Every process's skill ``1 − error / null error`` is reported against both
nulls with a 95% percentile bootstrap interval over the variants (:data:`N_BOOT` draws).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stylized.harness.results import atomic_write_text, to_jsonable

from .forecast import SHORT_DISTANCES, VERSIONS, forecast_accuracy, measure
from .report import L_TRAIN, horizon, table
from .sweep import DEFAULT_DISTANCES, MAX_STEPS, RESULTS_PATH, STOP_ACC, VARIANTS_RECALL
from .task import CALIBRATED, RecallTask, train_recall

__all__ = ["CENSORED", "SCORED", "N_BOOT", "skill_interval", "FORECAST_PATH", "checkpoint_for", "trained_model", "forecast_run", "judge",
           "run_forecasts"]

CENSORED = 2 * max(DEFAULT_DISTANCES)
#: the token process whose forecast is scored (the rule in the module docstring)
SCORED = "markov"
#: bootstrap draws of the skill intervals
N_BOOT = 4000
#: token processes saved under an earlier name (read back under the current one)
RENAMED = {"task": "task-layout"}
FORECAST_PATH = RESULTS_PATH.with_name("recall_forecast.json")


def checkpoint_for(variant: str, seed: int, root: Path | None = None) -> Path:
    from ..paths import results_root

    return Path(root or results_root()) / "checkpoints" / "recall" / f"{variant}-s{seed}.pt"


def trained_model(variant: str, seed: int, root: Path | None = None):
    """``(model, info)``: the saved checkpoint, or the calibrated run retrained (and saved) when it is missing."""
    from ..train.checkpoints import save_checkpoint
    from ..train.loop import load_model

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
    skill = {x: {n: skill_interval(errs[x], errs[n]) for n in ("keeps", "falls")} for x in VERSIONS}
    return {"rule": __doc__.split("**Rule.**")[1].strip(), "scored": SCORED,
            "censored": CENSORED, "falls_horizon": past, "variants": per, "mae_ln_horizon": mae,
            "skill": skill, "n_holding": sum(r[SCORED]["holds"] for r in per), "n_variants": len(per),
            "beats_both_nulls": all(mae[SCORED] < mae[n] for n in ("keeps", "falls"))}


def skill_interval(err: Sequence[float], null: Sequence[float], n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """Skill ``1 − mean(err)/mean(null)`` over variants with a 95% percentile bootstrap interval (variants resampled
    with replacement, the forecast and the null paired); resamples whose null error is 0 are left out and counted."""
    e, n0 = np.asarray(err, float), np.asarray(null, float)
    if e.size == 0 or n0.sum() <= 0:
        return {"skill": None, "ci_low": None, "ci_high": None, "n_variants": int(e.size), "n_boot": n_boot,
                "n_undefined": n_boot}
    idx = np.random.default_rng(seed).integers(0, e.size, size=(n_boot, e.size))
    den = n0[idx].mean(1)
    ok = den > 0
    boot = 1.0 - e[idx].mean(1)[ok] / den[ok]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"skill": float(1.0 - e.mean() / n0.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "n_variants": int(e.size), "n_boot": n_boot, "n_undefined": int((~ok).sum())}


def _renamed(run: dict) -> dict:
    """A saved run with its token processes under their current names (:data:`RENAMED`)."""
    fc = run.get("forecast")
    if isinstance(fc, dict):
        run["forecast"] = {RENAMED.get(k, k): v for k, v in fc.items()}
    return run


def _runs_problem(saved: dict) -> str | None:
    """Why a saved forecast's ``runs`` cannot be resumed from (``None``: they can)."""
    runs = saved["runs"]
    ok = isinstance(runs, list) and all(isinstance(r, dict) and isinstance(r.get("variant"), str)
                                        and isinstance(r.get("seed"), int) for r in runs)
    return None if ok else "'runs' is not a list of runs with a variant and a seed"


def run_forecasts(variants: Sequence[str] = VARIANTS_RECALL, seeds: Sequence[int] = (0, 1, 2),
                  trials: int = 256, path: Path = FORECAST_PATH, log=print, sweep_path: Path = RESULTS_PATH) -> dict:
    """Forecast every (variant, seed), judge against the sweep's measurement (``sweep_path``), write ``path`` after
    each run."""
    import json

    sweep = json.loads(Path(sweep_path).read_text())
    measured = table(sweep)
    steps_sweep = {(r["variant"], r["seed"]): r["train"]["steps"] for r in sweep["runs"]}
    from ..train.readers import read_cache

    old = read_cache(path, "recall-forecast", need=("runs",), check=_runs_problem) or {}  # resume state: recomputable
    runs = [_renamed(r) for r in old.get("runs", []) if r["variant"] in variants and r["seed"] in seeds
            and r.get("trials") == trials]
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
