"""Structured samplers of transported quantities, one call per Monte Carlo chunk.

:func:`sample_overlaps` draws ``qᵀ P_n q`` at several route lengths ``n`` along one
chain of i.i.d. steps per trial, using each family's structure:

* SO(2): accumulated angles, ``qᵀ P_n q = Σ_b ||q_b||² cos A_{n,b}``;
* Householder: rank-one updates (Numba kernel);
* Haar / lazy Haar: the exact law — after the last Haar step among the first ``n``
  the transported query is uniform on ``S^{d−1}``, so ``qᵀ P_n q`` is one coordinate of
  a uniform point, drawn directly as ``2·Beta((d−1)/2, (d−1)/2) − 1`` in O(1).

Example
-------
>>> from stylized.families import make_family
>>> x = sample_overlaps(make_family("haar", d=8), [0, 1, 5], 4, random_state=0)
>>> x.shape, bool((x[:, 0] == 1).all())
((4, 3), True)
"""

from __future__ import annotations

import math

import numpy as np

from .families import SO2Family, StepFamily, as_generator
from .kernels import kernel

__all__ = ["equal_energy_query", "sample_overlaps", "haar_coordinates"]


def equal_energy_query(d: int) -> np.ndarray:
    """The unit query with equal energy in every coordinate: all entries ``1/√d``."""
    return np.full(d, 1.0 / math.sqrt(d))


def haar_coordinates(rng: np.random.Generator, shape, d: int) -> np.ndarray:
    """``qᵀu`` for ``u`` uniform on ``S^{d−1}`` and any fixed unit ``q``: ``2·Beta((d−1)/2,(d−1)/2) − 1``."""
    a = (d - 1) / 2.0
    return 2.0 * rng.beta(a, a, size=shape) - 1.0


def _check_ns(ns) -> np.ndarray:
    ns = np.asarray(ns)
    if ns.ndim != 1 or ns.size == 0 or not np.issubdtype(ns.dtype, np.integer) or (ns < 0).any():
        raise ValueError(f"n must be a non-empty list of route lengths ≥ 0, got {ns.tolist()!r}")
    if (np.diff(ns) <= 0).any():
        raise ValueError(f"n must be strictly increasing, got {ns.tolist()!r}")
    return ns.astype(np.int64)


def sample_overlaps(family: StepFamily, ns, size: int, random_state=None, backend: str = "numba",
                    q: np.ndarray | None = None) -> np.ndarray:
    """``size`` independent chains; returns ``(size, len(ns))`` samples of ``qᵀ P_n q``.

    ``q`` defaults to :func:`equal_energy_query`.  ``E[qᵀ P_n q] = qᵀ E[M]^n q``.
    """
    ns = _check_ns(ns)
    rng = as_generator(random_state)
    d = family.d
    q = equal_energy_query(d) if q is None else np.asarray(q, dtype=float)
    nmax = int(ns[-1])
    out = np.ones((size, ns.size))
    if nmax == 0:
        return out * (q @ q)
    if isinstance(family, SO2Family):
        theta = family.rvs(size * nmax, rng).reshape(size, nmax, d // 2)
        A = np.cumsum(theta, axis=1)
        w = q[0::2] ** 2 + q[1::2] ** 2
        pos = ns[ns > 0] - 1
        out[:, ns > 0] = np.cos(A[:, pos, :]) @ w
        out[:, ns == 0] = q @ q
        return out
    if family.kind == "householder":
        w = family.rvs(size * nmax, rng).reshape(size, nmax, d)
        return kernel("householder_overlaps", backend)(w, q, ns)
    # Haar kind (exact law); q must be a unit vector here.
    mask = family.rvs(size * nmax, rng).reshape(size, nmax)
    coords = haar_coordinates(rng, (size, nmax), d)
    last = np.maximum.accumulate(np.where(mask, np.arange(nmax), -1), axis=1)
    for c, n in enumerate(ns):
        if n == 0:
            continue
        li = last[:, n - 1]
        out[:, c] = np.where(li < 0, 1.0, coords[np.arange(size), np.maximum(li, 0)])
    return out
