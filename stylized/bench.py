"""``stylized bench``: each hot kernel against its vectorised NumPy twin (and dense brute force), side by side.

Every row: ``name``, ``kind`` (``kernel`` | ``sampler`` | ``end-to-end``), ``baseline`` (what it is
compared with), ``seconds`` and ``baseline_seconds`` (medians of ``repeat`` repetitions, ours and
the baseline alternating so both see the same machine load), ``ratio = baseline/ours`` and
``peak_mib`` (peak traced allocation of one run of ours: :mod:`tracemalloc` sees NumPy and
Python allocations, not Numba-internal temporaries).  Rows of other modules are collected
from ``stylized.scores``, ``stylized.farmass`` and ``stylized.values`` (``bench_rows(repeat)``)
when they exist.  JIT compilation happens before timing.

Goals of issue 8 on the 2-core CPU are attached to the rows they concern (``goal``, ``goal_met``).
The end-to-end SO(2) sweep row (baseline ≈ 10 s) uses at most 2 repetitions.

Example
-------
>>> ours, base = timed_pair(lambda: sum(range(10)), lambda: sum(range(1000)), repeat=3)
>>> ours > 0 and base > 0
True
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

__all__ = ["main", "collect_rows", "machine", "timed_pair"]

OTHER_MODULES = ("scores", "farmass", "values")


def machine() -> dict:
    """The machine the numbers were measured on."""
    import numba

    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not initialised"
    return {"cpu": model, "cores": os.cpu_count(), "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "threading_layer": layer, "svml": bool(numba.config.USING_SVML), "numpy": np.__version__,
            "numba": numba.__version__, "python": platform.python_version(), "platform": platform.platform(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}


def _peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def timed_pair(ours: Callable[[], object], base: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` alternating timings of ``ours`` and ``base`` (one warm-up call each first)."""
    ours()
    base()
    t_o, t_b = [], []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        ours()
        t_o.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        base()
        t_b.append(time.perf_counter() - t0)
    return float(np.median(t_o)), float(np.median(t_b))


def _row(name: str, kind: str, baseline: str, ours, base, repeat: int, goal: str | None = None,
         met: Callable[[float, float], bool] | None = None) -> dict:
    s, b = timed_pair(ours, base, repeat)
    return {"name": name, "kind": kind, "baseline": baseline, "seconds": s, "baseline_seconds": b,
            "ratio": b / s if s > 0 else None, "peak_mib": round(_peak_mib(ours), 2), "goal": goal,
            "goal_met": None if met is None else bool(met(s, b))}


