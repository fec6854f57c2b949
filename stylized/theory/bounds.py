"""Closed-form bounds and tails (claims C1, C3, C4): far mass, required ``λ``, ALiBi sums, horizons, windows.

Symbols follow the paper: ``λ`` logit scale, ``K`` near count, ``M_L`` far count, ``ρ_D`` far mass,
``γ`` spectral gap, ``χ = E[e^{iθ}]`` a plane's characteristic value.  Every function broadcasts
over NumPy arrays like a SciPy ufunc (scalars in, a float out); :mod:`stylized.theory` is the public
index of every closed form.

Example
-------
>>> round(far_mass_lower_bound(K=8, M=1000, lam=2.0), 4)
0.696
>>> lam = lambda_required(K=8, M=1000, eps=0.1)
>>> round(far_mass_lower_bound(K=8, M=1000, lam=lam), 12)
0.1
>>> far_mass_lower_bound(8, [10, 1000], 2.0).round(4).tolist()
[0.0224, 0.696]
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..core._broadcast import broadcasting, check, check_shapes
from ..core.options import arg_int, arg_real, arg_reals

__all__ = [
    "far_mass_lower_bound",
    "lambda_required",
    "alibi_far_sum",
    "alibi_far_mass_bound",
    "horizon_prediction",
    "forget_gate_mean",
    "levy_tail",
    "haar_coordinate_tail",
    "haar_coordinate_cdf",
    "haar_coordinate_pdf",
    "haar_coordinate_law",
    "hoeffding_tail",
    "chi_power_correlation",
    "mixing_window",
]


def _check_nonneg(name: str, x: float) -> float:
    return arg_real(name, x, 0)


def _check_dim(d, lo: int = 2):
    """``d`` an integer ≥ ``lo``, or an array of them (the Haar-coordinate laws broadcast over ``d``)."""
    dd = check("d", d, lo, integer=True)
    return int(dd) if dd.ndim == 0 else dd.astype(float)


# --------------------------------------------------------------------------------------------
# C4: the far-mass bound, its inverse, ALiBi and the horizon
# --------------------------------------------------------------------------------------------
@broadcasting("K", "M", "lam")
def far_mass_lower_bound(K: float, M: float, lam: float) -> float:
    """Lower bound on the far mass under full softmax with bounded logits (claim C4, *quoted*).

    .. math:: ρ_D ≥ M_L / (M_L + K e^{2λ})

    Equality when every near logit is ``+λ`` and every far logit is ``−λ``.

    Parameters
    ----------
    K : float or array_like
        Near count ``K ≥ 0``.
    M : float or array_like
        Far count ``M_L ≥ 0``.
    lam : float or array_like
        Logit bound ``λ ≥ 0`` (``|logits| ≤ λ``).

    Returns
    -------
    float or ndarray
        The bound, broadcast over the arguments.  ``M = 0`` gives 0; ``K = 0`` gives 1 for ``M > 0``.

    Notes
    -----
    Evaluated as ``expit(−(ln K − ln M + 2λ))`` so huge ``λ`` or ``M`` never overflow.

    Examples
    --------
    >>> round(far_mass_lower_bound(K=64, M=65_536 - 64, lam=4.0), 4)     # L = 65,536, D = K = 64
    0.2555
    >>> far_mass_lower_bound(64, [1e3, 1e6], 4.0).round(4)               # broadcast over M_L: ρ_D → 1
    array([0.0052, 0.8398])
    """
    K, M, lam = _check_nonneg("K", K), _check_nonneg("M", M), _check_nonneg("lam (λ)", lam)
    if M == 0:
        return 0.0
    if K == 0:
        return 1.0
    return float(special.expit(-(math.log(K) - math.log(M) + 2.0 * lam)))


@broadcasting("K", "M", "eps")
def lambda_required(K: float, M: float, eps: float) -> float:
    """Smallest ``λ`` at which the far-mass bound allows ``ρ_D ≤ ε`` (claim C4, *derived* in the paper).

    .. math:: λ = ½ ln(M_L (1 − ε) / (K ε))

    The inverse of :func:`far_mass_lower_bound` in ``λ``: ``far_mass_lower_bound(K, M,
    lambda_required(K, M, ε)) = ε`` whenever the result is positive.

    Parameters
    ----------
    K : float or array_like
        Near count ``K > 0``.
    M : float or array_like
        Far count ``M_L ≥ 0``.
    eps : float or array_like
        Target far mass ``ε ∈ (0, 1)``.

    Returns
    -------
    float or ndarray
        ``λ ≥ 0``; 0 when the bound is already ``≤ ε`` at ``λ = 0``.

    Examples
    --------
    >>> lam = lambda_required(K=64, M=65_536 - 64, eps=0.1)
    >>> round(lam, 3), round(far_mass_lower_bound(64, 65_536 - 64, lam), 6)
    (4.564, 0.1)
    """
    K, M = _check_nonneg("K", K), _check_nonneg("M", M)
    eps = arg_real("eps", eps, 0, 1, lo_open=True, hi_open=True)
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if K == 0:
        raise ValueError("K must be > 0: with no near sources ρ_D = 1 for every λ")
    if M == 0:
        return 0.0
    return max(0.0, 0.5 * (math.log(M) + math.log1p(-eps) - math.log(K) - math.log(eps)))


@broadcasting("lam", "m", "D")
def alibi_far_sum(lam: float, m: float, D: int) -> float:
    """Far weight sum under ALiBi, for any context length (claim C4, *derived* in the paper).

    .. math:: Σ_{n ≥ D} e^{λ − m n} = e^{λ − mD} / (1 − e^{−m})

    Parameters
    ----------
    lam : float or array_like
        Logit bound ``λ ≥ 0``.
    m : float or array_like
        ALiBi slope ``m > 0``.
    D : int or array_like
        First far route length.

    Returns
    -------
    float or ndarray
        The far weight sum (relative to a near weight ``e^0``), bounded for every ``L``.

    Examples
    --------
    >>> round(alibi_far_sum(lam=4.0, m=0.5, D=16), 5)
    0.04655
    """
    D, m = arg_int("D", D, 0), arg_real("m (ALiBi slope)", m, 0, lo_open=True)
    lam = _check_nonneg("lam (λ)", lam)
    if not (m > 0 and math.isfinite(m)):
        raise ValueError(f"m (ALiBi slope) must be a finite number > 0, got {m!r}")
    log_s = lam - m * D - math.log(-math.expm1(-m))
    if log_s > 709.0:
        raise ValueError(f"lam (λ) and m: the ALiBi far sum e^(λ−mD)/(1−e^(−m)) overflows float64 (λ={lam}, m={m})")
    return math.exp(lam - m * D) / (-math.expm1(-m))


_ALIBI_TERMS = 1 << 16  # near windows up to this length are summed term by term (the built-in checks' numbers)


@broadcasting("lam", "m", "D")
def alibi_far_mass_bound(lam: float, m: float, D: int) -> float:
    """Upper bound on ``ρ_D`` under ALiBi at every context length (claim C4, *derived here*).

    .. math:: ρ_D ≤ S/(S + Z_{min}),  S = Σ_{n≥D} e^{λ − mn},  Z_{min} = e^{λ} + Σ_{n=1}^{D−1} e^{−λ − mn}

    ``S`` (:func:`alibi_far_sum`) bounds the far weight sum; the near sum is at least ``Z_min`` because
    the target at route length 0 scores ``λ`` exactly (``qᵀq = 1``, no bias) and every other near logit
    is ``≥ −λ − mn``.
    """
    S = alibi_far_sum(lam, m, D)
    lam, m, D = arg_real("lam (λ)", lam, 0), arg_real("m (ALiBi slope)", m, 0, lo_open=True), arg_int("D", D, 0)
    try:
        e_lam = math.exp(lam)
    except OverflowError:  # λ > 709.78: ρ ≤ expit(ln S − ln Z_min), ln Z_min = λ (the near tail is e^{−2λ}-small)
        return float(special.expit(-m * D - math.log(-math.expm1(-m))))
    if D <= _ALIBI_TERMS:
        zmin = e_lam + sum(math.exp(-lam - m * n) for n in range(1, D))
    else:  # Σ_{n=1}^{D−1} e^{−λ−mn} in closed form (a loop over D terms would not finish)
        zmin = e_lam + math.exp(-lam - m) * -math.expm1(-m * (D - 1)) / -math.expm1(-m)
    return S / (S + zmin)


@broadcasting("Z_N", "mu", "D")
def horizon_prediction(Z_N: float, mu: float, D: int) -> float:
    """Ratio-of-means horizon (claim C4, *derived here*): the ``L`` where the far sum reaches the near sum.

    .. math:: L_{1/2} = D + Z_N/μ

    with ``(L − D)μ`` the mean far sum (``μ = E e^{λξ}``, :func:`stylized.theory.score_laws.haar_mgf`) and ``Z_N``
    the near sum: ``Z_N ≥ 0``, ``μ > 0``, ``D`` an integer ≥ 0 (each a number or an array).
    """
    Z_N = arg_real("Z_N (near sum)", Z_N, 0)
    mu = arg_real("mu (μ, the mean far weight)", mu, 0, lo_open=True)
    D = arg_int("D", D, 0)
    out = D + Z_N / mu
    if not math.isfinite(out):
        raise ValueError(f"Z_N and mu: the horizon D + Z_N/μ overflows float64 (Z_N={Z_N}, μ={mu})")
    return out


# --------------------------------------------------------------------------------------------
# C2/C3: the Haar coordinate and the concentration tails
# --------------------------------------------------------------------------------------------
def levy_tail(t: np.ndarray, d: int) -> np.ndarray:
    """Spherical-cap (Lévy) tail bound for a Haar coordinate (claim C3, *quoted*).

    .. math:: P(qᵀu ≥ t) ≤ exp(−d t²/2),  t ≥ 0

    ``u`` uniform on ``S^{d−1}``; ``t`` and ``d`` broadcast (1 for ``t ≤ 0``).

    Parameters
    ----------
    t : float or array_like
        Threshold.
    d : int or array_like
        Dimension, ``≥ 1``.

    Returns
    -------
    ndarray
        The bound, broadcast over ``t`` and ``d``.

    Examples
    --------
    >>> levy_tail([0.1, 0.3], d=64).round(4)      # above the exact tail (haar_coordinate_tail): 0.214, 0.0076
    array([0.7261, 0.0561])
    """
    t, d = arg_reals("t", t), _check_dim(d, 1)
    check_shapes(t=t, d=d)
    t = np.asarray(t, dtype=float)
    with np.errstate(over="ignore"):  # t² = inf for |t| > 1e154: the bound is 0 there
        return np.where(t <= 0, 1.0, np.exp(-0.5 * d * t**2))


def haar_coordinate_law(d: int) -> stats.rv_continuous:
    """Law of one coordinate ``s`` of a uniform point on ``S^{d−1}`` (claim C2, *derived*), as ``(1 + s)/2``.

    .. math:: (1 + s)/2 ~ Beta((d−1)/2, (d−1)/2)

    A frozen SciPy distribution (``d`` may be an array).
    """
    d = _check_dim(d)
    if np.any(np.asarray(d) < 2):
        raise ValueError(f"d must be ≥ 2, got {d}")
    a = (np.asarray(d, dtype=float) if np.ndim(d) else d) - 1
    return stats.beta(a / 2.0, a / 2.0)


def haar_coordinate_cdf(s: np.ndarray, d: int) -> np.ndarray:
    """CDF of one coordinate ``s`` of a uniform point on ``S^{d−1}`` (claim C2, *derived*): ``I_{(1+s)/2}(a, a)``, ``a = (d−1)/2``."""
    s = arg_reals("s", s)
    check_shapes(s=s, d=_check_dim(d))
    return haar_coordinate_law(d).cdf((1.0 + np.asarray(s, dtype=float)) / 2.0)


def haar_coordinate_pdf(s: np.ndarray, d: int) -> np.ndarray:
    """Density of one Haar coordinate ``s`` (claim C2, *derived*): ``∝ (1 − s²)^{(d−3)/2}`` on ``[−1, 1]``."""
    s = arg_reals("s", s)
    check_shapes(s=s, d=_check_dim(d))
    return haar_coordinate_law(d).pdf((1.0 + np.asarray(s, dtype=float)) / 2.0) / 2.0


def haar_coordinate_tail(t: np.ndarray, d: int) -> np.ndarray:
    """Exact tail of one Haar coordinate (claim C3, *quoted*).

    .. math:: P(qᵀu ≥ t) = ½ I_{1−t²}((d−1)/2, ½),  t ≥ 0

    Computed as the Beta survival function at ``(1 + t)/2`` (any ``t``; broadcasts over ``t`` and ``d``).

    Parameters
    ----------
    t : float or array_like
        Threshold.
    d : int or array_like
        Dimension, ``≥ 2``.

    Returns
    -------
    ndarray
        ``P(s ≥ t)`` for one coordinate ``s`` of a uniform point on ``S^{d−1}``.

    Examples
    --------
    >>> haar_coordinate_tail([0.1, 0.3], d=64).round(4)
    array([0.214 , 0.0076])
    """
    t = arg_reals("t", t)
    check_shapes(t=t, d=_check_dim(d))
    return haar_coordinate_law(d).sf((1.0 + np.asarray(t, dtype=float)) / 2.0)


def hoeffding_tail(t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Hoeffding tail bound for a sum of uniform-phase cosines (claim C3, *quoted*).

    .. math:: P(Σ_b a_b cos U_b ≥ t) ≤ exp(−t² / (2 Σ_b a_b²)),  t ≥ 0

    ``a`` holds the plane amplitudes ``a_b = |q_b||k_b|`` (summed over); ``t`` broadcasts.

    Parameters
    ----------
    t : float or array_like
        Threshold.
    a : array_like
        Plane amplitudes ``a_b``, finite.

    Returns
    -------
    ndarray
        The bound at each ``t`` (1 for ``t ≤ 0``).

    Examples
    --------
    >>> import numpy as np
    >>> hoeffding_tail([0.5, 1.0], np.full(32, 1 / 32)).round(4)     # d = 64: 32 planes, a_b = 1/32 for q = k = 1/√d
    array([0.0183, 0.    ])
    """
    t, a = arg_reals("t", t), arg_reals("a", a)
    with np.errstate(over="ignore"):
        a2 = np.sum(a**2)
    if not np.isfinite(a2):
        raise ValueError("a: the sum of squared amplitudes Σa² overflows float64")
    t = np.asarray(t, dtype=float)
    s2 = float(np.sum(np.asarray(a, dtype=float) ** 2))
    if s2 == 0:
        return np.where(t <= 0, 1.0, 0.0)
    with np.errstate(over="ignore"):  # t² = inf for |t| > 1e154: the bound is 0 there
        return np.where(t <= 0, 1.0, np.exp(-(t**2) / (2.0 * s2)))


