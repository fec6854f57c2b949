"""Monte Carlo estimators: every estimate carries its sample size and a 95% interval.

* means: Student-t interval ``x̄ ± t_{n−1, 0.975} s/√n``;
* probabilities: Wilson score interval (or Clopper–Pearson, exact, on request).

Example
-------
>>> e = mean_ci([1.0, 2.0, 3.0])
>>> (e.estimate, e.n_samples)
(2.0, 3)
>>> p = proportion_ci(5, 100)
>>> p.ci_low < 0.05 < p.ci_high
True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from .options import arg_int

__all__ = ["Estimate", "mean_ci", "mean_ci_from_moments", "proportion_ci", "bonferroni_level", "rounding_tolerance",
           "t_half_width"]


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate with its interval ``[ci_low, ci_high]`` at ``level`` and sample size.

    Parameters
    ----------
    estimate : float
        The point estimate.
    ci_low, ci_high : float
        The interval's ends.
    n_samples : int
        The sample size behind it.
    level : float, default 0.95
        The interval's confidence level.

    Examples
    --------
    >>> e = Estimate(0.5, 0.45, 0.55, 1000)
    >>> e.contains(0.52), e.contains(0.6)
    (True, False)
    """

    estimate: float
    ci_low: float
    ci_high: float
    n_samples: int
    level: float = 0.95

    def contains(self, value: float, tol: float = 0.0) -> bool:
        """Whether ``value`` lies in the interval widened by ``tol`` on each side.

        ``tol`` is a rounding tolerance (see :func:`rounding_tolerance`): it matters only where the
        interval has (nearly) zero width, e.g. a deterministic row whose samples all equal ``qᵀq``.
        """
        return self.ci_low - tol <= value <= self.ci_high + tol

    def as_row(self) -> dict:
        """The JSON-row keys ``estimate``, ``ci_low``, ``ci_high``, ``n_samples``."""
        d = asdict(self)
        d.pop("level")
        return d


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating, np.integer)) or not (0.0 < level < 1.0):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return level


def mean_ci(x, level: float = 0.95) -> Estimate:
    """Mean of the samples ``x`` with a Student-t interval.

    One sample has no variance estimate: its interval is ``(−inf, inf)`` (documented, not an error).

    Parameters
    ----------
    x : array_like
        Finite samples (any shape, flattened); at least one.
    level : float, default 0.95
        Confidence level of the interval, in ``(0, 1)``.

    Returns
    -------
    Estimate
        ``estimate`` (the mean), ``ci_low``, ``ci_high``, ``n_samples`` and ``level``.

    Examples
    --------
    >>> e = mean_ci([0.9, 1.1, 1.0, 0.95, 1.05])
    >>> round(e.estimate, 3), round(e.ci_low, 3), round(e.ci_high, 3), e.n_samples
    (1.0, 0.902, 1.098, 5)
    >>> e.contains(1.0)
    True
    """
    _check_level(level)
    if isinstance(x, (str, bytes, bool)) or x is None:
        raise TypeError(f"x must be an array of samples, got {type(x).__name__}")
    x = np.asarray(x, dtype=float).ravel()
    n = x.size
    if n == 0:
        raise ValueError("x: mean_ci needs at least one sample")
    if not np.isfinite(x).all():
        raise ValueError("x: samples must be finite (no NaN or ±inf)")
    m = float(x.mean())
    if n == 1:
        return Estimate(m, -math.inf, math.inf, 1, level)
    half = float(t_half_width(x, level=level))
    if not math.isfinite(m):
        raise ValueError("x: samples too large for a finite mean in float64")
    if not math.isfinite(half):
        raise ValueError(f"level = {level!r}: the interval is infinite (Student-t quantile or spread of x overflows)")
    return Estimate(m, m - half, m + half, n, level)


