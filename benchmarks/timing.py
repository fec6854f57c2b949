"""How a benchmark row is timed: ours and the baseline alternating, medians, and the peak allocation of ours.

Every module that adds rows to ``stylized bench`` (:mod:`benchmarks.kernels`, :mod:`benchmarks.laws`, …) times
them here; :mod:`benchmarks.runner` collects the rows.

Example
-------
>>> ours, base = timed_pair(lambda: sum(range(10)), lambda: sum(range(1000)), repeat=3)
>>> ours > 0 and base > 0
True
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import numpy as np

__all__ = ["timed_pair", "row"]


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


def row(name: str, kind: str, baseline: str, ours, base, repeat: int, goal: str | None = None,
         met: Callable[[float, float], bool] | None = None) -> dict:
    s, b = timed_pair(ours, base, repeat)
    return {"name": name, "kind": kind, "baseline": baseline, "seconds": s, "baseline_seconds": b,
            "ratio": b / s if s > 0 else None, "peak_mib": round(_peak_mib(ours), 2), "goal": goal,
            "goal_met": None if met is None else bool(met(s, b))}
