"""The transport engine: route transport indexed by route length, in any array namespace.

A route of length ``n`` from source ``j = i − n`` to the query at ``i`` carries
``P_n = m_1 m_2 ⋯ m_n = M_i ⋯ M_{j+1} = P_{j→i}``, where ``m_s = M_{i−s+1}`` is the step ``s``
positions before the query.  Steps are stored by route length, ``steps[..., n] = m_n`` for
``n = 0 … N−1`` (row 0 is never applied), in the family's structured form: plane angles (SO(2)),
unit reflection vectors (Householder), a Haar-step mask (exact law) or dense Haar matrices.

* :func:`beta_step` — the step ``u − β w (w·u)`` (Householder ``β = 2``, PaTH contraction ``β < 2``),
  the one array-namespace implementation; its Numba twin is :func:`stylized.engine.kernels.beta_step_nb`;
* :func:`route_queries`, :func:`route_scores` (``qᵀ P_n k_n``) and :func:`route_sum` / :func:`route_sums`
  (``Σ_n a_n P_n v_n``, Horner from the far end), :func:`haar_law_sum` (the exact law of Haar steps);
* :func:`transported_queries`, :func:`transported_sum`: the same for one context given by position
  (``steps[t] = M_t``, query at ``L−1``), via :func:`stylized.engine.transport_reference.position_to_route`.

The engine's ``family`` argument is a step law (:class:`stylized.laws.base.StepLaw`): the engine asks it
(:meth:`~stylized.laws.base.StepLaw.route_queries`, :meth:`~stylized.laws.base.StepLaw.route_sum`, …) and never
its name or kind.  Every function takes the namespace of its array arguments (NumPy, or CuPy on a GPU), so ``numpy``
is this path with ``xp = numpy``.  The oracle is the dense product in
:mod:`stylized.engine.transport_reference`; every path here and every Numba kernel is tested against it.

Example
-------
>>> from stylized.laws.families import make_family
>>> from stylized.engine.transport_reference import route_product
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

from ..core.backend import namespace_of
from ..core.counter_rng import as_generator
from ..laws.base import StepLaw
from ..laws.step_ops import (
    beta_step,
    haar_law_queries,
    haar_law_sum,
    rotate_planes,
    so2_rotate,
    so2_trig,
    uniform_sphere,
)
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

_ = (uniform_sphere, position_to_route, haar_law_queries, haar_law_sum)  # re-exported from their homes


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


# ---------------------------------------------------------------------------------------
# the engine, by route length
# ---------------------------------------------------------------------------------------
def apply_step(family: StepLaw, step, x, *, transpose: bool, xrng=None):
    """``m x`` (or ``mᵀ x``) for one route step of a batch, in the law's structured form (:meth:`StepLaw.apply`)."""
    return family.apply(step, x, transpose=transpose, xrng=xrng)


def iter_route_queries(family: StepLaw, steps, q, xrng=None):
    """Yield ``u_n = P_nᵀ q = m_nᵀ u_{n−1}`` for ``n = 0 … N−1`` (steps ``(..., N, <step axes>)``),
    one step at a time (memory ``O(batch·d)``)."""
    xp = namespace_of(steps)
    lead = steps.shape[:steps.ndim - family.step_ndim - 1]
    u = xp.broadcast_to(q, lead + (q.shape[-1],)).copy()
    for n in range(steps.shape[len(lead)]):
        if n:
            u = family.apply(steps[(Ellipsis, n) + (slice(None),) * family.step_ndim], u, transpose=True, xrng=xrng)
        yield u


def route_queries(family: StepLaw, steps, q, trig=None, xrng=None):
    """``u_n = P_nᵀ q`` for ``n = 0 … N−1``: steps ``(..., N, …)`` → ``(..., N, d)`` (the law's transport).

    ``trig``: what :meth:`StepLaw.prepare_routes` returned for these steps (SO(2): :func:`so2_trig`), to share it."""
    return family.route_queries(steps, q, xrng=xrng, prepared=trig)


def route_scores(family: StepLaw, steps, q, keys, trig=None, xrng=None):
    """``qᵀ P_n k_n`` for ``n = 0 … N−1`` and every route: ``keys`` ``(T, N, d)`` → ``(T, N)``.

    ``trig``: optional :meth:`StepLaw.prepare_routes` of ``steps``, to share it with :func:`route_sums`.
    """
    return family.route_scores(steps, q, keys, xrng=xrng, prepared=trig)


