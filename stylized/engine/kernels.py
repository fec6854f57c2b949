"""Hot loops: Numba kernels with their vectorised NumPy twins (same inputs, same outputs).

Most kernels take their random numbers as arrays drawn with NumPy Generators.  The two
*fused* kernels (the Householder route and the SO(2) sweep) draw inside the kernel from the
counter-based stream of :mod:`stylized.core.counter_rng` — a draw depends on (key, index) only,
so results never depend on threads — because drawing the inputs with NumPy was measured to
cost 10–20× the kernel itself.  Each kernel ``foo_numba`` has a reference ``foo_numpy``
and :func:`kernel` picks one by backend name.

* ``so2_scores``: ``s_j = Σ_b cos(A_{j,b}) ⟨q_b, k_{j,b}⟩ + sin(A_{j,b}) (q_b × k_{j,b})``
  with the accumulated route angle ``A_{j,b} = Σ_{s=j+1}^{i} θ_{s,b}`` (query at ``i = L−1``):
  ``qᵀ P_{j→i} k_j`` for SO(2) steps without forming any vector.
* :func:`beta_step_nb`: the step ``u − β w (w·u)`` (Householder ``β = 2``, contraction ``β < 2``), written
  once for every Numba kernel, the fused counter kernels included (they lay each step's normals out as one
  contiguous ``g`` and call it with ``nn = ||g||²``).
* ``householder_queries``: ``u_j = P_{j→i}ᵀ q`` by rank-one updates ``u_j = M_{j+1} u_{j+1}``.
* ``householder_overlaps``: ``qᵀ P_n q`` along a chain of reflections for many trials at
  the route lengths ``ns`` (the mixing check's estimator).
* :func:`householder_route`: ``u_j = P_{j→i}ᵀ q`` for all ``j`` *including the random draws*:
  the Gaussian draws are Box–Muller pairs from the counter-based stream of
  :mod:`stylized.core.counter_rng`, computed in a SIMD loop inside the kernel; the reflection
  vector ``w = g/||g||`` is never stored (only ``g·u`` and ``||g||²`` are needed), and the
  route is cut into segments run in parallel threads, glued exactly in law by one
  reflection per segment (see :func:`householder_route`).
* ``so2_context_counter``: the SO(2) attention sweep (near scores and far log-sum-exp of one query
  over ``L`` sources) *with its random draws fused in*: step angles and uniform keys come from
  the counter-based stream of :mod:`stylized.core.counter_rng` inside one SIMD loop over planes, so
  nothing of size ``L`` is ever drawn or stored (:func:`so2_context_sampled`);
  :func:`so2_context_counter_inputs` rebuilds the same draws in NumPy for the reference.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..core.counter_rng import (
    as_generator,
    box_muller,
    box_muller_np,
    draw,
    draw_np,
    log_unit,
    sincos,
    stream_keys,
    unit_from_high,
    unit_from_high_np,
    unit_from_low,
    unit_open,
)
from ..core.step_ops import beta_step, uniform_sphere
from .lse import lse_push
from .transport import route_angles

__all__ = ["kernel", "dot_nb", "beta_step_nb", "so2_scores_numpy", "so2_scores_numba", "householder_queries_numpy",
           "householder_queries_numba", "householder_overlaps_numpy", "householder_overlaps_numba",
           "householder_route", "householder_route_numpy", "householder_chain_numba", "householder_chain_normals",
           "so2_context_counter",
           "so2_context_counter_inputs", "so2_context_sampled"]

# Reassociation lets LLVM vectorise the dot products (a few ulps of difference, no change in law).
_FAST = {"reassoc", "contract", "nsz", "arcp"}


@numba.njit(inline="always")
def dot_nb(u, w):
    """``u·w`` for 1-D arrays: the one Numba dot product of the kernels (scores, the β-step)."""
    c = 0.0
    for a in range(u.shape[0]):
        c += w[a] * u[a]
    return c


@numba.njit(inline="always")
def beta_step_nb(u, w, beta, nn):
    """``u ← u − (β/nn) w (w·u)`` in place: the one Numba form of :func:`stylized.core.step_ops.beta_step`.

    ``nn = 1`` for a unit ``w``; ``nn = ||g||²`` applies the step along an unnormalised ``g`` (``w = g/||g||``)."""
    f = beta * dot_nb(u, w) / nn
    for a in range(u.shape[0]):
        u[a] -= f * w[a]


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
    """Reference: ``w`` ``(L, d)`` unit reflection vectors by position, ``q`` ``(d,)``; returns ``U`` ``(L, d)``.

    The reflection ``u ← u − 2w(w·u)`` (:func:`stylized.core.step_ops.beta_step`) walked outward from the query.
    """
    U = np.empty(w.shape)
    U[-1] = q
    for j in range(w.shape[0] - 2, -1, -1):
        U[j] = beta_step(U[j + 1], w[j + 1])
    return U


@numba.njit(cache=True)
def householder_queries_numba(w, q):
    L, d = w.shape
    U = np.empty((L, d))
    U[L - 1] = q
    for j in range(L - 2, -1, -1):
        U[j] = U[j + 1]
        beta_step_nb(U[j], w[j + 1], 2.0, 1.0)
    return U


def householder_overlaps_numpy(w: np.ndarray, q: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """Reference: ``w`` ``(T, N, d)`` reflections (``w[:, n]`` is step ``m_{n+1}``) for ``T`` trials; returns
    ``(T, len(ns))`` values ``qᵀ P_n q`` by the array β-step (:func:`stylized.core.step_ops.beta_step`, ``β = 2``)."""
    out = np.empty((w.shape[0], len(ns)))
    u = np.broadcast_to(q, (w.shape[0], q.shape[-1])).copy()
    for n in range(min(int(np.max(ns)), w.shape[1]) + 1):
        if n:
            u = beta_step(u, w[:, n - 1])  # m_n (symmetric): u_n = m_n u_{n−1}
        out[:, ns == n] = (u @ q)[:, None]
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
                out[t, k] = dot_nb(q, u)
                k += 1
            if n < N:
                beta_step_nb(u, w[t, n], 2.0, 1.0)
    return out


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy")
def householder_chain_numba(key, u0, U, start_row):
    """Fill ``U`` (``(m, d)``) backwards along a chain of uniform Householder steps.

    With ``start_row`` the chain starts at ``U[m−1] = u0``; otherwise ``u0`` is the row
    just after ``U`` and ``U[m−1] = H u0``.  Then ``U[j] = H_{j+1} U[j+1]``, ``H = I − 2 w wᵀ``,
    ``w = g/||g||``: ``U[j] = U[j+1] − 2 g (g·U[j+1]) / ||g||²`` (the step of
    :func:`beta_step_nb` with ``nn = ||g||²``, written out on the halves; ``w`` is never stored).  The ``t``-th step's standard normal ``g`` comes from the
    Box–Muller pairs ``tP … tP + P − 1`` (``P = ⌈d/2⌉``) of the counter stream ``key``
    (:func:`stylized.core.counter_rng.box_muller`): pair ``tP + p`` gives ``(g_p, g_{P+p})``; for odd ``d``
    the last ``sin`` is unused.  The pairs of 64 steps are drawn in one flat SIMD loop (``cos`` and
    ``sin`` halves apart); the chain then works on the route vector's two halves against the two halves of
    ``g`` where they were drawn (``g·u`` and ``||g||²`` in one pass), never copying ``g``.
    """
    m, d = U.shape
    P = (d + 1) // 2
    blk = 64  # steps whose normals are drawn in one flat SIMD loop
    gc = np.empty(blk * P)  # g_0 … g_{P−1} of each step
    gs = np.empty(blk * P)  # g_P … g_{d−1} (for odd d the last is unused, set to 0)
    gc2 = gc.reshape((blk, P))
    gs2 = gs.reshape((blk, P))
    ua = u0[:P].copy()  # the route vector, carried in float64 as its two halves (the halves of g)
    ub = np.zeros(P)
    ub[: d - P] = u0[P:]
    first = m - 1
    if start_row:
        U[m - 1] = u0
        first = m - 2
    for j0 in range(first, -1, -blk):
        nb = min(blk, j0 + 1)
        t0 = first - j0  # steps done so far; step t uses Box–Muller pairs tP + p
        base = np.uint64(P) * np.uint64(t0)
        for k in range(nb * P):
            gc[k], gs[k] = box_muller(key, base + np.uint64(k))
        if d < 2 * P:
            for tt in range(nb):
                gs2[tt, P - 1] = 0.0
        for tt in range(nb):  # u ← u − 2 g (g·u)/||g||², on the halves in place (no copy of g)
            a, b = gc2[tt], gs2[tt]
            s = 0.0
            nn = 0.0
            for p in range(P):
                s += a[p] * ua[p] + b[p] * ub[p]
                nn += a[p] * a[p] + b[p] * b[p]
            f = 2.0 * s / nn
            row = U[j0 - tt]
            for p in range(P):
                ua[p] -= f * a[p]
                ub[p] -= f * b[p]
                row[p] = ua[p]
            for p in range(d - P):
                row[P + p] = ub[p]


def householder_chain_normals(key: int, steps: int, d: int) -> np.ndarray:
    """NumPy rebuild of the normals ``g`` that :func:`householder_chain_numba` draws for its first ``steps`` steps."""
    P = (d + 1) // 2
    gc, gs = box_muller_np(np.uint64(key), np.arange(P * steps, dtype=np.uint64).reshape(steps, P))
    return np.concatenate([gc, gs], axis=-1)[:, :d]


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _reflect_rows(U, v):
    """``U[j] ← (I − 2 v vᵀ) U[j]`` for every row (``v`` a unit vector)."""
    for j in range(U.shape[0]):
        beta_step_nb(U[j], v, 2.0, 1.0)


def householder_route_numpy(q: np.ndarray, L: int, random_state=None) -> np.ndarray:
    """Reference: draw ``L`` uniform ``w`` with NumPy, then the rank-one loop in NumPy; returns ``U`` ``(L, d)``."""
    w = uniform_sphere(as_generator(random_state), (int(L),), q.shape[0])
    return householder_queries_numpy(w, np.asarray(q, dtype=float))


_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=_POOL_THREADS)
    return _POOL


_POOL_THREADS = max(1, min(8, numba.config.NUMBA_NUM_THREADS))


def householder_route(q: np.ndarray, L: int, seed: int | np.random.SeedSequence = 0, segments: int = 2,
                      out: np.ndarray | None = None) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for ``j = 0 … L−1`` (query at ``i = L−1``), i.i.d. uniform Householder steps.

    Exact in law, draws included, in ``O(L·d)``.  The route is cut into ``segments``
    pieces; piece 0 (nearest ``i``) starts from ``q``, piece ``k ≥ 1`` from the fixed
    ``e = ||q|| e_1``, each in its own thread with its own counter stream keyed from
    ``SeedSequence(seed)`` (:func:`householder_chain_numba`).  Piece ``k`` is glued to the end ``u`` of piece ``k−1`` by the
    reflection ``R`` with ``R e = u``: since ``R H_w Rᵀ = H_{Rw}`` and ``Rw`` is again uniform
    and independent of ``u``, ``R V_j`` has exactly the law of the chain continued from
    ``u`` (the realised reflection vectors are ``R w``).  The result depends on ``seed`` and
    ``segments`` only, never on the number of threads.  ``out`` (C-contiguous ``(L, d)``, float64
    or float32) is filled instead of a new array; the route is carried in float64 either way, and
    float32 halves the memory traffic of writing ``U``, which is half the cost at ``L·d = 4M``.

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
    if out is None:
        U = np.empty((L, d))
    elif out.shape != (L, d) or out.dtype not in (np.float64, np.float32) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 or float32 array of shape {(L, d)}, "
                         f"got {out.dtype} {out.shape}")
    else:
        U = out
    segments = max(1, min(int(segments), L))
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    keys = stream_keys(ss, segments)
    # piece k holds rows [edges[k+1], edges[k]) counted from the query end
    edges = np.linspace(L, 0, segments + 1).round().astype(int)
    e = np.zeros(d)
    e[0] = np.linalg.norm(q)
    pool = _pool()
    jobs = [pool.submit(householder_chain_numba, keys[k], e, U[edges[k + 1]:edges[k]], False)
            for k in range(1, segments)]
    householder_chain_numba(keys[0], q, U[edges[1]:edges[0]], True)  # piece 0 on the calling thread: one wake-up fewer
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
        end = beta_step(last, v)
    # every glued row on its own: split the pieces over the pool's threads (rows are independent; same result)
    parts = max(1, _POOL_THREADS // max(1, segments - 1))
    tasks = [(U[a:b], vs[k - 1]) for k in range(1, segments) for a, b in _splits(edges[k + 1], edges[k], parts)]
    jobs = [pool.submit(_reflect_rows, *t) for t in tasks[1:]]
    for t in tasks[:1]:  # one part on the calling thread
        _reflect_rows(*t)
    for job in jobs:
        job.result()
    return U


def _splits(lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut into ``parts`` contiguous, nearly equal, non-empty ranges (fewer when it is shorter)."""
    cuts = np.linspace(lo, hi, min(parts, max(1, hi - lo)) + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


@numba.njit(inline="always")
def renormalize_phases(zr, zi):
    """``e^{iA_b} ← e^{iA_b}/|e^{iA_b}|`` for every plane (rounding drift of a long product of rotations)."""
    for b in range(zr.shape[0]):
        nr = 1.0 / math.sqrt(zr[b] * zr[b] + zi[b] * zi[b])
        zr[b] *= nr
        zi[b] *= nr


@numba.njit(cache=True, parallel=True, fastmath=_FAST, error_model="numpy")
def so2_context_counter(keys, omegas, qn, L, lam, D, target_n):
    """Fused SO(2) sweep for ``T = len(keys)`` trials; returns ``near`` ``(T, D)`` and ``far_lse`` ``(T,)``.

    Trial ``t`` uses stream ``keys[t]``; at route length ``n`` and plane ``b`` it takes draws
    ``2(nB + b)`` and ``2(nB + b) + 1``: the first gives the key's plane radius
    ``r_b = √(−2 ln u)``, the second the key's plane phase ``φ_b = 2π u'`` (low 32 bits) and the
    step angle ``θ_b = ω_b (2u'' − 1)`` (high 32 bits).  The key is ``g/||g||`` with
    ``g_b = r_b (cos φ_b, sin φ_b)`` standard normal (Box–Muller), so it is uniform on ``S^{d−1}``;
    the score is ``s_n = Σ_b |q_b| r_b (cos A_{n,b} cos φ_b + sin A_{n,b} sin φ_b)/||g||`` with
    ``e^{iA}`` carried as a unit complex number per plane (``A_{n+1,b} = A_{n,b} + θ_{n,b}``).  At
    ``n = target_n`` the key is ``q`` itself (``s = Σ_b |q_b|² cos A_{n,b}``).  ``far_lse`` is
    ``log Σ_{n ≥ D} e^{λ s_n}``, streamed.
    """
    T = keys.shape[0]
    B = omegas.shape[0]
    near = np.zeros((T, D))
    far_lse = np.full(T, -np.inf)
    qq = qn * qn
    for tr in numba.prange(T):
        key = keys[tr]
        zr = np.ones(B)
        zi = np.zeros(B)
        m = -np.inf
        acc = 0.0
        for n in range(L):
            base = np.uint64(2 * B) * np.uint64(n)
            num = 0.0
            rr = 0.0
            tgt = 0.0
            for b in range(B):
                z1 = draw(key, base + np.uint64(2 * b))
                z2 = draw(key, base + np.uint64(2 * b + 1))
                r2 = -2.0 * log_unit(unit_open(z1))
                sp, cp = sincos(2.0 * np.pi * unit_from_low(z2))
                num += qn[b] * math.sqrt(r2) * (zr[b] * cp + zi[b] * sp)
                rr += r2
                tgt += qq[b] * zr[b]
                st, ct = sincos(omegas[b] * (2.0 * unit_from_high(z2) - 1.0))
                r = zr[b] * ct - zi[b] * st
                zi[b] = zr[b] * st + zi[b] * ct
                zr[b] = r
            s = tgt if n == target_n else num / math.sqrt(rr)
            if n < D:
                near[tr, n] = s
            else:
                m, acc = lse_push(m, acc, lam * s)
            if n % 1024 == 1023:
                renormalize_phases(zr, zi)
        if acc > 0:
            far_lse[tr] = m + math.log(acc)
    return near, far_lse


def so2_context_counter_inputs(omegas: np.ndarray, qn: np.ndarray, L: int, keys: np.ndarray, target_n: int = -1):
    """NumPy rebuild of :func:`so2_context_counter`'s draws as ``theta``, ``dot``, ``cross`` ``(T, L, B)``
    in source order ``j = L−1−n`` (the inputs of ``so2_context_numpy``); for tests on small sizes."""
    B = len(omegas)
    t = np.arange(2 * L * B, dtype=np.uint64).reshape(L, B, 2)
    z = draw_np(np.asarray(keys, dtype=np.uint64)[:, None, None, None], t)
    u = ((z[..., 0] >> np.uint64(11)) + np.uint64(1)).astype(float) / 2.0**53
    r = np.sqrt(-2.0 * np.log(u))
    phi = 2.0 * np.pi * ((z[..., 1] & np.uint64(0xFFFFFFFF)).astype(float) + 0.5) / 2.0**32
    theta = omegas * (2.0 * unit_from_high_np(z[..., 1]) - 1.0)
    g = np.linalg.norm(r, axis=-1, keepdims=True)
    dot, cross = qn * r * np.cos(phi) / g, qn * r * np.sin(phi) / g
    if 0 <= target_n < L:
        dot[:, target_n], cross[:, target_n] = qn**2, 0.0
    return theta[:, ::-1].copy(), dot[:, ::-1].copy(), cross[:, ::-1].copy()


def so2_context_sampled(family, L: int, size: int, seed: int | np.random.SeedSequence, q: np.ndarray, lam: float,
                        D: int, target_n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``size`` SO(2) contexts of length ``L`` drawn and scored in one fused kernel (uniform-angle families).

    Same law as drawing with :func:`stylized.engine.context_sweep.so2_context_inputs` and scoring with
    ``so2_context_numba``, in ``O(size·d)`` memory; trial ``t`` uses the stream keyed by the
    ``t``-th word of ``SeedSequence(seed)``.  Returns ``near`` ``(size, D)`` (scores ``s_n``,
    ``n < D``) and ``far_lse`` ``(size,)`` (``log Σ_{n≥D} e^{λ s_n}``).

    Example
    -------
    >>> from stylized.laws.families import make_family
    >>> near, far = so2_context_sampled(make_family("so2-uniform", 8), 100, 3, 0, np.full(8, 8**-0.5), 4.0, 5, 0)
    >>> near.shape, far.shape, bool(np.allclose(near[:, 0], 1.0))
    ((3, 5), (3,), True)
    """
    omegas = family.omegas  # uniform angles declare ω_b
    if omegas is None:
        raise ValueError(f"family must be a uniform-angle SO(2) family (so2-uniform, rope-random), got {family.name!r}")
    q = np.asarray(q, dtype=float)
    qn = np.hypot(q[0::2], q[1::2])
    tn = -1 if target_n is None else int(target_n)
    return so2_context_counter(stream_keys(seed, size), np.asarray(omegas, dtype=float), qn, int(L), float(lam),
                               int(D), tn)


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
