"""Laws of the near and far attention weights and their Laplace transforms (what :mod:`stylized.theory.growth` integrates).

* **far** (:class:`FarLaw`): a far key uniform on ``S^{d−1}`` makes ``qᵀP_{j→i}k`` one Haar coordinate
  ``ξ`` (``(1+ξ)/2 ~ Beta((d−1)/2, (d−1)/2)``) for *any* orthogonal transport, so a far weight is
  ``X = e^{λξ}``: ``E X = μ = ₀F₁(; d/2; λ²/4)`` in closed form (:func:`stylized.theory.score_laws.haar_mgf`),
  ``E e^{−yX}`` and ``E[X e^{−yX}]`` by Gauss–Jacobi quadrature on the Beta law.
* **near chain** (:class:`IsotropicChain`): an aligned near key (``k = q``) scores ``λ t_n`` with
  ``t_n = qᵀP_n q``.  For an isotropic orthogonal step law (the law declares ``isotropic``: invariant under
  conjugation by ``O(d)``) ``t_n`` is a Markov chain on ``[−1, 1]`` from ``t_0 = 1``, moving
  ``t → t M₁₁ + √(1−t²) M₂₁``; its transition operator ``K`` acts on values at Chebyshev–Lobatto nodes and
  comes from the law (:meth:`StepLaw.overlap_transition`: Householder ``t' = t(1 − 2w_1²) − 2√(1−t²) w_1 w_2``
  by product Gauss–Jacobi quadrature, (lazy) Haar a fresh Haar coordinate with probability ``p``) or, for a
  law without a closed form, is *estimated* from :data:`OVERLAP_SAMPLES` draws of its one-step overlap law
  ``(M₁₁, M₂₁)`` (:meth:`StepLaw.overlap_step_draws`) in :data:`OVERLAP_BATCHES` batches, whose spread gives
  the estimate's own 95% radius (:func:`estimate_radius`).  ``E exp(−σ Σ_n c_n e^{λ t_n})`` is the backward
  recursion ``V_n = e^{−σ c_n e^{λt}} · K V_{n+1}``.  :class:`ReferenceChain`: the same interface from
  simulated reference chains of any law (SO(2) blocks, whose ``t_n`` is not a one-dimensional chain, and any
  law that declares neither isotropy nor planes).
* **SO(2) targets** (:func:`so2_overlap_mgf`): ``E e^{λ qᵀP_n q} = Π_b Σ_j I_j(λ||q_b||²) Re χ_b(j)^n``
  (Jacobi–Anger; exact, from the law's harmonics :meth:`chi_harmonic`).
* :func:`laplace_ratio_mean`: ``E[F/(F+N)] = ∫_0^∞ E[F e^{−σF}] E[e^{−σN}] dσ`` for independent ``F``,
  ``N``, a trapezoid rule in ``u = ln σ`` (:func:`sigma_grid`; smooth and fast-decaying at both ends, so
  the rule converges exponentially: ``h = 0.1`` agrees with ``h = 0.02`` to ~10⁻⁷).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np
from scipy import special

from ..core._broadcast import broadcasting, check, check_instance, check_shapes
from ..core.counter_rng import reference_seed
from ..core.estimators import t_half_width
from ..laws.law_type import StepLawType
from .score_laws import haar_mgf, jacobi_nodes

__all__ = ["FarLaw", "IsotropicChain", "ReferenceChain", "near_chain", "so2_overlap_mgf", "far_laplace_sum",
           "sigma_grid", "laplace_ratio_mean", "plane_harmonics", "estimate_radius", "householder_transition",
           "haar_transition", "OVERLAP_SAMPLES", "OVERLAP_BATCHES"]

OVERLAP_SAMPLES = 20_000
"""Draws of the one-step overlap law behind an estimated transition operator (:class:`IsotropicChain`)."""
OVERLAP_BATCHES = 10
"""Batches of those draws: one estimated operator each, their spread the estimate's radius."""


