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
  :func:`~stylized.theory.phase_cdf.gil_pelaez_cdf` is the slow independent reference (inversion of ``φ`` by quadrature).
* :func:`max_mgf_bound`: ``E[max_{j≤M} s_j] ≤ min_β (ln M + ln E e^{βs})/β`` for *any* dependence
  between ``M`` scores with this marginal (Jensen), the bound behind the score-gap check.
* :func:`far_score_law`: the law a family's far score tends to, asked of the law
  (:meth:`stylized.laws.base.StepLaw.far_score_law`): one of the two closed forms, or an
  :class:`~stylized.theory.score_reference.EstimatedScoreLaw` (a Monte Carlo reference, labelled *estimated*).

Every score law answers the same questions of a check: ``cdf``, ``sf``, ``mgf``, ``log_mgf``, ``ks_test``,
``sf_interval`` / ``mgf_interval`` / ``log_mgf_upper`` (zero width for a closed form), ``tail_bound`` (Lévy
or Hoeffding; ``None`` for an estimated law), ``has_density`` and ``theory_kind``.

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
from functools import lru_cache

import numpy as np
from scipy import optimize, special, stats

from ..core._broadcast import broadcasting, check, check_callable, check_instance
from ..core.options import arg_int, arg_real
from ..laws.law_type import StepLawType
from .bounds import haar_coordinate_cdf, haar_coordinate_pdf, haar_coordinate_tail, hoeffding_tail, levy_tail
from .phase_cdf import _few_planes_cdf
from .score_reference import EstimatedScoreLaw, estimated_far_score_law

__all__ = ["HaarCoordinate", "UniformPhaseSum", "EstimatedScoreLaw", "far_score_law", "self_consistency_law", "estimated_far_score_law", "max_mgf_bound",
           "haar_mgf", "haar_log_mgf", "uniform_phase_mgf", "uniform_phase_log_mgf", "haar_expected_max",
           "jacobi_nodes"]

_C_J0 = math.sqrt(2.0 / math.pi)  # sup_z √z |J₀(z)| (approached from below as z → ∞)
_MAX_TERMS = 1 << 22  # cap on the CDF series (memory ~ 32 MiB per evaluation point row)
_MAX_GP_PIECES = 1 << 22  # cap on the Gil-Pelaez quadrature pieces (about a minute)


@broadcasting("lam", "d")
def haar_mgf(lam: float, d: int) -> float:
    """Moment generating function of one Haar coordinate (claims C3, C4, *derived here*).

    .. math:: μ = E[e^{λs}] = Γ(d/2) (2/λ)^{d/2−1} I_{d/2−1}(λ) = ₀F₁(; d/2; λ²/4) = e^{−λ} ₁F₁(a; 2a; 2λ)

    ``s`` one coordinate of a uniform point on ``S^{d−1}``, ``a = (d−1)/2`` (e.g. ``d = 3``: ``sinh λ / λ``);
    the mean far weight ``E e^{λξ}`` of the growth model.  Evaluated as SciPy's ``hyp0f1`` (relative error
    ≲ 2·10⁻¹³ against 40-digit arithmetic for ``d ≤ 256``, ``λ ≤ 30``); broadcasts over ``lam`` and ``d``.
    """
    lam, d = arg_real("lam", lam, -1e8, 1e8), arg_int("d", d, 1)
    try:  # d = 2: E e^{λ cos U} = I_0(λ) directly (SciPy's hyp0f1(1, ·) asymptotic branch divides by zero)
        v = float(special.i0(lam)) if d == 2 else float(special.hyp0f1(d / 2.0, lam * lam / 4.0))
    except (ZeroDivisionError, OverflowError):
        v = math.inf
    if not (math.isfinite(v) and v > 0):  # SciPy's asymptotic branch returns 0 past overflow at d = 2
        raise ValueError(f"lam (λ) = {lam}: E[e^(λs)] overflows float64 at d = {d}; use haar_log_mgf")
    return v


@broadcasting("lam", "d")
def haar_log_mgf(lam: float, d: int) -> float:
    """``ln E[e^{λs}]`` of one Haar coordinate (claim C3, *derived here*), finite past the overflow of :func:`haar_mgf`.

    .. math:: ln ₀F₁(; ν+1; x²/4) = ln Γ(ν+1) − ν ln(x/2) + ln I_ν(x),  x = |λ|, ν = d/2 − 1
    """
    lam, d = arg_real("lam", lam, -1e8, 1e8), arg_int("d", d, 1)
    x, nu = abs(lam), d / 2.0 - 1.0
    if d == 2:  # ln I_0(x), without SciPy's hyp0f1(1, ·) asymptotic branch (it divides by zero)
        return float(math.log(special.i0e(x)) + x)
    v = special.hyp0f1(nu + 1.0, x * x / 4.0)
    if math.isfinite(v) and v > 0:  # 0: SciPy's asymptotic branch past overflow (d = 2)
        return float(math.log(v))
    ive = special.ive(nu, x)
    log_i = math.log(ive) + x if ive > 0 and math.isfinite(ive) else _debye_log_iv(nu, x)
    return float(special.gammaln(nu + 1) - nu * math.log(x / 2) + log_i)