# --------------------------------------------------------------------------------------------
# C1: correlations and the mixing window
# --------------------------------------------------------------------------------------------
def chi_power_correlation(chi: np.ndarray, n: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Mean transported correlation for SO(2) planes (claim C1, *quoted*: ``E[cos Φ_n] = Re χⁿ``).

    .. math:: E[qᵀP_n q] = Σ_b w_b Re χ_b^n,  w_b = ||q_b||²

    ``chi``: a non-empty 1-D array of characteristic values ``|χ_b| ≤ 1``; ``weights`` (``≥ 0``, one per plane)
    default to ``1/B`` (a query with equal energy in every plane); ``n``: a route length ``≥ 0`` or an array of them.

    Parameters
    ----------
    chi : array_like of shape (B,)
        Characteristic values ``χ_b = E e^{iθ_b}``, real or complex, ``|χ_b| ≤ 1``.
    n : int or array_like
        Route lengths ``n ≥ 0``.
    weights : array_like of shape (B,), optional
        Plane energies ``w_b = ||q_b||² ≥ 0``; default ``1/B`` each.

    Returns
    -------
    ndarray
        ``E[qᵀP_n q]`` at each ``n``.

    Examples
    --------
    Uniform angles on ``(−1, 1)`` in every plane: ``χ = sinc 1 = sin 1``, so ``E[qᵀP_n q] = (sin 1)ⁿ``:

    >>> import numpy as np
    >>> chi_power_correlation(np.full(4, np.sin(1.0)), [1, 5, 20]).round(4)
    array([0.8415, 0.4219, 0.0317])
    """
    chi = check("chi (χ)", chi, complex_ok=True, abs_max=1 + 1e-12, ndim=1, nonempty=True)
    n = check("n (route length)", n, 0, integer=True)
    w = (np.full(chi.shape, 1.0 / chi.size) if weights is None
         else check("weights", weights, 0, ndim=1, size=chi.size))
    if not n.ndim:
        return float(np.real(chi**n) @ w)
    return (w @ np.real(np.power.outer(chi, n.ravel()))).reshape(n.shape)


@broadcasting("gamma", "eps")
def mixing_window(gamma: float, eps: float) -> float:
    """Mixing window after which ``||E[P_n]||_op ≤ ε`` (claim C1, *quoted*).

    .. math:: W(ε) = ⌈ln ε / ln(1 − γ)⌉

    Parameters
    ----------
    gamma : float or array_like
        Spectral gap ``γ ∈ [0, 1]``.
    eps : float or array_like
        Correlation level ``ε ∈ (0, 1)``.

    Returns
    -------
    float or ndarray
        ``W(ε)``; ``inf`` for ``γ = 0`` and ``1`` for ``γ = 1``.

    Examples
    --------
    >>> mixing_window(2 / 16, 0.01)          # Householder at d = 16: γ = 2/d
    35.0
    >>> mixing_window(0.0, 0.01)             # no gap: never mixes
    inf
    """
    gamma = arg_real("gamma", gamma, 0, 1)
    eps = arg_real("eps", eps, 0, 1, lo_open=True, hi_open=True)
    if not (0.0 <= gamma <= 1.0):
        raise ValueError(f"gamma (γ) must lie in [0, 1], got {gamma!r}")
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if gamma == 0.0:
        return math.inf
    if gamma == 1.0:
        return 1.0
    return float(window_from_log_rate(math.log1p(-gamma), eps))


def window_from_log_rate(log_rate, eps: float):
    """``⌈ln ε / ln r⌉`` for a geometric decay ``rⁿ`` given ``ln r ≤ 0`` (array or scalar): the one form of the window.

    ``inf`` where ``ln r = 0`` or the ratio overflows (``r`` within ~1e-308 of 1: as ``γ = 0``).  Used by
    :func:`mixing_window` (``r = 1 − γ``) and the per-plane windows ``W_b(ε)`` (``r = |χ_b|``).
    """
    with np.errstate(divide="ignore", over="ignore"):
        w = np.divide(math.log(eps), log_rate)
    return np.where(np.isfinite(w), np.ceil(w), np.inf)


@broadcasting("gate", "sd")
def forget_gate_mean(gate: float, sd: float) -> float:
    """Mean forget-gate factor (claim C4 control, *derived here*): ``φ = E σ(g)``, ``g ~ N(gate, sd²)``.

    Gauss–Hermite with 80 nodes; ``E e^{G_n} = φ^n`` for i.i.d. gates.  Broadcasts over ``gate`` and ``sd``.
    """
    gate, sd = arg_real("gate", gate), arg_real("sd", sd, 0)
    x, w = np.polynomial.hermite_e.hermegauss(80)
    with np.errstate(over="ignore"):  # e^{−g} = inf for g ≪ 0 gives σ(g) = 0 exactly: no warning
        return float(np.sum(w / (1.0 + np.exp(-(gate + sd * x)))) / math.sqrt(2 * math.pi))
