"""The transport engine: route transport indexed by route length, in any array namespace.

A route of length ``n`` from source ``j = i − n`` to the query at ``i`` carries
``P_n = m_1 m_2 ⋯ m_n = M_i ⋯ M_{j+1} = P_{j→i}``, where ``m_s = M_{i−s+1}`` is the step ``s``
positions before the query.  Steps are stored by route length, ``steps[..., n] = m_n`` for
``n = 0 … N−1`` (row 0 is never applied), in the family's structured form: plane angles (SO(2)),
unit reflection vectors (Householder), a Haar-step mask (exact law) or dense Haar matrices.

The step primitives (the β-step ``u − β w (w·u)``, :func:`~stylized.core.step_ops.beta_step`, whose Numba twin is
:func:`stylized.engine.kernels.beta_step_nb`; SO(2) plane rotations; the exact law of Haar steps) live in
:mod:`stylized.core.step_ops`; a law's route transport is its own method (:meth:`~stylized.laws.base.StepLaw.route_queries`,
:meth:`~stylized.laws.base.StepLaw.route_scores`, :meth:`~stylized.laws.base.StepLaw.route_sum`).  Here:

* :func:`route_angles` (accumulated SO(2) angles by position), :func:`iter_route_queries` (one step at a time) and
  :func:`route_sums` (``Σ_n a_n P_n v_n`` for several weight vectors on shared prepared routes);
* :func:`transported_queries`, :func:`transported_sum`: one context given by position
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
from ..laws.law_type import StepLawType

__all__ = ["route_angles", "iter_route_queries", "route_sums", "transported_queries", "transported_sum"]


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
def iter_route_queries(family: StepLawType, steps, q, xrng=None):
    """Yield ``u_n = P_nᵀ q = m_nᵀ u_{n−1}`` for ``n = 0 … N−1`` (steps ``(..., N, <step axes>)``),
    one step at a time (memory ``O(batch·d)``)."""
    xp = namespace_of(steps)
    lead = steps.shape[:steps.ndim - family.step_ndim - 1]
    u = xp.broadcast_to(q, lead + (q.shape[-1],)).copy()
    for n in range(steps.shape[len(lead)]):
        if n:
            u = family.apply(steps[(Ellipsis, n) + (slice(None),) * family.step_ndim], u, transpose=True, xrng=xrng)
        yield u


def route_sums(family: StepLawType, steps, weights: tuple, values, trig=None, xrng=None) -> list:
    """:meth:`StepLaw.route_sum` for several weight vectors on the same routes (shared :meth:`StepLaw.prepare_routes`)."""
    prepared = family.prepare_routes(steps) if trig is None else trig
    return [family.route_sum(steps, w, values, xrng=xrng, prepared=prepared) for w in weights]


# ---------------------------------------------------------------------------------------
# one context given by position (steps[t] = M_t, query at i = L−1)
# ---------------------------------------------------------------------------------------
def transported_queries(family: StepLawType, steps: np.ndarray, q: np.ndarray, random_state=None) -> np.ndarray:
    """``U[j] = P_{j→i}ᵀ q`` for every source ``j = 0 … L−1`` of the query at ``i = L−1``.

    Then the score of source ``j`` is ``λ · U[j] · k_j = λ qᵀ P_{j→i} k_j``.  ``steps`` are the structured
    draws by position; ``random_state`` is used only by laws transported in law (the Haar-step flag resamples
    ``u`` uniformly at every Haar step, :func:`~stylized.core.step_ops.haar_law_queries`).

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


def transported_sum(family: StepLawType, steps: np.ndarray, weights: np.ndarray, values: np.ndarray,
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
