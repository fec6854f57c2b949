"""The level and power of C6's seed-level verdict, measured under a null built from the committed losses.

A paper row "A > B" is decided by Welch's t-test on the per-seed mean log-ratios (:mod:`.verdicts`),
two-sided at 0.05: nominally a row whose two variants have the same law is decided (either side) 5% of
the time and *contradicts* 2.5% of the time.  This module measures the real rates.

The null is built from each variant's own per-window log ratios ``D[s, w]`` (seeds × windows, at the
longest multiple, per metric): window effects ``μ_w`` (shared by the two arms: every variant is evaluated
on the same windows), seed effects drawn ``N(0, v_seed)`` with ``v_seed`` the seeds' sample variance, and
residuals resampled from ``D − μ_w − a_s``.  Two independent arms with the same law and ``n_a``, ``n_b``
seeds are decided ``reps`` times by the rule itself (:func:`.verdicts.welch`, :func:`.verdicts.decide`);
a decided replicate is a false decision, a *contradicts* one a false rejection of the C6 row.  Rates are
pooled over every variant with at least :data:`MIN_SEEDS` evaluated seeds, with Clopper–Pearson intervals.

* **level**: at 3 seeds per arm (the headline, as measured for the previous bootstrap rule), and at each
  paper row's own seeds per arm (``(n_a, n_b)``), on both metrics;
* **power**: arm A shifted by ``δ`` (log-ratio units, :data:`DELTAS`), ``P(agrees)`` at 3 and 5 seeds per arm;
* **seeds needed** per paper row: the smallest equal number of seeds per arm whose power (probability of
  a significant result on the observed side) is ≥ 0.8 when the per-seed means are normal with the row's
  observed difference and per-arm spreads (:func:`seeds_needed`; the observed difference of a decided row
  is biased away from 0, so this is optimistic for it).  The ALiBi-flat row: the seeds whose 95% t interval
  lies inside the band with probability ≥ 0.8 at its observed mean and spread.

Run: ``python -m simulations.transformer.c6.verdict_level`` (about 30 s; reads ``<results>/transformer/
cpu_compare.json`` and the evaluation caches, writes ``<results>/transformer/cpu_verdict_level.json``, which
``paper_checks.md``'s C6 section reports).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from stylized.core.estimators import proportion_ci
from stylized.harness.results import atomic_write_text, to_jsonable

from .verdicts import ALPHA, decide, decide_flat, flat_interval, seed_means, welch

__all__ = ["MIN_SEEDS", "DELTAS", "ARM_SEEDS", "null_arms", "verdict_counts", "false_decisions", "power_curve",
           "seeds_needed", "flat_seeds_needed", "measure", "main"]

#: a variant's losses define a null law when it has at least this many evaluated seeds
MIN_SEEDS = 3
#: true shifts of arm A (log-ratio units) for the power curve; 0 is the level
DELTAS = (0.0, 0.05, 0.1, 0.2, 0.4)
#: seeds per arm of the power curve
ARM_SEEDS = (3, 5)
#: the power a decision should have
TARGET_POWER = 0.8


def _law(D: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """(window effects ``μ_w``, seed SD, residuals) of ``D`` [seeds, windows]."""
    D = np.asarray(D, dtype=float)
    mu_w = D.mean(axis=0)
    a = D.mean(axis=1) - D.mean()
    resid = (D - mu_w - a[:, None]).ravel()
    return mu_w, float(np.std(a, ddof=1)) if a.size > 1 else 0.0, resid


def null_arms(D: np.ndarray, rng: np.random.Generator, n_a: int | None = None, n_b: int | None = None,
              reps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Two independent arms ``(A, B)`` with the same law (see the module), built from ``D`` [seeds, windows].

    Parameters
    ----------
    D : ndarray
        One variant's per-window log ratios [seeds, windows].
    rng : numpy.random.Generator
    n_a, n_b : int, optional
        Seeds per arm (default: as many as ``D`` has).
    reps : int, optional
        Replicates: arms shaped [reps, n, windows]; default one replicate shaped [n, windows].
    """
    mu_w, sd_seed, resid = _law(D)
    lead = () if reps is None else (reps,)

    def arm(n: int) -> np.ndarray:
        seeds = rng.normal(0.0, sd_seed, size=(*lead, n, 1))
        return mu_w + seeds + rng.choice(resid, size=(*lead, n, mu_w.size))

    return arm(n_a or D.shape[0]), arm(n_b or D.shape[0])


