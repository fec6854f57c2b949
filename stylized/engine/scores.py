"""Score-side sampling (claims C1–C3): far scores, tails, mixing windows inside a context, attention transfer.

Scores are ``s = qᵀ P_{j→i} k`` with unit ``q``, ``k`` and ``P_{j→i} = M_i ⋯ M_{j+1}``
(route length ``n = i − j``).  What lives here:

* samplers of the post-mixing laws (Haar coordinate, uniform phases; their closed forms —
  CDFs, moment generating functions — live in :mod:`stylized.theory.score_laws`);
* :func:`far_scores`: transported scores ``qᵀ P_n k`` sampled by the law's own walk (any law);
* :func:`so2_pair_correlation`: ``E[cos(A_{j→i,b})]`` averaged over *every* pair ``(j, i)`` at route
  length ``n`` inside one context, by FFT autocorrelation of ``e^{iC_t}`` (``C_t`` cumulative angles);
* :func:`householder_window_sums`: ``Σ_i qᵀ P_{i−n→i} q`` over queries at a stride grid of one context;
* Householder chains ``qᵀ P_n k`` (Numba kernel and its array-namespace twin, both through the one
  β-step of :mod:`stylized.engine.transport` / :func:`stylized.engine.kernels.beta_step_nb`).

The attention sweep (``so2_context_*``, ``transport_context_xp``) lives in :mod:`stylized.engine.context_sweep`; benchmarks live in the top-level ``benchmarks`` package.

``backend="cupy"``: :func:`far_scores` and :func:`uniform_phase_scores` draw on the device; the
twins :func:`so2_pair_correlation`, :func:`householder_window_sums_numpy` and :func:`haar_window_sums`
are written against the namespace of their inputs (NumPy or CuPy).

Example
-------
>>> from stylized.laws.families import make_family
>>> s = far_scores(make_family("haar", 8), n=3, size=5, random_state=0)
>>> s.shape, bool((abs(s) <= 1).all())
((5,), True)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy import special

from ..core.backend import array_namespace, namespace_of, to_numpy, xp_generator
from ..core.counter_rng import as_generator
from ..core.estimators import Estimate, proportion_ci
from ..core.step_ops import beta_step, stride_grid_sums
from ..laws.law_type import StepLawType
from .kernels import beta_step_nb
from .sampling import XP_CHUNK_ELEMENTS, _sample_overlaps_xp, haar_coordinates

__all__ = [
    "plane_dot_cross",
    "uniform_phase_scores",
    "far_scores",
    "tail_estimates",
    "haar_max_quantile_samples",
    "so2_pair_correlation",
    "householder_window_sums_numpy",
    "householder_window_sums_numba",
    "haar_window_sums",
    "householder_chain_scores_numpy",
    "householder_chain_scores_numba",
    "first_crossing",
]


# ---------------------------------------------------------------------------------------
# exact laws
# ---------------------------------------------------------------------------------------
def plane_dot_cross(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-plane ``dot_b = ⟨q_b, k_b⟩`` and ``cross_b = q_{b,y} k_{b,x} − q_{b,x} k_{b,y}``.

    Then ``qᵀ diag(R(A_b)) k = Σ_b cos(A_b) dot_b + sin(A_b) cross_b``; works on ``(..., d)``.
    """
    q = np.asarray(q, dtype=float)
    k = np.asarray(k, dtype=float)
    dot = q[..., 0::2] * k[..., 0::2] + q[..., 1::2] * k[..., 1::2]
    cross = q[..., 1::2] * k[..., 0::2] - q[..., 0::2] * k[..., 1::2]
    return dot, cross


