"""Route transport ``P_{j→i} = M_i M_{i−1} ⋯ M_{j+1}`` (``P_{i→i} = I``).

Steps are indexed by position: ``steps[t]`` is ``M_t`` for ``t = 0 … L−1`` in the
family's structured form (angles, reflection vectors, or a Haar mask).  The query
sits at the last position ``i = L − 1`` and attends to sources ``j = 0 … i``; the
route ``j → i`` has length ``n = i − j``.

Everything here is ``O(L·d)``:

* SO(2): ``P_{j→i}`` rotates plane ``b`` by the accumulated angle
  ``A_{j,b} = Σ_{s=j+1}^{i} θ_{s,b}`` (the planes commute).
* Householder: ``u_j = P_{j→i}ᵀ q = M_{j+1} u_{j+1}`` is a rank-one update per step.
* Haar / lazy Haar: exact law.  After a Haar step a transported vector is uniform on
  ``S^{d−1}`` and independent of its past, so ``u_j`` is resampled uniformly at every
  Haar step and kept otherwise.

:func:`route_product` builds the dense product, the small-``d`` reference used by tests.

Example
-------
>>> from stylized.families import make_family
>>> fam = make_family("householder", d=4)
>>> steps = fam.rvs(5, random_state=1)
>>> q = np.array([1.0, 0, 0, 0])
>>> U = transported_queries(fam, steps, q)
>>> P = route_product(fam.dense(steps), j=2, i=4)
>>> bool(np.allclose(U[2], P.T @ q))
True
"""

from __future__ import annotations

import numpy as np

from .families import StepFamily, as_generator, uniform_sphere

__all__ = [
    "route_angles",
    "rotate_planes",
    "route_product",
    "transported_queries",
    "transported_sum",
]


def route_angles(theta: np.ndarray) -> np.ndarray:
    """Accumulated route angles ``A_j = Σ_{s=j+1}^{i} θ_s`` for every source ``j`` (query ``i = L−1``).

    ``theta`` has shape ``(..., L, B)``; the result has the same shape with ``A_{L−1} = 0``.
    Summation is in float64.
    """
    theta = np.asarray(theta, dtype=np.float64)
    rev = np.cumsum(theta[..., :0:-1, :], axis=-2)[..., ::-1, :]  # Σ_{s=j+1}^{L-1}, j = 0..L-2
    zero = np.zeros(theta.shape[:-2] + (1, theta.shape[-1]))
    return np.concatenate([rev, zero], axis=-2)


def rotate_planes(v: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Apply ``diag(R(A_b))`` to vectors ``v`` (``(..., d)``) with plane angles ``A`` (``(..., d/2)``)."""
    v = np.asarray(v, dtype=float)
    x, y = v[..., 0::2], v[..., 1::2]
    c, s = np.cos(angles), np.sin(angles)
    out = np.empty(np.broadcast_shapes(v.shape, angles.shape[:-1] + (v.shape[-1],)))
    out[..., 0::2] = c * x - s * y
    out[..., 1::2] = s * x + c * y
    return out


def route_product(mats: np.ndarray, j: int, i: int) -> np.ndarray:
    """Dense ``P_{j→i} = M_i ⋯ M_{j+1}`` from matrices ``mats[t] = M_t`` (reference, small ``d``)."""
    if j > i:
        raise ValueError(f"route needs j ≤ i, got j={j}, i={i}")
    d = mats.shape[-1]
    P = np.eye(d)
    for t in range(j + 1, i + 1):
        P = mats[t] @ P
    return P


def transported_queries(family: StepFamily, steps: np.ndarray, q: np.ndarray, random_state=None) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for every source ``j = 0 … L−1`` of the query at ``i = L−1``.

    Then the score of source ``j`` is ``λ · U[j] · k_j = λ qᵀ P_{j→i} k_j``.

    Parameters
    ----------
    family : the step family that produced ``steps``.
    steps : structured draws, length ``L`` along the first axis.
    q : query vector, shape ``(d,)``.
    random_state : used only by Haar families (the exact law resamples uniform vectors).
    """
    q = np.asarray(q, dtype=float)
    L = len(steps)
    if family.kind == "so2":
        return rotate_planes(q, -route_angles(steps))
    U = np.empty((L, family.d))
    U[L - 1] = q
    if family.kind == "householder":
        w = np.asarray(steps, dtype=float)
        for j in range(L - 2, -1, -1):
            u = U[j + 1]
            U[j] = u - 2.0 * w[j + 1] * (w[j + 1] @ u)
        return U
    # Haar kind: resample uniformly at every Haar step (exact law).
    mask = np.asarray(steps, dtype=bool)
    fresh = uniform_sphere(as_generator(random_state), (L,), family.d) * np.linalg.norm(q)
    for j in range(L - 2, -1, -1):
        U[j] = fresh[j] if mask[j + 1] else U[j + 1]
    return U


def transported_sum(
    family: StepFamily, steps: np.ndarray, weights: np.ndarray, values: np.ndarray, random_state=None
) -> np.ndarray:
    """``Σ_j α_j P_{j→i} v_j`` (value transport, query at ``i = L−1``) in ``O(L·d)``.

    Horner's rule: ``r_0 = α_0 v_0`` and ``r_t = M_t r_{t−1} + α_t v_t``; then
    ``r_{L−1} = Σ_j α_j M_{L−1} ⋯ M_{j+1} v_j``.  For Haar steps ``M_t r`` is drawn from
    its exact law (``||r||`` times a uniform unit vector), which is exact when the
    weights do not depend on the same Haar matrices.
    """
    weights = np.asarray(weights, dtype=float)
    values = np.asarray(values, dtype=float)
    if family.kind == "so2":
        return np.einsum("j,jd->d", weights, rotate_planes(values, route_angles(steps)))
    L = len(steps)
    r = weights[0] * values[0]
    if family.kind == "householder":
        w = np.asarray(steps, dtype=float)
        for t in range(1, L):
            r = r - 2.0 * w[t] * (w[t] @ r) + weights[t] * values[t]
        return r
    mask = np.asarray(steps, dtype=bool)
    fresh = uniform_sphere(as_generator(random_state), (L,), family.d)
    for t in range(1, L):
        if mask[t]:
            r = np.linalg.norm(r) * fresh[t]
        r = r + weights[t] * values[t]
    return r