def mean_ci_from_moments(total: float, total_sq: float, n: int, level: float = 0.95) -> Estimate:
    """Student-t interval from streamed sums ``Σx`` and ``Σx²`` (O(1) memory)."""
    _check_level(level)
    if n < 2:
        raise ValueError(f"n must be ≥ 2, got {n}")
    m = total / n
    var = max(0.0, (total_sq - n * m * m) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * math.sqrt(var / n))
    return Estimate(float(m), float(m - half), float(m + half), int(n), level)


def proportion_ci(k: int, n: int, level: float = 0.95, method: str = "wilson") -> Estimate:
    """``k`` successes out of ``n``: Wilson score interval, or ``method="clopper-pearson"`` (exact).

    Parameters
    ----------
    k : int
        Successes, ``0 ≤ k ≤ n``.
    n : int
        Trials, ``≥ 1``.
    level : float, default 0.95
        Confidence level, in ``(0, 1)``.
    method : {"wilson", "clopper-pearson"}, default "wilson"
        The interval: Wilson's score interval, or the exact Clopper–Pearson interval (what the false-rejection
        rates use).

    Returns
    -------
    Estimate
        ``estimate = k/n`` with its interval and ``n_samples = n``.

    Examples
    --------
    >>> e = proportion_ci(3, 100, method="clopper-pearson")     # 3 false rejections in 100 seeds
    >>> round(e.estimate, 2), round(e.ci_low, 4), round(e.ci_high, 4)
    (0.03, 0.0062, 0.0852)
    """
    k, n = arg_int("k", k, 0), arg_int("n", n, 1)
    _check_level(level)
    if n <= 0 or not (0 <= k <= n):
        raise ValueError(f"need 0 ≤ k ≤ n and n > 0, got k={k}, n={n}")
    p = k / n
    a = 1.0 - level
    if method == "wilson":
        z = float(stats.norm.ppf(1 - a / 2))
        den = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / den
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
        lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact endpoints at k = 0 and k = n
        hi = 1.0 if k == n else min(1.0, centre + half)
        return Estimate(p, lo, hi, int(n), level)
    if method == "clopper-pearson":
        lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
        hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
        return Estimate(p, lo, hi, int(n), level)
    raise ValueError(f"method must be 'wilson' or 'clopper-pearson', got {method!r}")


def bonferroni_level(level: float, m: int) -> float:
    """Per-row level so that ``m`` simultaneous intervals hold jointly at ``level``."""
    m = arg_int("m", m, 1)
    _check_level(level)
    return 1.0 - (1.0 - level) / max(1, int(m))


def t_half_width(values, axis=None, level: float = 0.95):
    """Student-t half-width ``t_{(1+level)/2, B−1} · sd/√B`` of the mean of ``B`` batch values along ``axis``
    (``None``: all of them): the radius of a theory computed on ``B`` batch estimates."""
    v = np.asarray(values, dtype=float)
    b = v.size if axis is None else v.shape[axis]
    return stats.t.ppf(0.5 + level / 2, b - 1) * v.std(axis=axis, ddof=1) / math.sqrt(b)


def rounding_tolerance(value: float, n_terms: int, ulps: float = 4.0) -> float:
    """Rounding tolerance for comparing two float64 evaluations of ``value``, each a sum of ``n_terms``.

    ``(n_terms + ulps)·u·|value|`` with ``u = 2⁻⁵³``: the standard forward-error bound
    ``γ_k = k·u/(1 − k·u)`` of a ``k``-term floating-point sum (to first order), plus ``ulps`` units of
    slack for the final operations.  At ``n_terms = 64`` this is about ``1.5e-14·|value|``: far below
    any Monte Carlo interval, so it only decides rows whose samples have zero variance.
    """
    n = int(n_terms)
    if n < 0 or not ulps >= 0:
        raise ValueError(f"need n_terms ≥ 0 and ulps ≥ 0, got n_terms={n_terms}, ulps={ulps}")
    return (n + float(ulps)) * 2.0**-53 * abs(float(value))
