"""The law of the passkey overlap ``s_n = qᵀP_n q`` as a quadrature rule (claim C3, beyond the paper; derived here).

A rule ``(points, weights)`` gives ``E g(s_n) ≈ Σ_k weights_k g(points_k)``.  Where it comes from:

* **the law's own closed form**, :meth:`~stylized.laws.base.StepLaw.overlap_law` ``(points, weights, kind)``:

  - commuting SO(2) planes (``planes``) whose plane angles have a continuous law
    (:func:`plane_phase_law`): ``s_n = Σ_b a_b cos A_{n,b}``, ``a_b = |q_b|²``, independent plane phases
    ``A_{n,b}`` whose folded CDF ``G(u) = P(|A| ≤ u)`` the law gives (:meth:`folded_phase_cdf`: the
    Irwin–Hall law wrapped, uniform angles with ``n ≤`` :data:`IH_MAX`; else the Fourier series
    ``G(u) = u/π + (2/π) Σ_{j≥1} Re χ_b(j)ⁿ sin(ju)/j``, :func:`phase_series_cdf`); each plane's
    ``a_b cos A`` is binned on a grid of step ``h`` and the planes are convolved (error ``O(h)``);
  - lazy Haar: an atom ``s = |q|²`` of weight ``(1 − p)ⁿ``, else a Haar coordinate (:func:`haar_bins`);
  - Householder: the quadrature rule ``e_0ᵀKⁿ`` of the transport chain (smooth functionals only:
    ``kind = "approximation (chain quadrature)"``).

* **after mixing** (route ``≫ W``), :func:`far_overlap_law`: a law whose long routes carry a unit vector
  to the uniform law on its orbit (``mixes_to_uniform``) has ``|q|²`` times a Haar coordinate (isotropic)
  or uniform independent plane phases (``planes``).

* **estimated** otherwise (:func:`estimated_rule`): :data:`REFERENCE_SAMPLES` reference draws of ``s_n``
  along the law's own chains (:meth:`~stylized.laws.base.StepLaw.walk_scores`, a stream of its own, never a
  check's), each with weight ``1/R``, in :data:`REFERENCE_BATCHES` batches whose spread is the 95% radius
  of any theory built on the rule (:func:`rule_radius`).

Example
-------
>>> from stylized.laws.families import make_family
>>> q = np.full(8, 8 ** -0.5)
>>> pts, w, kind = make_family("so2-uniform", 8).overlap_law(q, 3, H_DEFAULT)
>>> kind, bool(abs(w.sum() - 1) < 1e-12)
('closed form', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import signal, special, stats

from ..core.counter_rng import reference_seed
from ..core.estimators import t_half_width
from ..laws.family_args import validate_family_args

__all__ = ["H_DEFAULT", "IH_MAX", "REFERENCE_SAMPLES", "REFERENCE_BATCHES", "OverlapRule", "irwin_hall_cdf",
           "wrapped_uniform_sum_cdf", "phase_series_cdf", "plane_phase_law", "haar_bins", "uniform_phase_law",
           "far_overlap_law", "reference_draws", "estimated_rule", "rule_radius"]

H_DEFAULT = 2.0**-13
"""Grid step of a binned overlap law (score units)."""
IH_MAX = 16  # Irwin–Hall formula up to this many steps (alternating sum: rounding ~1e-10 at n = 16, 1e-5 at n = 24)
REFERENCE_SAMPLES = 4000
"""Reference draws of ``s_n`` behind an estimated rule."""
REFERENCE_BATCHES = 20
"""Batches of those draws: the theory on each batch, their spread its radius."""


@dataclass(frozen=True)
class OverlapRule:
    """The law of ``s_n`` as a rule: ``points``, ``weights``, how it was obtained (``theory_kind``), and for an
    estimated rule its ``batches`` (sub-rules ``(points, weights)`` whose spread is the theory's radius)."""

    points: np.ndarray
    weights: np.ndarray
    theory_kind: str = "closed form"
    batches: tuple = field(default=(), repr=False)

    @property
    def estimated(self) -> bool:
        return bool(self.batches)


# ---------------------------------------------------------------------------------------
# commuting SO(2) planes: folded phase laws, binned and convolved
# ---------------------------------------------------------------------------------------
def irwin_hall_cdf(y: np.ndarray, n: int) -> np.ndarray:
    """CDF of the sum of ``n`` independent ``U(0, 1)``: ``(1/n!) Σ_{k≤y} (−1)^k C(n,k)(y − k)^n``."""
    y = np.clip(np.asarray(y, dtype=float), 0.0, n)
    k = np.arange(n + 1)
    coef = (-1.0) ** k * special.comb(n, k) / math.factorial(n)
    return np.clip(np.clip(y[..., None] - k, 0.0, None) ** n @ coef, 0.0, 1.0)


def wrapped_uniform_sum_cdf(om: float, n: int, u: np.ndarray) -> np.ndarray:
    """``P(|A| ≤ u)``, ``u ∈ [0, π]``, for ``A`` the sum of ``n`` i.i.d. ``U(−ω, ω)`` wrapped to ``(−π, π]`` (Irwin–Hall)."""
    F = lambda x: irwin_hall_cdf((x + n * om) / (2 * om), n)  # noqa: E731
    W = int(math.ceil((n * om + math.pi) / (2 * math.pi)))
    return np.clip(sum(F(u + 2 * math.pi * w) - F(-u + 2 * math.pi * w) for w in range(-W, W + 1)), 0.0, 1.0)


def phase_series_cdf(law, b: int, n: int, u: np.ndarray, J: int) -> np.ndarray:
    """``P(|A_{n,b}| ≤ u) = u/π + (2/π) Σ_{j=1}^{J} Re χ_b(j)ⁿ sin(ju)/j`` from the law's harmonics
    ``χ_b(j) = E e^{ijθ_b}`` (:meth:`chi_harmonic`), ``J`` the truncation (:meth:`phase_harmonics`)."""
    if J > 400_000:
        raise ValueError(f"plane {b} needs {J} harmonics at n={n}; use a coarser grid step h")
    out = u / math.pi
    for s in range(1, J + 1, 4096):
        j = np.arange(s, min(J, s + 4095) + 1)
        c = np.real(law.chi_harmonic(j)[:, b] ** n)
        out = out + (2 / math.pi) * (np.sin(np.outer(u, j)) @ (c / j))
    return np.clip(out, 0.0, 1.0)


def _split(x: float, h: float, pts_index: dict) -> None:
    """Mass 1 at ``x`` split between the two neighbouring grid points so that the mean is kept."""
    k = math.floor(x / h)
    f = x / h - k
    pts_index[k] = pts_index.get(k, 0.0) + 1.0 - f
    pts_index[k + 1] = pts_index.get(k + 1, 0.0) + f


def plane_phase_law(law, q: np.ndarray, n: int, h: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The law of ``s_n = Σ_b a_b cos A_{n,b}`` for commuting planes with i.i.d. angles, binned on ``hℤ``: each
    plane's folded phase law (:meth:`folded_phase_cdf`) binned and the planes convolved (weights ≥ 0, sum 1;
    error ``O(h)``).  ``None`` when the law's plane angles have no continuous law (it defines no
    :meth:`folded_phase_cdf`, or that raises ``NotImplementedError``)."""
    a = q[0::2] ** 2 + q[1::2] ** 2
    chi_n = np.real(law.chi() ** n)
    pmf, lo, delta = np.ones(1), 0, {0: 1.0}
    for b in range(law.n_planes):
        if a[b] == 0:
            continue
        if a[b] * (1.0 - chi_n[b]) <= h / 4:  # this plane barely moves: a point mass at its mean
            nxt: dict = {}
            for k, v in delta.items():
                tmp: dict = {}
                _split(a[b] * chi_n[b], h, tmp)
                for k2, v2 in tmp.items():
                    nxt[k + k2] = nxt.get(k + k2, 0.0) + v * v2
            delta = nxt
            continue
        m = int(math.ceil(a[b] / h))
        j = np.arange(-m, m + 1)
        up = np.arccos(np.clip((j + 0.5) * h / a[b], -1.0, 1.0))
        down = np.arccos(np.clip((j - 0.5) * h / a[b], -1.0, 1.0))
        try:
            Gd, Gu = law.folded_phase_cdf(b, n, down), law.folded_phase_cdf(b, n, up)
        except (NotImplementedError, AttributeError):
            return None
        pmf = signal.fftconvolve(pmf, np.clip(Gd - Gu, 0.0, None))
        lo -= m
    ks = np.array(sorted(delta))
    dm = np.array([delta[k] for k in ks])
    full = np.convolve(pmf, np.bincount(ks - ks[0], weights=dm)) if ks.size > 1 else pmf * dm[0]
    lo += int(ks[0])
    full = np.clip(full, 0.0, None)
    keep = full > 1e-300
    pts = (lo + np.nonzero(keep)[0]) * h
    return pts, full[keep] / full[keep].sum()


# ---------------------------------------------------------------------------------------
# after mixing: Haar coordinate or uniform phases
# ---------------------------------------------------------------------------------------
def haar_bins(d: int, h: float = H_DEFAULT, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A Haar coordinate ``scale·ξ`` binned on ``hℤ``: ``(points, P(bin))`` from the Beta CDF."""
    m = int(math.ceil(scale / h))
    j = np.arange(-m, m + 1)
    e = np.clip(np.r_[j - 0.5, m + 0.5] * h / scale, -1.0, 1.0)
    beta = stats.beta((d - 1) / 2.0, (d - 1) / 2.0)
    w = np.diff(beta.cdf((1.0 + e) / 2.0))
    return j * h, w / w.sum()


