"""The step-law protocol: a law of i.i.d. steps ``M_t`` defines how to draw them; the base does the rest.

In the style of :class:`scipy.stats.rv_continuous`, a law subclasses :class:`StepLaw` and defines one
method, :meth:`StepLaw.sample` (``shape + (d, d)`` matrices in any array namespace).  Every other
method works through a generic fallback, and a law overrides a method only where it knows something
exact or faster:

========================  =================================================  ===========================
method / attribute        generic fallback                                    built-in overrides
========================  =================================================  ===========================
``mean()``                none: the theory is *estimated* (Monte Carlo)       closed forms of ``E[M]``
``estimated_mean()``      batch means of ``sample`` with an interval          —
``spectral_gap``          ``γ = 1 − ||E[M]||_op`` (exact or estimated)         closed forms
``mean_overlap(q, n)``    ``qᵀ E[M]ⁿ q``                                      per-plane ``Re χ_bⁿ``
``apply(step, x)``        ``M x`` (or ``Mᵀ x``) by ``einsum``                 reflections, plane angles
``route_queries``         ``u_n = m_nᵀ u_{n−1}`` by :meth:`apply`             accumulated angles
``route_sum``             Horner, ``r ← a_n v_n + m_{n+1} r``                 one rotation pass
``walk_scores``           ``qᵀ P_n k`` on fresh draws, block by block          angle sums, rank-one updates
``dense(draws)``          the draws themselves                                 structured → dense
========================  =================================================  ===========================

Declared capabilities (class attributes) replace every test of a law's name or kind:
``orthogonal`` (``MᵀM = I``; a contraction declares ``False``), ``isotropic`` (the law of ``M`` is
invariant under conjugation by ``O(d)``, so ``E[M] = (1 − γ) I`` and after mixing a transported unit
vector is uniform on ``S^{d−1}``), ``planes`` (commuting SO(2) planes with characteristic values
``χ_b``; such a law also defines :meth:`chi`), ``step_ndim`` (trailing axes of one structured draw:
``2`` dense, ``1`` a vector such as a reflection or plane angles, ``0`` a flag), ``pathwise`` (``False``
when a draw fixes the step only in law, as the Haar-step flag does: :meth:`apply` then needs ``xrng``).

Example: the smallest user law, a Cayley transform of a Gaussian skew matrix

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Cayley(StepLaw):
...     d: int
...     def sample(self, xrng, shape, xp=np):
...         g = xrng.standard_normal(tuple(shape) + (self.d, self.d))
...         a = (g - xp.swapaxes(g, -1, -2)) / 2
...         eye = xp.eye(self.d)
...         return xp.linalg.solve(eye + a, eye - a)
>>> law = Cayley(d=4)
>>> law.theory_kind.startswith("estimated (Monte Carlo, n = ")
True
>>> 0.0 < law.spectral_gap < 1.0
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..core._broadcast import check
from ..core.backend import namespace_of
from ..core.counter_rng import as_generator, reference_seed
from ..core.estimators import t_half_width
from .check_hooks import AttentionSweepHooks, ContextWindowHooks, OverlapLawHooks, ScoreChainHooks, ValueTransportHooks
from .law_type import StepLawType

__all__ = ["StepLaw", "MeanEstimate", "MEAN_SAMPLES", "law_label", "check_dimension"]

MEAN_SAMPLES = 20_000
"""Draws behind an estimated ``E[M]`` (:meth:`StepLaw.estimated_mean`)."""

_MEAN_BATCHES = 50


@dataclass(frozen=True)
class MeanEstimate:
    """A Monte Carlo ``E[M]``: the mean of ``n`` draws, and a 95% bound ``r`` on ``||Ê − E[M]||_op``.

    ``r`` is the 95% quantile of a multiplier bootstrap over ``batches`` batch means (for an isotropic
    law, ``E[M] = c·I`` is estimated through ``c = tr E[M]/d`` and ``r`` is a Student-t half-width), so
    ``| ||Ê||_op − ||E[M]||_op | ≤ r`` and ``|γ̂ − γ| ≤ r`` at that level.
    """

    value: np.ndarray
    radius: float
    n: int
    batches: int

    @property
    def op_norm(self) -> float:
        return float(np.linalg.norm(self.value, 2))

    @property
    def gap_interval(self) -> tuple[float, float]:
        g = 1.0 - self.op_norm
        return max(0.0, g - self.radius), min(1.0, g + self.radius)


def law_label(cls: type) -> str:
    """``CayleyLaw`` → ``cayley-law``: the default name of a law class."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()


