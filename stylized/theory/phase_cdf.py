"""The CDF of a sum of uniform-phase cosines ``Σ_b a_b cos U_b`` by Gil-Pelaez inversion (the law of a far score
of commuting SO(2) planes once mixed, :class:`stylized.theory.score_laws.UniformPhaseSum`)."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from ..core._broadcast import broadcasting, check
from ..core.options import arg_real

__all__ = ["gil_pelaez_cdf"]

_C_J0 = math.sqrt(2.0 / math.pi)  # sup_z √z |J₀(z)| (approached from below as z → ∞)
_MAX_GP_PIECES = 1 << 22  # cap on the Gil-Pelaez quadrature pieces (about a minute)


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


@broadcasting("x")
def gil_pelaez_cdf(x: float, a, tol: float = 1e-9) -> float:
    """(claim C2, reference, *derived here*) Reference CDF of ``Σ_b a_b cos U_b`` by Gil-Pelaez inversion, ``F(x) = ½ + (1/π)∫_0^∞ φ(t) sin(tx)/t dt``.

    Independent of the series in :class:`UniformPhaseSum` (four planes or more): the integral is cut at
    ``t_max`` where the bound ``|J₀(z)| ≤ √(2/(πz))`` puts the remainder below ``tol``, and each piece
    shorter than half the fastest oscillation gets a 24-point Gauss–Legendre rule.  Slow; for tests.
    ``x`` finite, ``a`` four or more non-zero finite amplitudes, ``tol ∈ (0, 1)``.
    """
    x = arg_real("x", x)
    a = np.abs(check("a (plane amplitudes)", a)).ravel()
    tol = arg_real("tol", tol, 0, 1, lo_open=True, hi_open=True)
    a = a[a > 0]
    B = a.size
    if B < 4:
        raise ValueError("a (plane amplitudes): the Gil-Pelaez reference needs four planes or more (the integrand "
                         "decays like t^{-1-B/2})")
    t_max = 1.0
    while np.any(a * t_max < _C_J0**2) or np.prod(_C_J0 / np.sqrt(a * t_max)) * 2.0 / B / math.pi > tol:
        t_max *= 1.25
    width = math.pi / (abs(x) + a.sum())
    pieces = t_max / width
    if not pieces <= _MAX_GP_PIECES:
        raise ValueError(f"x, a and tol: the Gil-Pelaez integral needs {pieces:.3g} quadrature pieces (more than "
                         f"{_MAX_GP_PIECES}); raise tol or reduce |x| + Σa")
    edges = np.linspace(0.0, t_max, int(math.ceil(t_max / width)) + 1)
    z, w = np.polynomial.legendre.leggauss(24)
    total = 0.0
    for s in range(0, edges.size - 1, 4096):
        lo, hi = edges[s:-1][:4096], edges[s + 1:][:4096]
        t = (0.5 * (hi - lo))[:, None] * z + (0.5 * (hi + lo))[:, None]
        f = np.prod(special.j0(np.multiply.outer(t, a)), axis=-1) * x * np.sinc(t * x / np.pi)
        total += float(np.sum((0.5 * (hi - lo))[:, None] * w * f))
    return 0.5 + total / math.pi
