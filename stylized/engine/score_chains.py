"""Scores along real routes: ``s_n = qᵀ P_n k`` for every route length ``n = 0 … N−1``, one chain per trial.

``P_n = M_1 ⋯ M_n`` (``M_1`` the step nearest the query; in a context ``P_{j→i}`` with ``n = i − j``).
A chain walks outward from the query, ``u_0 = q``, ``u_{n+1} = M_{n+1}ᵀ u_n``, and records
``s_n = u_n·k``, so one trial yields the scores of every key position of one context whose keys all
equal ``k`` (the far copies of the target key in the score-gap check).  Every step is a real step:

* Householder ``M = I − 2wwᵀ``, ``w = g/|g|``: ``O(d)`` per step;
* SO(2) blocks (uniform or normal angles): ``s_n = Σ_b cos A_{n,b}·dot_b + sin A_{n,b}·cross_b`` with the
  accumulated angle carried as ``e^{iA}`` (a rotation per step), ``O(d/2)`` per step;
* Haar kind (``lazy-haar`` with ``p``, ``haar`` with ``p = 1``): each Haar step is a full Haar matrix
  ``Q = H_0 H_1 ⋯ H_{d−2} S`` — Householder QR of a Gaussian matrix, column ``c``'s trailing part a fresh
  ``N(0, I_{d−c})`` (it is, after the earlier reflections, by rotation invariance), ``S`` the signs that make
  ``R``'s diagonal positive (Stewart 1980; Mezzadri 2007) — applied as ``Qᵀu`` without being stored:
  ``d(d+1)/2`` normals and ``O(d²)`` per Haar step.  No exact-law shortcut anywhere;
* any other law (``cayley``, a user's law): its own draws ``M_t`` (:meth:`~stylized.laws.base.StepLaw.sample`),
  applied by its :meth:`~stylized.laws.base.StepLaw.apply` (the generic walk
  :meth:`~stylized.laws.base.StepLaw.walk_scores`).

Householder and Haar steps work in every dimension ``d ≥ 2``, odd included; only the SO(2) planes need
an even ``d``.

The reflection ``u − β w (w·u)`` is :func:`stylized.core.step_ops.beta_step` in the namespace twins and
:func:`stylized.engine.kernels.beta_step_nb` in the fused Numba kernels, which lay each unnormalised reflection
vector out contiguously first (a step's normals ``g`` in a scratch; a QR column's ``v`` in place in its
normals) and pass ``nn = ||·||²``.

Numba kernels (``*_numba``) draw from the counter streams of :mod:`stylized.core.counter_rng` (trial ``t``
uses key ``t`` of ``SeedSequence(seed)``), so results do not depend on threads; :func:`counter_normals`
and :func:`counter_uniforms` rebuild those draws in NumPy for the exact tests.  The namespace twins
(``*_xp``, NumPy or CuPy) take the draws from callables — a Generator on the ``numpy``/``cupy``
backends, the rebuilt counter draws in tests — vectorised over trials.  :func:`score_chains` asks the law
(:meth:`~stylized.laws.base.StepLaw.score_chains`): each built-in calls :func:`householder_chains`,
:func:`haar_chains` or :func:`so2_chains`, which pick the kernel or the twin by backend.

Example
-------
>>> from stylized.laws.families import make_family
>>> s = score_chains(make_family("householder", 8), 50, 3, seed=0)
>>> s.shape, bool(np.allclose(s[:, 0], 1.0)), bool((abs(s) <= 1 + 1e-12).all())
((3, 50), True, True)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..core.backend import array_namespace, namespace_of, to_numpy, xp_generator
from ..core.counter_rng import (
    as_generator,
    box_muller,
    box_muller_np,
    draw,
    draw_np,
    sincos,
    stream_keys,
    unit_from_high,
    unit_from_high_np,
)
from ..core.step_ops import beta_step
from .kernels import beta_step_nb, dot_nb, renormalize_phases

__all__ = ["score_chains", "householder_chains", "haar_chains", "so2_chains", "householder_chain_scores", "so2_chain_scores", "haar_chain_scores",
           "householder_scores_xp", "so2_scores_xp", "haar_scores_xp", "haar_apply_transpose",
           "counter_normals", "counter_uniforms", "BERNOULLI_OFFSET", "contraction_queries_numpy",
           "contraction_queries_numba"]

_FAST = {"reassoc", "contract", "nsz", "arcp"}
BERNOULLI_OFFSET = 1 << 40
"""Index of the first Haar-step draw (lazy Haar) in a trial's stream, far past every normal it draws."""