def verdict_counts(A: np.ndarray, B: np.ndarray) -> dict[str, int]:
    """Counts of the row verdicts over replicate arms ``A`` [reps, n_a, windows], ``B`` [reps, n_b, windows]."""
    w = welch(seed_means(A), seed_means(B))
    v = decide(w["delta"], w["p"])
    return {k: int(np.sum(v == k)) for k in ("agrees", "contradicts", "undecided")}


def _cp(k: int, n: int) -> list[float]:
    r = proportion_ci(k, n, method="clopper-pearson")
    return [r.estimate, r.ci_low, r.ci_high]


def decision_rates(counts: dict[str, int]) -> dict:
    n = sum(counts.values())
    d, c, a = (_cp(counts["agrees"] + counts["contradicts"], n), _cp(counts["contradicts"], n),
               _cp(counts["agrees"], n))
    return {"reps": n, **counts, "decided_rate": d[0], "decided_ci": d[1:], "contradicts_rate": c[0],
            "contradicts_ci": c[1:], "agrees_rate": a[0], "agrees_ci": a[1:]}


def add_counts(total: dict[str, int], counts: dict[str, int]) -> None:
    for k, x in counts.items():
        total[k] = total.get(k, 0) + x


def false_decisions(D: np.ndarray, reps: int, seed: int = 0, n_a: int | None = None, n_b: int | None = None,
                    delta: float = 0.0) -> dict:
    """Verdict counts and rates over ``reps`` null replicates from ``D`` (arm A shifted by ``delta``), with
    Clopper–Pearson intervals (``delta = 0``: the level; otherwise ``agrees_rate`` is the power)."""
    A, B = null_arms(D, np.random.default_rng(seed), n_a, n_b, reps)
    return decision_rates(verdict_counts(A + delta, B))


def power_curve(laws: dict[str, np.ndarray], reps: int, n: int, deltas: tuple[float, ...] = DELTAS,
                seed: int = 0) -> dict:
    """``P(agrees)`` (and the other rates) per shift ``δ`` at ``n`` seeds per arm, pooled over ``laws``."""
    out = {}
    for i, delta in enumerate(deltas):
        total: dict[str, int] = {}
        for j, D in enumerate(laws.values()):
            A, B = null_arms(D, np.random.default_rng([seed, n, i, j]), n, n, reps)
            add_counts(total, verdict_counts(A + delta, B))
        out[f"{delta:g}"] = decision_rates(total)
    return out


def seeds_needed(delta: float, sd_a: float, sd_b: float, power: float = TARGET_POWER, reps: int = 4000,
                 n_max: int = 200, seed: int = 0) -> dict:
    """The smallest equal seeds per arm at which the row is decided on the side of ``delta`` with probability
    ≥ ``power``, per-seed means ``N(±delta/2, sd²)`` of each arm (Monte Carlo, ``reps`` per ``n``).

    Returns
    -------
    dict
        ``n`` (None when beyond ``n_max``), ``power_at_n``, and ``n_max``.
    """
    rng = np.random.default_rng(seed)
    side = "agrees" if delta >= 0 else "contradicts"
    for n in range(2, n_max + 1):
        ma = rng.normal(delta, sd_a, (reps, n))
        mb = rng.normal(0.0, sd_b, (reps, n))
        w = welch(ma, mb)
        got = float(np.mean(decide(w["delta"], w["p"]) == side))
        if got >= power:
            return {"n": n, "power_at_n": got, "n_max": n_max}
    return {"n": None, "power_at_n": None, "n_max": n_max}


