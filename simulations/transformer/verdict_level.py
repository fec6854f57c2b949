"""The false-decision rate of C6's paired-bootstrap verdict, measured under the null on the committed losses.

A paper row "A > B" is decided by the 95% percentile interval of ``r_A − r_B`` (:mod:`.verdicts`): nominally a
row whose two variants have the same law is decided (either side) 5% of the time and *contradicts* 2.5% of
the time.  With three seeds per variant the seed resampling is coarse, so the real rate is measured here.

The null is built from each variant's own per-window log ratios ``D[s, w]`` (seeds × windows, at the
longest multiple, the author's metric): window effects ``μ_w`` (shared by the two arms: every variant is
evaluated on the same windows), seed effects drawn ``N(0, v_seed)`` with ``v_seed`` the seeds' sample variance,
and residuals resampled from ``D − μ_w − a_s``.  Two independent arms ``A``, ``B`` with the same law are decided
``reps`` times by :func:`.verdicts.paper_verdicts`; a decided row is a false decision, a *contradicts* one a
false rejection of the C6 row.  One rate per variant (its own seed and residual spread) and the pooled rate,
each with a Clopper–Pearson interval.

Run: ``python -m simulations.transformer.verdict_level`` (about 20 s; writes
``<results>/transformer/cpu_verdict_level.json``, which ``paper_checks.md``'s C6 section reports).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from stylized.estimators import proportion_ci
from stylized.results import atomic_write_text, to_jsonable

from .verdicts import PAPER_ROWS, paper_verdicts

__all__ = ["null_arms", "false_decisions", "measure", "main"]

SEEDS = (0, 1, 2)
ROW = PAPER_ROWS[0]  # any row: the two arms only need labels the verdict knows


def null_arms(D: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two independent arms ``(A, B)`` shaped like ``D`` [seeds, windows] with the same law (see the module)."""
    D = np.asarray(D, dtype=float)
    mu_w = D.mean(axis=0)
    a = D.mean(axis=1) - D.mean()
    resid = (D - mu_w - a[:, None]).ravel()
    sd_seed = float(np.std(a, ddof=1)) if a.size > 1 else 0.0

    def arm() -> np.ndarray:
        seeds = rng.normal(0.0, sd_seed, size=(D.shape[0], 1))
        return mu_w + seeds + rng.choice(resid, size=D.shape)

    return arm(), arm()


def false_decisions(D: np.ndarray, reps: int, seed: int = 0, n_boot: int = 4000) -> dict:
    """Counts of the verdicts over ``reps`` null replicates built from ``D``, with Clopper–Pearson intervals."""
    rng = np.random.default_rng(seed)
    counts = {"agrees": 0, "contradicts": 0, "undecided": 0}
    for r in range(reps):
        A, B = null_arms(D, rng)
        row = paper_verdicts({ROW[0]: A, ROW[1]: B}, 0, n_boot=n_boot, seed=seed * 100_003 + r)["rows"][0]
        counts[row["verdict"]] += 1
    decided = counts["agrees"] + counts["contradicts"]
    d, c = _cp(decided, reps), _cp(counts["contradicts"], reps)
    return {"reps": reps, **counts, "decided_rate": d.estimate, "decided_ci": [d.ci_low, d.ci_high],
            "contradicts_rate": c.estimate, "contradicts_ci": [c.ci_low, c.ci_high]}


def _cp(k: int, n: int):
    return proportion_ci(k, n, method="clopper-pearson")


def _losses(eval_dir: Path, variant: str, multiple: int) -> np.ndarray | None:
    rows = []
    for s in SEEDS:
        p = eval_dir / f"{variant if s == 0 else f'{variant}-s{s}'}.json"
        if not p.exists():
            return None
        w = json.loads(p.read_text())["losses"]
        rows.append(np.asarray(w[str(multiple)]["all"]) - np.asarray(w["1"]["all"]))
    return np.stack(rows)


def measure(directory: Path, preset: str = "cpu", reps: int = 500, seed: int = 0) -> dict:
    """The null false-decision rates of every variant with three evaluated seeds in ``directory``'s C6 results."""
    compare = json.loads((directory / f"{preset}_compare.json").read_text())
    multiple = int(compare["verdicts"]["all"]["multiple"])
    per = {}
    for v in compare["params"]["variants"]:
        D = _losses(directory / "eval" / preset, v, multiple)
        if D is not None:
            per[v] = false_decisions(D, reps, seed)
    n = sum(x["reps"] for x in per.values())
    dec, con = sum(x["agrees"] + x["contradicts"] for x in per.values()), sum(x["contradicts"] for x in per.values())
    d, c = _cp(dec, n), _cp(con, n)
    return {"claim": "C6 verdict level", "preset": preset, "multiple": multiple, "metric": "all", "seeds": list(SEEDS),
            "nominal": {"decided": 0.05, "contradicts": 0.025}, "per_variant": per,
            "pooled": {"reps": n, "decided_rate": d.estimate, "decided_ci": [d.ci_low, d.ci_high],
                       "contradicts_rate": c.estimate, "contradicts_ci": [c.ci_low, c.ci_high]}}


def main(argv: list[str] | None = None) -> int:
    from .train import results_root

    ap = argparse.ArgumentParser(prog="python -m simulations.transformer.verdict_level", description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500, help="null replicates per variant (default 500)")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 100_000:
        ap.exit(2, "--reps: must be an integer in [1, 100000]\n")
    root = results_root()
    res = measure(root, reps=args.reps)
    atomic_write_text(root / "cpu_verdict_level.json", json.dumps(to_jsonable(res), indent=1) + "\n")
    for v, x in res["per_variant"].items():
        print(f"  {v}: decided {x['decided_rate']:.3f} [{x['decided_ci'][0]:.3f}, {x['decided_ci'][1]:.3f}], "
              f"contradicts {x['contradicts_rate']:.3f} ({x['reps']} replicates)")
    p = res["pooled"]
    print(f"C6 verdict under the null ({p['reps']} replicates, {len(res['per_variant'])} variants): decided "
          f"{p['decided_rate']:.3f} [{p['decided_ci'][0]:.3f}, {p['decided_ci'][1]:.3f}] (nominal 0.05), contradicts "
          f"{p['contradicts_rate']:.3f} [{p['contradicts_ci'][0]:.3f}, {p['contradicts_ci'][1]:.3f}] (nominal 0.025)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