def uniform_phase_scores(a: np.ndarray, size: int, random_state=None, backend: str = "numpy") -> np.ndarray:
    """``s = Σ_b a_b cos U_b`` with i.i.d. ``U_b ~ U(0, 2π)``: the SO(2) law after mixing (``a_b = |q_b||k_b|``).

    ``backend="cupy"`` draws the phases on the device (Generator seeded from ``random_state``) in chunks
    of :data:`~stylized.engine.sampling.XP_CHUNK_ELEMENTS` phases; the result is always a host array.
    """
    rng = as_generator(random_state)
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    a = np.asarray(a, dtype=float)
    ax = xp.asarray(a)
    chunk = 4096 if backend != "cupy" else max(4096, XP_CHUNK_ELEMENTS // max(1, a.size))
    out = xp.empty(int(size))
    for s in range(0, int(size), chunk):
        e = min(int(size), s + chunk)
        out[s:e] = xp.cos(xrng.uniform(0.0, 2.0 * np.pi, size=(e - s, a.size))) @ ax
    return to_numpy(out)


def far_scores(family: StepLawType, n: int, size: int, random_state=None, backend: str = "numba",
               q: np.ndarray | None = None, k: np.ndarray | None = None, chunk: int | None = None) -> np.ndarray:
    """``size`` samples of ``s = qᵀ P_n k`` (``n`` i.i.d. steps), drawn by the law's own walk
    (:meth:`~stylized.laws.base.StepLaw.walk_scores`), ``chunk`` trials at a time (default: all at once).

    ``q`` defaults to the equal-energy query ``1/√d``; ``k`` defaults to ``q`` (the target key, so that
    ``s = 1`` at ``n = 0``).  SO(2): the accumulated plane angles; Householder: ``n`` rank-one reflections;
    (lazy) Haar: the exact law — ``qᵀk`` if no Haar step happened (probability ``(1 − p)^n``), else
    ``|q||k|`` times one coordinate of a uniform point; any other law: its steps applied one by one.
    ``backend="cupy"``: the same walk on the device (``numba`` walks with NumPy); returns a host array.

    Parameters
    ----------
    family : StepLaw
        The step law.
    n : int
        Route length (steps), ``≥ 0``.
    size : int
        Number of independent samples.
    random_state : int, numpy.random.Generator or None
        Seed or Generator of the draws.
    backend : {"numba", "numpy", "cupy"}, default "numba"
        Where the walk runs.
    q, k : array of shape (d,), optional
        Query and key; default the equal-energy query, and ``k = q``.
    chunk : int, optional
        Trials per batch (bounds the memory); default all at once.

    Returns
    -------
    numpy.ndarray of shape (size,)
        The scores ``qᵀ P_n k`` (without the factor ``λ``).

    Examples
    --------
    Past the window a Householder score follows the Haar-coordinate law: mean 0, spread ``1/√d`` (C2):

    >>> from stylized.laws.registry import make_family
    >>> s = far_scores(make_family("householder", 16), n=200, size=5000, random_state=0)
    >>> s.shape, bool(abs(s.mean()) < 0.02), round(float(s.std()), 2)
    ((5000,), True, 0.25)
    """
    rng = as_generator(random_state)
    d = family.d
    q = np.full(d, 1.0 / math.sqrt(d)) if q is None else np.asarray(q, dtype=float)
    k = q if k is None else np.asarray(k, dtype=float)
    n, size = int(n), int(size)
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}")
    if n == 0:
        return np.full(size, float(q @ k))
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    step = max(1, size if chunk is None else int(chunk))
    out = np.empty(size)
    for s in range(0, size, step):
        m = min(step, size - s)
        out[s : s + m] = to_numpy(_sample_overlaps_xp(family, np.array([n]), m, xrng, xp, q, k=k))[:, 0]
    return out


def tail_estimates(samples: np.ndarray, ts) -> list[Estimate]:
    """``P(s ≥ t)`` for each threshold ``t`` with its Wilson 95% interval."""
    samples = np.asarray(samples)
    return [proportion_ci(int(np.count_nonzero(samples >= t)), samples.size) for t in ts]


