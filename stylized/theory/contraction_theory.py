"""The norm of a transported vector under PaTH's contraction ``M = I − β w wᵀ`` (claim C4, *derived here*).

For a unit ``k`` and one step with ``w`` uniform on ``S^{d−1}`` independent of ``k``,

.. math:: ||M k||² = 1 − 2β c² + β² c² = 1 − a c²,   a = β(2 − β) ∈ (0, 1],   c = w·k,

and ``c² ~ Beta(½, (d−1)/2)`` (a squared coordinate of a uniform point on the sphere).  Along the route
``P_n = M_1 ⋯ M_n`` the vector ``x_s = M_{n−s+1} ⋯ M_n k`` changes direction, but each new ``w`` is
independent of it, so

.. math:: log ||P_n k|| = Σ_{s=1}^{n} X_s,   X_s = ½ log(1 − a c_s²)  i.i.d.,

*exactly* (not only after mixing).  Hence ``E log ||P_n k|| = n μ₁``, ``Var log ||P_n k|| = n σ₁²`` with

* ``μ₁ = ½ E log(1 − a U)``, ``σ₁² = ¼ Var log(1 − a U)``, ``U ~ Beta(½, (d−1)/2)``;
* series (``a < 1``): ``E log(1 − aU) = −Σ_{m≥1} aᵐ E[Uᵐ]/m = −(a/d) ₃F₂(1, 1, 3/2; 2, d/2+1; a)`` and
  ``E log²(1 − aU) = Σ_{m≥2} aᵐ E[Uᵐ] 2H_{m−1}/m``, with ``E[Uᵐ] = (½)_m/(d/2)_m``;
* ``β = 1`` (``a = 1``, the projection onto ``w^⊥``): ``1 − U ~ Beta((d−1)/2, ½)``, so
  ``μ₁ = ½ (ψ((d−1)/2) − ψ(d/2))`` and ``σ₁² = ¼ (ψ′((d−1)/2) − ψ′(d/2))``;
* ``E ||P_n k||² = (1 − a/d)ⁿ`` and ``E[P_n] = (1 − β/d)ⁿ I`` (so ``γ = β/d``).

So ``log ||P_n k||`` drifts to ``−∞`` at rate ``|μ₁| ≈ β(2−β)/(2d)`` (large ``d``): a score ``λ qᵀ P_n k`` shrinks to 0 as
well as decorrelating, and the far logits collapse to 0 instead of spreading over ``[−λ, λ]``.  The
moments are computed by :func:`increment_moments` (quadrature in the angle ``φ = arccos c``, density
``∝ sin^{d−2} φ``, accurate to ~1e-12 relative; or the series above, an independent evaluation).

Example
-------
>>> m, v = increment_moments(16, 1.0)
>>> round(m, 6), round(v, 8)
(-0.034442, 0.00236972)
>>> bool(abs(increment_moments(16, 0.5)[0] - increment_moments(16, 0.5, method="series")[0]) < 1e-12)
True
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import integrate, special

from ..core._broadcast import check, check_choice
from ..core.options import arg_int, arg_real

__all__ = ["shrink_rate", "increment_moments", "log_norm_moments", "mean_square_norm", "sample_increments",
           "sample_log_norms"]


MAX_DRAWS = 2**27
"""Most increments one sampling call draws (1 GiB of float64)."""


def _lengths(n) -> np.ndarray:
    """Route length(s) ``n``: integers ≥ 0, as floats (exact below 2⁵³)."""
    return np.asarray(check("n", n, 0, integer=True), dtype=float)


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise ValueError(f"shape must be a tuple of integers ≥ 0, got {type(shape).__name__}")
    dims = tuple(check("shape", s, 0, integer=True, scalar=True) for s in shape)
    if math.prod(dims) > MAX_DRAWS:
        raise ValueError(f"shape: {math.prod(dims):,} draws exceed {MAX_DRAWS:,} (too large to hold)")
    return dims


def _check(d, beta) -> tuple[int, float]:
    d = arg_int("d", d, 2)
    beta = arg_real("beta", beta, 0.0, 2.0, lo_open=True, hi_open=True)
    return d, beta


def shrink_rate(beta: float) -> float:
    """``a = β(2 − β)``: one step maps ``||k||²`` to ``||k||²(1 − a c²)`` (``a = 1`` at ``β = 1``, ``→ 0`` at ``β → 2``)."""
    beta = arg_real("beta", beta, 0.0, 2.0, lo_open=True, hi_open=True)
    return beta * (2.0 - beta)


def _moments_quad(d: int, beta: float) -> tuple[float, float]:
    """``E[X]``, ``E[X²]`` of ``X = log(1 − a c²)`` by quadrature over ``φ ∈ (0, π/2)``, ``c = cos φ``."""
    a, eps = shrink_rate(beta), (1.0 - beta) ** 2  # 1 − a cos²φ = ε + a sin²φ
    log_norm = special.betaln(0.5, (d - 1) / 2.0) - math.log(2.0)  # ∫_0^{π/2} sin^{d−2}φ dφ

    def x(p: float) -> float:
        return math.log1p(-a * math.cos(p) ** 2) if a < 0.5 else math.log(eps + a * math.sin(p) ** 2)

    def w(p: float) -> float:
        s = math.sin(p)
        return math.exp((d - 2) * math.log(s) - log_norm) if s > 0.0 else (math.exp(-log_norm) if d == 2 else 0.0)

    pts = {min(math.pi / 4, r * math.sqrt(eps / a)) for r in (1.0, 10.0)} if eps > 0 else set()
    if d > 8:  # the weight sits within a few 1/√d of π/2
        pts.add(max(0.01, math.pi / 2 - 6.0 / math.sqrt(d)))
    pts = sorted(p for p in pts if 0.0 < p < math.pi / 2) or None
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)  # the tolerance asked is below float64's reach
        for k in (1, 2):
            out.append(integrate.quad(lambda p, k=k: x(p) ** k * w(p), 0.0, math.pi / 2, points=pts, limit=500,
                                      epsabs=0.0, epsrel=1e-13)[0])
    return out[0], out[1]


def _moments_series(d: int, beta: float, terms: int | None = None) -> tuple[float, float]:
    """``E[X]``, ``E[X²]`` of ``X = log(1 − aU)`` from the power series in ``a`` (``a < 1``; slow as ``a → 1``)."""
    a = shrink_rate(beta)
    if a >= 1.0:
        raise ValueError("the series needs β ≠ 1 (a = β(2−β) < 1)")
    M = terms or int(min(10**7, max(200, math.ceil(40.0 / -math.log(a)))))
    m = np.arange(1, M + 1, dtype=float)
    t = np.exp(m * math.log(a) + np.cumsum(np.log((m - 0.5) / (m - 1.0 + d / 2.0))))  # aᵐ (½)_m/(d/2)_m
    h = np.concatenate([[0.0], np.cumsum(1.0 / m)[:-1]])  # H_{m−1}
    return float(-np.sum(t / m)), float(np.sum(t * 2.0 * h / m))


def increment_moments(d: int, beta: float, method: str = "quad") -> tuple[float, float]:
    """``(μ₁, σ₁²)``: mean and variance of one increment ``½ log(1 − β(2−β) c²)``, ``c² ~ Beta(½, (d−1)/2)``.

    Parameters
    ----------
    d : dimension ``d ≥ 2``.
    beta : ``β ∈ (0, 2)``.
    method : ``"quad"`` (quadrature in the angle, any ``β``; ``β = 1`` uses the digamma closed form) or
        ``"series"`` (the power series in ``a``, ``β ≠ 1``): two independent evaluations.

    Returns
    -------
    (float, float)
        ``μ₁ = E X`` and ``σ₁² = Var X``; ``log ||P_n k||`` has mean ``n μ₁`` and variance ``n σ₁²``.
    """
    d, beta = _check(d, beta)
    check_choice("method", method, ("quad", "series"))
    if beta == 1.0 and method == "quad":
        b = (d - 1) / 2.0
        return 0.5 * float(special.digamma(b) - special.digamma(b + 0.5)), \
            0.25 * float(special.polygamma(1, b) - special.polygamma(1, b + 0.5))
    m1, m2 = (_moments_quad if method == "quad" else _moments_series)(d, beta)
    return 0.5 * m1, 0.25 * max(0.0, m2 - m1 * m1)


def log_norm_moments(n, d: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``E log ||P_n k|| = n μ₁`` and ``Var log ||P_n k|| = n σ₁²`` for route length(s) ``n`` (exact: i.i.d. increments)."""
    n = _lengths(n)
    mu, var = increment_moments(d, beta)
    return n * mu, n * var