# ---------------------------------------------------------------------------------------
# the far law: X = e^{λξ}, ξ a Haar coordinate
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FarLaw:
    """(claims C3, C4, *derived here*) Law of one far weight ``X = s·e^{λξ}`` (``s = scale``, 1 in the model), ``ξ`` a Haar coordinate on ``S^{d−1}``.

    ``scale ≠ 1`` exists for mutation tests only (a far MGF off by a factor).
    """

    lam: float
    d: int
    scale: float = 1.0
    n_quad: int = 64

    def __post_init__(self):
        object.__setattr__(self, "lam", check("lam (λ)", self.lam, -1e8, 1e8, scalar=True))
        object.__setattr__(self, "d", check("d", self.d, 2, 2 * 10**9, integer=True, scalar=True))
        object.__setattr__(self, "scale", check("scale", self.scale, 0, lo_open=True, scalar=True))
        object.__setattr__(self, "n_quad", check("n_quad", self.n_quad, 1, 10**4, integer=True, scalar=True))

    @property
    def mean(self) -> float:
        """``μ = E X = ₀F₁(; d/2; λ²/4)`` (closed form)."""
        return self.scale * haar_mgf(self.lam, self.d)

    @property
    def second_moment(self) -> float:
        """``E X² = ₀F₁(; d/2; λ²)``."""
        return self.scale**2 * haar_mgf(2 * self.lam, self.d)

    def _x(self) -> tuple[np.ndarray, np.ndarray]:
        xi, w = jacobi_nodes(self.n_quad, (self.d - 3) / 2.0)
        return self.scale * np.exp(self.lam * xi), w

    def log_laplace(self, y: np.ndarray) -> np.ndarray:
        """``log E e^{−yX}`` for ``y ≥ 0`` (any shape), accurate also where ``yμ ≪ 1``."""
        return self.laplace_pair(y)[0]

    def tilted_mean(self, y: np.ndarray) -> np.ndarray:
        """``E[X e^{−yX}] / E[e^{−yX}]`` (the mean of ``X`` under the exponentially tilted law)."""
        return self.laplace_pair(y)[1]

    def laplace_pair(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log E e^{−yX}, E[X e^{−yX}]/E e^{−yX})`` for ``y ≥ 0`` (any shape), one pass over the nodes."""
        X, w = self._x()
        y = np.asarray(y, dtype=float)[..., None]
        em1 = np.expm1(-y * X)
        with np.errstate(divide="ignore"):  # log 0 = −inf where every e^{−yX} underflows
            lp = np.log1p(np.maximum(em1 @ w, -1.0))
        e = np.exp(-y * (X - X[0]))  # shifted by the smallest node: no 0/0 where e^{−yX} underflows
        return lp, (e @ (w * X)) / (e @ w)


def far_laplace_sum(far: FarLaw, c: np.ndarray, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(claim C4, *derived here*) For ``F = Σ_n c_n X_n`` (i.i.d. ``X_n ~ far``): cumulative ``log E e^{−σF}`` and ``E[F e^{−σF}]/E e^{−σF}``.

    Returns two arrays ``(len(c), len(sig))``: row ``k`` holds the sums over ``n ≤ k``; ``c ≥ 0`` and ``σ ≥ 0``
    are 1-D arrays.
    """
    check_instance("far", far, FarLaw)
    c, sig = check("c", c, 0, ndim=1), check("sig (σ)", sig, 0, ndim=1)
    lp, tl = far.laplace_pair(np.outer(np.asarray(c, dtype=float), sig))
    return np.cumsum(lp, axis=0), np.cumsum(c[:, None] * tl, axis=0)


def sigma_grid(lo: float, hi: float, h: float = 0.05) -> tuple[np.ndarray, float]:
    """Nodes ``σ = e^u`` of the trapezoid rule in ``u`` over ``[ln lo, ln hi]`` and the step ``h``."""
    u = np.arange(math.log(lo), math.log(hi) + h, h)
    return np.exp(u), h


