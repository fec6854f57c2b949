"""The attention sweep of one query over a context: near scores and the far log-sum-exp.

One query at ``i = L−1`` attends to ``L`` sources; by route length ``n`` (source ``j = L−1−n``) the
score is ``s_n = qᵀ P_n k_n`` and the sweep returns the near scores ``s_n`` for ``n < D`` and the far
``log Σ_{n≥D} e^{λ s_n}``, never materialising more than ``(L, d/2)`` per trial.

* SO(2): :func:`so2_context_numba` (the sines and cosines of the accumulated angles come from a
  rotation recurrence ``z ← z e^{iθ}`` with a polynomial ``sincos`` that vectorises) and its
  array-namespace twin :func:`so2_context_numpy`; the inputs are drawn by :func:`so2_context_inputs`
  with the Generator of any array namespace (NumPy on the host, CuPy for the ``cupy`` path).  The
  fused counter-RNG kernel is :func:`stylized.engine.kernels.so2_context_sampled`.
* any other law on the array namespace: :func:`transport_context_xp`, the route walked back block by
  block by the law's own :meth:`~stylized.laws.base.StepLaw.walk_block` (reflections ``u − 2w(w·u)``,
  Haar-step flags by their exact law, dense steps by ``Mᵀu``).

Which sweep a law takes is the law's :meth:`~stylized.laws.base.StepLaw.context_sweep` (the plane sweep
for SO(2) laws, this walk otherwise) and :meth:`~stylized.laws.base.StepLaw.fast_context_sweep` (the
fused kernel of uniform plane angles).

Example
-------
>>> rng = np.random.default_rng(0)
>>> theta, dot, cross = rng.uniform(-1, 1, (3, 2, 50, 4))
>>> near, far = so2_context_numba(theta, dot, cross, 4.0, 5)
>>> bool(np.allclose(near, so2_context_numpy(theta, dot, cross, 4.0, 5)[0]))
True
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..core.backend import namespace_of
from ..core.counter_rng import sincos
from ..core.step_ops import uniform_sphere
from ..laws.law_type import StepLawType
from .kernels import lse_push, renormalize_phases
from .lse import lse_rows
from .sampling import XP_CHUNK_ELEMENTS

__all__ = ["so2_context_numpy", "so2_context_numba", "so2_context_inputs",
           "transport_context_xp", "near_and_far_lse"]


# ---------------------------------------------------------------------------------------
# SO(2) attention sweep: one query at i = L−1 over L sources
# ---------------------------------------------------------------------------------------
def so2_context_numpy(theta, dot, cross, lam: float, D: int):
    """Reference: ``theta``, ``dot``, ``cross`` ``(T, L, B)``.  Returns ``near`` ``(T, D)`` scores
    ``s_n = qᵀ P_{i−n→i} k_{i−n}`` for ``n < D`` and ``far_lse`` ``(T,)`` = ``log Σ_{n≥D} e^{λ s_n}``.

    Materialises ``(T, L, B)`` angles, cosines and sines (the cost the kernel avoids).  Written against
    the namespace of ``theta`` (NumPy or CuPy: the ``cupy`` path of the sweep); results live there too.
    """
    xp = namespace_of(theta)
    T, L, _ = theta.shape
    # by route length n (source j = L−1−n): A_n = Σ of the n steps θ_{L−1}, …, θ_{L−n}, so A_0 = 0
    A = xp.cumsum(theta[:, :0:-1], axis=1)
    s = xp.empty((T, L))
    s[:, 0] = xp.sum(dot[:, -1], axis=-1)
    s[:, 1:] = xp.sum(xp.cos(A) * dot[:, -2::-1] + xp.sin(A) * cross[:, -2::-1], axis=-1)
    return near_and_far_lse(s, lam, D)


def near_and_far_lse(s, lam: float, D: int):
    """Scores ``s`` ``(T, L)`` by route length: ``near = s[:, :D]`` and ``log Σ_{n≥D} e^{λ s_n}`` (``−∞`` if none)."""
    xp = namespace_of(s)
    near = s[:, :D].copy()
    if s.shape[1] <= D:
        return near, xp.full(s.shape[0], -np.inf)
    return near, lse_rows(lam * s[:, D:], xp)


@numba.njit(cache=True, parallel=True, fastmath={"contract", "reassoc", "arcp"}, error_model="numpy")
def so2_context_numba(theta, dot, cross, lam, D):
    T, L, B = theta.shape
    near = np.zeros((T, D))
    far_lse = np.full(T, -np.inf)
    for tr in numba.prange(T):
        zr = np.ones(B)
        zi = np.zeros(B)
        m = -np.inf
        acc = 0.0
        for n in range(L):
            j = L - 1 - n
            s = 0.0
            for b in range(B):
                s += zr[b] * dot[tr, j, b] + zi[b] * cross[tr, j, b]
            if n < D:
                near[tr, n] = s
            else:
                m, acc = lse_push(m, acc, lam * s)
            for b in range(B):  # z ← z e^{iθ_j}: A_{j−1} = A_j + θ_j
                sn, cs = sincos(theta[tr, j, b])
                r = zr[b] * cs - zi[b] * sn
                zi[b] = zr[b] * sn + zi[b] * cs
                zr[b] = r
            if n % 1024 == 1023:  # keep |z| = 1 against rounding drift
                renormalize_phases(zr, zi)
        if acc > 0:
            far_lse[tr] = m + math.log(acc)
    return near, far_lse


def so2_context_inputs(family: StepLawType, L: int, size: int, xrng, q: np.ndarray, target_n: int | None = None,
                       xp=np):
    """Draw steps and keys for ``size`` contexts: ``theta``, ``dot``, ``cross`` ``(size, L, d/2)``, with the
    Generator ``xrng`` of the array namespace ``xp`` (NumPy on the host, CuPy on the device).  ``family`` is a
    law of commuting SO(2) planes drawn as angles (``planes``, ``step_ndim = 1``).

    Keys are uniform on ``S^{d−1}``.  Their per-plane ``(dot_b, cross_b)`` is drawn directly: a uniform
    key is invariant in law under block rotations, so ``(dot_b, cross_b) =_d |q_b| (k_{b,x}, k_{b,y})``
    (one pass less than :func:`plane_dot_cross`).  If ``target_n`` is given the key at route length
    ``target_n`` is ``q`` itself (``dot_b = |q_b|²``, ``cross_b = 0``).
    """
    theta = family.sample(xrng, (size, L), xp)
    k = uniform_sphere(xrng, (size, L), family.d, xp)
    qn = xp.asarray(np.hypot(q[0::2], q[1::2]))
    dot, cross = k[..., 0::2] * qn, k[..., 1::2] * qn
    if target_n is not None:
        dot[:, L - 1 - target_n] = qn**2
        cross[:, L - 1 - target_n] = 0.0
    return theta, dot, cross


def transport_context_xp(family: StepLawType, L: int, size: int, xrng, q: np.ndarray, lam: float, D: int,
                         target_n: int | None = None, xp=np):
    """The attention sweep of any step law in the array namespace ``xp`` (NumPy, or CuPy on the device).

    ``size`` contexts of length ``L``: unit keys uniform on ``S^{d−1}`` (the key at route length ``target_n``
    is ``q``) and i.i.d. steps, all drawn with the namespace Generator ``xrng`` in blocks of steps (keys, then
    steps, then whatever the law's walk draws).  The route is walked back from ``i = L−1`` over all contexts by
    the law's :meth:`~stylized.laws.base.StepLaw.walk_block`: ``u_0 = q``, ``s_n = u_n·k_n`` and
    ``u_{n+1} = M_{i−n}ᵀ u_n`` (Householder ``u − 2w(w·u)``; Haar-step flags: the exact law, ``u`` redrawn
    uniformly with norm ``|q|`` at a Haar step; dense steps ``Mᵀu``).  Returns, like :func:`so2_context_numpy`,
    ``near`` ``(size, D)`` scores and ``far_lse`` ``(size,)`` = ``log Σ_{n≥D} e^{λ s_n}``, in the namespace
    (memory ``O(size·L)`` plus one block of about :data:`~stylized.engine.sampling.XP_CHUNK_ELEMENTS` step elements).
    """
    d = family.d
    qd = xp.asarray(q)
    u = xp.broadcast_to(qd, (size, d)).copy()
    s = xp.empty((size, L))
    block = max(1, XP_CHUNK_ELEMENTS // (size * d ** max(1, family.step_ndim)))
    norm = float(np.linalg.norm(q))  # orthogonal steps keep |u_n| = |q|
    for start in range(0, L, block):
        m = min(block, L - start)
        keys = uniform_sphere(xrng, (size, m), d, xp)
        if target_n is not None and start <= target_n < start + m:
            keys[:, target_n - start] = qd
        steps = family.sample(xrng, (size, m), xp)
        U, u = family.walk_block(steps, u, xrng=xrng, norm=norm if family.orthogonal else None)
        s[:, start:start + m] = xp.sum(U * keys, axis=-1)
    return near_and_far_lse(s, lam, D)
