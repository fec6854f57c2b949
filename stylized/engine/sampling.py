"""Structured samplers of transported quantities, one call per Monte Carlo chunk.

:func:`sample_overlaps` draws ``qᵀ P_n q`` at several route lengths ``n`` along one
chain of i.i.d. steps per trial, using each family's structure:

* SO(2): accumulated angles, ``qᵀ P_n q = Σ_b ||q_b||² cos A_{n,b}``;
* Householder: rank-one updates (Numba kernel);
* Haar / lazy Haar: the exact law — after the last Haar step among the first ``n``
  the transported query is uniform on ``S^{d−1}``, so ``qᵀ P_n q`` is one coordinate of
  a uniform point, drawn directly as ``2·Beta((d−1)/2, (d−1)/2) − 1`` in O(1).

Two backends: the Numba kernel (Householder under ``numba``) and the array-namespace path
(:func:`_sample_overlaps_xp`, which also serves ``qᵀ P_n k`` for :func:`stylized.engine.scores.far_scores`),
run with NumPy (``numpy``, and ``numba`` where there is no kernel) or with CuPy's random Generator
seeded from the NumPy Generator it is given (``cupy``); the route is walked in blocks of steps, so
memory is ``O(size·block·d)`` however long the route.  CuPy's streams
differ from NumPy's: compare backends in distribution, or on identical inputs.
:func:`sample_steps` draws structured steps ``M_t`` for any backend (each family's one sampler,
:meth:`stylized.laws.base.StepLaw.sample`, in the backend's namespace); ``XP_CHUNK_ELEMENTS`` bounds
a device array per chunk.

:func:`sample_far_route` draws the transported vector ``P_n q`` itself for Haar-kind
families from the exact law (``O(d)`` per trial); :func:`sample_far_route_dense` is the
brute-force reference with dense Haar matrices.

Example
-------
>>> from stylized.laws.families import make_family
>>> x = sample_overlaps(make_family("haar", d=8), [0, 1, 5], 4, random_state=0)
>>> x.shape, bool(np.allclose(x[:, 0], 1.0))  # n = 0: qᵀq = 1 up to rounding
((4, 3), True)
"""

from __future__ import annotations

import math

import numpy as np

from ..core._broadcast import check, check_instance
from ..core.backend import array_namespace, to_numpy, xp_generator
from ..core.counter_rng import as_generator
from ..core.step_ops import uniform_sphere
from ..laws.law_type import StepLawType
from .transport_reference import route_product

__all__ = ["equal_energy_query", "sample_overlaps", "sample_steps", "haar_coordinates", "sample_far_route",
           "sample_far_route_dense", "XP_CHUNK_ELEMENTS"]

XP_CHUNK_ELEMENTS = 1 << 22
"""Elements per device array in one chunk of a ``cupy`` path (float64: 32 MiB; a chunk holds a few such arrays)."""


def equal_energy_query(d: int) -> np.ndarray:
    """The unit query with equal energy in every coordinate: all entries ``1/√d``."""
    return np.full(d, 1.0 / math.sqrt(d))


def haar_coordinates(rng, shape, d: int):
    """``qᵀu`` for ``u`` uniform on ``S^{d−1}`` and any fixed unit ``q``: ``2·Beta((d−1)/2,(d−1)/2) − 1``.

    ``rng`` is a NumPy Generator or a device one (then the result lives on the device); a Generator
    without ``beta`` draws the Beta variate as ``X/(X+Y)`` from two ``standard_gamma`` draws.
    """
    a = float((d - 1) / 2.0)  # a Python float: CuPy's beta takes no NumPy scalars
    if hasattr(rng, "beta"):
        return 2.0 * rng.beta(a, a, size=shape) - 1.0
    x, y = rng.standard_gamma(a, size=shape), rng.standard_gamma(a, size=shape)
    return 2.0 * x / (x + y) - 1.0


def sample_steps(family: StepLawType, shape: tuple, xrng, backend: str = "numpy"):
    """Structured i.i.d. steps ``M_t`` of shape ``shape`` plus the family's own trailing axis.

    The family's one sampler (:meth:`StepLaw.sample`) in the backend's array namespace: NumPy for
    numpy/numba (``xrng`` a NumPy Generator; the same draws as ``family.rvs``), CuPy for cupy (``xrng`` a
    CuPy Generator): plane angles ``θ`` (SO(2)), unit reflection vectors ``w`` (Householder) or the
    Haar-step mask (Haar kind).
    """
    return family.sample(xrng, tuple(int(x) for x in shape), array_namespace(backend))


def _check_ns(ns) -> np.ndarray:
    ns = check("ns (route lengths)", ns, 0, integer=True, ndim=1, nonempty=True)
    if (np.diff(ns) <= 0).any():
        raise ValueError(f"ns (route lengths) must be strictly increasing, got {ns.tolist()!r}")
    return ns


