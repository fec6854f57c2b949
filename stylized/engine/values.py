"""Value side (claim C5): far interference energy when values are transported too.

Far values share a background: ``v_j = b + ξ_j`` (``ξ_j ~ N(0, σ² I_d)``).  With the
query at ``i`` and far sources at route lengths ``n = i − j ≥ D``, the far output is

* QK-only: ``F = Σ_far α_j v_j`` — coherent, ``||F||² = ρ_D² ||b||²`` without noise;
* QKV:     ``F = Σ_far α_j P_{j→i} v_j`` — the transported backgrounds cancel.

We report the far interference energy relative to coherent addition,
``r = E||F||² / (ρ_D² ||b||²)`` (per trial ``||F/ρ_D||²``, so QK-only without noise is 1).

The closed forms (the exact finite-``M`` value, its large-``M`` form, the plug-in ``ᾱᵀCᾱ``, the
tilt floors and the exact Haar tilted energy) live in :mod:`stylized.theory.value_theory`.

Backends.  The Monte Carlo engine (:func:`far_energy_samples`, :func:`snr_samples`) is written once
against an array namespace ``xp``: ``backend="numpy"``/``"numba"`` run it with NumPy on the caller's
Generator (one stream, the same numbers for both), ``backend="cupy"`` runs the very same code with
CuPy arrays and a device Generator seeded from the caller's (:func:`stylized.core.backend.xp_generator`);
samples come back as host NumPy arrays, once per call.

Example
-------
>>> from stylized.laws.families import make_family
>>> fam = make_family("haar", d=8)
>>> b = np.ones(8) / np.sqrt(8)
>>> round(qkv_interference_theory(fam, b, 10), 6)   # Haar: the far sources add incoherently
0.1
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from ..core.backend import array_namespace, namespace_of, to_numpy, xp_generator
from ..core.counter_rng import as_generator
from ..core.step_ops import uniform_sphere
from ..laws.law_type import StepLawType
from ..theory.value_theory import (
    correlation_pairs,
    has_correlation_pairs,
    lag_correlations,
    lag_radius,
    qkv_interference_theory,
    quadratic_form,
    toeplitz_form,
)
from .lse import softmax_rows
from .sampling import XP_CHUNK_ELEMENTS, sample_steps
from .transport import route_sums

__all__ = [
    "draw_route_steps",
    "in_law_sums",
    "stable_weights",
    "ratio_ci",
    "far_keys",
    "chunk_size",
    "far_energy_samples",
    "snr_samples",
]


# ---------------------------------------------------------------------------------------
# route steps by route length n = 0 … N−1 (P_0 = I, P_n = m_1 m_2 ⋯ m_n); the transport
# itself is the law's (StepLaw.route_scores, route_sum; stylized.engine.transport.route_sums)
# ---------------------------------------------------------------------------------------
def in_law_sums(family: StepLawType, weights: str, dense_haar: bool = False) -> bool:
    """Whether :func:`far_energy_samples` sums along routes by the law's in-law transport: equal weights
    (independent of the steps) and a law whose draws fix the steps only in law (``pathwise = False``, the
    Haar-step flag: ``O(N·d)`` per route), unless ``dense_haar`` asks for pathwise dense steps."""
    return (not family.pathwise) and weights == "equal" and not dense_haar


def draw_route_steps(family: StepLawType, size: int, N: int, rng, *, backend: str = "numpy") -> np.ndarray:
    """Steps ``m_1 … m_{N−1}`` of ``size`` routes (index 0 unused), fixed pathwise (:meth:`StepLaw.pathwise_steps`).

    ``m_s`` is the step of the token ``s`` positions before the query, so the route of
    length ``n`` is ``P_n = m_1 ⋯ m_n`` (``= M_i ⋯ M_{i−n+1}``).  The law's structured draws (angles,
    reflection vectors, dense matrices); a law applied in law (Haar-step flags) draws dense matrices here,
    exact even when weights depend on them; keep ``d`` small.  ``backend="cupy"``: ``rng`` is the device
    Generator (:func:`stylized.core.backend.xp_generator`) and the steps are device arrays.
    """
    xp = array_namespace(backend)
    rng = rng if backend == "cupy" else as_generator(rng)
    return family.pathwise_steps(rng, (int(size), int(N)), xp)


def stable_weights(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax (max subtracted): :func:`stylized.engine.lse.softmax_rows`."""
    return softmax_rows(logits)


