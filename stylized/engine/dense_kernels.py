"""The generic dense path's kernel: ``u_n = m_nᵀ u_{n−1}`` along many routes of dense steps, with its NumPy twin.

A law that gives only :meth:`~stylized.laws.base.StepLaw.sample` (``shape + (d, d)`` matrices) is transported by
:meth:`~stylized.laws.base.StepLaw.route_queries`.  Its NumPy form (:func:`dense_route_queries_numpy`, the
reference) is one batched product per step over every route; for small ``d`` each of those products is a
gufunc loop over tiny matrices whose per-matrix overhead dominates.  :func:`dense_route_queries_numba` runs each
route's chain in one compiled loop (routes in parallel; each route is independent and summed in a fixed order,
so results do not depend on the number of threads), reading the pre-drawn steps once: the path is bound by that
read, not by the arithmetic.

Threads are chosen by measurement (:func:`dense_threads`): once per process the one-thread kernel
(:func:`dense_route_queries_serial`, which the compiler vectorises better) and the parallel one at Numba's thread
count are timed on a fixed stand-in, and the faster is kept.  On a 2-core machine shared with other work
the parallel kernel waits for its slowest thread, and one thread wins (``stylized bench`` shows both).
"""

from __future__ import annotations

import time

import numba
import numpy as np

__all__ = ["dense_route_queries_numpy", "dense_route_queries_numba", "dense_route_queries_serial", "dense_threads",
           "dense_route_queries"]


def dense_route_queries_numpy(steps: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``out[r, n] = P_nᵀ q`` with ``P_n = m_1 ⋯ m_n`` of route ``r`` (``steps`` ``(R, N, d, d)``; step 0 unused)."""
    R, N, d = steps.shape[:3]
    out = np.empty((R, N, d))
    u = np.broadcast_to(np.asarray(q, dtype=float), (R, d)).copy()
    for n in range(N):
        if n:
            u = (u[:, None, :] @ steps[:, n])[:, 0, :]
        out[:, n] = u
    return out


@numba.njit(cache=True, error_model="numpy")
def _dense_route_chain(steps: np.ndarray, q: np.ndarray, out: np.ndarray, r: int) -> None:  # pragma: no cover
    """Route ``r``'s chain ``out[r, n] = out[r, n−1] · steps[r, n]`` from ``out[r, 0] = q`` (one order of sums)."""
    N, d = steps.shape[1], steps.shape[2]
    for j in range(d):
        out[r, 0, j] = q[j]
    for n in range(1, N):
        for j in range(d):
            out[r, n, j] = 0.0
        for i in range(d):
            ui = out[r, n - 1, i]
            for j in range(d):
                out[r, n, j] += ui * steps[r, n, i, j]


@numba.njit(cache=True, parallel=True, error_model="numpy")
def dense_route_queries_numba(steps: np.ndarray, q: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The Numba twin of :func:`dense_route_queries_numpy`: one compiled chain per route, routes in parallel."""
    out = np.empty((steps.shape[0], steps.shape[1], steps.shape[2]))
    for r in numba.prange(steps.shape[0]):
        _dense_route_chain(steps, q, out, r)
    return out


@numba.njit(cache=True, error_model="numpy")
def dense_route_queries_serial(steps: np.ndarray, q: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """:func:`dense_route_queries_numba` on the calling thread (the same sums in the same order: equal results)."""
    out = np.empty((steps.shape[0], steps.shape[1], steps.shape[2]))
    for r in range(steps.shape[0]):
        _dense_route_chain(steps, q, out, r)
    return out


_CHOSEN: dict[str, object] = {}  # "kernel": the one measured faster in this process; "seconds": both timings
CALIBRATION_SHAPE = (128, 64, 16, 16)
"""The steps ``(R, N, d, d)`` :func:`dense_threads` times each kernel on (identity steps: 16 MiB, a few ms)."""


def dense_threads() -> int:
    """The number of threads the dense path uses in this process: 1 or Numba's thread count, whichever ran
    :data:`CALIBRATION_SHAPE` faster (medians of three alternating runs, after one each to load the compiled
    kernels), measured on the first call and kept."""
    if "kernel" not in _CHOSEN:
        d = CALIBRATION_SHAPE[-1]
        part = np.broadcast_to(np.eye(d), CALIBRATION_SHAPE).copy()
        q = np.full(d, d**-0.5)
        kernels = (dense_route_queries_serial, dense_route_queries_numba)
        times: list[list[float]] = [[], []]
        for k in kernels:
            k(part[:1], q)
        for _ in range(3):
            for i, k in enumerate(kernels):
                t0 = time.perf_counter()
                k(part, q)
                times[i].append(time.perf_counter() - t0)
        med = [float(np.median(t)) for t in times]
        parallel = numba.get_num_threads() > 1 and med[1] < med[0]
        _CHOSEN.update(kernel=kernels[parallel], threads=numba.get_num_threads() if parallel else 1, seconds=med)
    return int(_CHOSEN["threads"])


def dense_route_queries(steps: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The compiled path for C-contiguous float64 ``steps`` ``(..., N, d, d)``; any leading shape, on the threads
    chosen by :func:`dense_threads`."""
    lead = steps.shape[:-3]
    N, d = steps.shape[-3], steps.shape[-1]
    flat = np.ascontiguousarray(steps, dtype=np.float64).reshape((-1, N, d, d))
    q = np.ascontiguousarray(q, dtype=np.float64)
    dense_threads()
    out = _CHOSEN["kernel"](flat, q)
    return out.reshape(lead + (N, d))
