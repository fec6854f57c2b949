"""Closed forms: every bound and exact law the checks compare Monte Carlo against.

Symbols follow the paper: ``λ`` logit scale, ``K`` near count, ``M_L`` far count,
``ρ_D`` far mass, ``γ`` spectral gap, ``χ = E[e^{iθ}]`` a plane's characteristic value.

Example
-------
>>> round(far_mass_lower_bound(K=8, M=1000, lam=2.0), 4)
0.696
>>> lam = lambda_required(K=8, M=1000, eps=0.1)
>>> round(far_mass_lower_bound(K=8, M=1000, lam=lam), 12)
0.1
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

__all__ = [
    "far_mass_lower_bound",
    "lambda_required",
    "alibi_far_sum",
    "levy_tail",
    "haar_coordinate_tail",
    "haar_coordinate_cdf",
    "haar_coordinate_law",
    "hoeffding_tail",
    "chi_power_correlation",
    "mixing_window",
]


def _check_nonneg(name: str, x: float) -> float:
    if isinstance(x, bool) or x is None or not np.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number ≥ 0, got {x!r}")
    return float(x)


def far_mass_lower_bound(K: float, M: float, lam: float) -> float:
    """``ρ_D ≥ M_L / (M_L + K e^{2λ})`` under full softmax with ``|logits| ≤ λ``.

    Equality when every near logit is ``+λ`` and every far logit is ``−λ``.  Evaluated
    as ``1 / (1 + (K/M) e^{2λ})`` in log space so huge ``λ`` or ``M`` never overflow.
    ``M = 0`` gives 0; ``K = 0`` (no near sources) gives 1 for ``M > 0``.
    """
    K, M, lam = _check_nonneg("K", K), _check_nonneg("M", M), _check_nonneg("lam (λ)", lam)
    if M == 0:
        return 0.0
    if K == 0:
        return 1.0
    # 1/(1+exp(x)) with x = ln K − ln M + 2λ  (= expit(−x))
    return float(special.expit(-(math.log(K) - math.log(M) + 2.0 * lam)))


def lambda_required(K: float, M: float, eps: float) -> float:
    """Smallest ``λ`` whose lower bound allows ``ρ_D ≤ ε``: ``λ = ½ ln(M_L (1 − ε) / (K ε))``.

    Returns 0 when the bound is already ``≤ ε`` at ``λ = 0``.
    """
    K, M = _check_nonneg("K", K), _check_nonneg("M", M)
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if K == 0:
        raise ValueError("K must be > 0: with no near sources ρ_D = 1 for every λ")
    if M == 0:
        return 0.0
    return max(0.0, 0.5 * (math.log(M) + math.log1p(-eps) - math.log(K) - math.log(eps)))


def alibi_far_sum(lam: float, m: float, D: int) -> float:
    """``Σ_{n ≥ D} e^{λ − m n} = e^{λ − mD} / (1 − e^{−m})``: the far weight sum under ALiBi (any ``L``)."""
    lam = _check_nonneg("lam (λ)", lam)
    if not (m > 0 and math.isfinite(m)):
        raise ValueError(f"m (ALiBi slope) must be a finite number > 0, got {m!r}")
    return math.exp(lam - m * D) / (-math.expm1(-m))


def levy_tail(t: np.ndarray, d: int) -> np.ndarray:
    """Spherical-cap (Lévy) bound ``P(qᵀu ≥ t) ≤ exp(−d t²/2)`` for ``t ≥ 0``, ``u`` uniform on ``S^{d−1}``."""
    t = np.asarray(t, dtype=float)
    return np.where(t <= 0, 1.0, np.exp(-0.5 * d * t**2))


def haar_coordinate_law(d: int) -> stats.rv_continuous:
    """Law of ``(1 + s)/2`` for ``s = qᵀu``: ``Beta((d−1)/2, (d−1)/2)``."""
    if d < 2:
        raise ValueError(f"d must be ≥ 2, got {d}")
    return stats.beta((d - 1) / 2.0, (d - 1) / 2.0)


def haar_coordinate_cdf(s: np.ndarray, d: int) -> np.ndarray:
    """CDF of one coordinate ``s`` of a uniform point on ``S^{d−1}``."""
    return haar_coordinate_law(d).cdf((1.0 + np.asarray(s, dtype=float)) / 2.0)


def haar_coordinate_tail(t: np.ndarray, d: int) -> np.ndarray:
    """Exact ``P(qᵀu ≥ t) = ½ I_{1−t²}((d−1)/2, ½)`` for ``t ≥ 0`` (via the Beta survival function)."""
    return haar_coordinate_law(d).sf((1.0 + np.asarray(t, dtype=float)) / 2.0)


def hoeffding_tail(t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``P(Σ_b a_b cos U_b ≥ t) ≤ exp(−t² / (2 Σ_b a_b²))`` for uniform phases ``U_b``, ``t ≥ 0``."""
    t = np.asarray(t, dtype=float)
    s2 = float(np.sum(np.asarray(a, dtype=float) ** 2))
    if s2 == 0:
        return np.where(t <= 0, 1.0, 0.0)
    return np.where(t <= 0, 1.0, np.exp(-(t**2) / (2.0 * s2)))


def chi_power_correlation(chi: np.ndarray, n: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``Σ_b w_b Re χ_b^n``: e.g. ``E[qᵀ P_n q]`` with ``w_b = ||q_b||²`` for SO(2) planes.

    ``weights`` default to equal weights ``1/B`` (a query with equal energy in every plane).
    """
    chi = np.asarray(chi, dtype=complex)
    n = np.asarray(n)
    w = np.full(chi.shape, 1.0 / chi.size) if weights is None else np.asarray(weights, dtype=float)
    return np.real(np.power.outer(chi, n).T @ w) if n.ndim else float(np.real(chi**n) @ w)


def mixing_window(gamma: float, eps: float) -> float:
    """``W(ε) = ⌈ln ε / ln(1 − γ)⌉`` (``inf`` for ``γ = 0``, ``1`` for ``γ = 1``)."""
    if not (0.0 <= gamma <= 1.0):
        raise ValueError(f"gamma (γ) must lie in [0, 1], got {gamma!r}")
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if gamma == 0.0:
        return math.inf
    if gamma == 1.0:
        return 1.0
    return float(math.ceil(math.log(eps) / math.log1p(-gamma)))
