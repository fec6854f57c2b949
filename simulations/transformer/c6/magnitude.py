"""C6 effect sizes against the paper's: does a row's 95% interval exclude the paper's own Δ at the same length?

The paper reports a difference of log PPL ratios per row, ``Δ_paper(L) = log r_A(L) − log r_B(L)`` (its ratios to
``PPL(512)``, at absolute lengths ``L`` = 1K … 65K tokens).  Beside a row's Welch verdict (:mod:`.verdicts`), the
*magnitude* verdict reads the same Welch 95% interval at the same absolute length:

* *contradicts the paper's magnitude*: the interval excludes ``Δ_paper(L)``;
* *consistent with the paper's magnitude*: it contains it;
* *no paper value*: the paper reports no ratio at ``L``; *no interval*: an arm has one seed.

Its level is the rate of *contradicts the paper's magnitude* when the true Δ **is** the paper's: two arms of one
variant's law (:func:`.verdict_level.null_arms`: window effects, seed spread, residuals of the committed losses at
the longest length), arm A shifted by ``Δ_paper``, decided ``reps`` times per law at the row's own seeds per arm
(nominal 0.05; Clopper–Pearson).  Run ``python -m simulations.transformer.c6.magnitude`` (about 20 s): it writes
``<results>/transformer/c6_magnitude.json`` from the committed cpu comparison and gpu runs.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from .gpu_report import log_ratio, paper_at_tokens, seed_losses, seed_runs
from .verdict_level import MIN_SEEDS, decision_rates, eval_losses, null_arms
from .verdicts import PAPER_ROWS, decide, seed_means, welch

__all__ = ["CONTRADICTS", "CONSISTENT", "paper_delta", "decide_magnitude", "length_cells", "magnitude_rate",
           "measure", "level_of", "row_pattern", "main"]

CONTRADICTS = "contradicts the paper's magnitude"
CONSISTENT = "consistent with the paper's magnitude"
#: the shortest absolute length the paper reports (1K = 2 × 512)
PAPER_MIN_TOKENS = 1024


def paper_delta(a: str, b: str, tokens: int) -> float | None:
    """``log r_A − log r_B`` of the paper at ``tokens`` absolute tokens (None where it reports no ratio)."""
    ra, rb = paper_at_tokens(a, tokens), paper_at_tokens(b, tokens)
    return None if ra is None or rb is None else float(math.log(ra) - math.log(rb))


def decide_magnitude(lo: float | None, hi: float | None, paper: float | None) -> str:
    """The magnitude verdict of the interval ``[lo, hi]`` against the paper's Δ (see the module)."""
    if paper is None:
        return "no paper value"
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return CONTRADICTS if (paper < lo or paper > hi) else CONSISTENT


def _cell(a: str, b: str, tokens: int, xa: np.ndarray, xb: np.ndarray) -> dict:
    w = welch(xa, xb)
    paper = paper_delta(a, b, tokens)
    lo, hi = float(w["ci_low"]), float(w["ci_high"])
    return {"tokens": int(tokens), "seeds_a": int(xa.size), "seeds_b": int(xb.size), "delta": float(w["delta"]),
            "ci_low": lo, "ci_high": hi, "p": float(w["p"]), "verdict": str(decide(w["delta"], w["p"])),
            "paper_delta": paper, "magnitude": decide_magnitude(lo, hi, paper)}


def length_cells(compare: dict, metric: str = "all") -> dict[str, list[dict]]:
    """Per paper row, the Welch cell at every length the paper reports (≥ 1K tokens) of a comparison JSON:
    Δ, its interval, p, the Welch verdict, the paper's Δ and the magnitude verdict."""
    L_train = int(compare["params"]["model"]["block_size"])
    by: dict[str, dict[int, np.ndarray]] = {}
    for x in compare["rows"]:
        if x["metric"] == metric:
            by.setdefault(x["variant"], {})[int(x["multiple"])] = np.log(np.asarray(x["per_seed"], float))
    out: dict[str, list[dict]] = {}
    for a, b in PAPER_ROWS:
        if a not in by or b not in by:
            continue
        cells = []
        for m in sorted(set(by[a]) & set(by[b])):
            if m * L_train >= PAPER_MIN_TOKENS and by[a][m].size >= 2 and by[b][m].size >= 2:
                cells.append({"multiple": m, **_cell(a, b, m * L_train, by[a][m], by[b][m])})
        out[f"{a} > {b}"] = cells
    return out