# ---------------------------------------------------------------------------------------
# counter draws rebuilt in NumPy (tests)
# ---------------------------------------------------------------------------------------
def counter_normals(key: int, start: int, count: int) -> np.ndarray:
    """Box–Muller pairs ``start … start+count−1`` of stream ``key`` as ``(count, 2)`` (cos, sin) normals."""
    gc, gs = box_muller_np(np.uint64(key), np.arange(count, dtype=np.uint64) + np.uint64(start))
    return np.stack([gc, gs], axis=1)


def counter_uniforms(key: int, start: int, count: int) -> np.ndarray:
    """``unit_from_high`` of draws ``start … start+count−1`` of stream ``key``: uniforms in ``(0, 1)``."""
    return unit_from_high_np(draw_np(np.uint64(key), np.arange(count, dtype=np.uint64) + np.uint64(start)))


# ---------------------------------------------------------------------------------------
# Numba kernels (counter draws)
# ---------------------------------------------------------------------------------------
# Each kernel repeats the chain's prologue (trials in ``prange``, ``u = q``, score, step) on purpose: a
# shared driver taking the step as a function argument or a closure is not cached by Numba (measured: it
# recompiles in every process, 2.0 s, against 0.33 s for a cached kernel), so the three stay separate.
@numba.njit(cache=True, parallel=True, fastmath=_FAST, error_model="numpy")
def householder_chain_scores(keys, q, k, N):
    """``(T, N)`` scores; step ``n`` (0-based) uses Box–Muller pairs ``nP … nP+P−1`` (``P = ⌈d/2⌉``), pair
    ``p`` giving ``(g_p, g_{P+p})`` — the convention of :func:`stylized.engine.kernels.householder_chain_numba`.
    The pairs fill a scratch of length ``2P`` (``cos`` half, then ``sin`` half; for odd ``d`` the last
    ``sin`` is unused), whose prefix of length ``d`` is ``g``: the step is :func:`beta_step_nb` ``(u, g, 2, ||g||²)``."""
    T = keys.shape[0]
    d = q.shape[0]
    P = (d + 1) // 2
    out = np.empty((T, N))
    for tr in numba.prange(T):
        key = keys[tr]
        u = q.copy()
        g2 = np.empty(2 * P)
        g = g2[:d]
        for n in range(N):
            out[tr, n] = dot_nb(k, u)
            if n == N - 1:
                break
            base = np.uint64(P) * np.uint64(n)
            for p in range(P):
                g2[p], g2[P + p] = box_muller(key, base + np.uint64(p))
            nn = 0.0
            for a in range(d):
                nn += g[a] * g[a]
            beta_step_nb(u, g, 2.0, nn)
    return out


@numba.njit(cache=True, parallel=True, fastmath=_FAST, error_model="numpy")
def so2_chain_scores(keys, normal, loc, scale, dot, cross, N):
    """``(T, N)`` scores; the angle of step ``n``, plane ``b`` comes from index ``nB + b``: uniform
    ``θ = scale_b (2u − 1)`` (``u`` from the high 32 bits of draw ``nB + b``) or, with ``normal``,
    ``θ = loc_b + scale_b g`` (``g`` the first normal of Box–Muller pair ``nB + b``)."""
    T = keys.shape[0]
    B = dot.shape[0]
    out = np.empty((T, N))
    for tr in numba.prange(T):
        key = keys[tr]
        zr = np.ones(B)
        zi = np.zeros(B)
        for n in range(N):
            s = 0.0
            for b in range(B):
                s += zr[b] * dot[b] + zi[b] * cross[b]
            out[tr, n] = s
            base = np.uint64(B) * np.uint64(n)
            for b in range(B):
                if normal:
                    th = loc[b] + scale[b] * box_muller(key, base + np.uint64(b))[0]
                else:
                    th = scale[b] * (2.0 * unit_from_high(draw(key, base + np.uint64(b))) - 1.0)
                sn, cs = sincos(th)
                r = zr[b] * cs - zi[b] * sn
                zi[b] = zr[b] * sn + zi[b] * cs
                zr[b] = r
            if n % 1024 == 1023:
                renormalize_phases(zr, zi)
    return out


