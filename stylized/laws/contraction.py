"""``contraction``: PaTH's transition ``M = I − β w wᵀ``, ``w`` uniform on ``S^{d−1}``, ``β ∈ (0, 2)``.

Not orthogonal (``orthogonal = False``): ``M`` has eigenvalue ``1 − β`` along ``w`` and ``1`` on ``w^⊥``, so
``||M x|| ≤ ||x||`` with equality only for ``x ⊥ w``; ``β = 2`` is the Householder reflection.  The law
of ``M`` is invariant under conjugation by ``O(d)`` (``isotropic = True``), and ``E[w wᵀ] = I/d`` gives

.. math:: E[M] = (1 − β/d) I,   γ = β/d.

A draw is the unit vector ``w`` (``step_ndim = 1``); :meth:`Contraction.apply` is
:func:`~stylized.core.step_ops.beta_step` (``M`` is symmetric, so ``transpose`` changes nothing) and
:meth:`Contraction.dense` the matrices, the oracle.  The norm of a transported vector is not kept:
``log ||P_n k||`` is a sum of ``n`` i.i.d. increments ``½ log(1 − β(2−β)c²)``
(:mod:`stylized.theory.contraction_theory`).

Example
-------
>>> law = Contraction(d=8, beta=0.5)
>>> law.spectral_gap
0.0625
>>> m = law.dense(law.rvs(1, random_state=0))[0]
>>> bool(np.allclose(m, m.T)), bool(np.linalg.norm(m, 2) <= 1 + 1e-12)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core._broadcast import check
from ..core.step_ops import beta_step, uniform_sphere
from .base import check_dimension
from .isotropic import _ScalarMean

__all__ = ["Contraction"]


@dataclass(frozen=True)
class Contraction(_ScalarMean):
    """Contractions ``M = I − β w wᵀ``, ``w`` uniform on ``S^{d−1}``: ``E[M] = (1 − β/d) I``, ``γ = β/d``."""

    d: int
    beta: float = 1.0

    law_name: ClassVar[str] = "contraction"
    orthogonal: ClassVar[bool] = False
    isotropic: ClassVar[bool] = True
    step_ndim: ClassVar[int] = 1

    def __post_init__(self):
        check_dimension(self.d)
        check("beta (contraction I − β w wᵀ)", self.beta, 0, 2, lo_open=True, hi_open=True, scalar=True)

    @property
    def spectral_gap(self) -> float:
        """``γ = β/d`` (closed form: ``E[M] = (1 − β/d) I``)."""
        return float(self.beta) / self.d

    def sample(self, xrng, shape: tuple, xp=np):
        """Unit vectors ``w`` uniform on ``S^{d−1}``, shape ``shape + (d,)``."""
        return uniform_sphere(xrng, shape, self.d, xp)

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``x − β w (w·x)`` (``M = Mᵀ``, so ``transpose`` is ignored)."""
        return beta_step(x, step, float(self.beta))

    def dense(self, draws, random_state=None) -> np.ndarray:
        """``I − β w wᵀ`` for draws ``w`` ``(n, d)`` → ``(n, d, d)``."""
        w = np.asarray(draws, dtype=float)
        return np.eye(self.d) - float(self.beta) * w[:, :, None] * w[:, None, :]