def flat_seeds_needed(mean: float, sd: float, power: float = TARGET_POWER, reps: int = 4000, n_max: int = 200,
                      seed: int = 0) -> dict:
    """The ALiBi-flat row: the smallest seeds at which its verdict is reached (inside the band: *agrees*;
    outside: *contradicts*) with probability ≥ ``power``, per-seed means ``N(mean, sd²)``."""
    rng = np.random.default_rng(seed)
    side = "agrees" if abs(mean) < np.log(1.25) else "contradicts"
    for n in range(2, n_max + 1):
        lo, hi = flat_interval(rng.normal(mean, sd, (reps, n)))
        got = float(np.mean(decide_flat(lo, hi) == side))
        if got >= power:
            return {"n": n, "power_at_n": got, "n_max": n_max}
    return {"n": None, "power_at_n": None, "n_max": n_max}


def flat_level(laws: dict[str, np.ndarray], reps: int, n: int, seed: int = 0) -> dict:
    """``P(agrees)`` of the ALiBi-flat rule when the true ratio sits on either edge of the band (a false *flat*),
    each law re-centred there, ``n`` seeds; nominal ≤ 0.025 per edge."""
    total: dict[str, int] = {}
    for j, D in enumerate(laws.values()):
        for k, edge in enumerate(np.log([1 / 1.25, 1.25])):
            A, _ = null_arms(D, np.random.default_rng([seed, n, j, k, 7]), n, 1, reps)
            lo, hi = flat_interval(seed_means(A - D.mean() + edge))
            v = decide_flat(lo, hi)
            add_counts(total, {x: int(np.sum(v == x)) for x in ("agrees", "contradicts", "undecided")})
    return decision_rates(total)


def eval_losses(eval_dir: Path, variant: str, seeds: list[int], multiple: int, metric: str) -> np.ndarray | None:
    rows = []
    for s in seeds:
        p = eval_dir / f"{variant if s == 0 else f'{variant}-s{s}'}.json"
        if not p.exists():
            return None
        w = json.loads(p.read_text())["losses"]
        rows.append(np.asarray(w[str(multiple)][metric]) - np.asarray(w["1"][metric]))
    return np.stack(rows)


def _row_entry(r: dict, level: dict) -> dict:
    out = {k: r.get(k) for k in ("row", "a", "b", "seeds_a", "seeds_b", "delta_log", "sd_a", "sd_b", "p", "verdict")}
    if r.get("b") is None:
        out["level"] = level.get(f"flat{r['seeds_a']}")
        out["seeds_needed"] = (flat_seeds_needed(float(np.log(r["ratio_a"])), r["sd_a"]) if r.get("sd_a") is not None
                               else {"n": None, "power_at_n": None, "why": "one seed: no spread to plan from"})
    else:
        out["level"] = level.get(f"{r['seeds_a']}x{r['seeds_b']}")
        out["seeds_needed"] = (seeds_needed(r["delta_log"], r["sd_a"], r["sd_b"])
                               if r.get("sd_a") is not None and r.get("sd_b") is not None
                               else {"n": None, "power_at_n": None, "why": "one seed in an arm: no spread to plan from"})
    return out