def _own_rows(repeat: int, small: bool) -> list[dict]:
    from .counter_rng import normals
    from .families import make_family, uniform_sphere
    from .kernels import (
        householder_overlaps_numba,
        householder_overlaps_numpy,
        householder_queries_numba,
        householder_queries_numpy,
        householder_route,
        householder_route_numpy,
        so2_scores_numba,
        so2_scores_numpy,
    )
    from .sampling import sample_far_route, sample_far_route_dense

    rng = np.random.default_rng(0)
    L, d = (2048, 16) if small else (65_536, 64)
    q = np.full(d, 1.0 / np.sqrt(d))
    U, U32 = np.empty((L, d)), np.empty((L, d), dtype=np.float32)
    rows = [_row(f"householder route u_j = P_(j→i)ᵀq, L={L}, d={d}, incl. draws, into a reused out (Numba, 2 segments)",
                 "kernel", "NumPy: uniform_sphere draws (PCG64) + NumPy rank-one loop",
                 lambda: householder_route(q, L, seed=1, out=U), lambda: householder_route_numpy(q, L, 1), repeat,
                 goal="≤ 10 ms including the draws", met=lambda s, b: s <= 0.010),
            _row(f"householder route, L={L}, d={d}, incl. draws, float32 out (half the memory traffic)", "kernel",
                 "NumPy: uniform_sphere draws (PCG64) + NumPy rank-one loop",
                 lambda: householder_route(q, L, seed=1, out=U32), lambda: householder_route_numpy(q, L, 1), repeat)]
    w = uniform_sphere(rng, (L,), d)
    rows.append(_row(f"householder route on pre-drawn w, L={L}, d={d} (Numba)", "kernel", "NumPy rank-one loop",
                     lambda: householder_queries_numba(w, q), lambda: householder_queries_numpy(w, q), repeat))
    gdraw = np.random.Generator(np.random.SFC64(2))
    rows.append(_row(f"draws alone: {L}×{d} standard normals, counter-based Box–Muller (Numba SIMD)", "sampler",
                     "NumPy Generator(SFC64).standard_normal (ziggurat)", lambda: normals(3, L * d),
                     lambda: gdraw.standard_normal(L * d), repeat))
    th = rng.uniform(-1, 1, (L, d // 2))
    dot, cross = rng.standard_normal((2, L, d // 2))
    rows.append(_row(f"SO(2) scores qᵀP_(j→i)k_j, one trial, L={L}, d={d} (Numba)", "kernel",
                     "NumPy: route_angles + cos/sin", lambda: so2_scores_numba(th, dot, cross),
                     lambda: so2_scores_numpy(th, dot, cross), repeat))
    rows.append(_so2_sweep_row(small, repeat))
    T, N, dh = (64, 20, 16) if small else (2000, 100, 64)
    ww = uniform_sphere(rng, (T, N), dh)
    qh = np.full(dh, 1.0 / np.sqrt(dh))
    ns = np.array([0, 1, 5, N // 2, N])
    rows.append(_row(f"householder overlaps qᵀP_n q, {T} trials × n≤{N}, d={dh} (Numba prange)", "kernel",
                     "NumPy: batched rank-one updates", lambda: householder_overlaps_numba(ww, qh, ns),
                     lambda: householder_overlaps_numpy(ww, qh, ns), repeat))
    fam = make_family("lazy-haar", d=8 if small else 64, p=0.5)
    n, size = (4, 8) if small else (32, 32)
    rows.append(_row(f"far-route P_n q, lazy-haar p=0.5, d={fam.d}, n={n}, {size} draws (exact law)", "sampler",
                     "dense: scipy ortho_group Haar matrices + products",
                     lambda: sample_far_route(fam, n, size, 3), lambda: sample_far_route_dense(fam, n, size, 3),
                     repeat, goal="≥ 100× dense", met=lambda s, b: b / s >= 100))
    return rows


def _so2_sweep_row(small: bool, repeat: int) -> dict:
    """The SO(2) score sweep end to end (draws + scores + far log-sum-exp) for 100 trials at d=64, L=65,536."""
    from .families import make_family
    from .kernels import so2_context_sampled
    from .scores import so2_context_inputs, so2_context_numba

    T, L, d = (10, 4096, 16) if small else (100, 65_536, 64)
    fam = make_family("rope-random", d)
    q = np.full(d, 1.0 / np.sqrt(d))

    def ours():
        return so2_context_sampled(fam, L, T, 0, q, 8.0, 16, 3)

    def base():  # the previous pipeline: NumPy draws in chunks of 4 trials, then the Numba sweep kernel
        rng = np.random.default_rng(0)
        return [so2_context_numba(*so2_context_inputs(fam, L, 4, rng, q, 3), 8.0, 16) for _ in range(T // 4)]

    return _row(f"SO(2) score sweep end to end incl. draws, {T} trials, d={d}, L={L} (fused counter-RNG kernel)",
                "end-to-end", "NumPy draws (so2_context_inputs) + Numba so2_context kernel", ours, base,
                min(repeat, 2), goal="≤ 1.5 s including the draws", met=lambda s, b: s <= 1.5)


def _check_all_row() -> dict:
    """Wall time of ``stylized check --all --force`` in a subprocess, writing only to a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "STYLIZED_RESULTS_DIR": os.path.join(tmp, "results"),
               "STYLIZED_FIGURES_DIR": os.path.join(tmp, "figures"),
               "STYLIZED_PAPER_CHECKS": os.path.join(tmp, "paper_checks.md")}
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, "-m", "stylized", "check", "--all", "--force"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        s = time.perf_counter() - t0
    return {"name": "stylized check --all --force (defaults, seed 0)" + ("" if rc == 0 else f" (exit {rc})"),
            "kind": "end-to-end", "baseline": "goal: 120 s", "seconds": s, "baseline_seconds": 120.0,
            "ratio": 120.0 / s, "peak_mib": None, "goal": "≤ 120 s wall", "goal_met": rc == 0 and s <= 120.0}


def collect_rows(repeat: int = 5, small: bool = False, with_check_all: bool = False) -> dict:
    """All benchmark rows plus the machine and which other modules' rows were missing."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an integer ≥ 1, got {repeat!r}")
    rows = _own_rows(repeat, small)
    missing = []
    for mod in OTHER_MODULES:
        try:
            m = __import__(f"stylized.{mod}", fromlist=["bench_rows"])
            rows += [{"goal": None, "goal_met": None, **r} for r in m.bench_rows(repeat)]
        except (ImportError, AttributeError) as e:
            missing.append(f"stylized.{mod}.bench_rows ({type(e).__name__})")
    if with_check_all:
        rows.append(_check_all_row())
    return {"machine": machine(), "repeat": repeat, "small": small, "rows": rows, "missing": missing}


def _fmt_s(x) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def main(repeat: int = 5, as_json: bool = False, with_check_all: bool = False, small: bool = False) -> int:
    """Run the benchmarks and print a table (or one JSON object with ``--json``)."""
    res = collect_rows(repeat, small=small, with_check_all=with_check_all)
    if as_json:
        json.dump(res, sys.stdout)
        sys.stdout.write("\n")
        return 0
    m = res["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, numba {m['numba']} ({m['numba_threads']} threads, "
          f"layer {m['threading_layer']}, SVML {m['svml']}), numpy {m['numpy']}, load {m['load_average']}")
    print(f"medians of {repeat} alternating repetitions; ratio = baseline / ours\n")
    for r in res["rows"]:
        goal = "" if not r.get("goal") else f"   goal {r['goal']}: {'met' if r['goal_met'] else 'MISSED'}"
        ratio = "—" if r.get("ratio") is None else f"{r['ratio']:.1f}×"
        print(f"[{r['kind']}] {r['name']}\n    ours {_fmt_s(r['seconds'])}  vs  {r['baseline']}: "
              f"{_fmt_s(r['baseline_seconds'])}  → {ratio}   peak {r.get('peak_mib')} MiB{goal}")
    if res["missing"]:
        print("\nnot available: " + ", ".join(res["missing"]))
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m stylized.bench")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--with-check-all", action="store_true")
    ap.add_argument("--small", action="store_true")
    a = ap.parse_args()
    sys.exit(main(a.repeat, a.json, a.with_check_all, a.small))