class _UniformPhases:
    """One step of ``d/2`` planes with uniform angles on ``(−π, π]`` (``so2-uniform`` at ``ω = π``): what
    :func:`plane_phase_law` asks of a law (``n_planes``, :meth:`chi`, :meth:`folded_phase_cdf`), built from the closed
    forms here so that the theory needs no step law."""

    def __init__(self, d: int):
        self.n_planes = validate_family_args("so2-uniform", d, planes=True, omega=math.pi) // 2

    def chi(self) -> np.ndarray:
        return np.sinc(np.full(self.n_planes, math.pi) / np.pi).astype(complex)

    def folded_phase_cdf(self, b: int, n: int, u):
        return wrapped_uniform_sum_cdf(math.pi, n, u)


def uniform_phase_law(d: int, q: np.ndarray, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """``Σ_b |q_b|² cos U_b`` with i.i.d. uniform phases ``U_b``, binned on ``hℤ`` (plane angles ``U(−π, π)``)."""
    return plane_phase_law(_UniformPhases(d), q, 1, h)


def far_overlap_law(law, q: np.ndarray, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray] | None:
    """The law of ``qᵀPq`` once the route has mixed (``≫ W``), binned on ``hℤ``, where the law declares its limit
    (``mixes_to_uniform``): uniform plane phases (``planes``) or ``|q|²`` times a Haar coordinate (``isotropic``).
    ``None`` otherwise (then estimate it past the window)."""
    if not law.mixes_to_uniform:
        return None
    if law.planes:
        return uniform_phase_law(law.d, q, h)
    if law.isotropic:
        return haar_bins(law.d, h, float(q @ q))
    return None


# ---------------------------------------------------------------------------------------
# estimated: reference draws along the law's own chains
# ---------------------------------------------------------------------------------------
def reference_draws(law, q: np.ndarray, ns, R: int = REFERENCE_SAMPLES) -> np.ndarray:
    """``(R, len(ns))`` draws of ``qᵀP_n q`` at the route lengths ``ns`` along ``R`` chains of the law's own steps
    (:meth:`walk_scores`, the reference stream; cached per law, ``q``, ``ns`` and ``R`` when the law is hashable)."""
    key = (tuple(int(n) for n in np.ravel(ns)), tuple(np.asarray(q, dtype=float).tolist()), int(R))
    try:
        hash(law)
    except TypeError:
        return _reference_draws(law, *key)
    return _reference_draws_cached(law, *key)


def _reference_draws(law, ns: tuple, q: tuple, R: int) -> np.ndarray:
    rng = np.random.default_rng(reference_seed("pass"))
    return np.asarray(law.walk_scores(list(ns), R, rng, np, np.asarray(q)), dtype=float)


@lru_cache(maxsize=32)
def _reference_draws_cached(law, ns: tuple, q: tuple, R: int) -> np.ndarray:
    return _reference_draws(law, ns, q, R)


def estimated_rule(draws: np.ndarray, batches: int = REFERENCE_BATCHES) -> OverlapRule:
    """The empirical rule of ``R`` draws of ``s_n`` (weights ``1/R``), with ``batches`` equal sub-rules."""
    x = np.asarray(draws, dtype=float).ravel()
    R = x.size
    nb = R // batches
    subs = tuple((x[b * nb:(b + 1) * nb], np.full(nb, 1.0 / nb)) for b in range(batches))
    return OverlapRule(x, np.full(R, 1.0 / R), f"estimated (Monte Carlo, n = {R})", subs)


def rule_radius(rule: OverlapRule, theory) -> float:
    """The 95% radius of ``theory(points, weights)`` built on an estimated rule: Student ``t`` over its batches,
    ``t_{0.975} · sd/√B`` (``0`` for a closed form)."""
    if not rule.estimated:
        return 0.0
    v = np.array([float(theory(p, w)) for p, w in rule.batches])
    return float(t_half_width(v))
