"""Hot loops: Numba kernels with their vectorised NumPy twins (same inputs, same outputs).

Random numbers never come from inside a kernel: callers draw them with NumPy
Generators and pass arrays in.  Each kernel ``foo_numba`` has a reference ``foo_numpy``
and :func:`kernel` picks one by backend name.

* ``so2_scores``: ``s_j = Σ_b cos(A_{j,b}) ⟨q_b, k_{j,b}⟩ + sin(A_{j,b}) (q_b × k_{j,b})``
  with the accumulated route angle ``A_{j,b} = Σ_{s=j+1}^{i} θ_{s,b}`` (query at ``i = L−1``):
  ``qᵀ P_{j→i} k_j`` for SO(2) steps without forming any vector.
* ``householder_queries``: ``u_j = P_{j→i}ᵀ q`` by rank-one updates ``u_j = u_{j+1} − 2 w_{j+1}(w_{j+1}·u_{j+1})``.
* ``householder_overlaps``: ``qᵀ P_n q`` along a chain of reflections for many trials at
  the route lengths ``ns`` (the mixing check's estimator).
"""

from __future__ import annotations

import numba
import numpy as np

from .transport import route_angles

__all__ = ["kernel", "so2_scores_numpy", "so2_scores_numba", "householder_queries_numpy",
           "householder_queries_numba", "householder_overlaps_numpy", "householder_overlaps_numba"]


def so2_scores_numpy(theta: np.ndarray, dot: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """Reference: ``theta``, ``dot``, ``cross`` of shape ``(L, B)``; returns ``(L,)`` scores ``qᵀ P_{j→i} k_j``."""
    A = route_angles(theta)
    return np.sum(np.cos(A) * dot + np.sin(A) * cross, axis=-1)


@numba.njit(cache=True, fastmath=False)
def so2_scores_numba(theta, dot, cross):
    L, B = theta.shape
    out = np.zeros(L)
    acc = np.zeros(B)
    for j in range(L - 1, -1, -1):
        s = 0.0
        for b in range(B):
            s += np.cos(acc[b]) * dot[j, b] + np.sin(acc[b]) * cross[j, b]
            acc[b] += theta[j, b]
        out[j] = s
    return out


def householder_queries_numpy(w: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Reference: ``w`` ``(L, d)`` unit reflection vectors, ``q`` ``(d,)``; returns ``U`` ``(L, d)``."""
    L = w.shape[0]
    U = np.empty((L, q.shape[0]))
    U[L - 1] = q
    for j in range(L - 2, -1, -1):
        U[j] = U[j + 1] - 2.0 * w[j + 1] * (w[j + 1] @ U[j + 1])
    return U


@numba.njit(cache=True)
def householder_queries_numba(w, q):
    L, d = w.shape
    U = np.empty((L, d))
    U[L - 1] = q
    for j in range(L - 2, -1, -1):
        c = 0.0
        for a in range(d):
            c += w[j + 1, a] * U[j + 1, a]
        for a in range(d):
            U[j, a] = U[j + 1, a] - 2.0 * c * w[j + 1, a]
    return U


def householder_overlaps_numpy(w: np.ndarray, q: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """Reference: ``w`` ``(T, N, d)`` reflections for ``T`` trials; returns ``(T, len(ns))`` values ``qᵀ P_n q``."""
    T, N, d = w.shape
    u = np.broadcast_to(q, (T, d)).copy()
    out = np.empty((T, len(ns)))
    k = 0
    for n in range(0, N + 1):
        while k < len(ns) and ns[k] == n:
            out[:, k] = u @ q
            k += 1
        if n < N:
            u -= 2.0 * w[:, n] * np.einsum("td,td->t", w[:, n], u)[:, None]
    return out


@numba.njit(cache=True, parallel=True)
def householder_overlaps_numba(w, q, ns):
    T, N, d = w.shape
    out = np.empty((T, ns.shape[0]))
    for t in numba.prange(T):
        u = q.copy()
        k = 0
        for n in range(N + 1):
            while k < ns.shape[0] and ns[k] == n:
                s = 0.0
                for a in range(d):
                    s += u[a] * q[a]
                out[t, k] = s
                k += 1
            if n < N:
                c = 0.0
                for a in range(d):
                    c += w[t, n, a] * u[a]
                for a in range(d):
                    u[a] -= 2.0 * c * w[t, n, a]
    return out


_KERNELS = {
    "so2_scores": (so2_scores_numpy, so2_scores_numba),
    "householder_queries": (householder_queries_numpy, householder_queries_numba),
    "householder_overlaps": (householder_overlaps_numpy, householder_overlaps_numba),
}


def kernel(name: str, backend: str):
    """The implementation of kernel ``name`` for ``backend`` (numba → jitted, else the NumPy twin)."""
    if name not in _KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(_KERNELS)}; got {name!r}")
    return _KERNELS[name][1 if backend == "numba" else 0]