def _debye_log_iv(nu: float, x: float) -> float:
    """``ln I_ν(x)`` by Debye's uniform expansion (DLMF 10.41.3, terms to ``u_3``; relative error
    ``O(ν⁻⁴)``), where SciPy's ``ive`` underflows (``ν`` large against ``x``)."""
    z = x / nu
    r = math.sqrt(1.0 + z * z)
    t = 1.0 / r
    eta = r + math.log(z / (1.0 + r))
    u1 = (3 * t - 5 * t**3) / 24
    u2 = (81 * t**2 - 462 * t**4 + 385 * t**6) / 1152
    u3 = (30375 * t**3 - 369603 * t**5 + 765765 * t**7 - 425425 * t**9) / 414720
    return -0.5 * math.log(2 * math.pi * nu) - 0.5 * math.log(r) + nu * eta + math.log1p(u1 / nu + u2 / nu**2 + u3 / nu**3)


@broadcasting("lam")
def uniform_phase_log_mgf(lam: float, a) -> float:
    """``ln E[e^{λ Σ_b a_b cos U_b}] = Σ_b ln I_0(λ a_b)`` for independent uniform phases (claim C3, *derived here*).

    ``lam``: ``|λ| ≤ 10⁸`` (broadcasts); ``a``: the finite plane amplitudes (summed over).
    """
    lam = arg_real("lam (λ)", lam, -1e8, 1e8)
    a = check("a (plane amplitudes)", a)
    with np.errstate(over="ignore"):
        x = abs(lam) * np.abs(np.asarray(a, dtype=float))
    if not np.all(np.isfinite(x)):
        raise ValueError(f"lam (λ) = {lam} and a: λ·a_b overflows float64")
    return float(np.sum(np.log(special.i0e(x)) + x))


@broadcasting("lam")
def uniform_phase_mgf(lam: float, a) -> float:
    """Moment generating function of the SO(2) far score (claim C3, *derived here*).

    .. math:: E[e^{λ Σ_b a_b cos U_b}] = Π_b I_0(λ a_b)

    ``a`` holds the plane amplitudes (a core axis, like :func:`stylized.theory.bounds.hoeffding_tail`); ``lam``
    broadcasts.  A value beyond float64 raises ``ValueError`` (use :func:`uniform_phase_log_mgf`).
    """
    with np.errstate(over="ignore"):
        v = float(np.exp(uniform_phase_log_mgf(lam, a)))
    if not math.isfinite(v):
        raise ValueError(f"lam (λ) = {lam}: E[e^(λs)] overflows float64; use uniform_phase_log_mgf")
    return v


@broadcasting("d", "M")
def haar_expected_max(d: int, M: int) -> float:
    """Mean of the largest of ``M`` independent Haar coordinates (claim C3, *derived here*; for tests).

    .. math:: E[max_{j≤M} s_j] = 1 − ∫_{−1}^{1} F(s)^M ds

    ``F`` the CDF (:func:`stylized.theory.bounds.haar_coordinate_cdf`), trapezoid on 200,001 points.
    """
    d, M = arg_int("d", d, 2), arg_int("M", M, 1)
    s = np.linspace(-1.0, 1.0, 200_001)
    a = (d - 1) / 2.0
    F = special.betainc(a, a, (1.0 + s) / 2.0)
    return float(1.0 - np.trapezoid(F**M, s))


_JACOBI_MAX_NODES = 10**4  # roots_jacobi is O(n²): 10⁴ nodes take about 2 s
_JACOBI_MAX_ALPHA = 1e9  # beyond it SciPy's recurrence overflows (NaN nodes)


