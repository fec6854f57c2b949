"""Isotropic O(d) laws (``E[M] = (1 − γ) I``): Householder reflections and (lazy) Haar steps.

``householder`` draws unit reflection vectors ``w`` (``M = I − 2wwᵀ``, ``γ = 2/d``); ``lazy-haar`` and
``haar`` draw a Haar-step flag, transported by its exact law (after a Haar step a transported vector is
uniform on ``S^{d−1}``, independent of the past); dense Haar matrices only in :meth:`LazyHaar.dense`.
Every ``d ≥ 2`` works, odd included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy.stats import ortho_group

from ..backend import namespace_of
from ..counter_rng import as_generator
from ..family_args import validate_family_args
from .base import StepLaw as StepFamily
from .step_ops import beta_step, haar_law_queries, haar_law_sum, uniform_sphere

__all__ = ["Householder", "LazyHaar", "Haar"]


# ---------------------------------------------------------------------------------------
# O(d) families
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ScalarMean(StepFamily):
    """An isotropic law, ``E[M] = (1 − γ) I``: the mean, its powers and ``qᵀE[M]ⁿq`` from the closed-form ``γ``."""

    isotropic: ClassVar[bool] = True

    def mean(self) -> np.ndarray:
        return (1.0 - self.spectral_gap) * np.eye(self.d)

    def mean_power(self, n: int) -> np.ndarray:
        return (1.0 - self.spectral_gap) ** int(n) * np.eye(self.d)

    def mean_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        q = np.asarray(q, dtype=float)
        out = (1.0 - self.spectral_gap) ** np.asarray(n, dtype=float) * float(q @ q)
        return float(out) if np.ndim(n) == 0 else out


@dataclass(frozen=True)
class Householder(_ScalarMean):
    """Householder reflections ``M = I − 2 w wᵀ``, ``w`` uniform on ``S^{d−1}``.

    ``E[w wᵀ] = I/d`` so ``E[M] = (1 − 2/d) I`` and ``γ = 2/d``.
    """

    law_name: ClassVar[str] = "householder"

    def __post_init__(self):
        validate_family_args("householder", self.d)

    step_ndim: ClassVar[int] = 1

    @property
    def kind(self) -> str:  # transitional: read by modules not yet on the law protocol
        return "householder"

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``x − 2w(w·x)`` (symmetric: ``M = Mᵀ``)."""
        return beta_step(x, step)

    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """The rank-one update ``u ← u − 2 g (g·u)/||g||²`` from ``u = k`` with Gaussian ``g``, one step at a
        time over all trials, recording ``q·u`` (in law ``qᵀ P_n k``)."""
        ns = [int(n) for n in np.ravel(ns)]
        qh = np.asarray(q, dtype=float)
        kh = qh if k is None else np.asarray(k, dtype=float)
        out = xp.empty((size, len(ns)))
        want = {n: c for c, n in enumerate(ns)}
        if 0 in want:
            out[:, want[0]] = float(qh @ kh)
        qd = xp.asarray(qh)
        u = xp.broadcast_to(xp.asarray(kh), (size, self.d)).copy()
        for n in range(1, (max(ns) if ns else 0) + 1):
            g = xrng.standard_normal((size, self.d))
            u = beta_step(u, g, 2.0 / xp.sum(g * g, axis=1)[:, None])  # w = g/||g||
            if n in want:
                out[:, want[n]] = u @ qd
        return out

    def fast_overlaps(self, ns, size: int, rng, backend: str, q):
        """The Numba reflection-chain kernel (``backend="numba"``): unit ``w`` from :meth:`rvs`."""
        if backend != "numba":
            return None
        from ..kernels import kernel

        nmax = int(ns[-1])
        w = self.rvs(size * nmax, rng).reshape(size, nmax, self.d)
        return kernel("householder_overlaps", backend)(w, q, ns)

    @property
    def spectral_gap(self) -> float:
        """``γ = 2/d`` (closed form)."""
        return 2.0 / self.d

    def sample(self, xrng, shape: tuple, xp=np):
        return uniform_sphere(xrng, shape, self.d, xp)

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        w = np.asarray(draws, dtype=float)
        return np.eye(self.d) - 2.0 * w[:, :, None] * w[:, None, :]


