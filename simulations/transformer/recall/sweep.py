"""MQAR length-generalisation sweep over the position-encoding variants (CPU, one thread).

Every variant of :data:`VARIANTS_RECALL` is trained with the same :data:`.recall.CALIBRATED` settings
(2 × 64, 2 heads, ``init="torch"``, untied head, curriculum 2 → 4 → 8 pairs, L_train = 64; stop once a
logged last-stage training accuracy reaches :data:`STOP_ACC`, at most :data:`MAX_STEPS` steps or
``max_cpu_s`` CPU seconds), then :func:`.recall.evaluate_recall` is run at key → query distances up to
64 × L_train (n_pairs 8; also 2 and 4 at the distances of :data:`EXTRA_PAIRS_AT`) plus the training
layout at 1×.  Results: ``simulations/results/transformer/recall_cpu.json`` (:func:`write_results`),
written after each variant; a (variant, seed) entry already there with the same settings is skipped
(:func:`load_results`), so a later session can add seeds.

Run: ``stylized transformer recall [--variants rope,nope,...] [--seeds 0]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from stylized.harness.results import atomic_write_text, to_jsonable

from .task import CALIBRATED, RecallTask, evaluate_recall, train_recall

__all__ = ["VARIANTS_RECALL", "DEFAULT_DISTANCES", "EXTRA_PAIRS_AT", "LONG_N_SEQS", "STOP_ACC", "MAX_STEPS",
           "RESULTS_PATH", "n_seqs_at", "eval_batch_size", "sweep_settings", "run_variant", "load_results",
           "write_results", "run_sweep"]

#: the C6 main variants plus the ALiBi and FoX controls (names of :mod:`~simulations.transformer.model.config`)
VARIANTS_RECALL: tuple[str, ...] = ("rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk",
                                    "learned-qkv", "path", "fox")
#: key → query distances: 16, 32, 48 inside L_train = 64, then up to 64 × L_train
DEFAULT_DISTANCES: tuple[int, ...] = (16, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096)
#: distances also evaluated at n_pairs 2 and 4
EXTRA_PAIRS_AT: tuple[int, ...] = (32, 256)
EXTRA_PAIRS: tuple[int, ...] = (2, 4)
#: fewer sequences at the longest distances: {min distance: n_seqs} (the largest key ≤ d applies).  Empty:
#: measured, one 4096 cell of 64 sequences costs ~4 CPU s for rope, ~1 s/sequence for ALiBi / PaTH (the
#: slowest), so a variant's whole evaluation stays under ~120 CPU s with 64 sequences everywhere
LONG_N_SEQS: dict[int, int] = {}
STOP_ACC = 0.95  # the calibration's stopping accuracy
MAX_STEPS = 12000  # the calibration's schedule length
N_SEQS_1X = 200  # sequences of the 1× (training layout) cell
RESULTS_PATH = Path(__file__).resolve().parents[2] / "results" / "transformer" / "recall_cpu.json"


def n_seqs_at(distance: int | None, n_seqs: int, long_n_seqs: Mapping[int, int]) -> int:
    """Sequences for a cell at ``distance``: ``n_seqs``, capped by the largest ``long_n_seqs`` key ≤ distance."""
    if distance is None:
        return n_seqs
    caps = [v for k, v in sorted(long_n_seqs.items()) if int(distance) >= int(k)]
    return min([n_seqs] + [int(c) for c in caps[-1:]]) if caps else n_seqs


def eval_batch_size(length: int, budget: int = 2 ** 26) -> int:
    """Evaluation batch so that one [B, H=2, L, L] float score tensor stays near ``budget`` elements·4 bytes."""
    return int(max(1, min(50, budget // (2 * length * length))))


def sweep_settings(distances: Sequence[int], n_pairs_list: Sequence[int], n_seqs: int, max_cpu_s: float,
                   long_n_seqs: Mapping[int, int], steps: int = MAX_STEPS, stop_acc: float = STOP_ACC) -> dict:
    """The settings a result depends on (compared on resume)."""
    return to_jsonable({"task": RecallTask().to_dict(), "train": {**CALIBRATED, "steps": steps,
                        "stop_acc": stop_acc, "max_cpu_s": float(max_cpu_s)},
                        "eval": {"distances": list(distances), "n_pairs": list(n_pairs_list),
                                 "extra_pairs": list(EXTRA_PAIRS), "extra_pairs_at": list(EXTRA_PAIRS_AT),
                                 "n_seqs": int(n_seqs), "long_n_seqs": {str(k): int(v) for k, v in
                                                                        long_n_seqs.items()},
                                 "n_seqs_1x": N_SEQS_1X, "eval_seed": "1000 + seed", "restrict": True}})


def run_variant(variant: str, seed: int = 0, distances: Sequence[int] = DEFAULT_DISTANCES,
                n_pairs_list: Sequence[int] = (8,), n_seqs: int = 64, max_cpu_s: float = 600.0, *,
                long_n_seqs: Mapping[int, int] | None = None, steps: int = MAX_STEPS, stop_acc: float = STOP_ACC,
                max_eval_cpu_s: float | None = None, log_every: int = 100, verbose: bool = False) -> dict:
    """Train ``variant`` (CALIBRATED settings) and evaluate it at ``distances``; one result dict.

    ``train``: steps, CPU s, ``reached`` (a logged last-stage accuracy ≥ ``stop_acc``), the curriculum
    changes and the learning curve.  ``rows``: :func:`.recall.evaluate_recall` rows (95% cluster-bootstrap
    interval over sequences) for the 1× training layout (``distance`` None, ``N_SEQS_1X`` sequences), every
    distance × ``n_pairs_list`` and, at :data:`EXTRA_PAIRS_AT`, n_pairs 2 and 4; ``n_seqs`` per cell
    (:func:`n_seqs_at` at the longest distances), each row with its ``cpu_s``.  ``max_eval_cpu_s``: a
    cell whose predicted cost (the last cell's, scaled by length² × sequences) would take the
    evaluation past it is skipped and listed in ``skipped``.
    """
    long_n_seqs = LONG_N_SEQS if long_n_seqs is None else dict(long_n_seqs)
    task = RecallTask()
    settings = sweep_settings(distances, n_pairs_list, n_seqs, max_cpu_s, long_n_seqs, steps, stop_acc)
    t0 = time.process_time()
    model, curve = train_recall(variant, task, steps, seed, **CALIBRATED, log_every=log_every,
                                cpu_budget=max_cpu_s, stop_acc=stop_acc,
                                log=(lambda p: print(variant, p, flush=True)) if verbose else None)
    train_cpu = time.process_time() - t0
    last_stage = tuple(CALIBRATED["curriculum"][-1])
    reached = any(p["acc"] >= stop_acc and (p["n_pairs"], p["length"]) == last_stage for p in curve)
    cells: list[tuple[int | None, int]] = [(None, 8)]
    for d in distances:
        cells += [(int(d), int(n)) for n in n_pairs_list]
        if int(d) in EXTRA_PAIRS_AT:
            cells += [(int(d), n) for n in EXTRA_PAIRS if n not in n_pairs_list]
    rows: list[dict] = []
    skipped: list[dict] = []
    t_eval, last = time.process_time(), None
    for d, n in cells:
        m = N_SEQS_1X if d is None else n_seqs_at(d, n_seqs, long_n_seqs)
        L = task.length if d is None else max(task.length, d + 2 * n + 1)
        spent = time.process_time() - t_eval
        if max_eval_cpu_s is not None and last is not None:
            pred = last[0] * (L / last[1]) ** 2 * m / last[2]
            if spent + pred > max_eval_cpu_s:
                skipped.append({"distance": d, "n_pairs": n, "predicted_cpu_s": round(pred, 1),
                                "reason": f"eval CPU cap {max_eval_cpu_s} s"})
                continue
        c0 = time.process_time()
        row = evaluate_recall(model, task, [d], [n], n_seqs=m, seed=1000 + seed, batch_size=eval_batch_size(L))[0]
        row["cpu_s"] = round(time.process_time() - c0, 2)
        rows.append(row)
        last = (max(row["cpu_s"], 1e-3), L, m)
        if verbose:
            print(variant, row, flush=True)
    return to_jsonable({
        "variant": variant, "seed": int(seed), "settings": settings,
        "train": {"steps": curve[-1]["step"] if curve else 0, "cpu_s": round(train_cpu, 2), "reached": reached,
                  "stop_acc": stop_acc, "final_train_acc": curve[-1]["acc"] if curve else None,
                  "hit_cpu_cap": bool(curve and curve[-1]["cpu_s"] >= max_cpu_s and not reached),
                  "curriculum_changes": getattr(model, "curriculum_changes", []),
                  "curve_columns": ["step", "cpu_s", "loss", "acc", "n_pairs", "length"],
                  "curve": [[p["step"], p["cpu_s"], p["loss"], p["acc"], p["n_pairs"], p["length"]] for p in curve]},
        "eval_cpu_s": round(time.process_time() - t_eval, 2), "rows": rows, "skipped": skipped})


def load_results(path: Path) -> dict:
    """The results file's content (an empty ``runs`` list when it does not exist); a damaged file is refused in one
    line naming it (:func:`.readers.read_json`: hours of training, never silently recomputed or copied on)."""
    from ..train.readers import read_json

    path = Path(path)
    if not path.exists():
        return {"runs": []}
    return read_json(path, "recall", need=("runs",), check=_runs_problem)


def _runs_problem(saved: dict) -> str | None:
    runs = saved["runs"]
    ok = isinstance(runs, list) and all(isinstance(r, dict) and isinstance(r.get("variant"), str)
                                        and isinstance(r.get("seed"), int) and isinstance(r.get("rows"), list)
                                        for r in runs)
    return None if ok else "'runs' is not a list of runs, each with a variant, a seed and rows"


def find_run(data: Mapping, variant: str, seed: int, settings: Mapping) -> dict | None:
    """The stored run of (``variant``, ``seed``) with the same ``settings``, if any (resume)."""
    for r in data.get("runs", []):
        if r.get("variant") == variant and r.get("seed") == seed and r.get("settings") == to_jsonable(settings):
            return dict(r)
    return None


def write_results(rows: Sequence[Mapping], path: Path, notes: Sequence[str] = ()) -> None:
    """Write the runs ``rows`` (:func:`run_variant` dicts) atomically as JSON.

    Content: the settings (of the first run), the per-variant training summary, the accuracy rows
    (flattened, with variant and seed), the chance (1/n_values) and value-guessing (1/8) baselines, and
    the full runs (the learning curves; what :func:`find_run` reads back on resume).
    """
    task = RecallTask()
    runs = [dict(r) for r in rows]
    summary = [{"variant": r["variant"], "seed": r["seed"],
                **{k: v for k, v in r["train"].items() if k not in ("curve", "curve_columns")},
                "eval_cpu_s": r.get("eval_cpu_s"), "skipped": r.get("skipped", [])} for r in runs]
    flat = [{"variant": r["variant"], "seed": r["seed"], **row} for r in runs for row in r["rows"]]
    doc = {"what": "MQAR recall vs key-to-query distance, per position-encoding variant "
                   "(simulations/transformer/recall/sweep.py)",
           "cpu_measure": "process CPU seconds (time.process_time), torch.set_num_threads(1)",
           "settings": runs[0]["settings"] if runs else None,
           "baselines": {"chance": 1.0 / task.n_values, "value_guess_8_pairs": 1.0 / task.n_pairs},
           "train_summary": summary, "rows": flat, "notes": list(notes), "runs": runs}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(to_jsonable(doc), indent=1) + "\n")


def run_sweep(variants: Sequence[str], seed: int, *, n_seqs: int = 64, max_cpu_s: float = 600.0,
              max_eval_cpu_s: float | None = None, out: Path = RESULTS_PATH, verbose: bool = False) -> dict:
    """Train and evaluate every variant of ``variants`` at ``seed`` in order, writing ``out`` after each one;
    a (variant, seed) already stored with the same settings is skipped.  Returns the written results."""
    torch.set_num_threads(1)
    data = load_results(out)
    runs, notes = list(data.get("runs", [])), list(data.get("notes", []))
    for v in variants:
        settings = sweep_settings(DEFAULT_DISTANCES, (8,), n_seqs, max_cpu_s, LONG_N_SEQS)
        if find_run({"runs": runs}, v, seed, settings) is not None:
            print(f"skip {v} seed {seed}: already in {out}", flush=True)
            continue
        r = run_variant(v, seed, n_seqs=n_seqs, max_cpu_s=max_cpu_s, max_eval_cpu_s=max_eval_cpu_s, verbose=verbose)
        runs = [x for x in runs if not (x["variant"] == v and x["seed"] == seed)] + [r]
        write_results(runs, out, notes)
        print(f"done {v} seed {seed}: train {r['train']['steps']} steps {r['train']['cpu_s']} s reached "
              f"{r['train']['reached']}, eval {r['eval_cpu_s']} s", flush=True)
    return load_results(out)