def gpu_cells(directory: Path) -> dict[str, list[dict]]:
    """The same cells for the committed gpu runs (seed 0 in ``gpu/``, seed k in ``gpu/seed<k>/``), at every length
    ≥ 1K tokens where both arms have ≥ 2 seeds."""
    seeds = [sm for _, _, sm in seed_runs(directory)]
    if not seeds:
        return {}
    L_train = next((e["L"] // e["multiple"] for r in seeds[0]["rows"] for e in r["eval"]), 256)
    mults = sorted({e["multiple"] for sm in seeds for r in sm["rows"] for e in r["eval"]})
    out = {}
    for a, b in PAPER_ROWS:
        cells = []
        for m in mults:
            xa = np.array([x for x in (log_ratio(sm, a, m) for sm in seeds) if x is not None])
            xb = np.array([x for x in (log_ratio(sm, b, m) for sm in seeds) if x is not None])
            if m * L_train >= PAPER_MIN_TOKENS and xa.size >= 2 and xb.size >= 2:
                cells.append({"multiple": m, **_cell(a, b, m * L_train, xa, xb)})
        if cells:
            out[f"{a} > {b}"] = cells
    return out


def magnitude_rate(laws: dict[str, np.ndarray], shift: float, n_a: int, n_b: int, reps: int, seed: int = 0) -> dict:
    """Rate of *contradicts the paper's magnitude* when arm A's law is shifted by ``shift`` (the true Δ), pooled
    over ``laws`` (:func:`.verdict_level.null_arms`), with Clopper–Pearson intervals."""
    k = n = 0
    for j, D in enumerate(laws.values()):
        A, B = null_arms(D, np.random.default_rng([seed, n_a, n_b, j]), n_a, n_b, reps)
        w = welch(seed_means(A + shift), seed_means(B))
        k += int(np.sum((shift < w["ci_low"]) | (shift > w["ci_high"])))
        n += reps
    r = decision_rates({"agrees": 0, "contradicts": k, "undecided": n - k})
    return {"reps": n, "excluded": k, "rate": r["contradicts_rate"], "ci": r["contradicts_ci"], "shift": shift}


def _configs(cells: dict[str, list[dict]]) -> set[tuple[int, int, float]]:
    return {(c["seeds_a"], c["seeds_b"], round(c["paper_delta"], 6)) for cs in cells.values() for c in cs
            if c.get("paper_delta") is not None}


def measure(directory: Path, reps: int = 4000, seed: int = 0) -> dict:
    """Magnitude cells and their levels for the cpu comparison and the gpu runs under ``directory`` (the results root)."""
    t0 = time.time()
    out: dict = {"claim": "C6 magnitude verdict", "nominal": 0.05, "reps_per_law": reps, "presets": {}}
    cpath = directory / "transformer" / "cpu_compare.json"
    if cpath.exists():
        compare = json.loads(cpath.read_text())
        mult = int(compare["verdicts"]["all"]["multiple"])
        seeds = compare["params"]["seeds"]
        laws = {v: D for v in compare["params"]["variants"] if len(seeds.get(v, [])) >= MIN_SEEDS
                and (D := eval_losses(directory / "transformer" / "eval" / "cpu", v, seeds[v], mult, "all")) is not None}
        cells = length_cells(compare)
        out["presets"]["cpu"] = {"cells": cells, "law_multiple": mult, "laws": {v: int(D.shape[0]) for v, D in laws.items()},
                                 "level": [{"seeds_a": na, "seeds_b": nb, **magnitude_rate(laws, d, na, nb, reps, seed)}
                                           for na, nb, d in sorted(_configs(cells))]}
    cells = gpu_cells(directory)
    if cells:
        mult = max(c["multiple"] for cs in cells.values() for c in cs)
        variants = {v for row in cells for v in row.split(" > ")}
        laws = {v: D for v in sorted(variants) if (D := seed_losses(directory, v, mult)) is not None
                and D.shape[0] >= MIN_SEEDS}
        out["presets"]["gpu"] = {"cells": cells, "law_multiple": mult, "laws": {v: int(D.shape[0]) for v, D in laws.items()},
                                 "level": [{"seeds_a": na, "seeds_b": nb, **magnitude_rate(laws, d, na, nb, reps, seed)}
                                           for na, nb, d in sorted(_configs(cells))]}
    out["seconds"] = round(time.time() - t0, 1)
    return out


def level_of(result: dict | None, preset: str, cell: dict) -> dict | None:
    """The measured level entry matching a cell's seeds per arm and paper Δ (None when not measured)."""
    if not result or cell.get("paper_delta") is None:
        return None
    for e in result.get("presets", {}).get(preset, {}).get("level", []):
        if (e["seeds_a"], e["seeds_b"]) == (cell["seeds_a"], cell["seeds_b"]) and \
                abs(e["shift"] - cell["paper_delta"]) < 1e-5:
            return e
    return None


def _k(tokens: int) -> str:
    """The paper's label of a length (1K … 32K, 65K)."""
    return "65K" if tokens == 65_536 else f"{tokens // 1024}K" if tokens >= 1024 else str(tokens)


def _span(cells: list[dict]) -> str:
    ts = [_k(c["tokens"]) for c in cells]
    return ts[0] if len(ts) == 1 else f"{ts[0]}–{ts[-1]}"


def row_pattern(row: str, cells: list[dict]) -> str:
    """One sentence: where the row splits (decided, either side) and ties, its Δ at the longest length against the
    paper's, and the magnitude verdict there."""
    if not cells:
        return f"{row}: no length with ≥ 2 seeds per arm"
    split = [c for c in cells if c["verdict"] != "undecided"]
    tie = [c for c in cells if c["verdict"] == "undecided"]
    parts = []
    for side, word in (("agrees", "the paper's way"), ("contradicts", "against the paper")):
        at = [c for c in split if c["verdict"] == side]
        if at:
            parts.append(f"splits {word} at {', '.join(_k(c['tokens']) for c in at)}")
    if tie:
        parts.append(f"ties at {', '.join(_k(c['tokens']) for c in tie)}")
    pd = [c["paper_delta"] for c in cells if c["paper_delta"] is not None]
    if pd:
        parts.append(f"the paper's Δ over {_span(cells)} runs {min(pd):+.2f} … {max(pd):+.2f}")
    last = cells[-1]
    paper = "no paper value" if last["paper_delta"] is None else f"paper {last['paper_delta']:+.2f}"
    return (f"{row}: {'; '.join(parts)}; at {_k(last['tokens'])} Δ = {last['delta']:+.3f} "
            f"[{last['ci_low']:+.3f}, {last['ci_high']:+.3f}] ({paper}): {last['magnitude']}")


def main(argv: list[str] | None = None) -> int:
    """Measure the magnitude verdicts' level; write ``c6_magnitude.json``."""
    from stylized.harness.results import atomic_write_text, to_jsonable

    from ..paths import results_root

    ap = argparse.ArgumentParser(prog="python -m simulations.transformer.c6.magnitude", description=main.__doc__)
    ap.add_argument("--reps", type=int, default=4000, help="null replicates per law and configuration (default 4000)")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 1_000_000:
        ap.exit(2, "--reps: must be an integer in [1, 1000000]\n")
    root = results_root()
    res = measure(root.parent, reps=args.reps)
    if not res["presets"]:
        ap.exit(2, f"no committed cpu comparison or gpu run under {root}\n")
    atomic_write_text(root / "c6_magnitude.json", json.dumps(to_jsonable(res), indent=1) + "\n")
    for preset, p in res["presets"].items():
        for row, cells in p["cells"].items():
            print(f"[{preset}] {row_pattern(row, cells)}")
        for e in p["level"]:
            print(f"[{preset}] level at {e['seeds_a']}x{e['seeds_b']} seeds, true Δ = paper {e['shift']:+.3f}: "
                  f"{e['rate']:.4f} [{e['ci'][0]:.4f}, {e['ci'][1]:.4f}] ({e['reps']} replicates)")
    print(f"wrote {root / 'c6_magnitude.json'} ({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
