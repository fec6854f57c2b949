"""Mutation helpers of the ``mixing`` check (C1): wrong theories and wrong models, as functions the check's
:data:`~simulations.mixing.MUTANTS` patch in (``simulations.mixing`` looks their targets up at run time).

The crossing mutants, which wrap the check's own ``exact_crossing``, stay beside it in :mod:`simulations.mixing`.
"""

from __future__ import annotations

import numpy as np

from stylized.engine.sampling import equal_energy_query
from stylized.laws.base import StepLaw

__all__ = ["overlap_3pct_low", "estimated_mean_scaled", "no_transport", "frozen_steps", "householder_gap_half"]


def overlap_3pct_low(fam: StepLaw, q: np.ndarray, n):
    """Theory mutant: ``E[M]`` 3% too small, so ``qᵀ(0.97·E[M])ⁿq``."""
    return 0.97 ** np.asarray(n, dtype=float) * fam.mean_overlap(q, n)


def estimated_mean_scaled(factor: float):
    """Theory mutant on the estimated path: a law's Monte Carlo ``Ê`` scaled by ``factor`` (radius kept), so
    every theory built on it (``qᵀÊⁿq``, ``γ̂``, ``n*``, ``‖Êⁿ‖_op``) is off; closed forms are untouched."""
    from dataclasses import replace
    from unittest import mock

    from stylized.laws.base import StepLaw

    cached = StepLaw.__dict__["estimated_mean"]

    def scaled(self):
        est = cached.__get__(self, type(self))
        return replace(est, value=factor * est.value)

    return mock.patch.object(StepLaw, "estimated_mean", property(scaled))


def no_transport(fam: StepLaw, ns, size: int, rng=None, backend: str = "numba", q=None) -> np.ndarray:
    """Model mutant: no transport, ``P_n = I`` (every sample is ``qᵀq``)."""
    q = equal_energy_query(fam.d) if q is None else np.asarray(q, dtype=float)
    return np.full((size, len(ns)), float(q @ q))


def frozen_steps(fam: StepLaw, shape: tuple, xrng, backend: str = "numpy"):
    """Model mutant: one step per context, repeated at every position (``M_t = M_1``, RoPE-like, not i.i.d.)."""
    import stylized.engine.sampling

    x = stylized.engine.sampling.sample_steps(fam, shape, xrng, backend)
    ax = len(shape) - 1
    return x[(slice(None),) * ax + (slice(0, 1),)].repeat(shape[ax], axis=ax)


def householder_gap_half():
    from unittest import mock

    from stylized.laws.families import Householder

    return mock.patch.object(Householder, "spectral_gap", property(lambda self: 1.0 / self.d))
