"""The mutant toolkit shared across claims: wrong theories as patches that several checks apply.

* the post-mixing score law off in one part (:class:`ScaledLaw`, :func:`scaled_law`): ``haar-law`` and
  ``c2-counterexamples`` (C2), ``score-gap`` (C3);
* the far law's MGF off (:func:`scaled_far_law`) and the estimated ``E[M]`` off (:func:`estimated_mean_off`):
  ``transfer`` (C3) and ``far-mass-growth`` (C4).

Each patches a name that a check module looks up at run time; :class:`stylized.harness.registry.Mutant` and
:class:`~stylized.harness.registry.Theory` call them.  A claim's own mutants stay beside its check.
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

import numpy as np

from stylized.harness.registry import patched
from stylized.laws.base import StepLaw
from stylized.theory import score_laws, weight_laws

__all__ = ["ScaledLaw", "scaled_law", "scaled_far_law", "estimated_mean_off"]


def _over(x, factor: float) -> np.ndarray:
    """``x/factor``; at ``factor = 0`` (a law collapsed onto 0) the limit, ``±10¹⁰⁰`` (finite: the laws' tails and bounds
    refuse ``±∞``; 0 at ``x = 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(np.asarray(x, dtype=float) / factor, nan=0.0, posinf=1e100, neginf=-1e100)


class ScaledLaw:
    """The right law ``law`` with

    * ``s_factor``: its variable ``s`` replaced by ``s·s_factor`` (CDF ``F(x/s_factor)``, tail ``P(s ≥ t/s_factor)``, its
      KS test and density accordingly), moments and concentration bound kept;
    * ``bound_factor``: its concentration bound (Lévy ``exp(−d t²/2)``, Hoeffding ``exp(−t²/(2Σ_b a_b²))``) in scale,
      ``B(t/bound_factor)``;
    * ``mgf_factor``: its moment generating function ``E[e^{λs}]`` ``mgf_factor`` times too large (wherever it enters:
      ``mgf``, ``log_mgf``, ``mgf_interval``, ``log_mgf_upper``);
    * ``d_shift``: its dimension ``d + d_shift`` (a Haar-coordinate law) or its amplitudes ``1 − 0.025·d_shift`` times
      (uniform phases); the concentration bound stays the right law's.
    """

    def __init__(self, law, mgf_factor: float = 1.0, d_shift: int = 0, s_factor: float = 1.0, bound_factor: float = 1.0):
        self._right = law
        if d_shift and hasattr(law, "d"):
            law = replace(law, d=law.d + d_shift)
        elif d_shift and hasattr(law, "a"):
            law = replace(law, a=tuple(np.asarray(law.a) * (1.0 - 0.025 * d_shift)))
        self._law, self._f, self._s, self._b = law, mgf_factor, s_factor, bound_factor

    def __getattr__(self, name):  # name, theory_kind, tail_bound_name, has_density, …: the (shifted) law's
        return getattr(self._law, name)

    def _x(self, x):
        """``x/s_factor`` (``x`` itself at 1)."""
        return x if self._s == 1 else _over(x, self._s)

    def cdf(self, x):
        return self._law.cdf(self._x(x))

    def sf(self, x):
        return self._law.sf(self._x(x))

    def sf_interval(self, t: float) -> tuple[float, float]:
        return self._law.sf_interval(self._x(t))

    def pdf(self, x):
        return self._law.pdf(self._x(x)) if self._s == 1 else self._law.pdf(self._x(x)) / self._s

    def ks_test(self, scores):
        """The law's KS test of ``scores/s_factor`` (the same as a test of ``scores`` against ``F(x/s_factor)``)."""
        return self._law.ks_test(self._x(scores))

    @property
    def variance(self) -> float:
        return self._law.variance * self._s**2

    def tail_bound(self, t):
        return self._right.tail_bound(t if self._b == 1 else _over(t, self._b))

    def mgf(self, lam):
        return self._f * self._law.mgf(lam)

    def log_mgf(self, lam):
        return math.log(self._f) + self._law.log_mgf(lam)

    def mgf_interval(self, lam):
        lo, hi = self._law.mgf_interval(lam)
        return self._f * lo, self._f * hi

    def log_mgf_upper(self, lam):
        return math.log(self._f) + self._law.log_mgf_upper(lam)


def scaled_law(module: str, **changes):
    """A patch of ``module.far_score_law`` (looked up at run time): the right law as a :class:`ScaledLaw` with ``changes``."""
    return patched(module, "far_score_law", lambda f, q, k: ScaledLaw(score_laws.far_score_law(f, q, k), **changes))()


def scaled_far_law(target: str, scale: float):
    """The far law with every far weight ``e^{λξ}`` multiplied by ``scale`` (its MGF off by that factor)."""
    return mock.patch(target, functools.partial(weight_laws.FarLaw, scale=scale))


@contextmanager
def estimated_mean_off(factor: float = 0.97):
    """Theory mutant of the estimated path: the one-step overlap law behind an estimated transition operator has
    its mean ``E M₁₁ = 1 − γ`` (the estimated ``E[M]``) off by ``factor`` (``(M₁₁, M₂₁) → (factor·M₁₁, M₂₁)``).

    The estimated operators are cached per law: the caches are cleared on entry and exit."""
    orig = StepLaw.overlap_step_draws

    def off(self, size, xrng):
        a, b = orig(self, size, xrng)
        return factor * a, b

    def clear():
        weight_laws._transition_cached.cache_clear()
        weight_laws._estimates_cached.cache_clear()

    clear()
    try:
        with mock.patch.object(StepLaw, "overlap_step_draws", off):
            yield
    finally:
        clear()
