"""An *estimated* post-mixing score law: a Monte Carlo reference sample of ``s = qᵀ P_n k`` (claims C2, C3).

A law's *own* limit, for a law with no closed-form post-mixing law (neither isotropic and orthogonal — the Haar
coordinate — nor commuting planes whose angles equidistribute — uniform phases; see
:attr:`stylized.laws.base.StepLaw.post_mixing_law`): a reference sample of its own far scores, drawn once on a
stream of its own (never a check's) at a route length well past its window.  It is a *self-consistency*
(stationarity) reference only: C2 and C3 compare every law with the claim's law
(:func:`stylized.theory.score_laws.far_score_law`), since a law whose walk never reaches the claim's law is
stationary too (:mod:`stylized.theory.premises`).

* route length ``n = ⌈4·W(0.01)⌉`` with ``W`` the window at the *low* end of the law's 95% interval for
  ``γ`` (:attr:`~stylized.laws.base.StepLaw.gap_interval`), so ``||E[P_n]||_op ≤ 10⁻⁸`` even there;
* :data:`REFERENCE_SAMPLES` chains of real steps (:meth:`~stylized.laws.base.StepLaw.walk_scores`).

:class:`EstimatedScoreLaw` answers what a check asks of a score law, each estimate with its own 95%
interval: the tail ``P(s ≥ t)`` (Wilson), the moment generating function (Student t) and a 95% upper
bound on it (Hoeffding, the scores lying in ``[−|q||k|, |q||k|]`` for an orthogonal or contracting law), a
two-sample KS test against the reference.  There is no concentration bound (``tail_bound`` is ``None``).

Example
-------
>>> from stylized.laws.families import make_family
>>> law = estimated_far_score_law(make_family("householder", 4), np.full(4, 0.5), np.full(4, 0.5), size=2000)
>>> law.name, law.n, law.theory_kind.startswith("estimated (Monte Carlo")
('estimated', 28, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ..core.counter_rng import reference_seed
from ..core.estimators import mean_ci, proportion_ci
from .bounds import mixing_window

__all__ = ["EstimatedScoreLaw", "estimated_far_score_law", "REFERENCE_SAMPLES", "REFERENCE_WINDOWS",
           "MAX_REFERENCE_STEPS"]

REFERENCE_SAMPLES = 20_000
"""Reference scores behind an estimated post-mixing law."""
REFERENCE_WINDOWS = 4
"""Route length of the reference in windows ``W(0.01)`` (at the low end of ``γ``'s interval)."""
MAX_REFERENCE_STEPS = 10_000
"""Longest reference route drawn (a law mixing slower is refused: give it a closed form)."""

_LEVEL = 0.95
_CACHE: dict = {}


@dataclass(frozen=True, eq=False)
class EstimatedScoreLaw:
    """The empirical law of ``size`` reference scores ``qᵀ P_n k`` (sorted ``sample``), route length ``n``,
    scores within ``[−support, support]``, ``support = |q||k|``."""

    sample: np.ndarray
    n: int
    support: float

    name = "estimated"
    tail_bound_name = None
    has_density = False

    @classmethod
    def of_law(cls, law, q, k) -> EstimatedScoreLaw:
        """A Monte Carlo reference for a law without a closed-form post-mixing law (:func:`estimated_far_score_law`)."""
        return estimated_far_score_law(law, q, k)

    @property
    def size(self) -> int:
        return int(self.sample.size)

    @property
    def theory_kind(self) -> str:
        return f"estimated (Monte Carlo post-mixing reference, {self.size} scores at route length n = {self.n})"

    @property
    def variance(self) -> float:
        return float(self.sample.var())

    def cdf(self, x) -> np.ndarray:
        """Empirical ``P(s ≤ x)``."""
        return np.searchsorted(self.sample, np.asarray(x, dtype=float), side="right") / self.size

    def sf(self, x) -> np.ndarray:
        """Empirical ``P(s ≥ x)``."""
        return 1.0 - np.searchsorted(self.sample, np.asarray(x, dtype=float), side="left") / self.size

    def sf_interval(self, t: float) -> tuple[float, float]:
        """Wilson 95% interval of ``P(s ≥ t)`` from the reference."""
        hits = self.size - int(np.searchsorted(self.sample, float(t), side="left"))
        e = proportion_ci(hits, self.size, level=_LEVEL)
        return e.ci_low, e.ci_high

    def ks_test(self, scores):
        """Two-sample KS test of ``scores`` against the reference (both are samples)."""
        return stats.ks_2samp(np.asarray(scores, dtype=float), self.sample)

    def log_mgf(self, lam: float) -> float:
        """``ln`` of the empirical ``E[e^{λs}]`` (log-sum-exp: no overflow)."""
        return float(special.logsumexp(float(lam) * self.sample) - math.log(self.size))

    def mgf(self, lam: float) -> float:
        return math.exp(self.log_mgf(lam))

    def mgf_interval(self, lam: float) -> tuple[float, float]:
        """Student-t 95% interval of ``E[e^{λs}]`` from the reference."""
        e = mean_ci(np.exp(float(lam) * self.sample), level=_LEVEL)
        return max(0.0, e.ci_low), e.ci_high

    def log_mgf_upper(self, lam: float) -> float:
        """A 95% upper bound on ``ln E[e^{λs}]``: Hoeffding for ``e^{λs} ∈ [e^{−λA}, e^{λA}]`` (``A`` = support),
        ``mean + (e^{λA} − e^{−λA})·√(ln(1/0.05)/(2·size))``, in log space."""
        b = abs(float(lam)) * self.support
        log_width = b + (math.log(-math.expm1(-2.0 * b)) if b > 0 else -math.inf)
        log_eps = log_width + 0.5 * math.log(math.log(1.0 / (1.0 - _LEVEL)) / (2.0 * self.size))
        return float(np.logaddexp(self.log_mgf(lam), log_eps))

    def tail_bound(self, t):
        """No concentration bound is known for an estimated law."""
        return None


def _reference_length(law) -> int:
    g_lo = float(law.gap_interval[0])
    W = mixing_window(max(0.0, min(1.0, g_lo)), 0.01)
    if not math.isfinite(W):
        raise ValueError(f"family {law.name}: no closed-form post-mixing law (not isotropic and orthogonal, no "
                         f"equidistributing planes) and γ's 95% interval reaches {g_lo:.3g}: the estimated "
                         "reference needs a law that mixes (γ > 0)")
    n = int(math.ceil(REFERENCE_WINDOWS * W))
    if n > MAX_REFERENCE_STEPS:
        raise ValueError(f"family {law.name}: the estimated post-mixing reference needs routes of {n} steps "
                         f"({REFERENCE_WINDOWS}·W(0.01) at γ = {g_lo:.3g}), more than {MAX_REFERENCE_STEPS}")
    return n


def estimated_far_score_law(law, q, k, *, n: int | None = None, size: int = REFERENCE_SAMPLES) -> EstimatedScoreLaw:
    """The estimated post-mixing law of ``qᵀ P_n k`` for ``law``: ``size`` chains of its own steps to route
    length ``n`` (default ``⌈4·W(0.01)⌉`` at the low end of ``γ``'s interval), on the reference stream.

    Refuses (``ValueError`` naming the law) a law that never mixes, mixes too slowly, or expands (a score
    beyond ``|q||k|``).  Cached per ``(law, q, k, n, size)`` where the law is hashable.
    """
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    n = _reference_length(law) if n is None else int(n)
    key = (law, q.tobytes(), k.tobytes(), n, int(size))
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable law: no cache
        key, hit = None, None
    if hit is not None:
        return hit
    s = np.asarray(law.walk_scores([n], int(size), np.random.default_rng(reference_seed("ref")), np, q, k), dtype=float)[:, 0]
    support = float(np.linalg.norm(q) * np.linalg.norm(k))
    if not np.all(np.isfinite(s)) or np.any(np.abs(s) > support * (1 + 1e-9) + 1e-12):
        raise ValueError(f"family {law.name}: transported scores leave [−|q||k|, |q||k|] (the law expands): the "
                         "estimated reference needs ||M_t||_op ≤ 1 (orthogonal or contracting steps)")
    out = EstimatedScoreLaw(np.sort(s), n, support)
    if key is not None:
        if len(_CACHE) >= 64:
            _CACHE.clear()
        _CACHE[key] = out
    return out
