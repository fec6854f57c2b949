"""The next GPU step (issue 36, item 4): the Q/K vs Q/K/V gaps against the training budget, and GPU/CPU agreement.

``scripts/gpu_next.sh`` runs, in one device call of at most 9 minutes on one GPU, the gpu preset's random-qk,
random-qkv, learned-qk and learned-qkv at the budgets of :data:`BUDGETS` (every one beyond the committed 2,500
steps; seed 0, the committed runs' seed; each run is its own cosine schedule to its budget, and records the step
it reached if the time guard stops it), each evaluated 1×…256× on the author's windows, and beside them every
stylized check on the CuPy backend.  This module then

* ``render``: per Q/K vs Q/K/V row, budget and length ≥ 8,192 tokens, seed 0's Δ = log ratio(A) − log ratio(B)
  with a 95% bootstrap over the shared evaluation windows (:func:`.gpu_report.window_deltas`: evaluation noise
  only), the committed 2,500-step run's Δ beside it and the paper's Δ at the same length
  (:func:`.magnitude.paper_delta`): ``trend.json``, ``trend.md`` and ``trend.png``;
* ``agreement``: each check's rows on the GPU against the committed CPU rows, ``z = (x_gpu − x_cpu)/√(se_gpu² +
  se_cpu²)`` with ``se`` the 95% half-width / 1.96; if both backends sample one law, ``|z| > 1.96`` holds for
  about 5% of the rows (a Clopper–Pearson interval on the share is reported), and the verdicts should match.

    python -m simulations.transformer.c6.gpu_next plan [--tiny]
    python -m simulations.transformer.c6.gpu_next render RUNS_DIR OUT_DIR [--committed RESULTS_ROOT]
    python -m simulations.transformer.c6.gpu_next agreement CPU_RESULTS GPU_RESULTS OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

__all__ = ["BUDGETS", "TINY_BUDGETS", "PAIRS", "plan", "run_losses", "trend", "agreement", "main"]

#: steps per budget, sized from the committed H200 runs: with eight processes on the GPU (seed 0, CuPy checks beside)
#: 2,500 steps took 188–200 s (≈ 12–13 steps/s per process, ≈ 100 steps/s in all); the learned variants run
#: ≈ 15 steps/s even with two processes (seed 4: 164 s).  These 31,250 steps ≈ 310 s of training, the longest run
#: (learned 3,750) ≈ 300 s, inside the 330 s guard; evaluation and start-up fill the rest of the 9 minutes
BUDGETS = {"random-qk": (3_750, 5_000), "random-qkv": (3_750, 5_000),
           "learned-qk": (3_125, 3_750), "learned-qkv": (3_125, 3_750)}
#: the --tiny dry run on the CPU (smoke preset)
TINY_BUDGETS = {v: (12, 16) for v in BUDGETS}
PAIRS = (("random-qk", "random-qkv"), ("learned-qk", "learned-qkv"))
COMMITTED_STEPS = 2_500
MIN_TOKENS = 8_192


def plan(tiny: bool = False) -> list[tuple[str, int]]:
    """(variant, steps) of every run, longest first (so the slowest start first)."""
    runs = [(v, s) for v, ss in (TINY_BUDGETS if tiny else BUDGETS).items() for s in ss]
    return sorted(runs, key=lambda r: -r[1])


def run_losses(path: Path) -> dict[int, np.ndarray] | None:
    """Per-window losses ``{multiple: array}`` (author's metric) of one run's evaluation cache, ``<name>.json`` or
    ``<name>-author-windows.json`` (the author's windows); None if absent."""
    path = next((p for p in (path, path.with_name(path.stem + "-author-windows.json")) if p.exists()), None)
    if path is None:
        return None
    saved = json.loads(path.read_text())
    return {int(m): np.asarray(d["all"], dtype=float) for m, d in saved["losses"].items()}


def _cells(la, lb, L_train: int, a: str, b: str) -> list[dict]:
    from .gpu_report import window_deltas
    from .magnitude import decide_magnitude, paper_delta

    out = []
    for m in sorted(set(la) & set(lb)):
        tokens = m * L_train
        if tokens < MIN_TOKENS and tokens != max(set(la) & set(lb)) * L_train:
            continue
        c = {"multiple": m, "tokens": tokens, **window_deltas(la, lb, m)}
        c["paper_delta"] = paper_delta(a, b, tokens)
        c["magnitude"] = decide_magnitude(c["ci_low"], c["ci_high"], c["paper_delta"])
        out.append(c)
    return out


def trend(runs_dir: Path, committed: Path | None = None, L_train: int = 256) -> dict:
    """The gaps per row, budget and length (module doc); ``committed``: the results root holding ``transformer/gpu``."""
    rows = []
    for a, b in PAIRS:
        budgets = sorted(set(BUDGETS[a]) | set(TINY_BUDGETS[a]))
        entries = []
        if committed is not None:
            base = committed / "transformer" / "gpu" / "eval" / "gpu"
            la, lb = run_losses(base / f"{a}-author-windows.json"), run_losses(base / f"{b}-author-windows.json")
            if la and lb:
                entries.append({"steps": COMMITTED_STEPS, "source": "committed", "cells": _cells(la, lb, L_train, a, b)})
        for s in budgets:
            la = run_losses(runs_dir / "eval" / f"{a}-{s}.json")
            lb = run_losses(runs_dir / "eval" / f"{b}-{s}.json")
            if la and lb:
                entries.append({"steps": s, "source": "this run", "cells": _cells(la, lb, _l_train(runs_dir, a, s, L_train),
                                                                                   a, b),
                                "reached": {v: _steps_reached(runs_dir, v, s) for v in (a, b)}})
        rows.append({"row": f"{a} > {b}", "budgets": entries})
    return {"claim": "Q/K vs Q/K/V gap against the training budget", "rows": rows}


def _run_json(runs_dir: Path, v: str, s: int) -> dict | None:
    p = runs_dir / f"{v}-{s}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _steps_reached(runs_dir: Path, v: str, s: int) -> int | None:
    d = _run_json(runs_dir, v, s)
    return None if d is None else int(d.get("step", 0))


def _l_train(runs_dir: Path, v: str, s: int, default: int) -> int:
    d = _run_json(runs_dir, v, s) or {}
    ev = d.get("eval") or []
    return int(ev[0]["L"] // ev[0]["multiple"]) if ev else default


def trend_markdown(t: dict) -> str:
    lines = ["| row | steps | source | length | Δ [95% window CI] | paper's Δ | window CI vs the paper's Δ (seed 0: evaluation noise only) |", "|---|---|---|---|---|---|---|"]
    for r in t["rows"]:
        for e in r["budgets"]:
            for c in e["cells"]:
                paper = "—" if c["paper_delta"] is None else f"{c['paper_delta']:+.3f}"
                lines.append(f"| {r['row']} | {e['steps']:,} | {e['source']} | {c['tokens']:,} | {c['delta']:+.3f} "
                             f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] | {paper} | {c['magnitude']} |")
    return "\n".join(lines) + "\n"


def plot_trend(t: dict, out_png: Path) -> Path:
    """Δ against the training budget per row at its longest length, the paper's Δ as a dashed level."""
    from stylized.harness import plotting as sp

    with sp.theme():
        fig, axes = sp.figure(1, len(t["rows"]), height=3.0)
        for ax, r in zip(np.ravel(axes), t["rows"]):
            es = [e for e in r["budgets"] if e["cells"]]
            if es:
                last = [e["cells"][-1] for e in es]
                x = [e["steps"] for e in es]
                ax.errorbar(x, [c["delta"] for c in last], yerr=[[c["delta"] - c["ci_low"] for c in last],
                                                                   [c["ci_high"] - c["delta"] for c in last]],
                            fmt="o-", ms=4, capsize=2, label=f"measured at {last[-1]['tokens']:,} tokens")
                if last[-1]["paper_delta"] is not None:
                    ax.axhline(last[-1]["paper_delta"], color="k", ls="--", lw=0.8, label="paper")
            ax.axhline(0, color="0.6", lw=0.6)
            ax.set_xscale("log")
            ax.set_xlabel("training steps (each its own schedule)")
            ax.set_title(r["row"], fontsize=8)
            ax.legend(fontsize=6)
        np.ravel(axes)[0].set_ylabel("Δ = log ratio(Q/K) − log ratio(Q/K/V)")
        sp.caption(fig, "gpu preset, seed 0: the Q/K vs Q/K/V gap at the longest evaluated length against the training "
                        "budget (95% bootstrap over the evaluation windows: evaluation noise only); dashed: the paper's Δ.")
        return sp.save(fig, out_png)


def _se(r: dict) -> float | None:
    lo, hi = r.get("ci_low"), r.get("ci_high")
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (lo, hi, r.get("estimate"))):
        return None
    return (hi - lo) / (2 * 1.959964)


def agreement(cpu_dir: Path, gpu_dir: Path) -> dict:
    """Per check present in both folders: rows compared in distribution and the verdicts (module doc)."""
    from stylized.core.estimators import proportion_ci

    checks, k, n = [], 0, 0
    for g in sorted(Path(gpu_dir).glob("*.json")):
        c = Path(cpu_dir) / g.name
        if not c.exists():
            continue
        try:
            rg, rc = json.loads(g.read_text()), json.loads(c.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(rg, dict) or not isinstance(rc, dict) or "rows" not in rg or "rows" not in rc:
            continue
        zs = []
        for xg, xc in zip(rg["rows"], rc["rows"]):
            if xg.get("quantity") != xc.get("quantity"):
                continue
            sg, sc = _se(xg), _se(xc)
            if sg is None or sc is None or sg + sc <= 0:
                continue
            zs.append((xg["estimate"] - xc["estimate"]) / math.hypot(sg, sc))
        big = int(np.sum(np.abs(zs) > 1.959964)) if zs else 0
        k, n = k + big, n + len(zs)
        checks.append({"check": g.stem, "rows_compared": len(zs), "beyond_1.96": big,
                       "max_abs_z": float(np.max(np.abs(zs))) if zs else None,
                       "holds_gpu": rg.get("holds"), "holds_cpu": rc.get("holds"),
                       "same_verdict": rg.get("holds") == rc.get("holds")})
    share = proportion_ci(k, n, method="clopper-pearson") if n else None
    return {"checks": checks, "rows": n, "beyond_1.96": k, "nominal": 0.05,
            "share": None if share is None else [share.estimate, share.ci_low, share.ci_high],
            "verdicts_match": all(c["same_verdict"] for c in checks) if checks else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulations.transformer.c6.gpu_next", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--tiny", action="store_true")
    r = sub.add_parser("render")
    r.add_argument("runs_dir")
    r.add_argument("out_dir")
    r.add_argument("--committed", default=None)
    g = sub.add_parser("agreement")
    g.add_argument("cpu_dir")
    g.add_argument("gpu_dir")
    g.add_argument("out_dir")
    args = ap.parse_args(argv)
    if args.cmd == "plan":
        print("\n".join(f"{v} {s}" for v, s in plan(args.tiny)))
        return 0
    out = Path(args.out_dir)
    if not out.is_dir():
        ap.exit(2, f"out_dir: {out} is not a folder\n")
    if args.cmd == "render":
        runs = Path(args.runs_dir)
        if not runs.is_dir():
            ap.exit(2, f"runs_dir: {runs} is not a folder\n")
        t = trend(runs, Path(args.committed) if args.committed else None)
        (out / "trend.json").write_text(json.dumps(t, indent=1) + "\n")
        (out / "trend.md").write_text(trend_markdown(t))
        print(trend_markdown(t))
        plot_trend(t, out / "trend.png")
        return 0
    for d in (args.cpu_dir, args.gpu_dir):
        if not Path(d).is_dir():
            ap.exit(2, f"{d}: not a folder\n")
    a = agreement(Path(args.cpu_dir), Path(args.gpu_dir))
    (out / "agreement.json").write_text(json.dumps(a, indent=1) + "\n")
    for c in a["checks"]:
        print(f"{c['check']}: {c['rows_compared']} rows, {c['beyond_1.96']} beyond |z| 1.96 (max {c['max_abs_z']}); "
              f"verdict gpu {c['holds_gpu']} cpu {c['holds_cpu']}")
    print(f"all: {a['beyond_1.96']}/{a['rows']} rows beyond |z| 1.96 (nominal 0.05; share {a['share']}); "
          f"verdicts match: {a['verdicts_match']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
