"""Array primitives of one step, written once against the array namespace of their inputs.

* :func:`beta_step` — ``x − β w (w·x)`` (Householder ``β = 2``, PaTH contraction ``0 < β < 2``);
* :func:`so2_trig`, :func:`so2_rotate`, :func:`rotate_planes` — commuting SO(2) planes by angle;
* :func:`uniform_sphere` — uniform unit vectors on ``S^{d−1}``;
* :func:`haar_law_queries`, :func:`haar_law_sum` — the exact law of (lazy) Haar steps;
* :func:`stride_grid_sums` — ``Σ_i qᵀ P_{i−n→i} q`` over the queries of a stride grid, by a given step.

They import nothing from the laws, so every law, the engine and the theory can use them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .backend import namespace_of

__all__ = ["beta_step", "stride_grid_sums", "so2_trig", "so2_rotate", "rotate_planes", "uniform_sphere", "haar_law_queries",
           "haar_law_sum"]


def beta_step(x, w, beta=2.0):
    """``x − β w (w·x)`` over the last axis (``w`` unit: Householder ``β = 2``, contraction ``0 < β < 2``).

    ``x``, ``w`` of shape ``(..., d)`` in one namespace; ``beta`` a scalar or an array broadcasting
    against ``(..., 1)``.  One vector uses ``w @ x``, a batch an ``einsum`` over the last axis.
    """
    if x.ndim == 1 and w.ndim == 1:
        return x - beta * w * (w @ x)
    return x - beta * w * namespace_of(x).einsum("...d,...d->...", w, x)[..., None]


def so2_trig(steps):
    """``cos A_n``, ``sin A_n`` of ``A_n = θ_1 + … + θ_n`` (``A_0 = 0``) for route-length angles ``(..., N, B)``."""
    xp = namespace_of(steps)
    A = xp.cumsum(steps, axis=-2) - steps[..., :1, :]
    return xp.cos(A), xp.sin(A)


def so2_rotate(trig: tuple, v):
    """``diag(R(A_b)) v`` from ``(cos A, sin A)`` ``(..., B)`` and vectors ``v`` ``(..., 2B)`` (broadcast).

    An odd trailing coordinate (``v`` of length ``2B + 1``) is a fixed axis: it is passed through.
    """
    c, s = trig
    x, y = v[..., 0:2 * c.shape[-1]:2], v[..., 1:2 * c.shape[-1]:2]
    shape = np.broadcast_shapes(c.shape[:-1], v.shape[:-1]) + (v.shape[-1],)
    out = namespace_of(c).empty(shape)
    out[..., 0:2 * c.shape[-1]:2] = c * x - s * y
    out[..., 1:2 * c.shape[-1]:2] = s * x + c * y
    if v.shape[-1] > 2 * c.shape[-1]:
        out[..., 2 * c.shape[-1]:] = v[..., 2 * c.shape[-1]:]
    return out


def rotate_planes(v, angles):
    """Apply ``diag(R(A_b))`` to vectors ``v`` (``(..., d)``) with plane angles ``A`` (``(..., d/2)``)."""
    xp = namespace_of(angles)
    return so2_rotate((xp.cos(angles), xp.sin(angles)), xp.asarray(v, dtype=float))


def uniform_sphere(rng, shape: tuple, d: int, xp=np):
    """Uniform unit vectors on ``S^{d−1}``: normalised Gaussians, shape ``shape + (d,)``, drawn with the
    Generator ``rng`` of the array namespace ``xp``."""
    g = rng.standard_normal(tuple(shape) + (d,))
    return g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))


def haar_law_queries(mask, q, fresh):
    """Exact law of ``u_n = P_nᵀ q`` for (lazy) Haar steps: ``u_n`` is ``fresh[..., n, :]`` (uniform, norm
    ``||q||``) at a Haar step ``mask[..., n]`` and ``u_{n−1}`` otherwise (``u_0 = q``)."""
    xp = namespace_of(fresh)
    U = xp.empty(fresh.shape)
    U[..., 0, :] = q
    for n in range(1, mask.shape[-1]):
        U[..., n, :] = xp.where(mask[..., n, None], fresh[..., n, :], U[..., n - 1, :])
    return U


def haar_law_sum(mask, weights, values, rng=None, fresh: Callable | None = None):
    """``Σ_n a_n P_n v_n`` for (lazy) Haar steps by their exact law (weights independent of the steps).

    Horner from the far end, ``r ← a_n v_n + m_{n+1} r``, where a Haar step ``m`` maps ``r`` to ``||r||``
    times a fresh uniform unit vector (independent of the past) and a lazy step is the identity.
    ``mask`` ``(T, N)`` marks the Haar steps.  The unit vectors come from ``fresh(n)`` (the one used by
    step ``m_{n+1}``) or, by default, from the Generator ``rng`` of the namespace of ``values``, one
    ``(T, d)`` draw per step, far end first.
    """
    xp = namespace_of(values)
    N = mask.shape[-1]
    if fresh is None:
        def fresh(n):
            return uniform_sphere(rng, mask.shape[:-1], values.shape[-1], xp)
    r = weights[..., N - 1, None] * values[..., N - 1, :]
    for n in range(N - 2, -1, -1):
        f = fresh(n) * xp.linalg.norm(r, axis=-1, keepdims=True)
        r = weights[..., n, None] * values[..., n, :] + xp.where(mask[..., n + 1, None], f, r)
    return r


# -- dense Haar matrices (value checks: pathwise Haar steps; moved from stylized.engine.values) --
__all__ += ["gram_schmidt", "orthogonal_dense"]


def gram_schmidt(g):
    """Orthonormal columns of each ``(…, d, d)`` matrix: classical Gram–Schmidt applied twice (CGS2).

    ``R`` has a positive diagonal by construction, so for Gaussian ``g`` this is Mezzadri's
    ``Q·sign(diag R)`` (Haar on ``O(d)``) up to rounding, in ``d`` passes vectorised over the batch.
    """
    xp = namespace_of(g)
    q = xp.empty_like(g)
    for j in range(g.shape[-1]):
        v = g[..., j, None]
        if j:  # twice is enough: orthogonal to rounding unless g is numerically singular
            for _ in range(2):
                v = v - q[..., :j] @ (xp.swapaxes(q[..., :j], -1, -2) @ v)
        q[..., j] = (v / xp.linalg.norm(v, axis=-2, keepdims=True))[..., 0]
    return q


def orthogonal_dense(rng, shape: tuple, d: int, *, xp=np, method: str = "qr"):
    """Haar matrices on ``O(d)`` from Gaussians ``G``: ``Q·sign(diag R)`` of the QR of ``G`` (Mezzadri).

    ``method="gram-schmidt"`` orthonormalises ``G`` by :func:`gram_schmidt` instead (the same law;
    used on the CuPy path, whose batched QR loops over the matrices).
    """
    g = rng.standard_normal(size=tuple(shape) + (d, d))
    if method == "gram-schmidt":
        return gram_schmidt(g)
    q, r = xp.linalg.qr(g)
    return q * xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def stride_grid_sums(step_back, steps, q, nmax: int, stride: int, ax: int, d: int):
    """``Σ_i qᵀ P_{i−n→i} q`` and the number of queries ``i = L−1, L−1−stride, …`` with ``i ≥ n``, ``n = 0 … nmax``.

    ``steps`` by position along axis ``ax`` (leading axes: independent contexts); ``step_back(step, U)`` is
    ``M_{i−n}ᵀ U`` for the steps ``step`` gathered at ``i − n``: the walk ``u_{n+1} = M_{i−n}ᵀ u_n`` from
    ``u_0 = q``, all queries at once.  Returns ``sums`` ``(..., nmax+1)`` in the namespace of ``steps`` and
    ``counts`` ``(nmax+1,)`` (host NumPy, the same for every context).
    """
    xp = namespace_of(steps)
    L = steps.shape[ax]
    qx = xp.asarray(np.asarray(q, dtype=float))
    pos = np.arange(L - 1, -1, -stride)
    posx = xp.asarray(pos)
    sums = xp.zeros(steps.shape[:ax] + (nmax + 1,))
    counts = np.zeros(nmax + 1)
    U = xp.broadcast_to(qx, steps.shape[:ax] + (pos.size, d)).copy()
    for n in range(nmax + 1):
        live = int(np.count_nonzero(pos - n >= 0))  # the grid descends: the live queries come first
        if not live:
            break
        sums[..., n] = (U[..., :live, :] @ qx).sum(axis=-1)
        counts[n] = live
        U = step_back(xp.take(steps, xp.maximum(posx - n, 0), axis=ax), U)  # M_{i−n} extends the route to n+1
    return sums, counts