def route_sum(family: StepLaw, steps, weights, values, xrng=None):
    """``Σ_n a_n P_n v_n`` for every route: Horner from the far end, ``r ← a_n v_n + m_{n+1} r``."""
    return family.route_sum(steps, weights, values, xrng=xrng)


def route_sums(family: StepLaw, steps, weights: tuple, values, trig=None, xrng=None) -> list:
    """:func:`route_sum` for several weight vectors on the same routes (shared :meth:`StepLaw.prepare_routes`)."""
    prepared = family.prepare_routes(steps) if trig is None else trig
    return [family.route_sum(steps, w, values, xrng=xrng, prepared=prepared) for w in weights]


# ---------------------------------------------------------------------------------------
# one context given by position (steps[t] = M_t, query at i = L−1)
# ---------------------------------------------------------------------------------------
def transported_queries(family: StepLaw, steps: np.ndarray, q: np.ndarray, random_state=None) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for every source ``j = 0 … L−1`` of the query at ``i = L−1``.

    Then the score of source ``j`` is ``λ · U[j] · k_j = λ qᵀ P_{j→i} k_j``.  ``steps`` are the structured
    draws by position; ``random_state`` is used only by laws transported in law (the Haar-step flag resamples
    ``u`` uniformly at every Haar step, :func:`haar_law_queries`).

    Parameters
    ----------
    family : StepLaw
        The step law of ``steps``.
    steps : numpy.ndarray
        ``L`` structured draws by position (``family.rvs(L, seed)``: dense matrices, reflection vectors or angles).
    q : array of shape (d,)
        The query.
    random_state : int, numpy.random.Generator or None
        Used only by laws transported in law.

    Returns
    -------
    numpy.ndarray of shape (L, d)
        Row ``j`` is ``P_{j→i}ᵀ q``.

    Examples
    --------
    >>> import numpy as np
    >>> from stylized.laws.registry import make_family
    >>> from stylized.engine.transport_reference import route_product
    >>> fam = make_family("householder", 4)
    >>> steps = fam.rvs(6, 0)                       # M_0 … M_5, the query at i = 5
    >>> U = transported_queries(fam, steps, np.eye(4)[0])
    >>> bool(np.allclose(U[2], route_product(fam.dense(steps, 0), 2, 5).T @ np.eye(4)[0]))
    True
    """
    return family.transported_queries(steps, np.asarray(q, dtype=float), as_generator(random_state))


def transported_sum(family: StepLaw, steps: np.ndarray, weights: np.ndarray, values: np.ndarray,
                    random_state=None) -> np.ndarray:
    """``Σ_j α_j P_{j→i} v_j`` (value transport, query at ``i = L−1``) in ``O(L·d)`` (:func:`route_sum`).

    For Haar steps ``M_t r`` is drawn from its exact law (``||r||`` times a uniform unit vector), which is
    exact when the weights do not depend on the same Haar matrices.

    Parameters
    ----------
    family : StepLaw
        The step law of ``steps``.
    steps : numpy.ndarray
        ``L`` structured draws by position.
    weights : array of shape (L,)
        The attention weights ``α_j``.
    values : array of shape (L, d)
        The values ``v_j``.
    random_state : int, numpy.random.Generator or None
        Used only by laws transported in law.

    Returns
    -------
    numpy.ndarray of shape (d,)
        The QKV output ``o_i = Σ_j α_j P_{j→i} v_j``.

    Examples
    --------
    >>> import numpy as np
    >>> from stylized.laws.registry import make_family
    >>> from stylized.engine.transport_reference import route_product
    >>> fam = make_family("householder", 4)
    >>> steps, w, v = fam.rvs(6, 0), np.full(6, 1 / 6), np.eye(4)[[0, 1, 2, 3, 0, 1]]
    >>> dense = fam.dense(steps, 0)
    >>> bool(np.allclose(transported_sum(fam, steps, w, v), sum(w[j] * route_product(dense, j, 5) @ v[j] for j in range(6))))
    True
    """
    return family.transported_sum(steps, np.asarray(weights, dtype=float), np.asarray(values, dtype=float),
                                  as_generator(random_state))
