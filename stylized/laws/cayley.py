"""``cayley``: the Cayley transform of a Gaussian skew matrix, a dense law with no closed-form mean.

``M = (I − A)(I + A)^{−1}`` with ``A = s (G − Gᵀ)/√(2d)``, ``G`` a ``d × d`` standard Gaussian matrix:
``A`` is skew, so ``M ∈ SO(d)``; the law of ``A`` is invariant under conjugation by ``O(d)``, so the law
is isotropic and ``E[M] = (1 − γ) I``.  The scaling by ``√(2d)`` keeps the spectrum of ``A`` (and so
``γ``) of order ``s`` in every dimension.  No closed form of ``E[M]`` is used: every theory built on
it is *estimated (Monte Carlo)*, the path a user's law takes.

Example
-------
>>> law = Cayley(d=8, scale=0.5)
>>> m = law.rvs(2, random_state=0)
>>> bool(np.allclose(m[0] @ m[0].T, np.eye(8)))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core._broadcast import check
from .base import StepLaw, check_dimension

__all__ = ["Cayley"]


@dataclass(frozen=True)
class Cayley(StepLaw):
    """Cayley steps ``M = (I − A)(I + A)^{−1}``, ``A = s (G − Gᵀ)/√(2d)`` (``s = scale > 0``)."""

    d: int
    scale: float = 0.5

    law_name: ClassVar[str] = "cayley"
    isotropic: ClassVar[bool] = True

    def __post_init__(self):
        check_dimension(self.d)
        check("scale", self.scale, 0, 1e6, lo_open=True, scalar=True)

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d, self.d))
        a = (g - xp.swapaxes(g, -1, -2)) * (float(self.scale) / math.sqrt(2.0 * self.d))
        eye = xp.eye(self.d)
        return xp.swapaxes(xp.linalg.solve(xp.swapaxes(eye + a, -1, -2), xp.swapaxes(eye - a, -1, -2)), -1, -2)
