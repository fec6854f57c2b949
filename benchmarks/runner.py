"""``stylized bench`` (``python -m benchmarks``): each hot kernel against its vectorised NumPy twin (and dense brute force), side by side.

Every row: ``name``, ``kind`` (``kernel`` | ``sampler`` | ``end-to-end``), ``baseline`` (what it is
compared with), ``seconds`` and ``baseline_seconds`` (medians of ``repeat`` repetitions, ours and
the baseline alternating so both see the same machine load), ``ratio = baseline/ours`` and
``peak_mib`` (peak traced allocation of one run of ours: :mod:`tracemalloc` sees NumPy and
Python allocations, not Numba-internal temporaries).  The kernel rows are :mod:`benchmarks.kernels`;
rows of other modules are collected from :data:`OTHER_MODULES` (``bench_rows(repeat)``) when they exist.  JIT compilation happens before timing.

Goals of issue 8 on the 2-core CPU are attached to the rows they concern (``goal``, ``goal_met``).
The end-to-end SO(2) sweep row (baseline ≈ 10 s) uses at most 2 repetitions.

Rows are timed by :mod:`benchmarks.timing`.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["main", "collect_rows", "machine", "OTHER_MODULES"]

OTHER_MODULES = ("benchmarks.scores", "benchmarks.laws", "benchmarks.startup", "benchmarks.alibi_eval",
                 "stylized.engine.lse")
"""Modules whose ``bench_rows(repeat)`` add rows (``stylized.engine.lse`` until its rows move here)."""


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
    from .kernels import kernel_rows

    rows = kernel_rows(repeat, small)
    missing = []
    for mod in OTHER_MODULES:
        try:
            m = importlib.import_module(mod)
            rows += [{"goal": None, "goal_met": None, **r} for r in m.bench_rows(repeat)]
        except (ImportError, AttributeError) as e:
            missing.append(f"{mod}.bench_rows ({type(e).__name__})")
    if with_check_all:
        rows.append(_check_all_row())
    return {"machine": machine(), "repeat": repeat, "small": small, "rows": rows, "missing": missing}


def _fmt_s(x) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def add_parser(sub) -> None:
    """The ``stylized bench`` subcommand (a ``stylized.commands`` entry point: the library never imports this package)."""
    from stylized.core.options import Int, arg_type

    pb = sub.add_parser("bench", help="benchmarks: ratios measured side by side")
    pb.add_argument("--json", action="store_true", help="print one JSON object")
    pb.add_argument("--repeat", type=arg_type(Int(1, 1000)), default=5, help="repetitions per timing (median reported)")
    pb.add_argument("--with-check-all", action="store_true", help="also time `stylized check --all --force` (in temporary dirs)")
    pb.set_defaults(func=lambda a: main(repeat=a.repeat, as_json=a.json, with_check_all=a.with_check_all))


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

