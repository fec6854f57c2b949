"""The transport engine: route transport indexed by route length, in any array namespace.

A route of length ``n`` from source ``j = i − n`` to the query at ``i`` carries
``P_n = m_1 m_2 ⋯ m_n = M_i ⋯ M_{j+1} = P_{j→i}``, where ``m_s = M_{i−s+1}`` is the step ``s``
positions before the query.  Steps are stored by route length, ``steps[..., n] = m_n`` for
``n = 0 … N−1`` (row 0 is never applied), in the family's structured form: plane angles (SO(2)),
unit reflection vectors (Householder), a Haar-step mask (exact law) or dense Haar matrices.

* :func:`beta_step` — the step ``u − β w (w·u)`` (Householder ``β = 2``, PaTH contraction ``β < 2``),
  the one array-namespace implementation; its Numba twin is :func:`stylized.kernels.beta_step_nb`;
* :func:`route_queries`, :func:`route_scores` (``qᵀ P_n k_n``) and :func:`route_sum` / :func:`route_sums`
  (``Σ_n a_n P_n v_n``, Horner from the far end), :func:`haar_law_sum` (the exact law of Haar steps);
* :func:`transported_queries`, :func:`transported_sum`: the same for one context given by position
  (``steps[t] = M_t``, query at ``L−1``), via :func:`stylized.transport_reference.position_to_route`.

The engine's ``family`` argument is a step family or just its kind (``"so2"``, ``"householder"``,
``"haar"``).  Every function takes the namespace of its array arguments (NumPy, or CuPy on a GPU), so ``numpy``
is this path with ``xp = numpy``.  The oracle is the dense product in
:mod:`stylized.transport_reference`; every path here and every Numba kernel is tested against it.

Example
-------
>>> from stylized.families import make_family
>>> from stylized.transport_reference import route_product
>>> fam = make_family("householder", d=4)
>>> steps = fam.rvs(5, random_state=1)
>>> q = np.array([1.0, 0, 0, 0])
>>> U = transported_queries(fam, steps, q)
>>> P = route_product(fam.dense(steps), j=2, i=4)
>>> bool(np.allclose(U[2], P.T @ q))
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .backend import namespace_of
from .families import StepFamily, as_generator, uniform_sphere
from .transport_reference import position_to_route, route_product

__all__ = [
    "beta_step",
    "route_angles",
    "rotate_planes",
    "so2_trig",
    "so2_rotate",
    "apply_step",
    "iter_route_queries",
    "route_queries",
    "route_scores",
    "route_sum",
    "route_sums",
    "haar_law_queries",
    "haar_law_sum",
    "route_product",
    "transported_queries",
    "transported_sum",
]


def beta_step(x, w, beta=2.0):
    """``x − β w (w·x)`` over the last axis (``w`` unit: Householder ``β = 2``, contraction ``0 < β < 2``).

    ``x``, ``w`` of shape ``(..., d)`` in one namespace; ``beta`` a scalar or an array broadcasting
    against ``(..., 1)``.  One vector uses ``w @ x``, a batch an ``einsum`` over the last axis.
    """
    if x.ndim == 1 and w.ndim == 1:
        return x - beta * w * (w @ x)
    return x - beta * w * namespace_of(x).einsum("...d,...d->...", w, x)[..., None]


# ---------------------------------------------------------------------------------------
# SO(2): accumulated plane angles
# ---------------------------------------------------------------------------------------
def route_angles(theta: np.ndarray) -> np.ndarray:
    """Accumulated angles ``A_j = Σ_{s=j+1}^{i} θ_s`` by *position* ``j`` (query ``i = L−1``, ``A_{L−1} = 0``).

    ``theta`` has shape ``(..., L, B)`` (``theta[t]`` the angles of ``M_t``); float64 suffix sums.
    """
    theta = np.asarray(theta, dtype=np.float64)
    rev = np.cumsum(theta[..., :0:-1, :], axis=-2)[..., ::-1, :]  # Σ_{s=j+1}^{L-1}, j = 0..L-2
    zero = np.zeros(theta.shape[:-2] + (1, theta.shape[-1]))
    return np.concatenate([rev, zero], axis=-2)


def so2_trig(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cos A_n``, ``sin A_n`` of ``A_n = θ_1 + … + θ_n`` (``A_0 = 0``) for route-length angles ``(..., N, B)``."""
    xp = namespace_of(steps)
    A = xp.cumsum(steps, axis=-2) - steps[..., :1, :]
    return xp.cos(A), xp.sin(A)


def so2_rotate(trig: tuple[np.ndarray, np.ndarray], v: np.ndarray) -> np.ndarray:
    """``diag(R(A_b)) v`` from ``(cos A, sin A)`` ``(..., B)`` and vectors ``v`` ``(..., 2B)`` (broadcast)."""
    c, s = trig
    x, y = v[..., 0::2], v[..., 1::2]
    shape = np.broadcast_shapes(c.shape[:-1], v.shape[:-1]) + (2 * c.shape[-1],)
    out = namespace_of(c).empty(shape)
    out[..., 0::2] = c * x - s * y
    out[..., 1::2] = s * x + c * y
    return out