def laplace_ratio_mean(log_psi_far: np.ndarray, tilt_far: np.ndarray, log_psi_near: np.ndarray,
                        sig: np.ndarray, h: float) -> np.ndarray:
    """(claim C4, *derived here*) ``E[F/(F+N)] = ∫ E[F e^{−σF}] E[e^{−σN}] dσ`` on the grid ``sig`` (trapezoid in ``ln σ``).

    ``log_psi_far``, ``tilt_far``: ``(..., S)`` as from :func:`far_laplace_sum`; ``log_psi_near``: ``(S,)`` or
    ``(..., S)``; ``sig``: the ``S > 0`` nodes, ``h > 0`` the step.  The logs may hold ``-inf`` (an underflowed
    transform), nothing else may be non-finite.  Returns ``(...)``.
    """
    sig = check("sig (σ)", sig, 0, lo_open=True, ndim=1, nonempty=True)
    h = check("h (step)", h, 0, lo_open=True, scalar=True)
    parts = {"log_psi_far": check("log_psi_far", log_psi_far, neg_inf=True),
             "tilt_far": check("tilt_far", tilt_far),
             "log_psi_near": check("log_psi_near", log_psi_near, neg_inf=True)}
    for name, a in parts.items():
        if a.ndim == 0 or a.shape[-1] != sig.size:
            raise ValueError(f"{name} must end in an axis of len(sig) = {sig.size} nodes, got shape {a.shape}")
    check_shapes(**parts)
    log_psi_far, tilt_far, log_psi_near = parts.values()
    with np.errstate(over="ignore"):
        f = np.exp(log_psi_far + log_psi_near + np.log(sig)) * tilt_far
        out = h * (f.sum(axis=-1) - 0.5 * (f[..., 0] + f[..., -1]))
    if not np.all(np.isfinite(out)):
        raise ValueError("log_psi_far, log_psi_near and tilt_far: the integral E[F/(F+N)] overflows float64 "
                         "(log-transforms above 0?)")
    return out