def measure(directory: Path, preset: str = "cpu", reps: int = 4000, seed: int = 0) -> dict:
    """Level (per seed configuration), power and seeds needed of the C6 verdict from ``directory``'s results."""
    t0 = time.time()
    compare = json.loads((directory / f"{preset}_compare.json").read_text())
    seeds = compare["params"]["seeds"]
    multiple = int(compare["verdicts"]["all"]["multiple"])
    out: dict = {"claim": "C6 verdict level", "preset": preset, "multiple": multiple, "alpha": ALPHA,
                 "rule": compare["verdicts"]["all"].get("rule"), "min_seeds": MIN_SEEDS,
                 "nominal": {"decided": ALPHA, "contradicts": ALPHA / 2}, "reps_per_variant": reps,
                 "target_power": TARGET_POWER, "laws": {}, "level": {}, "power": {}, "rows": {}}
    for metric, v in compare["verdicts"].items():
        laws = {}
        for var in compare["params"]["variants"]:
            if len(seeds.get(var, [])) >= MIN_SEEDS:
                D = eval_losses(directory / "eval" / preset, var, seeds[var], multiple, metric)
                if D is not None:
                    laws[var] = D
        out["laws"][metric] = {var: {"seeds": int(D.shape[0]), "sd_seed": _law(D)[1],
                                     "resid_sd": float(np.std(_law(D)[2]))} for var, D in laws.items()}
        configs = {(3, 3)} | {(r["seeds_a"], r["seeds_b"]) for r in v["rows"] if r.get("b") and "seeds_b" in r}
        level = {}
        for na, nb in sorted(configs):
            per = {var: false_decisions(D, reps, seed + 17 * j, na, nb) for j, (var, D) in enumerate(laws.items())}
            total: dict[str, int] = {}
            for x in per.values():
                add_counts(total, {k: x[k] for k in ("agrees", "contradicts", "undecided")})
            level[f"{na}x{nb}"] = {**decision_rates(total), "per_variant": per}
        for n in sorted({r["seeds_a"] for r in v["rows"] if r.get("b") is None and "seeds_a" in r}):
            level[f"flat{n}"] = flat_level(laws, reps, n, seed)
        out["level"][metric] = level
        out["power"][metric] = {str(n): power_curve(laws, reps, n, seed=seed) for n in ARM_SEEDS}
        out["rows"][metric] = [_row_entry(r, level) for r in v["rows"] if r["verdict"] != "not run"]
    head = out["level"]["all"]["3x3"]
    out["pooled"] = {k: x for k, x in head.items() if k != "per_variant"}  # the headline: author's metric, 3 × 3
    out["per_variant"] = head["per_variant"]
    out["headline_seeds_per_arm"] = 3
    out["seconds"] = round(time.time() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure and write ``cpu_verdict_level.json``; print the headline rates."""
    from ..paths import results_root

    ap = argparse.ArgumentParser(prog="python -m simulations.transformer.c6.verdict_level", description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000, help="null replicates per variant and configuration (default 4000)")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 1_000_000:
        ap.exit(2, "--reps: must be an integer in [1, 1000000]\n")
    root = results_root()
    res = measure(root, reps=args.reps)
    atomic_write_text(root / "cpu_verdict_level.json", json.dumps(to_jsonable(res), indent=1) + "\n")
    p = res["pooled"]
    print(f"C6 verdict under the null ({p['reps']} replicates, {len(res['per_variant'])} variants, 3 seeds per arm): "
          f"decided {p['decided_rate']:.4f} [{p['decided_ci'][0]:.4f}, {p['decided_ci'][1]:.4f}] (nominal 0.05), "
          f"contradicts {p['contradicts_rate']:.4f} [{p['contradicts_ci'][0]:.4f}, {p['contradicts_ci'][1]:.4f}] "
          "(nominal 0.025)")
    for metric, rows in res["rows"].items():
        for r in rows:
            lv = r["level"] or {}
            level = (f"false flat {lv.get('agrees_rate', float('nan')):.3f}" if r["b"] is None
                     else f"decided {lv.get('decided_rate', float('nan')):.3f}")
            print(f"  [{metric}] {r['row']}: {r['verdict']} (seeds {r['seeds_a']}/{r.get('seeds_b')}, level {level}); "
                  f"seeds per arm needed: {r['seeds_needed']['n']}")
    for n, curve in res["power"]["all"].items():
        print(f"  power at {n} seeds per arm: " + ", ".join(f"δ={d}: {x['agrees_rate']:.3f}" for d, x in curve.items()))
    print(f"({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
