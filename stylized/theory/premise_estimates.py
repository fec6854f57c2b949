"""Monte Carlo harmonic operators ``E[π_ℓ(M)]`` of a step law, each spectral radius with a 95% interval (C2's premise).

* degree 2: ``T(X) = E[M X Mᵀ]`` on symmetric traceless ``d × d`` matrices (the degree-2 harmonics), from
  ``E[vec(M) vec(M)ᵀ]`` (one matrix product over the draws), restricted to an orthonormal basis;
* any degree ℓ (used for ℓ = 4 where ``dim H_ℓ`` is small): in a frame of zonal harmonics ``Z_a(x) = C_ℓ^{(d−2)/2}(aᵀx)``
  (Gegenbauer), ``⟨Z_b, T Z_a⟩ = E C_ℓ(bᵀ M a)`` and ``⟨Z_b, Z_a⟩ = C_ℓ(bᵀa)``, whence ``T`` on ``H_ℓ``.

Interval: ``B`` batch operators ``T_b``; ``r`` the 95% quantile of ``||Σ_b g_b (T_b − T̄)/B||_op`` (multiplier
bootstrap, Gaussian ``g``).  ``ρ(T) ≤ ||T|| ≤ ||T̄|| + r`` always (the lower end of the gap is sound); the upper end
``1 − ρ(T̄) + r`` holds for a normal ``T`` (a law with ``M ~ Mᵀ``), and is documented as such.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..core.counter_rng import reference_seed

__all__ = ["sym_traceless_basis", "restricted_second_moment", "estimate_degree2", "estimate_zonal",
           "harmonic_dimension", "OperatorEstimate", "MAX_D_DEGREE2", "MAX_DIM_ZONAL"]

MAX_D_DEGREE2 = 32
"""Largest ``d`` whose degree-2 operator (``(d(d+1)/2 − 1)²`` entries per batch) is estimated."""
MAX_DIM_ZONAL = 200
"""Largest ``dim H_ℓ`` estimated in a zonal frame (``d ≤ 7`` at ℓ = 4)."""
_BATCHES = 20
_BOOT = 100


def harmonic_dimension(d: int, ell: int) -> int:
    """``dim H_ℓ(ℝ^d) = C(ℓ+d−1, d−1) − C(ℓ+d−3, d−1)``."""
    return math.comb(ell + d - 1, d - 1) - (math.comb(ell + d - 3, d - 1) if ell >= 2 else 0)


def sym_traceless_basis(d: int) -> np.ndarray:
    """An orthonormal basis ``(d², d(d+1)/2 − 1)`` of symmetric traceless matrices (row-major ``vec``)."""
    cols = []
    for i in range(d):
        for j in range(i + 1, d):
            e = np.zeros((d, d))
            e[i, j] = e[j, i] = 1 / math.sqrt(2)
            cols.append(e.ravel())
    for k in range(1, d):  # Helmert: traceless diagonals
        e = np.zeros(d)
        e[:k], e[k] = 1.0, -float(k)
        cols.append(np.diag(e / math.sqrt(k * (k + 1))).ravel())
    return np.array(cols).T if cols else np.zeros((d * d, 0))


def _sparse_basis(d: int):
    from scipy import sparse

    return sparse.csr_matrix(sym_traceless_basis(d))


def restricted_second_moment(op: np.ndarray, d: int) -> np.ndarray:
    """``Bᵀ E[M ⊗ M] B``: the degree-2 operator on symmetric traceless matrices (``op`` is ``d² × d²``)."""
    B = sym_traceless_basis(d)
    return B.T @ (np.asarray(op, dtype=float) @ B)


class OperatorEstimate:
    """A Monte Carlo operator ``T̄`` (mean of ``B`` batch operators), ``ρ(T̄)``, ``||T̄||`` and a 95% radius ``r``."""

    def __init__(self, batches: np.ndarray, n: int):
        self.mean = batches.mean(0)
        dev = batches - self.mean
        g = np.random.default_rng(reference_seed("boot")).standard_normal((_BOOT, len(batches)))
        norms = [_op_norm(np.tensordot(gi, dev, 1) / len(batches)) for gi in g]
        self.radius = float(np.quantile(norms, 0.95)) if len(dev) else 0.0
        ev = np.linalg.eigvals(self.mean) if self.mean.size else np.zeros(0)
        self.eigenvalues = ev
        self.rho = float(np.max(np.abs(ev))) if ev.size else 0.0
        self.norm = _op_norm(self.mean) if self.mean.size else 0.0
        self.n = int(n)

    @property
    def gap_interval(self) -> tuple[float, float]:
        """``[1 − ||T̄|| − r, 1 − ρ(T̄) + r]`` clipped to ``[0, 1]``."""
        return max(0.0, 1.0 - self.norm - self.radius), min(1.0, 1.0 - self.rho + self.radius)

    @property
    def minus_one(self) -> bool:
        """An eigenvalue within ``r`` of −1 (a period-2 component)."""
        return bool(self.eigenvalues.size and np.min(np.abs(self.eigenvalues + 1.0)) <= max(self.radius, 1e-9))


def _dense_draws(law, rng, n: int) -> np.ndarray:
    draws = law.sample(rng, (n,), np)
    if np.iscomplexobj(draws):
        raise ValueError(f"family {law.name}: draws must be real, got {np.asarray(draws).dtype}")
    m = np.asarray(draws if law.step_ndim == 2 else law.dense(draws, rng), dtype=float)
    if m.shape != (n, law.d, law.d) or not np.all(np.isfinite(m)):
        raise ValueError(f"family {law.name}: draws must be finite real {law.d} × {law.d} matrices, got shape "
                         f"{m.shape}")
    err = float(np.max(np.abs(np.swapaxes(m, 1, 2) @ m - np.eye(law.d)))) if n else 0.0
    if err > 1e-8:
        raise ValueError(f"family {law.name}: draws must be orthogonal (MᵀM = I to rounding), got max |MᵀM − I| = {err:.3g}")
    return m


def estimate_degree2(law, samples: int = 4000, seed: int = 0) -> OperatorEstimate:
    """``T(X) = E[M X Mᵀ]`` on symmetric traceless matrices from ``samples`` draws (``d ≤`` :data:`MAX_D_DEGREE2`)."""
    d = law.d
    B = _sparse_basis(d)
    rng = np.random.default_rng(reference_seed("prm2", seed))
    per = max(1, samples // _BATCHES)
    out = []
    for _ in range(_BATCHES):
        m = _dense_draws(law, rng, per)
        V = m.reshape(per, d * d)
        C = (V.T @ V / per).reshape(d, d, d, d)  # E[M_ij M_kl]
        T = C.transpose(0, 2, 1, 3).reshape(d * d, d * d)  # E[M ⊗ M][(i,k),(j,l)]
        out.append(np.asarray(B.T @ (B.T @ T.T).T))
    return OperatorEstimate(np.array(out), per * _BATCHES)


def _zonal(ell: int, d: int, t: np.ndarray) -> np.ndarray:
    """The zonal harmonic ``C_ℓ^{(d−2)/2}(t)`` by its three-term recurrence (Chebyshev ``T_ℓ`` at ``d = 2``)."""
    if d == 2:
        return special.eval_chebyt(ell, t)
    a = (d - 2) / 2.0
    prev, cur = np.ones_like(t), 2.0 * a * t
    if ell == 0:
        return prev
    for n in range(2, ell + 1):
        prev, cur = cur, (2.0 * t * (n + a - 1.0) * cur - (n + 2.0 * a - 2.0) * prev) / n
    return cur


def _op_norm(a: np.ndarray) -> float:
    """``||a||_2`` (the top singular value; ARPACK past 100 × 100)."""
    if a.shape[0] <= 100:
        return float(np.linalg.norm(a, 2))
    from scipy.sparse.linalg import svds

    return float(svds(a, k=1, return_singular_vectors=False, random_state=0)[0])


def estimate_zonal(law, ell: int, samples: int = 2000, seed: int = 0) -> OperatorEstimate:
    """``E[π_ℓ(M)]`` on the degree-ℓ harmonics ``H_ℓ`` in a zonal frame (``dim H_ℓ ≤`` :data:`MAX_DIM_ZONAL`)."""
    d, dim = law.d, harmonic_dimension(law.d, ell)
    frng = np.random.default_rng(reference_seed("zfrm", ell, d))
    a = frng.standard_normal((int(math.ceil(1.5 * dim)) + 4, d))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    lam, U = np.linalg.eigh(_zonal(ell, d, np.clip(a @ a.T, -1, 1)))
    keep = np.argsort(lam)[::-1][:dim]
    W = U[:, keep] / np.sqrt(lam[keep])
    rng = np.random.default_rng(reference_seed("prmz", ell, seed))
    per = max(1, samples // _BATCHES)
    out = []
    for _ in range(_BATCHES):
        m = _dense_draws(law, rng, per)
        A = np.zeros((len(a), len(a)))
        for c in range(0, per, 16):
            A += _zonal(ell, d, np.clip((a @ m[c:c + 16]) @ a.T, -1, 1)).sum(0)
        out.append(W.T @ (A / per) @ W)
    return OperatorEstimate(np.array(out), per * _BATCHES)