def haar_max_quantile_samples(rng, size: int, d: int, M: int) -> np.ndarray:
    """``max`` of ``M`` i.i.d. Haar coordinates, drawn exactly in O(1): ``F^{-1}(V^{1/M})``, ``V`` uniform.

    ``rng``: a NumPy or a device Generator (``V`` is drawn there); the inverse CDF runs on the host.
    """
    a = (d - 1) / 2.0
    u = np.exp(np.log(to_numpy(rng.random(size=(size,)))) / M)
    return 2.0 * special.betaincinv(a, a, u) - 1.0


def so2_pair_correlation(theta: np.ndarray, nmax: int | None = None) -> np.ndarray:
    """Per-plane ``mean_{i−j=n} cos(A_{j→i,b})`` over all pairs of one context of length ``L``.

    ``A_{j→i} = C_i − C_j`` with ``C_t = Σ_{s≤t} θ_s``, so ``Σ_j e^{i(C_{j+n} − C_j)}`` is the
    autocorrelation of ``z_t = e^{iC_t}`` (FFT, ``O(L log L)`` per plane, double precision: the FFT's absolute
    error on the lag sum is ~ε·L log L, so on the mean over ``L − n`` pairs it grows like ``1/(L − n)`` towards the
    last lags; in single precision that was 8e-5 on NumPy and 4e-4 on CuPy at ``n = L − 1``, ``L = 2048``).  ``theta``: ``(..., L, B)``, a NumPy or CuPy array (the result
    lives in the same namespace); returns ``(..., nmax+1, B)`` for ``n = 0 … nmax`` (default ``L − 1``).
    """
    xp = namespace_of(theta)
    theta = xp.asarray(theta, dtype=float)
    L = theta.shape[-2]
    nmax = L - 1 if nmax is None else min(int(nmax), L - 1)
    C = xp.swapaxes(xp.cumsum(theta, axis=-2), -1, -2)  # (..., B, L): FFT along the contiguous axis
    C -= 2.0 * np.pi * xp.rint(C / (2.0 * np.pi))
    z = xp.empty(C.shape, np.complex128)
    z.real = xp.cos(C)
    z.imag = xp.sin(C)
    size = 1 << int(math.ceil(math.log2(2 * L)))
    Z = xp.fft.fft(z, size, axis=-1)
    r = xp.fft.ifft(Z.real**2 + Z.imag**2, axis=-1)[..., : nmax + 1].real
    return xp.swapaxes(r / (L - xp.arange(nmax + 1)), -1, -2).astype(float)


def householder_window_sums_numpy(w, q, stride: int, nmax: int) -> tuple:
    """Reference: ``Σ_i qᵀ P_{i−n→i} q`` and the number of queries, for queries ``i`` on a stride grid.

    ``w`` ``(..., L, d)`` unit reflection vectors (``M_t = I − 2 w_t w_tᵀ``), NumPy or CuPy; leading
    axes are independent contexts.  Query positions ``i = L−1, L−1−stride, …``; route ``n`` needs
    ``i − n ≥ 0``.  Returns ``sums`` ``(..., nmax+1)`` in the namespace of ``w`` and ``counts``
    ``(nmax+1,)`` (host NumPy, the same for every context).
    """
    return stride_grid_sums(lambda wn, U: beta_step(U, wn), w, to_numpy(q), nmax, stride, w.ndim - 2, w.shape[-1])


@numba.njit(cache=True)
def householder_window_sums_numba(w, q, stride, nmax):
    L, d = w.shape
    sums = np.zeros(nmax + 1)
    counts = np.zeros(nmax + 1)
    u = np.empty(d)
    for i in range(L - 1, -1, -stride):
        u[:] = q
        for n in range(min(nmax, i) + 1):
            s = 0.0
            for a in range(d):
                s += u[a] * q[a]
            sums[n] += s
            counts[n] += 1.0
            beta_step_nb(u, w[i - n], 2.0, 1.0)
    return sums, counts