@dataclass(frozen=True)
class LazyHaar(_ScalarMean):
    """Lazy Haar steps: ``M = U ~ Haar(O(d))`` with probability ``p``, else ``I``.

    ``E[M] = (1 − p) I``, ``γ = p``.  ``rvs`` draws the Haar-step mask only.
    """

    law_name: ClassVar[str] = "lazy-haar"

    p: float = 0.5

    def __post_init__(self):
        validate_family_args("lazy-haar", self.d, p=self.p)

    step_ndim: ClassVar[int] = 0

    @property
    def kind(self) -> str:  # transitional: read by modules not yet on the law protocol
        return "haar"

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """Exact in law: a Haar step maps ``x`` to ``||x||`` times a fresh uniform unit vector (from ``xrng``),
        a lazy step is the identity.  Dense Haar matrices (float ``(..., d, d)``) are applied as matrices."""
        if step.dtype != bool:
            return StepFamily.apply(self, step, x, transpose=transpose)
        if xrng is None:
            raise ValueError("a Haar-step flag is applied in law: pass xrng")
        xp = namespace_of(x)
        fresh = uniform_sphere(xrng, x.shape[:-1], self.d, xp) * xp.linalg.norm(x, axis=-1, keepdims=True)
        return xp.where(step[..., None], fresh, x)

    def _dense_steps(self, steps) -> bool:
        """Whether route steps are dense Haar matrices (then the generic dense transport applies)."""
        return steps.dtype != bool

    def route_queries(self, steps, q, *, xrng=None, prepared=None):
        if self._dense_steps(steps):
            return self._as_dense().route_queries(steps, q)
        xp = namespace_of(steps)
        fresh = uniform_sphere(xrng, steps.shape, self.d, xp) * float(np.linalg.norm(q))
        return haar_law_queries(steps, xp.asarray(q, dtype=float), fresh)

    def route_sum(self, steps, weights, values, *, xrng=None, prepared=None):
        if self._dense_steps(steps):
            return self._as_dense().route_sum(steps, weights, values)
        return haar_law_sum(steps, weights, values, rng=xrng)

    def route_scores(self, steps, q, keys, *, xrng=None, prepared=None):
        if self._dense_steps(steps):
            return self._as_dense().route_scores(steps, q, keys)
        return StepFamily.route_scores(self, steps, q, keys, xrng=xrng)

    def _as_dense(self) -> StepFamily:
        """The same steps seen as dense matrices (a view for transport, ``step_ndim = 2``)."""
        return _DenseView(d=self.d)

    def transported_queries(self, steps, q, xrng):
        from ..transport_reference import position_to_route

        fresh = uniform_sphere(xrng, (len(steps),), self.d) * np.linalg.norm(q)
        return haar_law_queries(position_to_route(np.asarray(steps, dtype=bool)), q, fresh[::-1])[::-1]

    def transported_sum(self, steps, weights, values, xrng):
        from ..transport_reference import position_to_route

        L = len(steps)
        fresh = uniform_sphere(xrng, (L,), self.d)
        return haar_law_sum(position_to_route(np.asarray(steps, dtype=bool)), weights[::-1], values[::-1],
                            fresh=lambda n: fresh[L - 1 - n])

    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """The exact joint law over the route lengths: between consecutive ``n_{k−1} < n_k`` a Haar step
        occurs with probability ``1 − (1−p)^{n_k − n_{k−1}}``, and then ``qᵀP k`` is a fresh
        ``||q||·||k||``-scaled Haar coordinate, else it is unchanged (``qᵀk`` before any Haar step)."""
        from ..sampling import haar_coordinates

        qh = np.asarray(q, dtype=float)
        kh = qh if k is None else np.asarray(k, dtype=float)
        qk = float(qh @ kh)
        scale = float(np.linalg.norm(qh) * np.linalg.norm(kh)) if k is not None else qk
        out = xp.empty((size, len(np.ravel(ns))))
        cur = xp.full(size, qk)
        prev = 0
        for c, n in enumerate(int(x) for x in np.ravel(ns)):
            if n > prev:
                hit = xrng.random(size) < 1.0 - (1.0 - self.p) ** (n - prev)
                cur = xp.where(hit, scale * haar_coordinates(xrng, (size,), self.d), cur)
            out[:, c] = cur
            prev = n
        return out

    @property
    def spectral_gap(self) -> float:
        """``γ = p`` (closed form; ``1`` for Haar)."""
        return float(self.p)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.random(tuple(shape)) < self.p

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        mask = np.asarray(draws, dtype=bool)
        out = np.broadcast_to(np.eye(self.d), (mask.size, self.d, self.d)).copy()
        k = int(mask.sum())
        if k:
            rng = as_generator(random_state)
            u = ortho_group.rvs(self.d, size=k, random_state=rng)
            out[mask] = u.reshape(k, self.d, self.d)
        return out


@dataclass(frozen=True)
class Haar(LazyHaar):
    """Haar steps ``M ~ Haar(O(d))``: ``E[M] = 0``, ``γ = 1``."""

    law_name: ClassVar[str] = "haar"

    p: float = field(init=False, default=1.0)

    def __post_init__(self):
        LazyHaar.__post_init__(self)


@dataclass(frozen=True)
class _DenseView(StepFamily):
    """Dense ``d × d`` steps already drawn (dense Haar matrices): the generic transport."""

    law_name: ClassVar[str] = "dense-steps"