def far_keys(rng, shape: tuple, b_hat: np.ndarray, align: float) -> np.ndarray:
    """Keys ``k = normalise(a·b̂ + √(1−a²)·u)`` with ``u`` uniform: ``a = 0`` uniform keys, ``a = 1`` keys ``= b̂``.

    Drawn with ``rng`` in the namespace of ``b_hat`` (a CuPy ``b_hat`` needs a CuPy Generator).
    """
    if not (0.0 <= align <= 1.0):
        raise ValueError(f"key_align must lie in [0, 1], got {align!r}")
    xp = namespace_of(b_hat)
    k = align * b_hat + float(np.sqrt(1.0 - align**2)) * uniform_sphere(rng, shape, b_hat.size, xp)
    return k / xp.linalg.norm(k, axis=-1, keepdims=True)


def chunk_size(family: StepLawType, N: int, budget: int | None = None, dense: bool | None = None,
               backend: str = "numpy") -> int:
    """Routes per chunk so that one ``(T, N, d)`` array (``(T, N, d, d)`` for dense steps) stays ≤ ``budget`` floats.

    ``dense`` defaults to whether the law's pathwise steps are dense matrices (:attr:`StepLaw.pathwise_ndim`).

    Default budget ``2²¹`` floats and at most 256 routes; on the CuPy path
    :data:`stylized.engine.sampling.XP_CHUNK_ELEMENTS` (``2²²`` floats, 32 MiB per array, about 7 of them
    alive at once) and at most 4096 routes, so a GPU gets larger batches.
    """
    gpu = backend == "cupy"
    budget = (XP_CHUNK_ELEMENTS if gpu else 1 << 21) if budget is None else budget
    dense = family.pathwise_ndim == 2 if dense is None else dense
    per = N * family.d * (family.d if dense else 1)
    return int(max(1, min(4096 if gpu else 256, budget // per)))


# ---------------------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------------------
def ratio_ci(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """``E[x]/E[y]`` with a delta-method interval from paired samples (``y`` mean must be > 0)."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    n = x.size
    mx, my = x.mean(), y.mean()
    r = mx / my
    cov = np.cov(np.vstack([x, y]))
    var = (cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (n * my * my)
    half = float(stats.norm.ppf(0.5 + level / 2) * np.sqrt(max(var, 0.0)))
    return float(r), float(r - half), float(r + half)


# ---------------------------------------------------------------------------------------
# Monte Carlo of the far output
# ---------------------------------------------------------------------------------------
def far_energy_samples(
    family: StepLawType,
    M: int,
    D: int,
    size: int,
    rng: np.random.Generator,
    *,
    weights: str = "equal",
    lam: float = 4.0,
    key_align: float = 0.0,
    noise: float = 0.0,
    b: np.ndarray | None = None,
    independent: bool = False,
    dense_haar: bool = False,
    backend: str = "numpy",
) -> dict[str, np.ndarray]:
    """Per-route samples of ``||F/ρ_D||²/||b||²`` for ``M`` far sources at route lengths ``D … D+M−1``.

    The query is ``q = b̂`` (unit background).  ``weights="equal"``: ``ᾱ_j = 1/M``;
    ``"softmax"``: ``ᾱ ∝ exp(λ qᵀ P_n k_n)`` over the far set (near sources only rescale
    ``ρ_D``), with keys from :func:`far_keys` (``key_align = 0``: uniform keys, weights
    independent of the steps; ``1``: keys ``= b̂``, weights select routes that keep ``b̂``).

    Returns host arrays of shape ``(size,)``: ``qk``, ``qkv``, ``plugin`` (the independent-weights
    prediction ``ᾱᵀCᾱ + σ²dΣᾱ²`` for the drawn weights) and, with ``independent``,
    ``qkv-indep`` (values transported by an independent stream of steps of the same family).

    A law applied in law (``pathwise = False``, Haar-step flags) with equal weights uses its in-law transport
    (:func:`in_law_sums`; :func:`haar_law_sum`, ``O(N·d)``) unless ``dense_haar``; softmax weights always use
    its pathwise steps (dense Haar matrices).  An estimated ``E[M]`` (a law without :meth:`StepLaw.mean`)
    adds ``plugin-radius``: per route a 95% bound on the plug-in's error from it (softmax weights).
    ``backend="cupy"`` runs the same code on the GPU with a device Generator seeded from ``rng``;
    ``"numpy"`` and ``"numba"`` are the same computation on ``rng`` itself.

    Parameters
    ----------
    family : StepLaw
        The step law of the transport.
    M : int
        Number of far sources (route lengths ``D … D+M−1``).
    D : int
        Near/far threshold: the shortest far route.
    size : int
        Number of routes (samples).
    rng : numpy.random.Generator
        The draws' Generator.
    weights : {"equal", "softmax"}, default "equal"
        Far weights ``ᾱ``: ``1/M`` each, or the softmax of ``λ qᵀ P_n k_n`` over the far set.
    lam : float, default 4.0
        ``λ`` of the softmax weights.
    key_align : float, default 0.0
        Share of the background in the far keys (softmax weights only).
    noise : float, default 0.0
        ``σ`` of the per-source value noise ``ξ_j``.
    b : array of shape (d,), optional
        The background; default the equal-energy unit vector.
    independent : bool, default False
        Also transport the values by an independent stream of steps (``qkv-indep``).
    dense_haar : bool, default False
        Use dense Haar matrices instead of the in-law transport for a Haar-step law.
    backend : {"numpy", "numba", "cupy"}, default "numpy"
        Where it runs.

    Returns
    -------
    dict of str to numpy.ndarray
        ``qk``, ``qkv``, ``plugin`` (and ``qkv-indep``, ``plugin-radius`` where they apply), each of shape ``(size,)``.

    Examples
    --------
    QK keeps all the coherent far energy; QKV transport cancels most of it (C5):

    >>> import numpy as np
    >>> from stylized.laws.registry import make_family
    >>> r = far_energy_samples(make_family("so2-uniform", 16), M=256, D=16, size=200, rng=np.random.default_rng(0))
    >>> float(r["qk"].mean()), bool(r["qkv"].mean() < 0.1)
    (1.0, True)
    """
    if weights not in ("equal", "softmax"):
        raise ValueError(f"weights must be 'equal' or 'softmax', got {weights!r}")
    rng = xp_generator(backend, as_generator(rng))
    b = np.full(family.d, 1.0 / np.sqrt(family.d)) if b is None else np.asarray(b, dtype=float)
    if in_law_sums(family, weights, dense_haar):
        out = _law_energy(family, M, D, size, rng, noise, b, independent, backend)
    else:
        out = _route_energy(family, M, D, size, rng, weights, lam, key_align, noise, b, independent, backend)
    return {k: to_numpy(v) for k, v in out.items()}


def _far_values(size: int, N: int, D: int, b: np.ndarray, noise: float, rng, xp: ModuleType) -> np.ndarray:
    """Values ``v_n = b + ξ_n`` at the far route lengths ``n ≥ D`` and ``0`` at the near ones, ``(size, N, d)``."""
    d = b.size
    values = xp.zeros((size, N, d))
    values[:, D:] = xp.asarray(b) + (noise * rng.standard_normal(size=(size, N - D, d)) if noise > 0 else 0.0)
    return values


def _route_energy(family: StepLawType, M: int, D: int, size: int, rng, weights: str, lam: float, key_align: float,
                  noise: float, b: np.ndarray, independent: bool, backend: str) -> dict:
    """:func:`far_energy_samples` along drawn routes (any family; weights may depend on the steps)."""
    xp = array_namespace(backend)
    d, N, nb = family.d, D + M, float(b @ b)
    b_hat = xp.asarray(b / np.sqrt(nb))
    steps = draw_route_steps(family, size, N, rng, backend=backend)
    trig = family.prepare_routes(steps)
    if weights == "equal":
        abar = xp.full((size, M), 1.0 / M)
    else:
        keys = xp.zeros((size, N, d))
        keys[:, D:] = far_keys(rng, (size, M), b_hat, key_align)
        abar = stable_weights(lam * family.route_scores(steps, b_hat, keys, prepared=trig)[:, D:])
    values = _far_values(size, N, D, b, noise, rng, xp)
    a_full = xp.zeros((size, N))
    a_full[:, D:] = abar
    out = {
        "qk": xp.sum(xp.einsum("tn,tnd->td", abar, values[:, D:]) ** 2, axis=1) / nb,
        "qkv": xp.sum(route_sums(family, steps, (a_full,), values, trig)[0] ** 2, axis=1) / nb,
    }
    if independent:
        other = draw_route_steps(family, size, N, rng, backend=backend)
        out["qkv-indep"] = xp.sum(family.route_sum(other, a_full, values) ** 2, axis=1) / nb
    sq = xp.sum(abar**2, axis=1)
    out["plugin"] = _plugin(family, b, abar, M, weights, xp) + noise**2 * d * sq / nb
    if weights != "equal" and family.mean_radius > 0:
        out["plugin-radius"] = toeplitz_form(abar, lag_radius(family, b, M))
    return out


def _plugin(family: StepLawType, b: np.ndarray, abar, M: int, weights: str, xp: ModuleType):
    """``ᾱᵀCᾱ`` with ``C_{jk} = b̂ᵀE[P_{|j−k|}]b̂``: the exact value (equal weights), the pair recursion
    :func:`quadratic_form` (planes or ``E[M] = c·I``), else the Toeplitz form of :func:`lag_correlations`."""
    if weights == "equal":
        return xp.full(abar.shape[0], qkv_interference_theory(family, b, M))
    if has_correlation_pairs(family):
        w, z = correlation_pairs(family, b)
        return quadratic_form(abar, w, z)
    return toeplitz_form(abar, lag_correlations(family, b, M))


def _law_energy(family: StepLawType, M: int, D: int, size: int, rng, noise: float, b: np.ndarray,
                independent: bool, backend: str) -> dict:
    """:func:`far_energy_samples` with equal weights by the law's in-law transport (:meth:`StepLaw.route_sum`
    on its structured draws, given ``xrng``): values first, then the steps of each transport."""
    xp = array_namespace(backend)
    d, N, nb = family.d, D + M, float(b @ b)
    a = xp.zeros((size, N))
    a[:, D:] = 1.0 / M
    values = _far_values(size, N, D, b, noise, rng, xp)
    out = {"qk": xp.sum(values[:, D:].mean(axis=1) ** 2, axis=1) / nb}
    for key in ("qkv", "qkv-indep") if independent else ("qkv",):
        steps = sample_steps(family, (size, N), rng, backend)
        out[key] = xp.sum(family.route_sum(steps, a, values, xrng=rng) ** 2, axis=1) / nb
    out["plugin"] = xp.full(size, qkv_interference_theory(family, b, M)) + noise**2 * d / (M * nb)
    return out


def snr_samples(
    family: StepLawType,
    L: int,
    K: int,
    size: int,
    rng: np.random.Generator,
    *,
    lam: float,
    key_align: float = 0.0,
    noise: float = 0.0,
    q: np.ndarray,
    t: np.ndarray,
    b: np.ndarray,
    backend: str = "numpy",
) -> dict[str, np.ndarray]:
    """Near signal and far interference for one query with ``K`` near sources and ``L − K`` far ones.

    Near sources (route ``n < K``) have key ``q`` and value ``t`` (the target); far sources
    have keys from :func:`far_keys` and values ``b + ξ``.  Full softmax over all ``L``
    logits ``λ qᵀ P_n k_n``.  Signal ``(tᵀ N)²`` with ``N`` the near part of the output
    (QK: ``Σ_near α t``; QKV: ``Σ_near α P_n t``); interference ``||F||²`` of the far part.
    Also ``overlap``: ``tᵀ P_n t`` for ``n < K`` (``(size, K)``).  Host arrays are returned;
    ``backend="cupy"`` computes on the GPU with a device Generator seeded from ``rng``.
    """
    xp = array_namespace(backend)
    rng = xp_generator(backend, as_generator(rng))
    d = family.d
    t, b = np.asarray(t, dtype=float), np.asarray(b, dtype=float)
    qd, td, bd = (xp.asarray(v, dtype=float) for v in (q, t, b))
    steps = draw_route_steps(family, size, L, rng, backend=backend)
    keys = xp.empty((size, L, d))
    keys[:, :K] = qd
    keys[:, K:] = far_keys(rng, (size, L - K), bd / xp.linalg.norm(bd), key_align)
    trig = family.prepare_routes(steps)
    alpha = stable_weights(lam * family.route_scores(steps, qd, keys, prepared=trig))
    values = _far_values(size, L, K, b, noise, rng, xp)
    values[:, :K] = td
    near, far = alpha.copy(), alpha.copy()
    near[:, K:] = 0.0
    far[:, :K] = 0.0
    n_qkv, f_qkv = route_sums(family, steps, (near, far), values, trig)
    tt = xp.broadcast_to(td, (size, K, d))
    out = {
        "rho": far.sum(axis=1),
        "signal_qk": (near.sum(axis=1) * float(t @ t)) ** 2,
        "signal_qkv": (n_qkv @ td) ** 2,
        "interf_qk": xp.sum(xp.einsum("tn,tnd->td", far, values) ** 2, axis=1),
        "interf_qkv": xp.sum(f_qkv**2, axis=1),
        "overlap": family.route_scores(steps[:, :K], td, tt),
    }
    return {k: to_numpy(v) for k, v in out.items()}