def sample_overlaps(family: StepLawType, ns, size: int, random_state=None, backend: str = "numba",
                    q: np.ndarray | None = None) -> np.ndarray:
    """``size`` independent chains of the route transport; returns ``(size, len(ns))`` samples of ``qᵀ P_n q``.

    Each chain draws its own steps ``M_1, M_2, …`` of the law and records the overlap ``qᵀ P_n q`` of the query
    with itself carried along a route of ``n`` steps, ``P_n = M_n ⋯ M_1``, at every ``n`` in ``ns`` (one
    column per ``n``).  Its mean is the claim C1 quantity, ``E[qᵀ P_n q] = qᵀ E[M]ⁿ q``.  Two paths: the Numba
    kernel (Householder under ``numba``: unit ``w`` from ``family.rvs``) and the array-namespace path
    (:func:`_sample_overlaps_xp`) for everything else, with NumPy (numpy, and numba where no kernel exists)
    or CuPy.

    Parameters
    ----------
    family : StepLaw
        The step law (a built-in from :func:`~stylized.laws.registry.make_family`, or a user's).
    ns : sequence of int
        Route lengths ``n ≥ 0``, strictly increasing (``n = 0`` gives ``qᵀq``).
    size : int
        Number of independent chains, ``≥ 0``.
    random_state : int, numpy.random.Generator or None
        Seed or Generator of the draws (the same seed gives the same samples on a backend).
    backend : {"numba", "numpy", "cupy"}, default "numba"
        Where the chains run; ``cupy`` needs a GPU.
    q : array of shape (d,), optional
        The query, finite; default :func:`equal_energy_query` (all entries ``1/√d``).

    Returns
    -------
    numpy.ndarray of shape (size, len(ns))
        Row ``c`` holds chain ``c``'s ``qᵀ P_n q`` at each ``n``.

    Examples
    --------
    >>> from stylized.laws.registry import make_family
    >>> fam = make_family("householder", 16)          # E[M] = (1 − 2/d) I
    >>> x = sample_overlaps(fam, [1, 5, 20], size=2000, random_state=0)
    >>> x.shape
    (2000, 3)
    >>> bool(abs(x[:, 1].mean() - (1 - 2 / 16) ** 5) < 0.05)   # qᵀE[M]⁵q, within Monte Carlo error
    True
    """
    check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")
    ns = _check_ns(ns)
    size = check("size", size, 0, integer=True, scalar=True)
    if q is not None:
        q = check("q", q, ndim=1, size=family.d)
    rng = as_generator(random_state)
    qq = equal_energy_query(family.d) if q is None else np.asarray(q, dtype=float)
    fast = family.fast_overlaps(ns, size, rng, backend, qq)
    if fast is not None:
        return fast
    xp = array_namespace(backend)
    return to_numpy(_sample_overlaps_xp(family, ns, size, xp_generator(backend, rng), xp, q))


# ---------------------------------------------------------------------------------------
# Array-namespace path (CuPy on a GPU; runs with NumPy too, which is how it is tested here)
# ---------------------------------------------------------------------------------------
def _sample_overlaps_xp(family: StepLawType, ns: np.ndarray, size: int, xrng, xp, q=None, block: int | None = None, *,
                        k=None):
    """:func:`sample_overlaps` through the array namespace ``xp`` with its Generator ``xrng``: ``qᵀ P_n k``.

    ``k`` defaults to ``q`` (then ``qᵀ P_n q``).  The law walks its own chains (:meth:`StepLaw.walk_scores`):
    accumulated angles for SO(2) laws, rank-one updates for reflections, the exact joint law for Haar-step
    flags, and the generic per-step walk ``u_n = m_nᵀ u_{n−1}`` on fresh draws for any other law.
    Returns an ``xp`` array ``(size, len(ns))``.
    """
    qh = equal_energy_query(family.d) if q is None else np.asarray(q, dtype=float)
    return family.walk_scores(ns, size, xrng, xp, q=qh, k=k, block=block)


def sample_far_route(family: StepLawType, n: int, size: int, random_state=None, q: np.ndarray | None = None) -> np.ndarray:
    """``size`` draws of the transported vector ``P_n q`` for a Haar-kind family, from the exact law.

    ``P_n q`` is ``q`` when none of the ``n`` steps is a Haar step (probability ``(1 − p)^n``)
    and ``||q||`` times a uniform unit vector otherwise: ``O(d)`` per draw instead of
    ``n`` dense ``d × d`` products.  Returns ``(size, d)``.

    Example
    -------
    >>> from stylized.laws.families import make_family
    >>> sample_far_route(make_family("haar", d=4), n=10, size=3, random_state=0).shape
    (3, 4)
    """
    p = family.haar_step_probability
    if p is None:
        raise ValueError(f"family must declare haar_step_probability (haar, lazy-haar) for the exact far-route law, "
                         f"got {family.name!r}")
    rng = as_generator(random_state)
    q = equal_energy_query(family.d) if q is None else np.asarray(q, dtype=float)
    hit = rng.random(size) < 1.0 - (1.0 - p) ** int(n)
    return np.where(hit[:, None], np.linalg.norm(q) * uniform_sphere(rng, (size,), family.d), q)


def sample_far_route_dense(family: StepLawType, n: int, size: int, random_state=None,
                           q: np.ndarray | None = None) -> np.ndarray:
    """Brute-force reference for :func:`sample_far_route`: ``n`` dense steps per draw (Haar via ``ortho_group``)."""
    rng = as_generator(random_state)
    q = equal_energy_query(family.d) if q is None else np.asarray(q, dtype=float)
    out = np.empty((size, family.d))
    for s in range(size):
        mats = family.dense(family.rvs(n, rng), rng)  # M_1 … M_n
        out[s] = route_product(np.concatenate([np.eye(family.d)[None], mats]), 0, n) @ q
    return out