def jacobi_nodes(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(claim C2 quadrature, *derived*) Gauss–Jacobi nodes on ``[−1, 1]`` for the weight ``(1 − x²)^α``, weights
    normalised to sum 1.

    With ``α = (d − 3)/2`` these integrate against the law of one Haar coordinate on ``S^{d−1}``
    (:func:`stylized.theory.bounds.haar_coordinate_pdf`).  ``n`` an integer in ``[1, 10⁴]``, ``α ∈ (−1, 10⁹]``.
    Cached: do not modify the returned arrays.
    """
    n = arg_int("n (nodes)", n, 1, _JACOBI_MAX_NODES)
    alpha = arg_real("alpha (α)", alpha, -1, _JACOBI_MAX_ALPHA, lo_open=True)
    return _jacobi_nodes(n, alpha)


@lru_cache(maxsize=32)
def _jacobi_nodes(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    x, w = special.roots_jacobi(n, alpha, alpha)
    return x, w / w.sum()


class _ClosedForm:
    """What a check asks of a closed-form score law: exact values, zero-width intervals."""

    theory_kind = "closed form"

    def ks_test(self, scores):
        """One-sample KS test of ``scores`` against the exact CDF."""
        return stats.kstest(scores, self.cdf)

    def sf_interval(self, t: float) -> tuple[float, float]:
        v = float(self.sf(t))
        return v, v

    def mgf_interval(self, lam: float) -> tuple[float, float]:
        v = float(self.mgf(lam))
        return v, v

    def log_mgf_upper(self, lam: float) -> float:
        """``ln E[e^{λs}]`` itself (exact)."""
        return self.log_mgf(lam)


@dataclass(frozen=True)
class HaarCoordinate(_ClosedForm):
    """(claim C2, *derived*) ``s = scale·x``, ``x`` one coordinate of a uniform point on ``S^{d−1}``: ``(1+x)/2 ~ Beta((d−1)/2, (d−1)/2)``."""

    d: int
    scale: float = 1.0

    name = "haar"
    tail_bound_name = "Lévy"
    has_density = True

    @classmethod
    def of_law(cls, law, q, k) -> HaarCoordinate:
        """The post-mixing law of ``qᵀ P_n k`` for an isotropic orthogonal ``law``: ``(d, |q||k|)``."""
        return cls(int(law.d), float(np.linalg.norm(q) * np.linalg.norm(k)))

    def __post_init__(self):
        object.__setattr__(self, "d", arg_int("d", self.d, 2))
        object.__setattr__(self, "scale", arg_real("scale", self.scale, 0, lo_open=True))

    def _x(self, s) -> np.ndarray:
        return np.asarray(s, dtype=float) / self.scale

    def cdf(self, x) -> np.ndarray:
        """:func:`stylized.theory.bounds.haar_coordinate_cdf` at ``x/scale``."""
        return haar_coordinate_cdf(self._x(x), self.d)

    def sf(self, x) -> np.ndarray:
        """:func:`stylized.theory.bounds.haar_coordinate_tail` at ``x/scale``."""
        return haar_coordinate_tail(self._x(x), self.d)

    def pdf(self, x) -> np.ndarray:
        """:func:`stylized.theory.bounds.haar_coordinate_pdf` at ``x/scale``, divided by ``scale``."""
        return haar_coordinate_pdf(self._x(x), self.d) / self.scale

    def mgf(self, lam: float) -> float:
        return haar_mgf(lam * self.scale, self.d)

    def log_mgf(self, lam: float) -> float:
        """``ln ₀F₁(; d/2; x²/4)``, ``x = λ·scale`` (:func:`haar_log_mgf`)."""
        return haar_log_mgf(abs(lam) * self.scale, self.d)

    @property
    def variance(self) -> float:
        return self.scale**2 / self.d

    def tail_bound(self, t) -> np.ndarray:
        """Lévy: ``P(s ≥ t) ≤ exp(−d (t/scale)²/2)`` (:func:`stylized.theory.bounds.levy_tail`).

        A ``scale`` within 8 ulps of 1 (``|q||k|`` of unit vectors, rounded) is taken as 1: the bound moves
        by at most ~1e-15 relative, and the unit law's bound is the one the checks have always reported."""
        unit = abs(self.scale - 1.0) <= 8 * np.finfo(float).eps
        return levy_tail(np.asarray(t, dtype=float) if unit else self._x(t), self.d)


@dataclass(frozen=True)
class UniformPhaseSum(_ClosedForm):
    """(claim C2, *quoted* law; CDF series *derived here*) ``s = Σ_b a_b cos U_b`` with independent ``U_b ~ U(0, 2π)``: the SO(2) far-score law.

    ``tol`` bounds the truncation error of the CDF series (absolute, at every ``x``).
    """

    a: tuple
    tol: float = 1e-10

    name = "uniform-phase"
    tail_bound_name = "Hoeffding"

    @classmethod
    def of_law(cls, law, q, k) -> UniformPhaseSum:
        """The post-mixing law of ``qᵀ P_n k`` for equidistributing SO(2) planes: ``a_b = |q_b||k_b|``."""
        return cls(tuple(np.hypot(q[0::2], q[1::2]) * np.hypot(k[0::2], k[1::2])))

    def __post_init__(self):
        a = np.abs(check("a", self.a)).ravel()
        if a.size == 0 or not np.all(np.isfinite(a)) or not np.any(a > 0):
            raise ValueError(f"a must hold finite amplitudes, at least one > 0, got {self.a!r}")
        object.__setattr__(self, "a", tuple(float(v) for v in a if v > 0))
        object.__setattr__(self, "tol", arg_real("tol", self.tol, 0, 1, lo_open=True))

    @property
    def A(self) -> float:
        """Half-width of the support ``[−A, A]``, ``A = Σ_b a_b``."""
        return float(sum(self.a))

    @property
    def variance(self) -> float:
        return float(np.sum(np.square(self.a)) / 2.0)

    @property
    def has_density(self) -> bool:
        """The density series (:meth:`pdf`) needs four planes or more."""
        return len(self.a) >= 4

    def tail_bound(self, t) -> np.ndarray:
        """Hoeffding: ``P(s ≥ t) ≤ exp(−t²/(2Σ_b a_b²))`` (:func:`stylized.theory.bounds.hoeffding_tail`)."""
        return hoeffding_tail(np.asarray(t, dtype=float), np.asarray(self.a))

    def cf(self, t) -> np.ndarray:
        """Characteristic function ``φ(t) = Π_b J₀(a_b t)`` (real and even)."""
        t = np.asarray(t, dtype=float)
        return np.prod(special.j0(np.multiply.outer(t, np.asarray(self.a))), axis=-1)

    def mgf(self, lam: float) -> float:
        return uniform_phase_mgf(lam, self.a)

    def log_mgf(self, lam: float) -> float:
        """``Σ_b ln I₀(λ a_b)`` (no overflow; :func:`uniform_phase_log_mgf`)."""
        return uniform_phase_log_mgf(lam, self.a)

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
            if k > _MAX_TERMS:
                raise ValueError(f"a: the CDF series of amplitudes {self.a!r} needs more than {_MAX_TERMS} terms for "
                                 f"tol={self.tol}; drop planes with negligible a_b or raise tol")
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


@broadcasting("M")
def max_mgf_bound(M: int, log_mgf) -> float:
    """(claim C3, *derived here*) ``E[max_{j≤M} s_j] ≤ min_{β>0} (ln M + ln E[e^{βs}])/β`` for scores with a common marginal, any dependence.

    From ``E max ≤ β⁻¹ ln E Σ_j e^{β s_j} = β⁻¹ ln(M E e^{βs})`` (Jensen).  ``log_mgf(β)`` is ``ln E[e^{βs}]``.
    """
    M = arg_int("M", M, 1)
    check_callable("log_mgf", log_mgf)

    def f(logb):
        b = math.exp(logb)
        v = log_mgf(b)
        try:
            bad = isinstance(v, (bool, np.bool_)) or math.isnan(float(v))
        except (TypeError, ValueError):
            bad = True
        if bad:
            raise ValueError(f"log_mgf must return a real number (ln E[e^(βs)]), got {v!r:.40} at β = {b!r}")
        return (math.log(M) + v) / b

    r = optimize.minimize_scalar(f, bounds=(math.log(1e-3), math.log(1e4)), method="bounded",
                                 options={"xatol": 1e-10})
    if not math.isfinite(r.fun):
        raise ValueError(f"log_mgf: the bound min_β (ln M + ln E[e^(βs)])/β is not finite ({r.fun!r}) for β in "
                         "[1e-3, 1e4]")
    return float(r.fun)


def far_score_law(family, q: np.ndarray, k: np.ndarray):
    """(claims C2, C3, *derived*) The claim's law of ``qᵀ P k`` once the route has mixed, for every orthogonal law:
    :class:`UniformPhaseSum` with ``a_b = |q_b||k_b|`` for a law with declared SO(2) planes, else
    :class:`HaarCoordinate` ``(d, |q||k|)``.  Never the law's own Monte Carlo limit: a law whose walk does not reach
    the claim's law (its premise fails, :mod:`stylized.theory.premises`) is then refused by the checks, as it must
    be.  The law's own limit, a self-consistency reference only, is :func:`self_consistency_law`.

    ``q`` and ``k``: non-zero finite vectors of the law's dimension ``d``."""
    check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")
    q = check("q", q, ndim=1, size=family.d)
    k = check("k", k, ndim=1, size=family.d)
    for name, v in (("q", q), ("k", k)):
        if not np.any(v):
            raise ValueError(f"{name} must be a non-zero vector")
    return (UniformPhaseSum if family.planes else HaarCoordinate).of_law(family, q, k)


def self_consistency_law(family, q: np.ndarray, k: np.ndarray):
    """The law's *own* post-mixing law (:meth:`stylized.laws.base.StepLaw.far_score_law`) where it is a Monte Carlo
    reference of its own steps (:class:`EstimatedScoreLaw`): a stationarity (self-consistency) reference, never C2's
    verdict; ``None`` where the law's own limit is the claim's closed form or cannot be estimated."""
    try:
        own = family.far_score_law(np.asarray(q, dtype=float), np.asarray(k, dtype=float))
    except ValueError:
        return None
    return own if isinstance(own, EstimatedScoreLaw) else None
