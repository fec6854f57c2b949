"""Rows of ``stylized bench`` for the score kernels: the SO(2) sweep, Householder chains and window sums
against their NumPy twins on identical inputs (medians)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from stylized.engine.context_sweep import so2_context_inputs, so2_context_numba, so2_context_numpy
from stylized.engine.scores import (
    householder_chain_scores_numba,
    householder_chain_scores_numpy,
    householder_window_sums_numba,
    householder_window_sums_numpy,
)
from stylized.laws.families import make_family, uniform_sphere

__all__ = ["bench_rows"]


def _timed(f, repeat: int) -> tuple[float, float]:
    times, peak = [], 0.0
    for _ in range(repeat):
        tracemalloc.start()
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
        peak = max(peak, tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    return float(np.median(times)), peak


def bench_rows(repeat: int = 3) -> list[dict]:
    """Hot kernels against their NumPy references on identical inputs, timed side by side (medians).

    * ``so2_context``: one query over ``L = 65,536`` sources at ``d = 64`` for 4 trials (scores + far LSE);
    * ``householder_chain_scores``: ``qᵀ P_n k`` for 256 chains of ``n = 500`` reflections at ``d = 64``.

    ``peak_mib`` is the traced (NumPy) peak of the kernel call; inputs are allocated outside the timing.
    """

    rng = np.random.default_rng(0)
    rows = []
    fam = make_family("rope-random", 64)
    q = np.full(64, 1 / 8.0)
    theta, dot, cross = so2_context_inputs(fam, 65536, 4, rng, q, target_n=3)
    so2_context_numba(theta[:, :64], dot[:, :64], cross[:, :64], 8.0, 16)  # compile outside the timing
    cases = [("so2_context (d=64, L=65536, 4 trials)",
              lambda: so2_context_numba(theta, dot, cross, 8.0, 16),
              lambda: so2_context_numpy(theta, dot, cross, 8.0, 16))]
    g = rng.standard_normal((256, 500, 64))
    householder_chain_scores_numba(g[:2, :2], q, q)
    cases.append(("householder_chain_scores (d=64, n=500, 256 trials)",
                  lambda: householder_chain_scores_numba(g, q, q),
                  lambda: householder_chain_scores_numpy(g, q, q)))
    w = uniform_sphere(rng, (65536,), 64)
    householder_window_sums_numba(w[:64], q, 16, 8)
    cases.append(("householder_window_sums (d=64, L=65536, stride 64, nmax 300)",
                  lambda: householder_window_sums_numba(w, q, 64, 300),
                  lambda: householder_window_sums_numpy(w, q, 64, 300)))
    for name, fk, fn in cases:
        tk, pk = _timed(fk, repeat)
        tn, _ = _timed(fn, repeat)
        rows.append({"name": name, "kind": "kernel", "baseline": "numpy", "seconds": tk, "baseline_seconds": tn,
                     "ratio": tn / tk, "peak_mib": pk})
    return rows
