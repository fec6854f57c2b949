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

from ..core.backend import namespace_of
from ..core.counter_rng import as_generator
from ..core.step_ops import beta_step, haar_law_queries, haar_law_sum, orthogonal_dense, uniform_sphere
from .base import StepLaw, check_route_length
from .family_args import validate_family_args

__all__ = ["Householder", "LazyHaar", "Haar"]


# ---------------------------------------------------------------------------------------
# O(d) families
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ScalarMean(StepLaw):
    """An isotropic law, ``E[M] = (1 − γ) I``: the mean, its powers and ``qᵀE[M]ⁿq`` from the closed-form ``γ``."""

    isotropic: ClassVar[bool] = True

    def mean(self) -> np.ndarray:
        return (1.0 - self.spectral_gap) * np.eye(self.d)

    def mean_power(self, n: int) -> np.ndarray:
        return (1.0 - self.spectral_gap) ** check_route_length(n) * np.eye(self.d)

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

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``x − 2w(w·x)`` (symmetric: ``M = Mᵀ``)."""
        return beta_step(x, step)

    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """The rank-one update ``u ← u − 2 g (g·u)/||g||²`` from ``u = k`` with Gaussian ``g``, one step at a
        time over all trials, recording ``q·u`` (in law ``qᵀ P_n k``)."""
        ns, qh, kh, out, want = self._walk_frame(ns, size, xp, q, k)
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
        from ..engine.kernels import kernel

        nmax = int(ns[-1])
        w = self.rvs(size * nmax, rng).reshape(size, nmax, self.d)
        return kernel("householder_overlaps", backend)(w, q, ns)

    # -- score chains (score-gap, haar-law) --------------------------------------------------
    def score_chains(self, N: int, size: int, seed, q, k, backend: str = "numba"):
        """Real reflections ``w = g/|g|``: the counter-stream kernel (``numba``) or its namespace twin
        (:func:`stylized.engine.score_chains.householder_chains`)."""
        from ..engine.score_chains import householder_chains

        return householder_chains(q, k, int(N), int(size), seed, backend)

    # -- attention sweep and overlap chain (transfer, far-mass-growth) -------------------------
    def fast_transported_queries(self, steps, q, backend: str):
        """The reflection kernel ``householder_queries`` (Numba on ``backend="numba"``, else its NumPy twin)."""
        from ..engine.kernels import kernel

        return kernel("householder_queries", backend)(np.ascontiguousarray(steps), q)

    def overlap_transition(self, nodes, basis, n_quad: int = 24):
        """``t' = t(1 − 2w₁²) − 2√(1−t²) w₁w₂`` with ``(w₁, w₂)`` two coordinates of a uniform unit vector, by product
        Gauss–Jacobi quadrature (:func:`stylized.theory.weight_laws.householder_transition`)."""
        from ..theory.weight_laws import householder_transition

        return householder_transition(self.d, nodes, basis, n_quad)

    def overlap_law(self, q, n: int, h: float):  # the law of qᵀP_n q (far-retrieval)
        """The Chebyshev nodes and weights ``e_0ᵀKⁿ`` of the overlap chain (:class:`stylized.theory.weight_laws.IsotropicChain`):
        signed weights, accurate for smooth functionals only (``"approximation (chain quadrature)"``)."""
        from ..theory.weight_laws import IsotropicChain

        chain = IsotropicChain(self)
        return chain.nodes.copy(), np.linalg.matrix_power(chain.K, int(n))[0], "approximation (chain quadrature)"

    # -- in-context windows (mixing) -------------------------------------------------------------
    def context_overlaps(self, steps, q, nmax: int, *, stride: int = 1, xrng=None, backend: str = "numpy"):
        """The Numba stride-grid kernel on ``backend="numba"`` (host reflection vectors ``w``, one context
        at a time); the generic walk :meth:`StepLaw.context_overlaps` otherwise."""
        if backend != "numba" or not isinstance(steps, np.ndarray):
            return StepLaw.context_overlaps(self, steps, q, nmax, stride=stride, xrng=xrng, backend=backend)
        from ..engine.scores import householder_window_sums_numba

        if not 0 <= nmax <= steps.shape[-2] - 1:
            raise ValueError(f"nmax must lie in [0, L − 1] = [0, {steps.shape[-2] - 1}], got {nmax}")
        q = np.ascontiguousarray(q, dtype=float)
        flat = steps.reshape((-1,) + steps.shape[-2:])
        out = np.empty((flat.shape[0], nmax + 1))
        for c in range(flat.shape[0]):
            sums, counts = householder_window_sums_numba(flat[c], q, stride, nmax)
            out[c] = sums / counts
        return out.reshape(steps.shape[:-2] + (nmax + 1,))

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

    @property
    def haar_step_probability(self) -> float:
        return float(self.p)

    step_ndim: ClassVar[int] = 0
    pathwise: ClassVar[bool] = False

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """Exact in law: a Haar step maps ``x`` to ``||x||`` times a fresh uniform unit vector (from ``xrng``),
        a lazy step is the identity.  Dense Haar matrices (float ``(..., d, d)``) are applied as matrices."""
        if step.dtype != bool:
            return StepLaw.apply(self, step, x, transpose=transpose)
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
        return StepLaw.route_scores(self, steps, q, keys, xrng=xrng)

    def _as_dense(self) -> StepLaw:
        """The same steps seen as dense matrices (a view for transport, ``step_ndim = 2``)."""
        return _DenseView(d=self.d)

    def transported_queries(self, steps, q, xrng):
        from ..engine.transport_reference import position_to_route

        fresh = uniform_sphere(xrng, (len(steps),), self.d) * np.linalg.norm(q)
        return haar_law_queries(position_to_route(np.asarray(steps, dtype=bool)), q, fresh[::-1])[::-1]

    def transported_sum(self, steps, weights, values, xrng):
        from ..engine.transport_reference import position_to_route

        L = len(steps)
        fresh = uniform_sphere(xrng, (L,), self.d)
        return haar_law_sum(position_to_route(np.asarray(steps, dtype=bool)), weights[::-1], values[::-1],
                            fresh=lambda n: fresh[L - 1 - n])

    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """The exact joint law over the route lengths: between consecutive ``n_{k−1} < n_k`` a Haar step
        occurs with probability ``1 − (1−p)^{n_k − n_{k−1}}``, and then ``qᵀP k`` is a fresh
        ``||q||·||k||``-scaled Haar coordinate, else it is unchanged (``qᵀk`` before any Haar step)."""
        from ..engine.sampling import haar_coordinates

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

    # -- attention sweep and overlap chain (transfer, far-mass-growth) -------------------------
    def walk_block(self, steps, u, *, xrng=None, norm: float | None = None):
        """Exact in law: at a Haar step the vector becomes its norm (``norm`` where given) times a fresh uniform unit
        vector, drawn for the whole block at once after the steps; a lazy step keeps it.  Dense Haar matrices:
        the generic walk."""
        if self._dense_steps(steps):
            return self._as_dense().walk_block(steps, u)
        if xrng is None:
            raise ValueError("a Haar-step flag is applied in law: pass xrng")
        xp = namespace_of(u)
        lead = u.shape[:-1]
        m = steps.shape[len(lead)]
        sphere = uniform_sphere(xrng, steps.shape, self.d, xp)
        fresh = float(norm) * sphere if norm is not None else \
            sphere * xp.linalg.norm(u, axis=-1, keepdims=True)[..., None, :]
        U = xp.empty(lead + (m, self.d))
        for t in range(m):
            U[..., t, :] = u
            u = xp.where(steps[..., t, None], fresh[..., t, :], u)
        return U, u

    def overlap_transition(self, nodes, basis, n_quad: int = 24):
        """Stay with probability ``1 − p``, else a fresh Haar coordinate (:func:`stylized.theory.weight_laws.haar_transition`)."""
        from ..theory.weight_laws import haar_transition

        return haar_transition(self.d, float(self.p), nodes, basis, n_quad)

    def overlap_law(self, q, n: int, h: float):  # the law of qᵀP_n q (far-retrieval)
        """Exact: an atom ``s = |q|²`` of weight ``(1 − p)ⁿ`` (no Haar step yet), else a ``|q|²``-scaled Haar
        coordinate binned on ``hℤ`` (:func:`stylized.theory.overlap_laws.haar_bins`; ``|q| = 1`` expected)."""
        from ..theory.overlap_laws import haar_bins

        atom = (1.0 - self.p) ** int(n)
        pts, w = haar_bins(self.d, h)
        return np.r_[pts, 1.0], np.r_[(1.0 - atom) * w, atom], "closed form"

    # -- in-context windows (mixing) -------------------------------------------------------------
    def context_overlaps(self, steps, q, nmax: int, *, stride: int = 1, xrng=None, backend: str = "numpy"):
        """The exact law per query for a unit ``q`` (:func:`stylized.engine.scores.haar_window_sums`): ``qᵀ P_{i−n→i} q
        = qᵀq`` until the first Haar step back from ``i``, then a fresh Haar coordinate at every Haar step;
        ``xrng`` (the namespace's Generator) draws them.  Dense Haar matrices: the generic walk."""
        if self._dense_steps(steps):
            return self._as_dense().context_overlaps(steps, q, nmax, stride=stride, xrng=xrng, backend=backend)
        from ..engine.scores import haar_window_sums

        if not 0 <= nmax <= steps.shape[-1] - 1:
            raise ValueError(f"nmax must lie in [0, L − 1] = [0, {steps.shape[-1] - 1}], got {nmax}")
        if xrng is None:
            raise ValueError("a Haar-step flag is applied in law: pass xrng")
        q = np.asarray(q, dtype=float)
        if abs(float(q @ q) - 1.0) > 1e-9:
            raise ValueError(f"the exact Haar-step law of qᵀ P q here needs a unit q, got ||q||² = {float(q @ q)!r}")
        sums, counts = haar_window_sums(steps, xrng, self.d, stride, nmax, float(q @ q))
        return sums / namespace_of(sums).asarray(counts)

    # -- score chains (score-gap, haar-law) --------------------------------------------------
    def score_chains(self, N: int, size: int, seed, q, k, backend: str = "numba"):
        """Real steps: each Haar step a full Haar matrix (Householder QR of Gaussian normals, applied unstored),
        by the counter-stream kernel (``numba``) or its twin (:func:`stylized.engine.score_chains.haar_chains`)."""
        from ..engine.score_chains import haar_chains

        return haar_chains(q, k, int(N), int(size), seed, backend, float(self.p))

    def unmixed_probability(self, n: int) -> float:
        """``(1 − p)ⁿ``: no Haar step in ``n`` steps, so ``P_n = I`` (``0`` for Haar)."""
        return (1.0 - self.p) ** n

    @property
    def spectral_gap(self) -> float:
        """``γ = p`` (closed form; ``1`` for Haar)."""
        return float(self.p)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.random(tuple(shape)) < self.p

    # -- value transports and route mixing (value checks: value-incoherence … value-independent-stream) --
    @property
    def mixes_in_one_step(self) -> bool:
        """Haar (``p = 1``): every step maps ``x`` to ``||x||`` times a fresh uniform unit vector."""
        return self.p == 1.0

    def pathwise_steps(self, xrng, shape: tuple, xp=np):
        """Dense steps: the Haar-step flags (:meth:`sample`), then a Haar matrix for each flag drawn with the
        same ``xrng`` (:func:`~stylized.core.step_ops.orthogonal_dense`: LAPACK QR on NumPy, Gram–Schmidt on
        another namespace), the identity elsewhere."""
        shape = tuple(int(x) for x in shape)
        mask = self.sample(xrng, shape, xp)
        mats = xp.broadcast_to(xp.eye(self.d), shape + (self.d, self.d)).copy()
        k = int(mask.sum())
        if k:
            mats[mask] = orthogonal_dense(xrng, (k,), self.d, xp=xp, method="qr" if xp is np else "gram-schmidt")
        return mats

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
class _DenseView(StepLaw):
    """Dense ``d × d`` steps already drawn (dense Haar matrices): the generic transport."""

    law_name: ClassVar[str] = "dense-steps"