def haar_window_sums(mask, rng, d: int, stride: int, nmax: int, qk: float = 1.0, block: int = 512) -> tuple:
    """(Lazy) Haar steps, exact law for a unit query: ``qᵀ P_{i−n→i} q = qᵀq`` until the first Haar step back
    from ``i``, then a fresh Haar coordinate at every Haar step (independent per query: the marginal law is exact).

    ``mask`` ``(..., L)`` Haar-step mask (NumPy or CuPy; leading axes are independent contexts) and
    ``rng`` a Generator of the same namespace; ``block`` query positions per pass.  Returns ``sums``
    ``(..., nmax+1)`` in the namespace of ``mask`` and ``counts`` ``(nmax+1,)`` on the host.
    """
    xp = namespace_of(mask)
    L = mask.shape[-1]
    pos = np.arange(L - 1, -1, -stride)
    posx, nx = xp.asarray(pos), xp.arange(nmax + 1)
    sums = xp.zeros(mask.shape[:-1] + (nmax + 1,))
    counts = np.zeros(nmax + 1)
    for s in range(0, pos.size, block):
        t = posx[s : s + block, None] - nx[None, :]  # step that a route of length n+1 adds
        live = t >= 0
        hit = xp.where(live, xp.take(mask, xp.maximum(t, 0), axis=-1), False)
        coord = haar_coordinates(rng, hit.shape, d)
        last = _running_max(xp.where(hit, nx, -1))
        # value at route n uses Haar steps among the first n steps back (indices < n)
        prev = xp.concatenate([xp.full(hit.shape[:-1] + (1,), -1), last[..., :-1]], axis=-1)
        val = xp.where(prev < 0, qk, xp.take_along_axis(coord, xp.maximum(prev, 0), axis=-1))
        sums += xp.where(live, val, 0.0).sum(axis=-2)
        counts += (pos[s : s + block, None] - np.arange(nmax + 1) >= 0).sum(axis=0)
    return sums, counts


def _running_max(x):
    """Running maximum along the last axis by doubling (exact, ``⌈log₂ n⌉`` passes; CuPy has no
    ``maximum.accumulate``)."""
    xp = namespace_of(x)
    x = x.copy()
    s = 1
    while s < x.shape[-1]:
        x[..., s:] = xp.maximum(x[..., s:], x[..., :-s])
        s *= 2
    return x


def first_crossing(n: np.ndarray, est: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float) -> dict:
    """Route length where a correlation curve first falls below ``eps``: the estimate, and the interval
    ``[first n with ci_low < ε, first n with ci_high < ε]`` (``None`` where it never does)."""
    def first(x):
        idx = np.flatnonzero(x < eps)
        return int(n[idx[0]]) if idx.size else None

    return {"window": first(est), "window_low": first(lo), "window_high": first(hi)}


# ---------------------------------------------------------------------------------------
# Householder chains: s = qᵀ P_n k
# ---------------------------------------------------------------------------------------
def householder_chain_scores_numpy(g: np.ndarray, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Reference: ``g`` ``(T, n, d)`` Gaussian draws (``w = g/|g|``); returns ``qᵀ M_n ⋯ M_1 k`` per trial, through
    the array β-step (:func:`stylized.core.step_ops.beta_step`: ``P_nᵀ k = M_n ⋯ M_1 k`` for symmetric steps)."""
    w = g / np.linalg.norm(g, axis=2, keepdims=True)
    u = np.broadcast_to(np.asarray(k, dtype=float), (w.shape[0], w.shape[-1])).copy()
    for n in range(w.shape[1]):
        u = beta_step(u, w[:, n])
    return u @ q


@numba.njit(cache=True, parallel=True)
def householder_chain_scores_numba(g, q, k):
    T, n, d = g.shape
    out = np.empty(T)
    for tr in numba.prange(T):
        u = k.copy()
        for t in range(n):
            gg = 0.0
            for a in range(d):
                gg += g[tr, t, a] * g[tr, t, a]
            beta_step_nb(u, g[tr, t], 2.0, gg)
        s = 0.0
        for a in range(d):
            s += q[a] * u[a]
        out[tr] = s
    return out