@dataclass(frozen=True)
class StepLaw(ScoreChainHooks, ContextWindowHooks, AttentionSweepHooks, ValueTransportHooks, OverlapLawHooks, StepLawType):
    """A law of i.i.d. steps ``M_t`` in dimension ``d``: subclass it and define :meth:`sample`.

    Everything else (mean, gap ``γ``, window, ``qᵀE[M]ⁿq``, transport along routes, score walks)
    falls back to generic code that calls :meth:`sample` and :meth:`apply`; the dense route product
    is the oracle.  A law that knows ``E[M]`` exactly defines :meth:`mean`, which is then the theory
    every check compares with (so a wrong ``mean()`` makes the checks fail); without it the theory
    is estimated by Monte Carlo and labelled so (:attr:`theory_kind`).

    Parameters
    ----------
    d : int
        Dimension of the steps (``d ≥ 2``); a subclass adds its own parameters as dataclass fields.

    Examples
    --------
    A law with a closed-form mean: steps ``−I`` or ``I`` with probability ``p`` and ``1 − p``, so
    ``E[M] = (1 − 2p) I`` and ``γ = 2p``:

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Flip(StepLaw):
    ...     d: int
    ...     p: float = 0.25
    ...     def sample(self, xrng, shape, xp=np):
    ...         sign = xp.where(xrng.random(tuple(shape)) < self.p, -1.0, 1.0)
    ...         return sign[..., None, None] * xp.eye(self.d)
    ...     def mean(self):
    ...         return (1 - 2 * self.p) * np.eye(self.d)
    >>> law = Flip(d=3)
    >>> law.theory_kind, round(law.spectral_gap, 3)
    ('closed form', 0.5)
    """

    d: int

    law_name: ClassVar[str] = ""
    orthogonal: ClassVar[bool] = True
    isotropic: ClassVar[bool] = False
    planes: ClassVar[bool] = False
    step_ndim: ClassVar[int] = 2
    pathwise: ClassVar[bool] = True  # apply(step, x) is a function of the draw (False: applied in law, needs xrng)
    # -- markov-tokens: steps independent along the step axis (False: a chain, E[P_n] ≠ E[M]ⁿ; see markov_tokens) --
    iid: ClassVar[bool] = True

    # -- declared structure that exact samplers and kernels ask for (None: the law has none) ----------
    @property
    def omegas(self) -> np.ndarray | None:
        """Half-widths ``ω_b`` of i.i.d. uniform SO(2) plane angles ``θ_b ~ U(−ω_b, ω_b)`` (fused counter kernel)."""
        return None

    @property
    def haar_step_probability(self) -> float | None:
        """``p`` when each step is a Haar(O(d)) matrix with probability ``p`` and ``I`` otherwise (exact far route)."""
        return None

    # -- identity ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The law's name (``law_name``, else the class name in kebab case)."""
        return type(self).law_name or law_label(type(self))

    # -- drawing ------------------------------------------------------------------------------
    def sample(self, xrng, shape: tuple, xp=np):
        """Steps of shape ``shape`` plus the law's trailing axes, drawn with the Generator ``xrng`` of the
        array namespace ``xp`` (NumPy, or CuPy).  A user law returns ``shape + (d, d)`` matrices."""
        raise NotImplementedError(f"{type(self).__name__} must define sample(xrng, shape, xp=np)")

    def rvs(self, size: int, random_state=None):
        """``size`` steps in the law's structured form (NumPy): :meth:`sample` with shape ``(size,)``."""
        size = check("size", size, 0, integer=True, scalar=True)
        return self.sample(as_generator(random_state), (size,))

    def dense(self, draws, random_state=None) -> np.ndarray:
        """Dense matrices ``M_t`` ``(n, d, d)`` of structured ``draws`` (a dense law's draws are already so)."""
        return np.asarray(draws, dtype=float)

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``M x`` (or ``Mᵀ x``) for a batch: ``step`` ``(..., <step axes>)``, ``x`` ``(..., d)``.

        ``xrng`` is used only by laws whose structured draw fixes the step in law rather than pathwise
        (the Haar-step flag: a Haar step maps ``x`` to ``||x||`` times a fresh uniform unit vector).
        """
        if transpose:  # xᵀM as a batched row-vector product: BLAS-backed, and the same sums as Mᵀx
            return (x[..., None, :] @ step)[..., 0, :]
        return (step @ x[..., None])[..., 0]

    # -- the theory: exact where the law knows it, estimated otherwise -------------------------
    def mean(self) -> np.ndarray:
        """The exact mean step ``E[M]`` (``d × d``); a law without a closed form does not define it."""
        raise NotImplementedError(f"{self.name} has no closed-form E[M]")

    @property
    def has_exact_mean(self) -> bool:
        """Whether the law defines :meth:`mean` (its own closed form)."""
        return type(self).mean is not StepLaw.mean

    @cached_property
    def estimated_mean(self) -> MeanEstimate:
        """``E[M]`` from :data:`MEAN_SAMPLES` draws of the law's own stream, with a 95% radius (cached)."""
        rng = np.random.default_rng(reference_seed("mean"))
        n_b = MEAN_SAMPLES // _MEAN_BATCHES
        eye = np.eye(self.d)
        batch_means = np.empty((_MEAN_BATCHES, self.d, self.d))
        for b in range(_MEAN_BATCHES):
            steps = self.sample(rng, (n_b,), np)
            if self.step_ndim == 2:  # dense draws: the matrices themselves
                batch_means[b] = np.asarray(steps, dtype=float).mean(0)
            else:  # structured draws: M_t applied to the basis, column by column
                batch_means[b] = self.apply(steps[:, None], np.broadcast_to(eye, (n_b, self.d, self.d))).mean(0).T
        if self.isotropic:  # E[M] = c·I is declared: estimate the scalar c = tr E[M]/d
            c = np.trace(batch_means, axis1=1, axis2=2) / self.d
            radius = float(t_half_width(c))
            return MeanEstimate(float(c.mean()) * eye, radius, n_b * _MEAN_BATCHES, _MEAN_BATCHES)
        value = batch_means.mean(0)
        g = np.random.default_rng(reference_seed("mean", 0)).standard_normal((400, _MEAN_BATCHES))
        err = np.einsum("rb,bij->rij", g, batch_means - value) / _MEAN_BATCHES
        radius = float(np.quantile(np.linalg.norm(err, ord=2, axis=(1, 2)), 0.95))
        return MeanEstimate(value, radius, n_b * _MEAN_BATCHES, _MEAN_BATCHES)

    def theory_mean(self) -> np.ndarray:
        """``E[M]``: :meth:`mean` where the law defines it, else :attr:`estimated_mean`'s value."""
        return self.mean() if self.has_exact_mean else self.estimated_mean.value

    @property
    def theory_kind(self) -> str:
        """``"closed form"``, or ``"estimated (Monte Carlo, n = …)"`` when ``E[M]`` is estimated."""
        return "closed form" if self.has_exact_mean else f"estimated (Monte Carlo, n = {self.estimated_mean.n})"

    @property
    def mean_radius(self) -> float:
        """A 95% bound on ``||Ê − E[M]||_op`` (``0`` for a closed form)."""
        return 0.0 if self.has_exact_mean else self.estimated_mean.radius

    @property
    def spectral_gap(self) -> float:
        """``γ = 1 − ||E[M]||_op``."""
        return float(1.0 - np.linalg.norm(self.theory_mean(), ord=2))

    @property
    def gap_interval(self) -> tuple[float, float]:
        """``γ`` with its 95% interval (a point for a closed form)."""
        g = self.spectral_gap
        return (g, g) if self.has_exact_mean else self.estimated_mean.gap_interval

    def mixing_window(self, eps: float) -> float:
        """``W(ε) = ⌈ln ε / ln(1 − γ)⌉``: route length after which ``||E[P_n]||_op ≤ ε`` (``inf`` when ``γ = 0``)."""
        from ..theory.bounds import mixing_window

        return mixing_window(max(0.0, min(1.0, self.spectral_gap)), eps)

    def mean_power(self, n: int) -> np.ndarray:
        """``E[P_n] = E[M]ⁿ`` for i.i.d. steps (dense ``d × d``); ``n`` an integer route length ``≥ 0``."""
        return np.linalg.matrix_power(self.theory_mean(), check_route_length(n))

    def mean_overlap(self, q, n):
        """``qᵀ E[M]ⁿ q = E[qᵀ P_n q]`` for route length(s) ``n`` (an int or an array of them)."""
        q = np.asarray(q, dtype=float)
        ns = np.ravel(n).astype(np.int64)
        out = np.empty(ns.size)
        order = np.argsort(ns, kind="stable")
        m, u, at = self.theory_mean(), q.copy(), 0
        for idx in order:  # u = (E[M]ᵀ)ⁿ q, walked once through the sorted lengths
            for _ in range(int(ns[idx]) - at):
                u = m.T @ u
            at = int(ns[idx])
            out[idx] = q @ u
        return float(out[0]) if np.ndim(n) == 0 else out.reshape(np.shape(n))

    def mean_overlap_radius(self, q, n):
        """A 95% bound on the error of :meth:`mean_overlap` from the estimated ``E[M]`` (``0`` when exact):
        ``||q||² · n · (||Ê|| + r)^{n−1} · r``, capped at ``2||q||²``."""
        r = self.mean_radius
        qq = float(np.dot(np.ravel(q), np.ravel(q)))
        n_arr = np.asarray(n, dtype=float)
        if r == 0.0:
            return np.zeros_like(n_arr) if np.ndim(n) else 0.0
        a = min(1.0, self.estimated_mean.op_norm + r)
        out = np.minimum(qq * n_arr * a ** np.maximum(n_arr - 1.0, 0.0) * r, 2.0 * qq)
        return float(out) if np.ndim(n) == 0 else out

    # -- transport along routes (by route length: steps[..., n] = m_n, row 0 unused) ---------------
    def _route_step(self, steps, n: int):
        return steps[(Ellipsis, n) + (slice(None),) * self.step_ndim]

    def prepare_routes(self, steps):
        """Anything the law precomputes once for several transports on the same routes (``None`` here)."""
        return None

    def route_queries(self, steps, q, *, xrng=None, prepared=None):
        """``u_n = P_nᵀ q`` for ``n = 0 … N−1``: steps ``(..., N, <step axes>)`` → ``(..., N, d)``.

        Dense float64 NumPy steps of a law that keeps the base :meth:`apply` run through the compiled kernel
        :func:`stylized.engine.dense_kernels.dense_route_queries` (its NumPy twin is the loop below)."""
        xp = namespace_of(steps)
        if (self.step_ndim == 2 and type(self).apply is StepLaw.apply and isinstance(steps, np.ndarray)
                and steps.dtype == np.float64 and steps.ndim >= 3 and steps.shape[-3] > 0 and np.ndim(q) == 1):
            from ..engine.dense_kernels import dense_route_queries

            return dense_route_queries(steps, q)
        lead = steps.shape[:steps.ndim - self.step_ndim - 1]
        N = steps.shape[len(lead)]
        out = xp.empty(lead + (N, self.d))
        u = xp.broadcast_to(xp.asarray(q, dtype=float), lead + (self.d,)).copy()
        for n in range(N):
            if n:
                u = self.apply(self._route_step(steps, n), u, transpose=True, xrng=xrng)
            out[..., n, :] = u
        return out

    def route_scores(self, steps, q, keys, *, xrng=None, prepared=None):
        """``qᵀ P_n k_n`` for every route: ``keys`` ``(..., N, d)`` → ``(..., N)``."""
        xp = namespace_of(keys)
        return xp.einsum("...nd,...nd->...n", self.route_queries(steps, q, xrng=xrng, prepared=prepared), keys)

    def route_sum(self, steps, weights, values, *, xrng=None, prepared=None):
        """``Σ_n a_n P_n v_n`` for every route: Horner from the far end, ``r ← a_n v_n + m_{n+1} r``."""
        N = weights.shape[-1]
        r = weights[..., N - 1, None] * values[..., N - 1, :]
        for n in range(N - 2, -1, -1):
            r = weights[..., n, None] * values[..., n, :] + self.apply(self._route_step(steps, n + 1), r, xrng=xrng)
        return r

    def transported_queries(self, steps, q, xrng):
        """``U[j] = P_{j→i}ᵀ q`` for every source ``j`` of the query at ``i = L−1`` (``steps`` by position)."""
        from ..engine.transport_reference import position_to_route

        return self.route_queries(position_to_route(np.asarray(steps, dtype=float)), q, xrng=xrng)[::-1]

    def transported_sum(self, steps, weights, values, xrng):
        """``Σ_j α_j P_{j→i} v_j`` for the query at ``i = L−1`` (``steps`` by position)."""
        from ..engine.transport_reference import position_to_route

        return self.route_sum(position_to_route(np.asarray(steps, dtype=float)), weights[::-1], values[::-1],
                              xrng=xrng)

    # -- scores along fresh chains -------------------------------------------------------------
    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """``(size, len(ns))`` draws of ``qᵀ P_n k`` at increasing route lengths ``ns`` along one chain per
        row, walking ``u_n = m_nᵀ u_{n−1}`` from ``u_0 = q`` on fresh draws (``k`` defaults to ``q``).

        Draws are taken ``block`` steps at a time (default: as many as keep a block of dense steps within
        about 2²² elements), so memory is ``O(size·block·d²)`` however long the route.
        """
        ns, qh, kh, out, want = self._walk_frame(ns, size, xp, q, k)
        kd = xp.asarray(kh)
        u = xp.broadcast_to(xp.asarray(qh), (size, self.d)).copy()
        per_step = size * max(1, self.d) ** self.step_ndim
        block = max(1, (1 << 22) // per_step) if block is None else int(block)
        n, nmax = 0, max(ns) if ns else 0
        while n < nmax:
            m = min(block, nmax - n)
            steps = self.sample(xrng, (size, m), xp)
            for t in range(m):
                u = self.apply(steps[(slice(None), t) + (slice(None),) * self.step_ndim], u, transpose=True,
                               xrng=xrng)
                n += 1
                if n in want:
                    out[:, want[n]] = u @ kd
        return out

    def _walk_frame(self, ns, size: int, xp, q, k):
        """The start every :meth:`walk_scores` shares: the route lengths as ints, ``q`` and ``k`` (default ``q``)
        as host arrays, the ``(size, len(ns))`` output with its ``n = 0`` column (``qᵀk``) filled, and the column
        of each length."""
        ns = [int(n) for n in np.ravel(ns)]
        qh = np.asarray(q, dtype=float)
        kh = qh if k is None else np.asarray(k, dtype=float)
        out = xp.empty((size, len(ns)))
        want = {n: c for c, n in enumerate(ns)}
        if 0 in want:
            out[:, want[0]] = float(qh @ kh)
        return ns, qh, kh, out, want

    def fast_overlaps(self, ns, size: int, rng, backend: str, q):
        """A compiled ``qᵀ P_n q`` sampler for ``backend``, or ``None`` (then :meth:`walk_scores` is used)."""
        return None


def _is_int(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, np.integer))


def check_route_length(n) -> int:
    """``n`` as an ``int`` route length ``≥ 0`` (a ``ValueError``/``TypeError`` naming ``n`` otherwise: ``1.5``,
    NaN, a bool, a string, a complex number)."""
    return check("n (route length)", n, 0, integer=True, scalar=True)


def check_dimension(d) -> int:
    """``d`` as an ``int`` in ``[2, 65536]``, or a ValueError naming ``d``."""
    from .family_args import MAX_DIM

    if not _is_int(d) or not 2 <= d <= MAX_DIM:
        raise ValueError(f"d must be an integer in [2, {MAX_DIM}], got {d!r}")
    return int(d)

