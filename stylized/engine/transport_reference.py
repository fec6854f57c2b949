"""The dense route product: the oracle every fast transport path is tested against.

``P_{j→i} = M_i M_{i−1} ⋯ M_{j+1}`` (``P_{i→i} = I``) multiplied out as ``d × d`` matrices, nothing
clever, small ``d`` only.  Two indexings of the same product:

* by position (:func:`route_product`): ``mats[t] = M_t``, query at ``i``, source at ``j``;
* by route length (:func:`route_products`, the engine's indexing in :mod:`stylized.engine.transport`):
  ``mats[..., n] = m_n``, the step ``n`` positions before the query (``m_1 = M_i``; index 0 unused),
  ``P_0 = I`` and ``P_n = m_1 m_2 ⋯ m_n = P_{i−n→i}``.

:func:`reference_scores` and :func:`reference_sum` are the score ``qᵀ P_n k_n`` and the value
transport ``Σ_n a_n P_n v_n`` written with these products; :func:`dense_route_steps` turns a family's
structured route-length draws into matrices.

Example
-------
>>> from stylized.laws.families import make_family
>>> fam = make_family("householder", d=4)
>>> mats = fam.dense(fam.rvs(5, random_state=1))
>>> P = route_products(position_to_route(mats))
>>> bool(np.allclose(P[3], route_product(mats, j=1, i=4)))
True
"""

from __future__ import annotations

import numpy as np

from ..laws.law_type import StepLawType

__all__ = ["route_product", "route_products", "position_to_route", "dense_route_steps", "reference_scores",
           "reference_sum"]


def route_product(mats: np.ndarray, j: int, i: int) -> np.ndarray:
    """Dense ``P_{j→i} = M_i ⋯ M_{j+1}`` from matrices ``mats[t] = M_t`` (by position).

    The oracle every fast transport path is tested against.

    Parameters
    ----------
    mats : numpy.ndarray of shape (L, d, d)
        The steps by position.
    j, i : int
        Source and query positions, ``j ≤ i`` (``P_{i→i} = I``).

    Returns
    -------
    numpy.ndarray of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> r = np.array([[0.0, -1.0], [1.0, 0.0]])      # a quarter turn at every step
    >>> bool(np.allclose(route_product(np.stack([r] * 5), 0, 4), np.eye(2)))   # four steps: the identity
    True
    """
    if j > i:
        raise ValueError(f"route needs j ≤ i, got j={j}, i={i}")
    d = mats.shape[-1]
    P = np.eye(d)
    for t in range(j + 1, i + 1):
        P = mats[t] @ P
    return P


def position_to_route(steps: np.ndarray) -> np.ndarray:
    """Position-indexed steps ``steps[t] = M_t`` (``t = 0 … L−1``, query at ``i = L−1``) → route-length order.

    Row ``n ≥ 1`` of the result is ``m_n = M_{L−n}``; row 0 (unused by a route) holds ``M_0``.
    """
    return np.roll(np.asarray(steps)[::-1], 1, axis=0)


def route_products(mats: np.ndarray) -> np.ndarray:
    """``P_n = m_1 ⋯ m_n`` for ``n = 0 … N−1`` from route-length matrices ``mats`` ``(..., N, d, d)``."""
    mats = np.asarray(mats, dtype=float)
    P = np.empty(mats.shape)
    P[..., 0, :, :] = np.eye(mats.shape[-1])
    for n in range(1, mats.shape[-3]):
        P[..., n, :, :] = P[..., n - 1, :, :] @ mats[..., n, :, :]
    return P


def dense_route_steps(family: StepLawType, steps: np.ndarray, random_state=None) -> np.ndarray:
    """Matrices of structured route-length draws ``steps`` ``(T, N, …)`` → ``(T, N, d, d)``.

    Haar-step flags get fresh Haar matrices from ``random_state``; already-dense ``(T, N, d, d)`` draws
    (a dense law's, or dense Haar matrices) are returned as they are.
    """
    steps = np.asarray(steps)
    if steps.ndim == 4:
        return steps.astype(float)
    T, N = steps.shape[:2]
    flat = steps.reshape((T * N,) + steps.shape[2:])
    return family.dense(flat, random_state).reshape(T, N, family.d, family.d)


def reference_scores(mats: np.ndarray, q: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``qᵀ P_n k_n`` for route-length matrices ``mats`` ``(T, N, d, d)`` and keys ``(T, N, d)`` → ``(T, N)``."""
    return np.einsum("d,tnde,tne->tn", np.asarray(q, dtype=float), route_products(mats), keys)


def reference_sum(mats: np.ndarray, weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``Σ_n a_n P_n v_n`` for route-length matrices ``(T, N, d, d)``, weights ``(T, N)``, values ``(T, N, d)``."""
    return np.einsum("tn,tnde,tne->td", weights, route_products(mats), values)