@numba.njit(inline="always", fastmath=_FAST, error_model="numpy")
def _haar_apply_t(u, x):
    """``u ← Qᵀu`` for the Haar matrix built from the ``d(d+1)/2`` normals ``x`` (column ``c`` uses
    ``x[o_c : o_c + d − c]``, ``o_c = Σ_{c'<c} (d − c')``).  Column ``c``'s reflection vector
    ``v = (x_o + sign(x_o)|x|, x_{o+1}, …, x_{o+m−1})`` is built in place (``x_o`` is overwritten by ``v_0``
    once used: ``x`` is the caller's scratch of draws) and applied to ``u[c:]`` by :func:`beta_step_nb`
    with ``nn = ||v||²``, then the sign ``S_cc``."""
    d = u.shape[0]
    o = 0
    for c in range(d):
        m = d - c
        if m == 1:
            if x[o] < 0:
                u[c] = -u[c]
            break
        nx = 0.0
        for i in range(m):
            nx += x[o + i] * x[o + i]
        sg = 1.0 if x[o] >= 0 else -1.0
        v0 = x[o] + sg * math.sqrt(nx)
        vv = nx - x[o] * x[o] + v0 * v0  # ||v||²
        x[o] = v0  # x[o : o + m] is now v
        beta_step_nb(u[c:], x[o : o + m], 2.0, vv)
        u[c] = -sg * u[c]  # S_cc = sign(R_cc) = −sign(x_0)
        o += m


@numba.njit(cache=True, parallel=True, fastmath=_FAST, error_model="numpy")
def haar_chain_scores(keys, q, k, N, p):
    """``(T, N)`` scores for lazy Haar (``p < 1``) or Haar (``p = 1``) steps.  Step ``n`` is a Haar step when
    the uniform of draw ``BERNOULLI_OFFSET + n`` is ``< p``; its matrix uses Box–Muller pairs
    ``nS … nS+S−1``, ``S = ⌈d(d+1)/4⌉``, flattened (cos, sin, cos, …) into the ``d(d+1)/2`` normals."""
    T = keys.shape[0]
    d = q.shape[0]
    nrm = d * (d + 1) // 2
    S = (nrm + 1) // 2
    out = np.empty((T, N))
    for tr in numba.prange(T):
        key = keys[tr]
        u = q.copy()
        x = np.empty(2 * S)
        for n in range(N):
            out[tr, n] = dot_nb(k, u)
            if n == N - 1:
                break
            if p < 1.0 and unit_from_high(draw(key, np.uint64(BERNOULLI_OFFSET) + np.uint64(n))) >= p:
                continue
            base = np.uint64(S) * np.uint64(n)
            for j in range(S):
                x[2 * j], x[2 * j + 1] = box_muller(key, base + np.uint64(j))
            _haar_apply_t(u, x)
    return out


# ---------------------------------------------------------------------------------------
# namespace twins: draws from callables, vectorised over trials (numpy / cupy backends, tests)
# ---------------------------------------------------------------------------------------
def householder_scores_xp(q, k, N: int, normals, block: int = 64):
    """``(T, N)`` scores; ``normals(start, m)`` returns the ``(T, m, d)`` normals ``g`` of steps ``start …``."""
    xp = namespace_of(q)
    g = normals(0, min(block, N - 1)) if N > 1 else None
    T = g.shape[0] if g is not None else normals(0, 0).shape[0]
    u = xp.broadcast_to(q, (T, q.shape[0])).copy()
    out = xp.empty((T, N))
    out[:, 0] = u @ k
    for start in range(0, N - 1, block):
        g = g if start == 0 else normals(start, min(block, N - 1 - start))
        for t in range(g.shape[1]):
            gt = g[:, t]
            u = beta_step(u, gt, 2.0 / xp.sum(gt * gt, axis=1)[:, None])  # w = g/||g||
            out[:, start + t + 1] = u @ k
    return out