# ---------------------------------------------------------------------------------------
# the near chain t_n = qᵀ P_n q for isotropic step laws
# ---------------------------------------------------------------------------------------
def _lobatto(n: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.cos(np.pi * np.arange(n) / (n - 1))
    bw = (-1.0) ** np.arange(n)
    bw[0] *= 0.5
    bw[-1] *= 0.5
    return t, bw


def _interp_matrix(t: np.ndarray, bw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Barycentric Lagrange basis ``ℓ_j(x)`` at points ``x`` (``(len(x), len(t))``)."""
    diff = x[:, None] - t[None, :]
    exact = diff == 0
    diff[exact] = 1.0
    r = bw / diff
    out = r / r.sum(axis=1, keepdims=True)
    rows = exact.any(axis=1)
    out[rows] = exact[rows].astype(float)
    return out


@dataclass(frozen=True)
class IsotropicChain:
    """(claims C1, C4, *derived here*) ``t_n = qᵀ P_n q`` for i.i.d. steps of an isotropic orthogonal law.

    The transition operator ``(Kf)(t) = E[f(t_{n+1}) | t_n = t]`` acts on values at ``n_nodes``
    Chebyshev–Lobatto nodes ``t`` (``t[0] = 1``, the start ``t_0``): the law's closed form
    (:meth:`StepLaw.overlap_transition`) or, without one, estimated from its one-step overlap law
    (:attr:`theory_kind` says which; ``batch`` selects one of the :data:`OVERLAP_BATCHES` batch estimates).
    """

    family: StepLawType
    n_nodes: int = 96
    n_quad: int = 24
    batch: int | None = None

    def __post_init__(self):
        check_instance("family", self.family, StepLawType, "a step law (StepLaw, see make_family)")
        object.__setattr__(self, "n_nodes", check("n_nodes", self.n_nodes, 2, 4096, integer=True, scalar=True))
        object.__setattr__(self, "n_quad", check("n_quad", self.n_quad, 1, 1024, integer=True, scalar=True))
        if self.batch is not None:
            object.__setattr__(self, "batch", check("batch", self.batch, 0, OVERLAP_BATCHES - 1, integer=True,
                                                    scalar=True))

    @staticmethod
    def supports(family: StepLawType) -> bool:
        """Whether the chain is one-dimensional: the law declares ``isotropic`` and ``orthogonal``."""
        return bool(family.isotropic and family.orthogonal)

    @property
    def nodes(self) -> np.ndarray:
        return _lobatto(self.n_nodes)[0]

    @property
    def K(self) -> np.ndarray:
        return _transition(self.family, self.n_nodes, self.n_quad, self.batch)[0]

    @property
    def exact(self) -> bool:
        """Whether ``K`` is the law's closed form (else a Monte Carlo estimate)."""
        return _transition(self.family, self.n_nodes, self.n_quad, None)[1]

    @property
    def theory_kind(self) -> str:
        """``"closed form"``, or ``"estimated (Monte Carlo, n = …)"`` for an estimated operator."""
        return "closed form" if self.exact else f"estimated (Monte Carlo, n = {OVERLAP_SAMPLES})"

    def batches(self) -> tuple[IsotropicChain, ...]:
        """The :data:`OVERLAP_BATCHES` batch chains of an estimated operator (none for a closed form)."""
        return () if self.exact else tuple(dataclasses.replace(self, batch=b) for b in range(OVERLAP_BATCHES))

    def mgf(self, lam: float, n_max: int) -> np.ndarray:
        """``E e^{λ t_n}`` for ``n = 0 … n_max − 1``."""
        v, K, out = np.exp(lam * self.nodes), self.K, np.empty(n_max)
        for n in range(n_max):
            out[n] = v[0]
            v = K @ v
        return out

    def log_laplace(self, lam: float, c: np.ndarray, sig: np.ndarray, t0_only: bool = False) -> np.ndarray:
        """``log E exp(−σ Σ_{n<D} c_n e^{λ t_n})`` for every ``σ`` in ``sig``, ``D = len(c)``."""
        e, K = np.exp(lam * self.nodes)[:, None], self.K
        c = np.asarray(c, dtype=float)
        V = np.exp(-c[-1] * e * sig[None, :])
        for n in range(len(c) - 2, -1, -1):
            V = np.exp(-c[n] * e * sig[None, :]) * np.clip(_apply(K, V), 0.0, 1.0)
        return np.log(np.maximum(V[0], 1e-300))

    def laplace_at(self, lam: float, n: int, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``Y = e^{λ t_n}`` (one route length ``n``): ``log E e^{−σY}`` and ``E[Y e^{−σY}]/E e^{−σY}``."""
        e = np.exp(lam * self.nodes)[:, None]
        m = np.exp(-e * sig[None, :])
        V = np.concatenate([m, e * m], axis=1)
        for _ in range(n):
            V = _apply(self.K, V)
        psi, top = np.maximum(V[0, :sig.size], 1e-300), V[0, sig.size:]
        return np.log(psi), top / psi


def _apply(K: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``K @ V`` without a BLAS thread pool (small matrices: threads only contend on a busy machine)."""
    return np.einsum("ij,js->is", K, V)


def _law_cached(cached, plain, family: StepLawType, *args):
    """``cached(family, *args)`` (an ``lru_cache``), or ``plain(family, *args)`` for an unhashable law."""
    try:
        hash(family)
    except TypeError:
        return plain(family, *args)
    return cached(family, *args)


def _transition(family: StepLawType, n_nodes: int, n_quad: int, batch: int | None) -> tuple[np.ndarray, bool]:
    """``(K, exact)``: the law's closed-form operator, else the estimate (all draws, or batch ``batch``)."""
    return _law_cached(_transition_cached, _transition_of, family, n_nodes, n_quad, batch)


def _transition_of(family: StepLawType, n_nodes: int, n_quad: int, batch: int | None) -> tuple[np.ndarray, bool]:
    t, bw = _lobatto(n_nodes)
    K = family.overlap_transition(t, functools.partial(_interp_matrix, t, bw), n_quad)
    if K is not None:
        return np.asarray(K, dtype=float), True
    Kb = _law_cached(_estimates_cached, _estimated_transitions, family, n_nodes)
    return (Kb.mean(axis=0) if batch is None else Kb[batch]), False


_transition_cached = lru_cache(maxsize=32)(_transition_of)


def _estimated_transitions(family: StepLawType, n_nodes: int) -> np.ndarray:
    """:data:`OVERLAP_BATCHES` estimates ``K_b[i] = mean_k ℓ(t_i a_k + √(1−t_i²) b_k)`` over batches of draws
    ``(a, b) = (M₁₁, M₂₁)`` from the law's own stream (chunks of at most about 2²² step elements)."""
    rng = np.random.default_rng(reference_seed("ovlp"))
    per = max(1, (1 << 22) // max(1, family.d) ** max(1, family.step_ndim))
    a, b, got = np.empty(OVERLAP_SAMPLES), np.empty(OVERLAP_SAMPLES), 0
    while got < OVERLAP_SAMPLES:
        m = min(per, OVERLAP_SAMPLES - got)
        a[got:got + m], b[got:got + m] = family.overlap_step_draws(m, rng)
        got += m
    t, bw = _lobatto(n_nodes)
    s = np.sqrt(np.clip(1 - t**2, 0.0, None))
    n_b = OVERLAP_SAMPLES // OVERLAP_BATCHES
    out = np.empty((OVERLAP_BATCHES, n_nodes, n_nodes))
    for k in range(OVERLAP_BATCHES):
        ak, bk = a[k * n_b:(k + 1) * n_b], b[k * n_b:(k + 1) * n_b]
        for i in range(n_nodes):
            out[k, i] = _interp_matrix(t, bw, np.clip(t[i] * ak + s[i] * bk, -1.0, 1.0)).mean(axis=0)
    return out


_estimates_cached = lru_cache(maxsize=8)(_estimated_transitions)


def estimate_radius(values) -> np.ndarray:
    """The 95% radius of a theory built on an estimated operator, from its values on the
    :data:`OVERLAP_BATCHES` batch estimates (Student ``t``: ``t_{0.975} · sd/√B``; the values ``(B, ...)``)."""
    v = np.asarray(values, dtype=float)
    return t_half_width(v, axis=0)


def haar_transition(d: int, p: float, t: np.ndarray, basis, n_quad: int) -> np.ndarray:
    """(Lazy) Haar steps: stay with probability ``1 − p``, else a fresh Haar coordinate (Gauss–Jacobi nodes)."""
    xi, w = jacobi_nodes(4 * n_quad, (d - 3) / 2.0)
    return (1.0 - p) * np.eye(t.size) + p * np.outer(np.ones(t.size), w @ basis(xi))


def householder_transition(d: int, t: np.ndarray, basis, n_quad: int) -> np.ndarray:
    """Householder steps: ``t' = t(1 − 2w₁²) − 2√(1−t²) w₁w₂``, ``(w₁, w₂)`` two coordinates of a uniform unit vector."""
    n_nodes = t.size
    if d == 2:  # w = (cos φ, sin φ), φ uniform: periodic trapezoid
        ph = 2 * np.pi * (np.arange(4 * n_quad) + 0.5) / (4 * n_quad)
        w1, w2, W = np.cos(ph), np.sin(ph), np.full(ph.size, 1.0 / ph.size)
    else:  # w_1 ∝ (1−w_1²)^{(d−3)/2}; w_2 = √(1−w_1²)·v, v ∝ (1−v²)^{(d−4)/2}
        a, wa = jacobi_nodes(n_quad, (d - 3) / 2.0)
        v, wv = jacobi_nodes(n_quad, (d - 4) / 2.0)
        w1 = np.repeat(a, v.size)
        w2 = np.sqrt(1 - w1**2) * np.tile(v, a.size)
        W = np.outer(wa, wv).ravel()
    s = np.sqrt(np.clip(1 - t**2, 0.0, None))
    K = np.empty((n_nodes, n_nodes))
    for i in range(n_nodes):
        tp = np.clip(t[i] * (1 - 2 * w1**2) - 2 * s[i] * w1 * w2, -1.0, 1.0)
        K[i] = W @ basis(tp)
    return K


@dataclass(frozen=True)
class ReferenceChain:
    """Simulated reference for ``t_n = qᵀP_n q``, ``n < D``: ``R`` chains of the family's steps
    (:meth:`StepLaw.sample_overlaps`, its own seed), for step laws without a one-dimensional
    chain (SO(2) blocks).  Same interface as :class:`IsotropicChain`; its numbers are a simulated reference.
    """

    family: StepLawType
    D: int
    R: int = 20000
    seed: int = 20260601
    theory_kind: ClassVar[str] = "simulated reference"

    def _t(self) -> np.ndarray:
        return _law_cached(_reference_overlaps, _reference_overlaps.__wrapped__, self.family, self.D, self.R, self.seed)

    def mgf(self, lam: float, n_max: int) -> np.ndarray:
        return np.exp(lam * self._t()[:, :n_max]).mean(axis=0)

    def log_laplace(self, lam: float, c: np.ndarray, sig: np.ndarray) -> np.ndarray:
        N = np.exp(lam * self._t()[:, : len(c)]) @ np.asarray(c, dtype=float)
        return special.logsumexp(-np.outer(sig, N), axis=1) - math.log(self.R)

    def laplace_at(self, lam: float, n: int, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``Y = e^{λ t_n}`` (``n < D``): ``log E e^{−σY}`` and ``E[Y e^{−σY}]/E e^{−σY}`` over the reference chains."""
        Y = np.exp(lam * self._t()[:, n])
        a = -np.outer(sig, Y)
        lp = special.logsumexp(a, axis=1)
        return lp - math.log(self.R), np.exp(a - lp[:, None]) @ Y


@lru_cache(maxsize=8)
def _reference_overlaps(family: StepLawType, D: int, R: int, seed: int) -> np.ndarray:
    return family.sample_overlaps(np.arange(D), R, random_state=seed, backend="numpy")


def near_chain(family: StepLawType, D: int):
    """The near chain of ``family``: :class:`IsotropicChain` for an isotropic orthogonal law, else a
    :class:`ReferenceChain`.  Returns ``(chain, kind)`` with ``kind`` ``"closed form"``, ``"estimated (Monte
    Carlo, n = …)"`` (an isotropic law without a closed-form operator) or ``"simulated reference"``."""
    if IsotropicChain.supports(family):
        chain = IsotropicChain(family)
        return chain, chain.theory_kind
    return ReferenceChain(family, D), "simulated reference"


# ---------------------------------------------------------------------------------------
# SO(2) targets: exact moments by Jacobi–Anger
# ---------------------------------------------------------------------------------------
def _harmonic_chi(family: StepLawType, j: np.ndarray) -> np.ndarray:
    """``χ_b(j) = E e^{ijθ_b}`` for harmonics ``j`` (``(len(j), d/2)``): the law's :meth:`chi_harmonic`."""
    if not plane_harmonics(family):
        raise ValueError(f"no harmonic characteristic values for family {family.name!r}")
    return family.chi_harmonic(j)


def plane_harmonics(family: StepLawType) -> bool:
    """Whether ``family`` has commuting SO(2) planes (``planes``) with closed-form harmonics ``χ_b(j)``."""
    if not family.planes or not callable(getattr(family, "chi_harmonic", None)):
        return False
    try:
        family.chi_harmonic(np.arange(1, 2))
    except NotImplementedError:
        return False
    return True


@broadcasting("n", "lam")
def so2_overlap_mgf(family: StepLawType, n: int, lam: float, q: np.ndarray) -> float:
    """(claims C1, C3, *derived here*) ``E e^{λ qᵀP_n q}`` for SO(2) blocks: ``Π_b Σ_j I_j(λ||q_b||²) Re χ_b(j)^n`` (Jacobi–Anger, exact).

    ``family`` a law with SO(2) planes and closed-form harmonics, ``n ≥ 0`` an integer, ``|λ| ≤ 10⁴``, ``q`` a
    finite vector of length ``d`` with ``|λ|·||q_b||² ≤ 10⁴``.
    """
    check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")
    n = check("n (route length)", n, 0, integer=True, scalar=True)
    lam = check("lam (λ)", lam, -1e4, 1e4, scalar=True)
    q = check("q", q, ndim=1, size=family.d)
    w = q[0::2] ** 2 + q[1::2] ** 2
    x = lam * w
    if not np.max(np.abs(x)) <= 1e4:
        raise ValueError(f"lam (λ) and q: λ||q_b||² = {float(np.max(np.abs(x))):.3g} exceeds 10⁴ (the Jacobi–Anger "
                         "series would need too many terms)")
    J = int(40 + 2 * np.max(np.abs(x)))
    js = np.arange(1, J + 1)
    chi = np.real(_harmonic_chi(family, js) ** int(n))  # (J, B)
    ie = special.ive(js[:, None], np.abs(x)[None, :]) * np.sign(x)[None, :] ** js[:, None]  # e^{−|x|} I_j(x)
    per = special.ive(0, np.abs(x)) + 2 * np.sum(ie * chi, axis=0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = float(np.exp(np.sum(np.log(per) + np.abs(x))))
    if not math.isfinite(out):
        raise ValueError(f"lam (λ) = {lam}: E[e^(λ qᵀP_n q)] = {out} is not a finite float64")
    return out