def rotate_planes(v: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Apply ``diag(R(A_b))`` to vectors ``v`` (``(..., d)``) with plane angles ``A`` (``(..., d/2)``)."""
    xp = namespace_of(angles)
    return so2_rotate((xp.cos(angles), xp.sin(angles)), xp.asarray(v, dtype=float))


# ---------------------------------------------------------------------------------------
# the engine, by route length
# ---------------------------------------------------------------------------------------
def _kind(family: StepFamily | str) -> str:
    """A family's transport kind; the engine also takes the kind itself (``"so2"``, ``"householder"``, ``"haar"``)."""
    return family if isinstance(family, str) else family.kind


def apply_step(family: StepFamily, step, x, *, transpose: bool):
    """``m x`` (or ``mᵀ x``) for one route step of a batch: Householder ``w`` ``(..., d)`` or dense ``(..., d, d)``."""
    if _kind(family) == "householder":  # symmetric: m = mᵀ = I − 2wwᵀ
        return beta_step(x, step)
    return namespace_of(x).einsum("...ba,...b->...a" if transpose else "...ab,...b->...a", step, x)


def iter_route_queries(family: StepFamily, steps, q):
    """Yield ``u_n = P_nᵀ q = m_nᵀ u_{n−1}`` for ``n = 0 … N−1`` (Householder or dense steps ``(..., N, …)``),
    one step at a time (memory ``O(batch·d)``)."""
    xp = namespace_of(steps)
    lead = steps.shape[:-2] if _kind(family) == "householder" else steps.shape[:-3]
    u = xp.broadcast_to(q, lead + (q.shape[-1],)).copy()
    for n in range(steps.shape[len(lead)]):
        if n:
            u = apply_step(family, steps[..., n, :] if _kind(family) == "householder" else steps[..., n, :, :], u,
                           transpose=True)
        yield u


def route_queries(family: StepFamily, steps, q, trig=None):
    """``u_n = P_nᵀ q`` for ``n = 0 … N−1``: steps ``(..., N, …)`` → ``(..., N, d)`` (SO(2), Householder, dense Haar)."""
    xp = namespace_of(steps)
    if _kind(family) == "so2":
        c, s = trig or so2_trig(steps)
        return so2_rotate((c, -s), q)
    return xp.stack(list(iter_route_queries(family, steps, q)), axis=-2)


def route_scores(family: StepFamily, steps, q, keys, trig=None):
    """``qᵀ P_n k_n`` for ``n = 0 … N−1`` and every route: ``keys`` ``(T, N, d)`` → ``(T, N)``.

    ``trig``: optional :func:`so2_trig` of ``steps`` (SO(2) only), to share it with :func:`route_sums`.
    Householder and dense steps walk ``u_n`` one step at a time (memory ``O(T·d)`` beyond the keys).
    """
    xp = namespace_of(keys)
    if _kind(family) == "so2":
        return so2_rotate(trig or so2_trig(steps), keys) @ q
    T, N = steps.shape[:2]
    out = xp.empty((T, N))
    for n, u in enumerate(iter_route_queries(family, steps, q)):
        out[:, n] = xp.einsum("td,td->t", u, keys[:, n])
    return out


def route_sum(family: StepFamily, steps, weights, values):
    """``Σ_n a_n P_n v_n`` for every route: Horner from the far end, ``r ← a_n v_n + m_{n+1} r``."""
    if _kind(family) == "so2":
        return namespace_of(values).einsum("...n,...nd->...d", weights, so2_rotate(so2_trig(steps), values))
    N = weights.shape[-1]
    r = weights[..., N - 1, None] * values[..., N - 1, :]
    for n in range(N - 2, -1, -1):
        step = steps[..., n + 1, :] if _kind(family) == "householder" else steps[..., n + 1, :, :]
        r = weights[..., n, None] * values[..., n, :] + apply_step(family, step, r, transpose=False)
    return r


def route_sums(family: StepFamily, steps, weights: tuple, values, trig=None) -> list:
    """:func:`route_sum` for several weight vectors on the same routes (SO(2): one rotation pass)."""
    if _kind(family) == "so2":
        rv = so2_rotate(trig or so2_trig(steps), values)
        return [namespace_of(values).einsum("tn,tnd->td", w, rv) for w in weights]
    return [route_sum(family, steps, w, values) for w in weights]


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


# ---------------------------------------------------------------------------------------
# one context given by position (steps[t] = M_t, query at i = L−1)
# ---------------------------------------------------------------------------------------
def transported_queries(family: StepFamily, steps: np.ndarray, q: np.ndarray, random_state=None) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for every source ``j = 0 … L−1`` of the query at ``i = L−1``.

    Then the score of source ``j`` is ``λ · U[j] · k_j = λ qᵀ P_{j→i} k_j``.  ``steps`` are the structured
    draws by position; ``random_state`` is used only by Haar kinds (their exact law resamples ``u``
    uniformly at every Haar step, :func:`haar_law_queries`).
    """
    q = np.asarray(q, dtype=float)
    if _kind(family) == "haar":
        fresh = uniform_sphere(as_generator(random_state), (len(steps),), family.d) * np.linalg.norm(q)
        return haar_law_queries(position_to_route(np.asarray(steps, dtype=bool)), q, fresh[::-1])[::-1]
    return route_queries(family, position_to_route(np.asarray(steps, dtype=float)), q)[::-1]


def transported_sum(family: StepFamily, steps: np.ndarray, weights: np.ndarray, values: np.ndarray,
                    random_state=None) -> np.ndarray:
    """``Σ_j α_j P_{j→i} v_j`` (value transport, query at ``i = L−1``) in ``O(L·d)`` (:func:`route_sum`).

    For Haar steps ``M_t r`` is drawn from its exact law (``||r||`` times a uniform unit vector), which is
    exact when the weights do not depend on the same Haar matrices.
    """
    weights = np.asarray(weights, dtype=float)[::-1]
    values = np.asarray(values, dtype=float)[::-1]
    if _kind(family) == "haar":
        L = len(steps)
        fresh = uniform_sphere(as_generator(random_state), (L,), family.d)
        return haar_law_sum(position_to_route(np.asarray(steps, dtype=bool)), weights, values,
                            fresh=lambda n: fresh[L - 1 - n])
    return route_sum(family, position_to_route(np.asarray(steps, dtype=float)), weights, values)