def so2_scores_xp(dot, cross, N: int, angles, block: int = 256):
    """``(T, N)`` scores; ``angles(start, m)`` returns the ``(T, m, d/2)`` plane angles of steps ``start …``."""
    xp = namespace_of(dot)
    A = None
    out = None
    for start in range(0, N, block):
        m = min(block, N - start)
        th = angles(start, m)
        if A is None:
            A = xp.zeros((th.shape[0], th.shape[2]))
            out = xp.empty((th.shape[0], N))
        Ab = xp.concatenate([A[:, None, :], A[:, None, :] + xp.cumsum(th, axis=1)], axis=1)
        out[:, start : start + m] = xp.cos(Ab[:, :m]) @ dot + xp.sin(Ab[:, :m]) @ cross
        A = Ab[:, -1, :]
        A = A - 2.0 * np.pi * xp.rint(A / (2.0 * np.pi))
    return out


def haar_apply_transpose(u, x):
    """Namespace twin of the kernel's Haar step: ``u ← Qᵀu`` row by row, ``u`` ``(T, d)``, normals ``x`` ``(T, d(d+1)/2)``."""
    xp = namespace_of(u)
    d = u.shape[1]
    o = 0
    for c in range(d):
        m = d - c
        xc = x[:, o : o + m]
        if m == 1:
            u[:, c] = xp.where(xc[:, 0] < 0, -u[:, c], u[:, c])
            break
        sg = xp.where(xc[:, 0] >= 0, 1.0, -1.0)
        v = xc.copy()
        v[:, 0] += sg * xp.sqrt(xp.sum(xc * xc, axis=1))
        u[:, c:] = beta_step(u[:, c:], v, 2.0 / xp.sum(v * v, axis=1)[:, None])
        u[:, c] *= -sg
        o += m
    return u


def haar_scores_xp(q, k, N: int, p: float, haar_step, normals):
    """``(T, N)`` scores; ``haar_step(n)`` returns the ``(T,)`` mask of Haar steps at step ``n`` and
    ``normals(n, rows)`` the ``(len(rows), d(d+1)/2)`` normals of their matrices."""
    xp = namespace_of(q)
    mask = haar_step(0)
    u = xp.broadcast_to(q, (mask.shape[0], q.shape[0])).copy()
    out = xp.empty((mask.shape[0], N))
    for n in range(N):
        out[:, n] = u @ k
        if n == N - 1:
            break
        mask = haar_step(n) if n else mask
        rows = xp.nonzero(mask)[0]
        if rows.shape[0]:
            u[rows] = haar_apply_transpose(u[rows], normals(n, rows))
    return out


# ---------------------------------------------------------------------------------------
# chain samplers of the built-in laws (called from their StepLaw.score_chains overrides)
# ---------------------------------------------------------------------------------------
def _keys(seed, size: int) -> np.ndarray:
    return stream_keys(seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed), size)


def _xp_rng(seed, backend: str):
    return array_namespace(backend), xp_generator(backend, as_generator(np.random.default_rng(seed)))


def householder_chains(q: np.ndarray, k: np.ndarray, N: int, size: int, seed, backend: str) -> np.ndarray:
    """Reflection chains ``M = I − 2wwᵀ``, ``w = g/|g|`` (any ``d ≥ 2``): the Numba counter-stream kernel
    :func:`householder_chain_scores` (``backend="numba"``), else the twin :func:`householder_scores_xp`."""
    if backend == "numba":
        return householder_chain_scores(_keys(seed, size), q, k, N)
    xp, xrng = _xp_rng(seed, backend)
    d = q.shape[0]
    return to_numpy(householder_scores_xp(xp.asarray(q), xp.asarray(k), N, lambda s, m: xrng.standard_normal((size, m, d))))


