"""Counterexamples to C2 with a spectral gap of ``E[M]``: laws whose walks never reach the claim's law.

* ``coord-reflection``: ``M = I − 2 e_k e_kᵀ``, ``k`` uniform.  ``E[M] = (1 − 2/d) I`` (``γ = 2/d``), yet the
  products are diagonal ±1 matrices: ``X ↦ E[M X Mᵀ]`` fixes every diagonal traceless ``X`` (degree-2 harmonic gap 0).
* ``lattice-angle``: SO(2) planes with ``θ_b = ±π/2``.  ``E e^{iθ} = 0`` (``γ = 1``), ``E e^{2iθ} = −1``: the phases
  stay on the lattice ``nπ/2 + πℤ`` (period 2), never uniform.

Each knows its exact mean and its exact second-moment operator ``E[M ⊗ M]`` (:meth:`second_moment_operator`,
``vec(E[M X Mᵀ]) = E[M ⊗ M] vec(X)``, row-major), and its exact degree-ℓ spectral data (:meth:`harmonic_spectrum`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core.backend import namespace_of
from .base import StepLaw, check_dimension
from .so2 import SO2Family

__all__ = ["CoordReflection", "LatticeAngle"]


@dataclass(frozen=True)
class CoordReflection(StepLaw):
    """``M = I − 2 e_k e_kᵀ`` with ``k`` uniform on ``{0, …, d−1}``: a draw is the index ``k``."""

    d: int

    law_name: ClassVar[str] = "coord-reflection"
    step_ndim: ClassVar[int] = 0

    def __post_init__(self):
        check_dimension(self.d)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.integers(0, self.d, size=tuple(shape))

    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``x`` with coordinate ``k`` negated (``M = Mᵀ``)."""
        xp = namespace_of(x)
        hit = xp.arange(self.d) == xp.asarray(step)[..., None]
        return xp.where(hit, -x, x)

    def dense(self, draws, random_state=None) -> np.ndarray:
        k = np.asarray(draws, dtype=np.int64).ravel()
        out = np.broadcast_to(np.eye(self.d), (k.size, self.d, self.d)).copy()
        out[np.arange(k.size), k, k] = -1.0
        return out

    def mean(self) -> np.ndarray:
        """``E[M] = (1 − 2/d) I``."""
        return (1.0 - 2.0 / self.d) * np.eye(self.d)

    def second_moment_operator(self) -> np.ndarray:
        """``E[M ⊗ M]`` (``d² × d²``, diagonal): ``E[M X Mᵀ]_ij = E[s_i s_j] X_ij``, ``1`` on the diagonal, ``1 − 4/d`` off it."""
        f = np.full((self.d, self.d), 1.0 - 4.0 / self.d)
        np.fill_diagonal(f, 1.0)
        return np.diag(f.ravel())

    def harmonic_spectrum(self, ell: int) -> np.ndarray:
        """Eigenvalues of ``E[π_ℓ(M)]`` on degree-ℓ polynomials: a monomial ``x^α`` is an eigenvector with eigenvalue
        ``1 − 2m/d``, ``m`` the number of odd exponents of ``α`` (``m ≡ ℓ mod 2``, ``m ≤ min(ℓ, d)``); every
        value occurs on the degree-ℓ harmonics for ``d ≥ 2`` (``m = 0`` through ``x_1^ℓ``'s harmonic part, ``ℓ`` even)."""
        ms = [m for m in range(ell % 2, min(ell, self.d) + 1, 2)]
        return np.array([1.0 - 2.0 * m / self.d for m in ms])


@dataclass(frozen=True)
class LatticeAngle(SO2Family):
    """SO(2) planes with independent ``θ_b = ±π/2`` (probability ½ each): ``E e^{ijθ} = cos(jπ/2)``."""

    law_name: ClassVar[str] = "lattice-angle"

    def __post_init__(self):
        check_dimension(self.d)
        if self.d % 2:
            raise ValueError(f"d must be even for SO(2) planes, got {self.d}")

    def chi(self) -> np.ndarray:
        return np.zeros(self.d // 2, dtype=complex)

    def chi_harmonic(self, j) -> np.ndarray:
        j = np.asarray(j, dtype=float)
        return np.broadcast_to(np.round(np.cos(j * math.pi / 2))[:, None], (j.size, self.d // 2)).astype(complex)

    def sample(self, xrng, shape: tuple, xp=np):
        return (2.0 * xrng.integers(0, 2, size=tuple(shape) + (self.d // 2,)) - 1.0) * (math.pi / 2)

    def second_moment_operator(self) -> np.ndarray:
        """``E[M ⊗ M] = Σ_b J_b ⊗ J_b`` (``R(±π/2) = ±J``; across planes ``E[R] = 0``)."""
        J = np.zeros((self.d // 2, self.d, self.d))
        for b in range(self.d // 2):
            J[b, 2 * b + 1, 2 * b], J[b, 2 * b, 2 * b + 1] = 1.0, -1.0
        return np.einsum("bij,bkl->ikjl", J, J).reshape(self.d**2, self.d**2)
