"""Exact laws of a far score ``s = qᵀ P k`` once the route has mixed (claims C2, C3), in closed form.

* :class:`HaarCoordinate` ``(d, scale)``: O(d) families.  ``P k`` uniform on the sphere of radius
  ``|k|``, so ``s = |q||k|·x`` with ``(1 + x)/2 ~ Beta((d−1)/2, (d−1)/2)`` *(derived)*; moment
  generating function ``₀F₁(; d/2; λ²/4)``.
* :class:`UniformPhaseSum` ``(a)``: SO(2) blocks.  Uniform plane phases give ``s = Σ_b a_b cos U_b``
  (``a_b = |q_b||k_b|``) with characteristic function ``φ(t) = Π_b J₀(a_b t)``.  Its CDF is the
  exact Fourier series of a law supported in ``[−A, A]`` (``A = Σ_b a_b``; Poisson summation, no
  aliasing because the support is compact)::

      F(x) = (x + A)/(2A) + Σ_{k≥1} φ(πk/A) sin(πk x/A) / (πk),

  truncated where the bound ``|J₀(z)| ≤ √(2/(πz))`` puts the remainder below ``tol`` (four or more
  planes); one plane is the arcsine law, two or three planes nested integrals of it.
  :func:`gil_pelaez_cdf` is the slow independent reference (inversion of ``φ`` by quadrature).
* :func:`max_mgf_bound`: ``E[max_{j≤M} s_j] ≤ min_β (ln M + ln E e^{βs})/β`` for *any* dependence
  between ``M`` scores with this marginal (Jensen), the bound behind the score-gap check.
* :func:`far_score_law`: the law a family's far score tends to.

Example
-------
>>> law = UniformPhaseSum((0.5,))                   # one plane: the arcsine law on [−½, ½]
>>> bool(abs(law.cdf(0.25) - (0.5 + np.arcsin(0.5) / np.pi)) < 1e-15)
True
>>> round(float(HaarCoordinate(3).cdf(0.0)), 12)     # d = 3: uniform on [−1, 1]
0.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special, stats

__all__ = ["HaarCoordinate", "UniformPhaseSum", "far_score_law", "gil_pelaez_cdf", "max_mgf_bound",
           "haar_mgf", "uniform_phase_mgf", "haar_expected_max"]

_C_J0 = math.sqrt(2.0 / math.pi)  # sup_z √z |J₀(z)| (approached from below as z → ∞)


def haar_mgf(lam: float, d: int) -> float:
    """``E[e^{λs}]`` for one coordinate ``s`` of a uniform point on ``S^{d−1}`` *(derived)*.

    ``E[e^{λs}] = Γ(d/2) (2/λ)^{d/2−1} I_{d/2−1}(λ) = ₀F₁(; d/2; λ²/4)`` (e.g. ``d = 3``: ``sinh λ / λ``).
    """
    return float(special.hyp0f1(d / 2.0, lam * lam / 4.0))


def uniform_phase_mgf(lam: float, a) -> float:
    """``E[e^{λ Σ_b a_b cos U_b}] = Π_b I_0(λ a_b)`` for independent uniform phases *(derived)*."""
    x = lam * np.abs(np.asarray(a, dtype=float))
    return float(np.exp(np.sum(np.log(special.i0e(x)) + x)))


def haar_expected_max(d: int, M: int) -> float:
    """``E[max of M independent Haar coordinates] = 1 − ∫_{−1}^{1} F(s)^M ds`` (trapezoid on a fine grid)."""
    s = np.linspace(-1.0, 1.0, 200_001)
    a = (d - 1) / 2.0
    F = special.betainc(a, a, (1.0 + s) / 2.0)
    return float(1.0 - np.trapezoid(F**M, s))


@dataclass(frozen=True)
class HaarCoordinate:
    """``s = scale·x``, ``x`` one coordinate of a uniform point on ``S^{d−1}``: ``(1+x)/2 ~ Beta((d−1)/2, (d−1)/2)``."""

    d: int
    scale: float = 1.0

    name = "haar"

    def __post_init__(self):
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or self.d < 2:
            raise ValueError(f"d must be an integer ≥ 2, got {self.d!r}")
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale!r}")

    @property
    def _beta(self):
        return stats.beta((self.d - 1) / 2.0, (self.d - 1) / 2.0)

    def _u(self, x):
        return (1.0 + np.asarray(x, dtype=float) / self.scale) / 2.0

    def cdf(self, x) -> np.ndarray:
        return self._beta.cdf(self._u(x))

    def sf(self, x) -> np.ndarray:
        return self._beta.sf(self._u(x))

    def pdf(self, x) -> np.ndarray:
        return self._beta.pdf(self._u(x)) / (2.0 * self.scale)

    def mgf(self, lam: float) -> float:
        return haar_mgf(lam * self.scale, self.d)

    def log_mgf(self, lam: float) -> float:
        """``ln ₀F₁(; d/2; x²/4)``, ``x = λ·scale``; past overflow ``ln Γ(ν+1) − ν ln(x/2) + ln I_ν(x)``, ``ν = d/2 − 1``."""
        x, nu = abs(lam) * self.scale, self.d / 2.0 - 1.0
        v = special.hyp0f1(nu + 1.0, x * x / 4.0)
        if math.isfinite(v):
            return float(math.log(v))
        return float(special.gammaln(nu + 1) - nu * math.log(x / 2) + math.log(special.ive(nu, x)) + x)

    @property
    def variance(self) -> float:
        return self.scale**2 / self.d


@dataclass(frozen=True)
class UniformPhaseSum:
    """``s = Σ_b a_b cos U_b`` with independent ``U_b ~ U(0, 2π)``: the SO(2) far-score law.

    ``tol`` bounds the truncation error of the CDF series (absolute, at every ``x``).
    """

    a: tuple
    tol: float = 1e-10

    name = "uniform-phase"

    def __post_init__(self):
        a = np.abs(np.asarray(self.a, dtype=float)).ravel()
        if a.size == 0 or not np.all(np.isfinite(a)) or not np.any(a > 0):
            raise ValueError(f"a must hold finite amplitudes, at least one > 0, got {self.a!r}")
        object.__setattr__(self, "a", tuple(float(v) for v in a if v > 0))

    @property
    def A(self) -> float:
        """Half-width of the support ``[−A, A]``, ``A = Σ_b a_b``."""
        return float(sum(self.a))

    @property
    def variance(self) -> float:
        return float(np.sum(np.square(self.a)) / 2.0)

    def cf(self, t) -> np.ndarray:
        """Characteristic function ``φ(t) = Π_b J₀(a_b t)`` (real and even)."""
        t = np.asarray(t, dtype=float)
        return np.prod(special.j0(np.multiply.outer(t, np.asarray(self.a))), axis=-1)

    def mgf(self, lam: float) -> float:
        return uniform_phase_mgf(lam, self.a)

    def log_mgf(self, lam: float) -> float:
        """``Σ_b ln I₀(λ a_b)`` (no overflow)."""
        x = abs(lam) * np.asarray(self.a)
        return float(np.sum(np.log(special.i0e(x)) + x))

    def n_terms(self) -> int:
        """Terms ``K`` of the CDF series whose remainder ``Σ_{k>K} |φ(ω_k)|/(πk)`` is ≤ ``tol``.

        With ``|J₀(z)| ≤ min(1, √(2/(πz)))`` the terms are bounded by ``b_k = Π_b min(1, c/√(a_b ω_k))/(πk)``,
        ``ω_k = πk/A``, ``c = √(2/π)``.  Where ``m`` planes are past ``a_b ω_k ≥ c²``, ``b`` falls at least like
        ``k^{−1−m/2}`` from there on, so the remainder is at most ``b_K·K/(m/2)``.
        """
        a = np.asarray(self.a)
        c2 = _C_J0**2

        def rem(k):
            w = math.pi * k / self.A
            m = int(np.count_nonzero(a * w >= c2))
            bk = float(np.prod(np.minimum(1.0, _C_J0 / np.sqrt(a * w)))) / (math.pi * k)
            return bk * k / (m / 2.0) if m else math.inf

        k = max(1, math.ceil(c2 * self.A / (math.pi * a.max())))
        while rem(k) > self.tol:
            k *= 2
        lo, hi = max(1, k // 2), k
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if rem(mid) > self.tol else (lo, mid)
        return int(hi)

    def _series(self, x: np.ndarray, kind: str) -> np.ndarray:
        """``Σ_k c_k sin(kθ)`` (CDF) or ``Σ_k φ_k cos(kθ)`` (density), ``θ = πx/A``, by the three-term recurrence
        ``h_{k+1} = 2cos θ·h_k − h_{k−1}`` (rounding grows like ``K·ε``: below 1e-11 at ``K`` = 10⁵)."""
        A = self.A
        K = self.n_terms()
        k = np.arange(1, K + 1)
        phi = self.cf(np.pi * k / A)
        coef = phi / (np.pi * k) if kind == "cdf" else phi
        th = np.pi * x / A
        two_c = 2.0 * np.cos(th)
        prev, cur = (np.zeros_like(th), np.sin(th)) if kind == "cdf" else (np.ones_like(th), np.cos(th))
        tot = np.zeros_like(th)
        for c in coef:
            tot += c * cur
            prev, cur = cur, two_c * cur - prev
        return (x + A) / (2 * A) + tot if kind == "cdf" else (0.5 + tot) / A

    def cdf(self, x) -> np.ndarray:
        """Exact CDF (series truncated at absolute error ≤ ``tol``; quadrature for up to three planes)."""
        x = np.asarray(x, dtype=float)
        A = self.A
        xc = np.clip(x, -A, A)
        if len(self.a) <= 3:
            out = np.vectorize(lambda v: _few_planes_cdf(v, self.a))(xc)
        else:
            out = np.clip(self._series(xc, "cdf"), 0.0, 1.0)
        return np.where(x <= -A, 0.0, np.where(x >= A, 1.0, out))

    def sf(self, x) -> np.ndarray:
        """``P(s > x) = F(−x)`` (the law is symmetric), so small tails keep their absolute accuracy."""
        return self.cdf(-np.asarray(x, dtype=float))

    def pdf(self, x) -> np.ndarray:
        """Density from the cosine series (four planes or more; for plots)."""
        if len(self.a) < 4:
            raise ValueError("the density series needs four planes or more")
        x = np.asarray(x, dtype=float)
        inside = np.abs(x) < self.A
        return np.where(inside, self._series(np.where(inside, x, 0.0), "pdf"), 0.0)


def _few_planes_cdf(x: float, a: tuple) -> float:
    """CDF of ``Σ_b a_b cos U_b`` for one to three planes: the arcsine law ``½ + arcsin(x/a)/π`` for one,
    and ``F_B(x) = (1/π)∫_0^π F_{B−1}(x − a_B cos u) du`` (condition on the last phase) for more."""
    if len(a) == 1:
        return 0.5 + math.asin(min(1.0, max(-1.0, x / a[0]))) / math.pi
    rest, aB = a[:-1], a[-1]
    lim = sum(rest)

    def given(u):
        y = x - aB * math.cos(u)
        return 0.0 if y <= -lim else 1.0 if y >= lim else _few_planes_cdf(y, rest)

    val, _ = integrate.quad(given, 0.0, math.pi, limit=200, epsabs=1e-10, epsrel=1e-10)
    return val / math.pi


def gil_pelaez_cdf(x: float, a, tol: float = 1e-9) -> float:
    """Reference CDF of ``Σ_b a_b cos U_b`` by Gil-Pelaez inversion, ``F(x) = ½ + (1/π)∫_0^∞ φ(t) sin(tx)/t dt``.

    Independent of the series in :class:`UniformPhaseSum` (four planes or more): the integral is cut at
    ``t_max`` where the bound ``|J₀(z)| ≤ √(2/(πz))`` puts the remainder below ``tol``, and each piece
    shorter than half the fastest oscillation gets a 24-point Gauss–Legendre rule.  Slow; for tests.
    """
    a = np.abs(np.asarray(a, dtype=float))
    a = a[a > 0]
    B = a.size
    if B < 4:
        raise ValueError("the Gil-Pelaez reference needs four planes or more (the integrand decays like t^{-1-B/2})")
    t_max = 1.0
    while np.any(a * t_max < _C_J0**2) or np.prod(_C_J0 / np.sqrt(a * t_max)) * 2.0 / B / math.pi > tol:
        t_max *= 1.25
    width = math.pi / (abs(x) + a.sum())
    edges = np.linspace(0.0, t_max, int(math.ceil(t_max / width)) + 1)
    z, w = np.polynomial.legendre.leggauss(24)
    total = 0.0
    for s in range(0, edges.size - 1, 4096):
        lo, hi = edges[s:-1][:4096], edges[s + 1:][:4096]
        t = (0.5 * (hi - lo))[:, None] * z + (0.5 * (hi + lo))[:, None]
        f = np.prod(special.j0(np.multiply.outer(t, a)), axis=-1) * x * np.sinc(t * x / np.pi)
        total += float(np.sum((0.5 * (hi - lo))[:, None] * w * f))
    return 0.5 + total / math.pi


def max_mgf_bound(M: int, log_mgf) -> float:
    """``E[max_{j≤M} s_j] ≤ min_{β>0} (ln M + ln E[e^{βs}])/β`` for scores with a common marginal, any dependence.

    From ``E max ≤ β⁻¹ ln E Σ_j e^{β s_j} = β⁻¹ ln(M E e^{βs})`` (Jensen).  ``log_mgf(β)`` is ``ln E[e^{βs}]``.
    """
    if M < 1:
        raise ValueError(f"M must be ≥ 1, got {M!r}")

    def f(logb):
        b = math.exp(logb)
        return (math.log(M) + log_mgf(b)) / b

    r = optimize.minimize_scalar(f, bounds=(math.log(1e-3), math.log(1e4)), method="bounded",
                                 options={"xatol": 1e-10})
    return float(r.fun)


def far_score_law(family, q: np.ndarray, k: np.ndarray):
    """The law of ``qᵀ P k`` once the route has mixed: :class:`UniformPhaseSum` with ``a_b = |q_b||k_b|``
    for SO(2) families, :class:`HaarCoordinate` ``(d, |q||k|)`` for O(d) families."""
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    if family.kind == "so2":
        return UniformPhaseSum(tuple(np.hypot(q[0::2], q[1::2]) * np.hypot(k[0::2], k[1::2])))
    return HaarCoordinate(int(family.d), float(np.linalg.norm(q) * np.linalg.norm(k)))