def mean_square_norm(n, d: int, beta: float):
    """``E ||P_n k||² = (1 − β(2−β)/d)ⁿ`` for a unit ``k`` (``E c² = 1/d``)."""
    d, beta = _check(d, beta)
    with np.errstate(under="ignore"):
        return (1.0 - shrink_rate(beta) / d) ** _lengths(n)


def sample_increments(rng, shape: tuple, d: int, beta: float, xp=np):
    """Exact draws of ``½ log(1 − a c²)``, ``c² ~ Beta(½, (d−1)/2)`` (Generator ``rng`` of namespace ``xp``)."""
    d, beta = _check(d, beta)
    shape = _shape(shape)
    if not callable(getattr(rng, "beta", None)):
        raise ValueError(f"rng must be a random Generator (with .beta), got {type(rng).__name__}")
    return 0.5 * xp.log1p(-shrink_rate(beta) * rng.beta(0.5, (d - 1) / 2.0, size=shape))


def sample_log_norms(rng, ns, size: int, d: int, beta: float) -> np.ndarray:
    """``(size, len(ns))`` exact draws of ``log ||P_n k||`` at the sorted route lengths ``ns`` (sums of i.i.d.
    increments along one path per row; NumPy)."""
    ns = np.asarray(check("ns", ns, 0, integer=True, ndim=1), dtype=np.int64)
    size = check("size", size, 0, integer=True, scalar=True)
    if size * (int(ns.max()) + 1 if ns.size else 1) > MAX_DRAWS:
        raise ValueError(f"size and ns: size × (max ns + 1) = {size * (int(ns.max()) + 1 if ns.size else 1):,} values "
                         f"exceed {MAX_DRAWS:,} (too large to hold)")
    inc = sample_increments(rng, (size, int(ns.max()) if ns.size else 0), d, beta)
    cum = np.concatenate([np.zeros((int(size), 1)), np.cumsum(inc, axis=1)], axis=1)
    return cum[:, ns]
