"""The generic dense path's kernel: ``u_n = m_nᵀ u_{n−1}`` along many routes of dense steps, with its NumPy twin.

A law that gives only :meth:`~stylized.laws.base.StepLaw.sample` (``shape + (d, d)`` matrices) is transported by
:meth:`~stylized.laws.base.StepLaw.route_queries`.  Its NumPy form (:func:`dense_route_queries_numpy`, the
reference) is one batched product per step over every route; for small ``d`` each of those products is a
gufunc loop over tiny matrices whose per-matrix overhead dominates.  :func:`dense_route_queries_numba` runs each
route's chain in one compiled loop (routes in parallel; each route is independent and summed in a fixed order,
so results do not depend on the number of threads), reading the pre-drawn steps once: the path is bound by that
read, not by the arithmetic.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dense_route_queries_numpy", "dense_route_queries_numba", "dense_route_queries"]


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


@numba.njit(cache=True, parallel=True, error_model="numpy")
def dense_route_queries_numba(steps: np.ndarray, q: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The Numba twin of :func:`dense_route_queries_numpy`: one compiled chain per route, routes in parallel."""
    R, N, d = steps.shape[0], steps.shape[1], steps.shape[2]
    out = np.empty((R, N, d))
    for r in numba.prange(R):
        for j in range(d):
            out[r, 0, j] = q[j]
        for n in range(1, N):
            for j in range(d):
                out[r, n, j] = 0.0
            for i in range(d):
                ui = out[r, n - 1, i]
                for j in range(d):
                    out[r, n, j] += ui * steps[r, n, i, j]
    return out


def dense_route_queries(steps: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The compiled path for C-contiguous float64 ``steps`` ``(..., N, d, d)``; any leading shape."""
    lead = steps.shape[:-3]
    N, d = steps.shape[-3], steps.shape[-1]
    flat = np.ascontiguousarray(steps, dtype=np.float64).reshape((-1, N, d, d))
    out = dense_route_queries_numba(flat, np.ascontiguousarray(q, dtype=np.float64))
    return out.reshape(lead + (N, d))
