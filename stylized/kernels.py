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
* :func:`householder_route`: ``u_j = P_{j→i}ᵀ q`` for all ``j`` *including the random draws*:
  the Gaussian draws come from a NumPy ``Generator`` passed into the kernel (Numba runs
  NumPy's own ziggurat on the same bit generator, so the stream is NumPy's), the
  reflection vector ``w = g/||g||`` is never stored (only ``g·u`` and ``||g||²`` are
  needed), and the route is cut into segments run in parallel threads, glued exactly
  in law by one reflection per segment (see :func:`householder_route`).
"""

from __future__ import annotations

import numba
import numpy as np

from .transport import route_angles

__all__ = ["kernel", "so2_scores_numpy", "so2_scores_numba", "householder_queries_numpy",
           "householder_queries_numba", "householder_overlaps_numpy", "householder_overlaps_numba",
           "householder_route", "householder_route_numpy", "householder_chain_numba"]

# Reassociation lets LLVM vectorise the dot products (a few ulps of difference, no change in law).
_FAST = {"reassoc", "contract", "nsz", "arcp"}


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


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def householder_chain_numba(rng, u0, U, start_row):
    """Fill ``U`` (``(m, d)``) backwards along a chain of uniform Householder steps.

    With ``start_row`` the chain starts at ``U[m−1] = u0``; otherwise ``u0`` is the row
    just after ``U`` and ``U[m−1] = H u0``.  Then ``U[j] = H_{j+1} U[j+1]``, ``H = I − 2 w wᵀ``,
    ``w = g/||g||`` with ``g`` standard normal drawn inside the kernel from the NumPy
    Generator ``rng``: ``U[j] = U[j+1] − 2 g (g·U[j+1]) / ||g||²`` (``w`` is never stored).
    """
    m, d = U.shape
    g = np.empty(d)
    u = u0.copy()
    first = m - 1
    if start_row:
        for a in range(d):
            U[m - 1, a] = u0[a]
        first = m - 2
    for j in range(first, -1, -1):
        for a in range(d):
            g[a] = rng.standard_normal()
        nn = 0.0
        c = 0.0
        for a in range(d):
            nn += g[a] * g[a]
            c += g[a] * u[a]
        f = 2.0 * c / nn
        for a in range(d):
            u[a] -= f * g[a]
            U[j, a] = u[a]


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _reflect_rows(U, v):
    """``U[j] ← (I − 2 v vᵀ) U[j]`` for every row (``v`` a unit vector)."""
    m, d = U.shape
    for j in range(m):
        c = 0.0
        for a in range(d):
            c += v[a] * U[j, a]
        for a in range(d):
            U[j, a] -= 2.0 * c * v[a]


def householder_route_numpy(q: np.ndarray, L: int, random_state=None) -> np.ndarray:
    """Reference: draw ``L`` uniform ``w`` with NumPy, then the rank-one loop in NumPy; returns ``U`` ``(L, d)``."""
    from .families import as_generator, uniform_sphere

    w = uniform_sphere(as_generator(random_state), (int(L),), q.shape[0])
    return householder_queries_numpy(w, np.asarray(q, dtype=float))


_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=max(1, min(8, numba.config.NUMBA_NUM_THREADS)))
    return _POOL


def householder_route(q: np.ndarray, L: int, seed: int | np.random.SeedSequence = 0, segments: int = 2) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for ``j = 0 … L−1`` (query at ``i = L−1``), i.i.d. uniform Householder steps.

    Exact in law, draws included, in ``O(L·d)``.  The route is cut into ``segments``
    pieces; piece 0 (nearest ``i``) starts from ``q``, piece ``k ≥ 1`` from the fixed
    ``e = ||q|| e_1``, each in its own thread with its own ``Generator(SFC64)`` spawned from
    ``SeedSequence(seed)``.  Piece ``k`` is glued to the end ``u`` of piece ``k−1`` by the
    reflection ``R`` with ``R e = u``: since ``R H_w Rᵀ = H_{Rw}`` and ``Rw`` is again uniform
    and independent of ``u``, ``R V_j`` has exactly the law of the chain continued from
    ``u`` (the realised reflection vectors are ``R w``).  The result depends on ``seed`` and
    ``segments`` only, never on the number of threads.

    Example
    -------
    >>> U = householder_route(np.eye(8)[0], 100, seed=1)
    >>> U.shape, bool(np.allclose(np.linalg.norm(U, axis=1), 1.0))
    ((100, 8), True)
    """
    q = np.ascontiguousarray(q, dtype=np.float64)
    L = int(L)
    if L < 1:
        raise ValueError(f"L must be an integer ≥ 1, got {L!r}")
    d = q.shape[0]
    U = np.empty((L, d))
    segments = max(1, min(int(segments), L))
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rngs = [np.random.Generator(np.random.SFC64(s)) for s in ss.spawn(segments)]
    # piece k holds rows [edges[k+1], edges[k]) counted from the query end
    edges = np.linspace(L, 0, segments + 1).round().astype(int)
    e = np.zeros(d)
    e[0] = np.linalg.norm(q)
    pool = _pool()
    jobs = [pool.submit(householder_chain_numba, rngs[k], q if k == 0 else e, U[edges[k + 1]:edges[k]], k == 0)
            for k in range(segments)]
    for job in jobs:
        job.result()
    # glue: reflection k maps e to the (glued) last row of piece k−1; computed in O(d) each, applied in parallel
    vs, end = [], U[edges[1]].copy()
    for k in range(1, segments):
        v = e - end
        nv = np.linalg.norm(v)
        v = v / nv if nv > 0 else np.zeros(d)
        vs.append(v)
        last = U[edges[k + 1]]
        end = last - 2.0 * v * (v @ last)
    jobs = [pool.submit(_reflect_rows, U[edges[k + 1]:edges[k]], vs[k - 1]) for k in range(1, segments)]
    for job in jobs:
        job.result()
    return U


_KERNELS = {
    "so2_scores": (so2_scores_numpy, so2_scores_numba),
    "householder_queries": (householder_queries_numpy, householder_queries_numba),
    "householder_overlaps": (householder_overlaps_numpy, householder_overlaps_numba),
    "householder_route": (householder_route_numpy, householder_route),
}


def kernel(name: str, backend: str):
    """The implementation of kernel ``name`` for ``backend`` (numba → jitted, else the NumPy twin)."""
    if name not in _KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(_KERNELS)}; got {name!r}")
    return _KERNELS[name][1 if backend == "numba" else 0]