def haar_chains(q: np.ndarray, k: np.ndarray, N: int, size: int, seed, backend: str, p: float) -> np.ndarray:
    """Lazy Haar (``p < 1``) or Haar (``p = 1``) chains, each Haar step a full Haar matrix (any ``d ≥ 2``):
    :func:`haar_chain_scores` (``backend="numba"``), else the twin :func:`haar_scores_xp`."""
    p = float(p)
    if backend == "numba":
        return haar_chain_scores(_keys(seed, size), q, k, N, p)
    xp, xrng = _xp_rng(seed, backend)
    d = q.shape[0]
    return to_numpy(haar_scores_xp(xp.asarray(q), xp.asarray(k), N, p, lambda n: xrng.random(size) < p,
                                   lambda n, rows: xrng.standard_normal((rows.shape[0], d * (d + 1) // 2))))


def so2_chains(q: np.ndarray, k: np.ndarray, N: int, size: int, seed, backend: str, normal: bool, loc: np.ndarray,
               scale: np.ndarray) -> np.ndarray:
    """SO(2) plane chains (even ``d``): angles ``θ_b = scale_b(2u − 1)`` (uniform) or ``loc_b + scale_b g``
    (``normal``); :func:`so2_chain_scores` (``backend="numba"``), else the twin :func:`so2_scores_xp`.
    ``s_n = Σ_b cos A_{n,b} dot_b + sin A_{n,b} cross_b`` with the per-plane ``dot_b``, ``cross_b`` of ``q``, ``k``."""
    dot = q[0::2] * k[0::2] + q[1::2] * k[1::2]
    cross = q[1::2] * k[0::2] - q[0::2] * k[1::2]
    if backend == "numba":
        return so2_chain_scores(_keys(seed, size), normal, loc, scale, dot, cross, N)
    xp, xrng = _xp_rng(seed, backend)
    B = q.shape[0] // 2
    locx, scalex = xp.asarray(loc), xp.asarray(scale)
    if normal:
        def angles(s, m):
            return locx + scalex * xrng.standard_normal((size, m, B))
    else:
        def angles(s, m):
            return scalex * xrng.uniform(-1.0, 1.0, size=(size, m, B))
    return to_numpy(so2_scores_xp(xp.asarray(dot), xp.asarray(cross), N, angles))


def score_chains(family, N: int, size: int, seed=0, q: np.ndarray | None = None, k: np.ndarray | None = None,
                 backend: str = "numba") -> np.ndarray:
    """``(size, N)`` host array of ``s_n = qᵀ P_n k``, ``n = 0 … N−1``, one independent chain per row.

    ``q`` defaults to the equal-energy query ``1/√d``, ``k`` to ``q``.  The law draws its own chains
    (:meth:`stylized.laws.base.StepLaw.score_chains`): the built-ins run the counter-stream kernels here
    (``backend="numba"``; ``seed`` keys the trials) or their namespace twins (``numpy``/``cupy``, a Generator
    seeded from ``seed``); any other law walks ``u_{n+1} = M_{n+1}ᵀ u_n`` on its own draws.
    """
    d = family.d
    q = np.full(d, 1.0 / math.sqrt(d)) if q is None else np.ascontiguousarray(q, dtype=float)
    k = q if k is None else np.ascontiguousarray(k, dtype=float)
    N, size = int(N), int(size)
    if N < 1 or size < 1:
        raise ValueError(f"N and size must be ≥ 1, got N={N}, size={size}")
    if q.shape != (d,) or k.shape != (d,):
        raise ValueError(f"q and k must have shape ({d},), got {q.shape} and {k.shape}")
    return np.asarray(family.score_chains(N, size, seed, q, k, backend))


# PaTH contraction chains (the far-mass contraction control, stylized.laws.controls)
def contraction_queries_numpy(w, q, beta: float):
    """``u_n = P_nᵀ q`` for PaTH-style steps ``I − β w wᵀ`` (symmetric); ``w[n]`` is the step added at length ``n``.

    Row ``n`` of the result is the transported query at route length ``n`` (``u_0 = q``).  ``w`` is
    ``(N, d)``, or ``(N, T, d)`` for ``T`` trials at once (the cupy path); any array namespace, ``q``
    of the same namespace.
    """
    xp = namespace_of(w)
    U = xp.empty(w.shape)
    U[0] = q
    for n in range(1, w.shape[0]):
        U[n] = beta_step(U[n - 1], w[n], beta)
    return U


@numba.njit(cache=True)
def contraction_queries_numba(w, q, beta):
    N, d = w.shape
    U = np.empty((N, d))
    U[0] = q
    for n in range(1, N):
        U[n] = U[n - 1]
        beta_step_nb(U[n], w[n], beta, 1.0)
    return U
