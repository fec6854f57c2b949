"""The step-law hooks each check family asks a law for, with their generic fallbacks.

:class:`~stylized.laws.base.StepLaw` inherits these mixins; a built-in law overrides a hook where it has an
exact law or a fast kernel.  One mixin per check family, so each check's contract reads in one place:

* :class:`ScoreChainHooks` — score chains and post-mixing laws (score-gap, haar-law);
* :class:`ContextWindowHooks` — in-context windows (mixing);
* :class:`AttentionSweepHooks` — attention sweep and overlap chain (transfer, far-mass-growth);
* :class:`ValueTransportHooks` — value transports and route mixing (value checks: value-incoherence … value-independent-stream);
* :class:`OverlapLawHooks` — the law of the overlap qᵀP_n q (far-retrieval).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.backend import namespace_of
from ..core.counter_rng import as_generator
from ..core.step_ops import stride_grid_sums

__all__ = ["ScoreChainHooks", "ContextWindowHooks", "AttentionSweepHooks", "ValueTransportHooks", "OverlapLawHooks"]


class ScoreChainHooks:
    """Hooks of score chains and post-mixing laws (score-gap, haar-law)."""

    def score_chains(self, N: int, size: int, seed, q, k, backend: str = "numba"):
        """``(size, N)`` host array of ``s_n = qᵀ P_n k``, ``n = 0 … N−1``: one chain of real steps per row.

        Generic: :meth:`walk_scores` on the law's own draws, with a Generator seeded from ``seed`` (NumPy
        for ``numpy`` and ``numba``, the device's for ``cupy``).  The built-ins override it with their fused
        counter-stream kernels and namespace twins (:mod:`stylized.engine.score_chains`).
        """
        from ..core.backend import array_namespace, to_numpy, xp_generator

        xp = array_namespace(backend)
        xrng = xp_generator(backend, as_generator(np.random.default_rng(seed)))
        return to_numpy(self.walk_scores(np.arange(int(N)), int(size), xrng, xp, q, k))

    def unmixed_probability(self, n: int) -> float | None:
        """``P(P_n = I)``: the weight of the atom ``s = qᵀk`` of a score transported ``n`` steps, or ``None``
        where the law has no such atom (a lazy law, a step that is the identity with positive probability,
        declares it)."""
        return None

    @property
    def post_mixing_class(self) -> type:
        """The score-law class of a far score ``qᵀ P_n k`` once the route has mixed, by declared capability:
        :class:`~stylized.theory.score_laws.HaarCoordinate` for an isotropic orthogonal law (``P_n k/|k|`` uniform on
        ``S^{d−1}``), else :class:`~stylized.theory.score_reference.EstimatedScoreLaw` (a Monte Carlo reference).  Planes
        laws whose angles equidistribute override it (:class:`~stylized.theory.score_laws.UniformPhaseSum`)."""
        if self.isotropic and self.orthogonal and self.mixes_to_uniform:
            from ..theory.score_laws import HaarCoordinate

            return HaarCoordinate
        from ..theory.score_reference import EstimatedScoreLaw

        return EstimatedScoreLaw

    @property
    def post_mixing_law(self) -> str:
        """The name of :attr:`post_mixing_class` (``"haar"``, ``"uniform-phase"``, ``"estimated"``): a label for rows."""
        return self.post_mixing_class.name

    def far_score_law(self, q, k):
        """The law of ``s = qᵀ P_n k`` once the route has mixed, as a score law of :mod:`stylized.theory.score_laws`
        (``cdf``, ``sf``, ``mgf``, ``ks_test``, ``tail_bound``, ``theory_kind``): :attr:`post_mixing_class` built
        for this law, ``q`` and ``k`` (its ``of_law``)."""
        return self.post_mixing_class.of_law(self, np.asarray(q, dtype=float), np.asarray(k, dtype=float))


class ContextWindowHooks:
    """Hooks of in-context windows (mixing)."""

    def context_plan(self, L: int, window: float, backend: str = "numpy") -> tuple[int, int, int]:
        """How :meth:`context_overlaps` measures contexts of length ``L``: ``(nmax, stride, batch)``.

        Route lengths ``n = 0 … nmax`` with ``nmax = min(L − 1, max(8, ⌈3W⌉))`` (``W`` the mixing
        window; ``L − 1`` when ``W = ∞``), queries every ``stride = max(1, min(L, ⌊nmax/4⌋))`` positions,
        ``batch`` contexts per call (one on the host, keeping NumPy's stream; as many as fit about
        ``XP_CHUNK_ELEMENTS`` step elements on cupy).
        """
        from ..engine.sampling import XP_CHUNK_ELEMENTS

        nmax = L - 1 if not math.isfinite(window) else int(min(L - 1, max(8, math.ceil(3 * window))))
        stride = max(1, min(L, nmax // 4))
        per_context = L * max(1, self.d) ** max(1, self.step_ndim)
        return nmax, stride, 1 if backend != "cupy" else max(1, XP_CHUNK_ELEMENTS // per_context)

    def context_overlaps(self, steps, q, nmax: int, *, stride: int = 1, xrng=None, backend: str = "numpy"):
        """Per-context mean of ``qᵀ P_{i−n→i} q`` over the queries ``i = L−1, L−1−stride, …`` with ``i ≥ n``.

        ``steps`` ``(..., L, <step axes>)`` by position (leading axes: independent contexts), in the
        namespace of the result; ``P_{i−n→i} = M_i ⋯ M_{i−n+1}``.  Generic walk, all queries at once:
        ``u_{n+1} = M_{i−n}ᵀ u_n`` from ``u_0 = q`` by :meth:`apply` (as :meth:`route_queries` does), and
        ``qᵀ P_{i−n→i} q = q·u_n``.  Returns ``(..., nmax+1)`` for ``n = 0 … nmax``.
        """
        xp = namespace_of(steps)
        ax = steps.ndim - self.step_ndim - 1  # the position axis
        L = steps.shape[ax]
        if not 0 <= nmax <= L - 1:
            raise ValueError(f"nmax must lie in [0, L − 1] = [0, {L - 1}], got {nmax}")
        sums, counts = stride_grid_sums(lambda step, U: self.apply(step, U, transpose=True, xrng=xrng),
                                        steps, q, nmax, stride, ax, self.d)
        return sums / xp.asarray(counts)


class AttentionSweepHooks:
    """Hooks of attention sweep and overlap chain (transfer, far-mass-growth)."""

    def walk_block(self, steps, u, *, xrng=None, norm: float | None = None):
        """A batch of vectors through a block of consecutive steps: ``u_{t+1} = m_tᵀ u_t`` from ``u_0 = u``.

        ``steps`` ``(..., m, <step axes>)`` and ``u`` ``(..., d)`` in one namespace.  Returns ``(U, u_m)`` with
        ``U[..., t, :] = u_t``, the vector before step ``t`` (``t < m``).  ``norm`` is the common norm of the
        rows of ``u`` when the caller knows it (orthogonal steps keep it); a law applied in law scales its fresh
        directions by it.  Generic: :meth:`apply`, step by step.
        """
        xp = namespace_of(u)
        lead = u.shape[:-1]
        m = steps.shape[len(lead)]
        U = xp.empty(lead + (m, self.d))
        for t in range(m):
            U[..., t, :] = u
            u = self.apply(steps[(slice(None),) * len(lead) + (t,)], u, transpose=True, xrng=xrng)
        return U, u

    def context_sweep(self, L: int, size: int, xrng, q, lam: float, D: int, target_n: int | None = None, xp=np,
                      backend: str = "numpy"):
        """``size`` contexts of one query at ``i = L−1``: near scores ``s_n = qᵀ P_n k_n`` (``n < D``, ``(size, D)``)
        and the far ``log Σ_{n≥D} e^{λ s_n}`` (``(size,)``), in the namespace ``xp`` with its Generator ``xrng``.

        Keys are uniform on ``S^{d−1}`` except ``k_{target_n} = q``.  Generic: the route walked back block by
        block with :meth:`walk_block` (:func:`stylized.engine.context_sweep.transport_context_xp`, memory ``O(size·L)``).
        """
        from ..engine.context_sweep import transport_context_xp

        return transport_context_xp(self, L, size, xrng, q, lam, D, target_n, xp)

    def fast_context_sweep(self, L: int, size: int, rng, q, lam: float, D: int, target_n: int | None, backend: str):
        """A fused kernel that draws and sweeps the contexts itself (keyed by one integer from the host ``rng``) for
        ``backend``, returning what :meth:`context_sweep` does, or ``None`` (then :meth:`context_sweep` is used)."""
        return None

    def fast_transported_queries(self, steps, q, backend: str):
        """A compiled :meth:`transported_queries` (``U[j] = P_{j→i}ᵀ q`` by position) for ``backend``, or ``None``."""
        return None

    def overlap_transition(self, nodes, basis, n_quad: int = 24):
        """The exact transition operator of the overlap chain ``t_n = qᵀ P_n q`` of an isotropic orthogonal law:
        ``K[i, j] = E ℓ_j(t')`` given ``t = nodes[i]`` (``basis(x)`` the interpolation basis ``ℓ_j`` at points ``x``),
        or ``None`` where the law has no closed form (then ``K`` is estimated from :meth:`overlap_step_draws`)."""
        return None

    def overlap_step_draws(self, size: int, xrng):
        """``size`` draws of ``(M₁₁, M₂₁)``, the top of the first column of ``M``: for an isotropic orthogonal law the
        overlap chain moves ``t → t·M₁₁ + √(1−t²)·M₂₁`` (``P_{n+1} = P_n M``, ``q = e₁``, ``P_nᵀq = t e₁ + √(1−t²) e₂``).
        Generic: :meth:`sample` and :meth:`apply` on ``e₁``."""
        steps = self.sample(xrng, (int(size),), np)
        e1 = np.zeros((int(size), self.d))
        e1[:, 0] = 1.0
        col = np.asarray(self.apply(steps, e1, xrng=xrng), dtype=float)
        return col[:, 0], col[:, 1]


class ValueTransportHooks:
    """Hooks of value transports and route mixing (value checks: value-incoherence … value-independent-stream)."""

    @property
    def pathwise_ndim(self) -> int:
        """Trailing axes of one step of :meth:`pathwise_steps`: :attr:`step_ndim`, or ``2`` (dense) for a
        law whose draws fix the steps only in law (``pathwise = False``)."""
        return self.step_ndim if self.pathwise else 2

    def pathwise_steps(self, xrng, shape: tuple, xp=np):
        """Steps ``shape + <axes>`` fixed pathwise: every transport along one drawn route applies the same
        ``M_t`` (what softmax weights ``∝ e^{λ qᵀP_n k_n}`` and the values ``P_n v_n`` they weigh need).

        The structured draws themselves (:meth:`sample`).  A law with ``pathwise = False`` (a flag applied
        in law) overrides this with dense steps; without an override it is refused.
        """
        if not self.pathwise:
            raise ValueError(f"family {self.name}: this check needs steps fixed pathwise; its draws are applied "
                             "in law (pathwise=False) and it defines no pathwise_steps")
        return self.sample(xrng, tuple(shape), xp)

    @property
    def has_pathwise_steps(self) -> bool:
        """Whether :meth:`pathwise_steps` can draw this law (pathwise draws, or an override)."""
        return self.pathwise or type(self).pathwise_steps is not ValueTransportHooks.pathwise_steps

    @property
    def mixes_in_one_step(self) -> bool:
        """Whether one step maps every vector ``x`` to ``||x||`` times a uniform unit vector on ``S^{d−1}``
        independent of the past (Haar), so the route directions ``P_n b̂``, ``n ≥ 1``, are i.i.d. uniform.
        Declared by a law that knows it (``False`` here)."""
        return False

    @property
    def mixes_to_uniform(self) -> bool:
        """Whether long routes carry a unit vector to the uniform law on its orbit: ``S^{d−1}`` for an isotropic
        law (declared by ``isotropic``), the torus of the planes for a planes law whose accumulated angles
        equidistribute (declared by that law; ``False`` for other planes laws, e.g. finite token tables)."""
        return self.isotropic


class OverlapLawHooks:
    """Hooks of the law of the overlap qᵀP_n q (far-retrieval)."""

    def sample_overlaps(self, ns, size: int, random_state=None, backend: str = "numba", q=None):
        """``size`` Monte Carlo chains of this law: ``(size, len(ns))`` draws of ``qᵀ P_n q`` (see
        :func:`stylized.engine.sampling.sample_overlaps`, which this calls; a simulated reference for the
        theories of laws without a one-dimensional chain)."""
        from ..engine.sampling import sample_overlaps

        return sample_overlaps(self, ns, size, random_state=random_state, backend=backend, q=q)

    def overlap_law(self, q, n: int, h: float):
        """The law of ``s_n = qᵀP_n q`` as a rule ``(points, weights, kind)`` with ``E g(s_n) ≈ Σ weights·g(points)``,
        or ``None`` where the law knows none (callers then estimate it from :meth:`walk_scores`).

        Generic: commuting planes (``planes``) whose angles have a continuous law (:meth:`folded_phase_cdf`)
        give the per-plane phase laws binned on ``hℤ`` and convolved (:func:`stylized.theory.overlap_laws.plane_phase_law`,
        ``"closed form"``); any other law ``None``.  ``q`` a unit vector, ``n ≥ 0``.
        """
        if not self.planes or not getattr(self, "iid", True):  # per-plane phases are sums of i.i.d. angles
            return None
        from ..theory.overlap_laws import plane_phase_law

        rule = plane_phase_law(self, np.asarray(q, dtype=float), int(n), float(h))
        return None if rule is None else (*rule, "closed form")
