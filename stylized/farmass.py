"""Far mass ``ρ_D``: the lower bound, streaming over ``M_L`` up to 10⁹ logits, growth with ``L``, and controls.

Under full softmax with near logits ``x_1 … x_K`` and far logits ``y_1 … y_M`` (``M = M_L``),

    ρ_D = Σ e^{y} / (Σ e^{y} + Σ e^{x}) = expit(LSE(y) − LSE(x)),

and ``|x|, |y| ≤ λ`` gives ``ρ_D ≥ M / (M + K e^{2λ})`` with equality at near ``+λ``, far ``−λ``.

Pieces:

* **counter-based logits.**  Logit ``t`` of a stream with key ``k`` is ``lo + (hi − lo) u_t`` with
  ``u_t = splitmix64(k + t·G) / 2⁵³``: any block is reproducible from ``(k, t)`` alone, so the sum
  never depends on threads and never needs the array in memory.
* **streaming LSE** (:func:`stream_lse`): Numba, one pass, O(1) memory beyond one partial sum per
  block of 2²⁰.  For ``hi − lo ≤ 64`` it uses ``e^{w(u−1)} = T[h]·e^{r}`` (a 4096-entry table on
  the top 12 bits of ``u`` times a degree-6 Taylor polynomial on the rest, error < 10⁻¹⁶ relative),
  which vectorises; otherwise two exact passes (block max, then ``Σ e^{x − max}``).  The NumPy twin
  draws the same ``u_t`` in chunks and reduces with SciPy's ``logsumexp``.
* **stylized growth model** (:func:`growth_trial`): the query ``q`` at ``i``, near keys aligned with
  ``q`` (all of them, or only the target at route length 0), far keys uniform on ``S^{d−1}``,
  scores ``λ qᵀ P_{j→i} k_j``, and the controls ``none``, ``alibi``, ``log-scaling``,
  ``forget-gate``, ``contraction``.  Routes up to ``L_sim`` are simulated literally (steps, keys,
  transport); longer ones are streamed from the exact law of a far score (below).
* **horizon** ``L_{1/2} ≈ D + Z_N/μ`` with ``μ = E[e^{λξ}] = e^{−λ} ₁F₁(a; 2a; 2λ)``,
  ``a = (d−1)/2`` (:func:`haar_mgf`).

Exact far law.  A far key ``k_j`` uniform on ``S^{d−1}`` and independent of the steps makes
``P_{j→i} k_j`` uniform for *any* orthogonal ``P``, so the far scores are i.i.d. ``λξ`` with
``(1 + ξ)/2 ~ Beta(a, a)`` at every route length (not only past the mixing window).  For the
contraction ``I − β w wᵀ`` the score is ``λ ||u_n|| ξ`` with ``u_n = P_nᵀ q`` and, ``w`` being
uniform, ``||u_{n+1}||² = ||u_n||² (1 − β(2 − β) c)``, ``c ~ Beta(½, (d−1)/2)`` exactly.

Example
-------
>>> rho = streamed_far_mass(K=16, M=10**6, lam=2.0, key_near=1, key_far=2)
>>> rho >= far_mass_lower_bound(16, 10**6, 2.0)
True
>>> bool(abs(extreme_far_mass(16, 10**6, 2.0) / far_mass_lower_bound(16, 10**6, 2.0) - 1) < 1e-14)
True
"""

from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass

import numba
import numpy as np
from numba import uint64
from scipy import special

from .bounds import alibi_far_sum, far_mass_lower_bound, lambda_required
from .families import StepFamily, as_generator, uniform_sphere
from .kernels import kernel
from .sampling import equal_energy_query, haar_coordinates
from .transport import transported_queries

__all__ = [
    "counter_uniforms",
    "stream_lse",
    "lse",
    "far_mass_split",
    "streamed_far_mass",
    "extreme_far_mass",
    "adversarial_search",
    "lse_rounding_tol",
    "haar_mgf",
    "horizon_prediction",
    "alibi_far_mass_bound",
    "CONTROLS",
    "GrowthModel",
    "growth_trial",
    "horizon_trial",
    "contraction_queries_numpy",
    "contraction_queries_numba",
    "bench_rows",
    "far_mass_lower_bound",
    "lambda_required",
]

_G = 0x9E3779B97F4A7C15  # golden-ratio increment of splitmix64
_BLOCK = 1 << 20
_TB = 12  # table bits of the fast exp
_W_FAST = 64.0  # widest logit range (hi − lo) for the table path


# --------------------------------------------------------------------------------------------
# counter-based uniforms and the streaming log-sum-exp
# --------------------------------------------------------------------------------------------
def _mix_np(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def counter_uniforms(key: int, start: int, n: int) -> np.ndarray:
    """``u_t = splitmix64(key + t·G) / 2⁵³`` for ``t = start … start+n−1`` (53-bit uniforms in ``[0, 1)``)."""
    t = np.arange(start, start + n, dtype=np.uint64)
    z = _mix_np(np.uint64(key % 2**64) + t * np.uint64(_G)) >> np.uint64(11)
    return z.astype(np.float64) * (1.0 / 2.0**53)


@numba.njit(inline="always")
def _mix(z):
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return z ^ (z >> uint64(31))


@numba.njit(cache=True, parallel=True, fastmath=True)
def _stream_table(key, M, w, block, table):
    """Per-block ``Σ e^{w(u_t − 1)}`` via table × Taylor (``w ≤ 64``); block sums, shift ``hi``."""
    nb = (M + block - 1) // block
    out = np.empty(nb)
    c = w / 9007199254740992.0  # w / 2^53
    low = uint64((1 << (53 - _TB)) - 1)
    for b in numba.prange(nb):
        start = b * block
        stop = min(M, start + block)
        s = 0.0
        for t in range(start, stop):
            z = _mix(uint64(key) + uint64(t) * uint64(_G)) >> uint64(11)
            r = c * (z & low)
            p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720))))))
            s += table[z >> uint64(53 - _TB)] * p
        out[b] = s
    return out


@numba.njit(cache=True, parallel=True)
def _stream_exact(key, M, lo, w, block):
    """Per-block (max, ``Σ e^{x − max}``) with two exact passes (any ``w``)."""
    nb = (M + block - 1) // block
    mx = np.empty(nb)
    sm = np.empty(nb)
    for b in numba.prange(nb):
        start = b * block
        stop = min(M, start + block)
        m = -np.inf
        for t in range(start, stop):
            u = (_mix(uint64(key) + uint64(t) * uint64(_G)) >> uint64(11)) * (1.0 / 9007199254740992.0)
            m = max(m, lo + w * u)
        s = 0.0
        for t in range(start, stop):
            u = (_mix(uint64(key) + uint64(t) * uint64(_G)) >> uint64(11)) * (1.0 / 9007199254740992.0)
            s += math.exp(lo + w * u - m)
        mx[b] = m
        sm[b] = s
    return mx, sm


def _check_range(M: int, lo: float, hi: float) -> tuple[int, float, float]:
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 0:
        raise ValueError(f"M must be an integer ≥ 0, got {M!r}")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise ValueError(f"logit range must be finite with lo ≤ hi, got [{lo!r}, {hi!r}]")
    return int(M), float(lo), float(hi)


def stream_lse(key: int, M: int, lo: float, hi: float, backend: str = "numba", block: int = _BLOCK) -> float:
    """``LSE_t (lo + (hi − lo) u_t)`` over ``t < M`` counter-based logits, never materialised.

    ``M = 0`` gives ``−inf``.  Results depend on ``(key, M, lo, hi, block)`` only — not on threads.

    >>> round(stream_lse(7, 10**6, 0.0, 0.0) - math.log(10**6), 12)
    0.0
    """
    M, lo, hi = _check_range(M, lo, hi)
    if M == 0:
        return -math.inf
    key, w = int(key) % 2**64, hi - lo
    if backend != "numba":
        parts = [special.logsumexp(lo + w * counter_uniforms(key, s, min(block, M - s))) for s in range(0, M, block)]
        return float(special.logsumexp(parts))
    if w <= _W_FAST:
        table = np.exp(w * (np.arange(1 << _TB) / float(1 << _TB) - 1.0))
        return hi + math.log(float(np.sum(_stream_table(np.uint64(key), M, w, block, table))))
    mx, sm = _stream_exact(np.uint64(key), M, lo, w, block)
    top = float(mx.max())
    return top + math.log(float(np.sum(sm * np.exp(mx - top))))


@numba.njit(cache=True, fastmath=True)
def _lse_serial(x):
    m = -np.inf
    for t in range(x.size):
        m = max(m, x[t])
    if m == -np.inf:
        return m
    s = 0.0
    for t in range(x.size):
        s += math.exp(x[t] - m)
    return m + math.log(s)


def lse(x: np.ndarray, backend: str = "numba") -> float:
    """``log Σ e^{x}`` of a 1-D array (``−inf`` if empty): a serial two-pass Numba loop, or SciPy.

    Serial on purpose: it reduces NumPy-drawn chunks (~10⁵) where a thread pool costs more than it saves.
    """
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        return -math.inf
    if backend != "numba":
        return float(special.logsumexp(x))
    return float(_lse_serial(x))


def lse_rounding_tol(M: int, block: int = _BLOCK) -> float:
    """Worst-case relative rounding error of a blocked streamed sum: ``(block + M/block + 16)·ε``."""
    return (min(block, max(M, 1)) + -(-max(M, 1) // block) + 16) * np.finfo(float).eps


# --------------------------------------------------------------------------------------------
# the far mass and its lower bound
# --------------------------------------------------------------------------------------------
def _rho(lse_far: float, lse_near: float) -> float:
    if lse_far == -math.inf and lse_near == -math.inf:
        raise ValueError("K + M must be ≥ 1: no sources to attend to")
    return float(special.expit(lse_far - lse_near))


def far_mass_split(near: np.ndarray, far: np.ndarray) -> float:
    """``ρ_D = expit(LSE(far) − LSE(near))`` for materialised logits; non-finite logits are rejected.

    >>> far_mass_split(np.array([1.0]), np.array([-1.0, -1.0])) == far_mass_lower_bound(1, 2, 1.0)
    True
    """
    near, far = np.asarray(near, dtype=float).ravel(), np.asarray(far, dtype=float).ravel()
    for name, x in (("near logits", near), ("far logits", far)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} must be finite (no NaN or ±inf)")
    return _rho(lse(far, "numpy"), lse(near, "numpy"))


def streamed_far_mass(K: int, M: int, lam: float, key_near: int, key_far: int, *,
                      near: tuple[float, float] | None = None, far: tuple[float, float] | None = None,
                      backend: str = "numba") -> float:
    """``ρ_D`` for ``K`` near and ``M`` far counter-based logits, uniform in ``near``/``far`` ranges.

    The ranges default to ``[−λ, λ]``; they must lie inside it (the bound's hypothesis).
    """
    lam = float(lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (λ) must be a finite number ≥ 0, got {lam!r}")
    near = (-lam, lam) if near is None else near
    far = (-lam, lam) if far is None else far
    for name, (lo, hi) in (("near", near), ("far", far)):
        if lo < -lam or hi > lam:
            raise ValueError(f"{name} logit range [{lo}, {hi}] must lie in [−λ, λ] = [{-lam}, {lam}]")
    return _rho(stream_lse(key_far, M, *far, backend=backend), stream_lse(key_near, K, *near, backend=backend))


def extreme_far_mass(K: int, M: int, lam: float, backend: str = "numba") -> float:
    """``ρ_D`` at the extreme configuration (near all ``+λ``, far all ``−λ``) through the streaming kernel."""
    return streamed_far_mass(K, M, lam, 0, 0, near=(lam, lam), far=(-lam, -lam), backend=backend)


def adversarial_search(K: int, M: int, lam: float, keys: np.ndarray, backend: str = "numba") -> list[dict]:
    """Draws pushed toward the extreme configuration: near ``U[λ − 2λδ, λ]``, far ``U[−λ, −λ + 2λδ]``.

    ``δ = 2^{−k}`` for ``k = 0 … len(keys)−1`` (one key pair per step).  Returns rows with ``δ``,
    ``ρ_D`` and the gap ``ρ_D − bound``, which must stay ≥ 0 and shrink to 0 with ``δ``.
    """
    bound = far_mass_lower_bound(K, M, lam)
    out = []
    for k, (kn, kf) in enumerate(np.asarray(keys, dtype=np.uint64).reshape(-1, 2)):
        delta = 2.0**-k
        rho = streamed_far_mass(K, M, lam, int(kn), int(kf), near=(lam - 2 * lam * delta, lam),
                                far=(-lam, -lam + 2 * lam * delta), backend=backend)
        out.append({"delta": delta, "rho": rho, "gap": rho - bound})
    return out


# --------------------------------------------------------------------------------------------
# closed forms of the stylized model
# --------------------------------------------------------------------------------------------
def haar_mgf(lam: float, d: int) -> float:
    """``μ = E[e^{λξ}]`` for ``ξ = qᵀu``, ``u`` uniform on ``S^{d−1}``: ``e^{−λ} ₁F₁(a; 2a; 2λ)``, ``a = (d−1)/2``."""
    a = (d - 1) / 2.0
    return float(math.exp(-lam) * special.hyp1f1(a, 2 * a, 2 * lam))


def horizon_prediction(Z_N: float, mu: float, D: int) -> float:
    """``L_{1/2} ≈ D + Z_N/μ``: the context length at which the far sum ``(L − D)μ`` reaches ``Z_N``."""
    return D + Z_N / mu


def alibi_far_mass_bound(lam: float, m: float, D: int) -> float:
    """Bound on ``ρ_D`` under ALiBi for every ``L``: ``S/(S + Z_min)``.

    ``S = Σ_{n≥D} e^{λ − mn}`` (:func:`alibi_far_sum`) bounds the far weight sum; the near sum is at
    least ``Z_min = e^{λ} + Σ_{n=1}^{D−1} e^{−λ − mn}`` because the target at route length 0 scores
    ``λ`` exactly (``qᵀq = 1``, no bias) and every other near logit is ``≥ −λ − mn``.
    """
    S = alibi_far_sum(lam, m, D)
    zmin = math.exp(lam) + sum(math.exp(-lam - m * n) for n in range(1, D))
    return S / (S + zmin)


# --------------------------------------------------------------------------------------------
# the stylized growth model with far-mass controls
# --------------------------------------------------------------------------------------------
CONTROLS = ("none", "alibi", "log-scaling", "forget-gate", "contraction")


def contraction_queries_numpy(w: np.ndarray, q: np.ndarray, beta: float) -> np.ndarray:
    """``u_n = P_nᵀ q`` for PaTH-style steps ``I − β w wᵀ`` (symmetric); ``w[n]`` is the step added at length ``n``.

    Row ``n`` of the result is the transported query at route length ``n`` (``u_0 = q``).
    """
    U = np.empty((w.shape[0], q.shape[0]))
    U[0] = q
    for n in range(1, w.shape[0]):
        U[n] = U[n - 1] - beta * w[n] * (w[n] @ U[n - 1])
    return U


@numba.njit(cache=True)
def contraction_queries_numba(w, q, beta):
    N, d = w.shape
    U = np.empty((N, d))
    U[0] = q
    for n in range(1, N):
        c = 0.0
        for a in range(d):
            c += w[n, a] * U[n - 1, a]
        for a in range(d):
            U[n, a] = U[n - 1, a] - beta * c * w[n, a]
    return U


@dataclass(frozen=True)
class GrowthModel:
    """Parameters of the far-mass growth model (see the module docstring).

    ``near = "all"``: every near key equals ``q``; ``"target"``: only the key at route length 0.
    ``m`` ALiBi slope; ``L_train`` of log-scaling (logits × ``ln L / ln L_train``); forget gates
    ``f = σ(g)``, ``g ~ N(gate, gate_sd²)`` per token; ``beta`` of the contraction ``I − β w wᵀ``.
    """

    family: StepFamily
    lam: float
    D: int
    near: str = "all"
    m: float = 1 / 16
    L_train: int = 512
    gate: float = 4.0
    gate_sd: float = 1.0
    beta: float = 0.5


def _orthogonal_scores(model: GrowthModel, N: int, keys: np.ndarray, q: np.ndarray, rng, backend: str) -> np.ndarray:
    """``λ qᵀ P_n k_n`` for ``n = 0 … N−1`` (route-length order), steps of the family."""
    fam = model.family
    steps = fam.rvs(N, rng)
    if fam.kind == "householder":
        U = kernel("householder_queries", backend)(np.ascontiguousarray(steps), q)
    else:
        U = transported_queries(fam, steps, q, rng)
    # position j = N−1−n ↔ route length n
    return model.lam * np.einsum("nd,nd->n", U[::-1], keys)


def _cum_lse(x: np.ndarray) -> np.ndarray:
    """``LSE(x[:k+1])`` for every ``k`` (float64, overflow-free)."""
    return np.logaddexp.accumulate(x) if x.size else x


def growth_trial(model: GrowthModel, Ls: np.ndarray, L_sim: int, rng, backend: str = "numba",
                 controls: tuple[str, ...] = CONTROLS, chunk: int = 1 << 17) -> dict:
    """One query: ``ρ_D(L)`` for every control and every ``L`` in ``Ls`` (sorted), plus ``Z_N``.

    Route lengths ``n < min(max L, L_sim)`` are simulated literally; longer ones are streamed in
    chunks from the exact far law (module docstring).  Every ``L`` uses the same draws (a prefix
    of the longest context), so each ``ρ_D(L)`` has the right law; rows are correlated across ``L``.
    Returns ``{"rho": {control: array over Ls}, "lse_near": {control: float or array}, "cross": L*}``
    where ``L*`` is the first ``L`` with ``ρ_D ≥ ½`` without control (``nan`` if none up to ``max L``).
    """
    rng = as_generator(rng)
    Ls = np.asarray(Ls, dtype=np.int64)
    lam, D, d = model.lam, model.D, model.family.d
    N = int(min(Ls.max(), L_sim))
    q = equal_energy_query(d)
    keys = uniform_sphere(rng, (N,), d)
    keys[: (D if model.near == "all" else 1)] = q
    n = np.arange(N, dtype=float)
    s = _orthogonal_scores(model, N, keys, q, rng, backend)
    logf = -np.logaddexp(0.0, -(model.gate + model.gate_sd * rng.standard_normal(N)))  # log σ(g)
    logf[0] = 0.0
    G = np.cumsum(logf)  # Σ over the n tokens of the route
    w = uniform_sphere(rng, (N,), d)
    Uc = (contraction_queries_numba if backend == "numba" else contraction_queries_numpy)(w, q, model.beta)
    sc = lam * np.einsum("nd,nd->n", Uc, keys)
    unorm2 = float(Uc[-1] @ Uc[-1])
    logits = {"none": s, "alibi": s - model.m * n, "forget-gate": s + G, "contraction": sc}
    kappa = np.log(Ls) / math.log(model.L_train)

    rho = {c: np.full(Ls.size, np.nan) for c in controls}
    lse_near = {}
    far_acc = {}  # running far LSE per L-independent control
    for c in controls:
        if c == "log-scaling":
            continue
        x = logits[c]
        lse_near[c] = lse(x[:D], backend)
        cum = _cum_lse(x[D:])
        far_acc[c] = float(cum[-1]) if cum.size else -math.inf
        for k, L in enumerate(Ls):
            if L <= N:
                rho[c][k] = _rho(float(cum[L - D - 1]) if L > D else -math.inf, lse_near[c])
    # L* (no control) inside the literal range
    cross = math.nan
    if "none" in controls:
        cum = _cum_lse(s[D:])
        hit = np.nonzero(cum >= lse_near["none"])[0]
        if hit.size:
            cross = float(D + hit[0] + 1)
    if "log-scaling" in controls:
        lse_near["log-scaling"] = np.array([lse(kp * s[:D], backend) for kp in kappa])
        far_ls = np.array([lse(kp * s[D:min(L, N)], backend) for kp, L in zip(kappa, Ls)])
        for k, L in enumerate(Ls):
            if L <= N:
                rho["log-scaling"][k] = _rho(float(far_ls[k]), float(lse_near["log-scaling"][k]))
    # streamed continuation for L > N
    big = Ls[Ls > N]
    if big.size:
        a = (d - 1) / 2.0
        G_last, logu2 = float(G[-1]), math.log(max(unorm2, 1e-300))
        shrink = model.beta * (2.0 - model.beta)
        start = N
        while start < big.max():
            stop = int(min(start + chunk, big[big > start].min()))  # chunks end on every L
            m = stop - start
            nn = np.arange(start, stop, dtype=float)
            xi = haar_coordinates(rng, m, d)
            ls = lam * xi
            if "forget-gate" in controls:
                g = -np.logaddexp(0.0, -(model.gate + model.gate_sd * rng.standard_normal(m)))
                Gc = G_last + np.cumsum(g)
                G_last = float(Gc[-1])
            if "contraction" in controls:
                c_draw = rng.beta(0.5, a, m)
                lu = logu2 + np.cumsum(np.log1p(-shrink * c_draw))
                logu2 = float(lu[-1])
                xc = lam * np.exp(0.5 * lu) * haar_coordinates(rng, m, d)
            chunk_x = {"none": ls, "alibi": ls - model.m * nn}
            if "forget-gate" in controls:
                chunk_x["forget-gate"] = ls + Gc
            if "contraction" in controls:
                chunk_x["contraction"] = xc
            prev = far_acc.get("none", -math.inf)
            for c in far_acc:
                far_acc[c] = float(np.logaddexp(far_acc[c], lse(chunk_x[c], backend)))
            if "none" in controls and math.isnan(cross) and far_acc["none"] >= lse_near["none"]:
                cum = np.logaddexp(prev, _cum_lse(ls))
                cross = float(start + np.nonzero(cum >= lse_near["none"])[0][0] + 1)
            for k, L in enumerate(Ls):
                if start < L and "log-scaling" in controls:
                    far_ls[k] = float(np.logaddexp(far_ls[k], lse(kappa[k] * ls[: L - start], backend)))
                if L == stop:
                    for c in far_acc:
                        rho[c][k] = _rho(far_acc[c], lse_near[c])
                    if "log-scaling" in controls:
                        rho["log-scaling"][k] = _rho(float(far_ls[k]), float(lse_near["log-scaling"][k]))
            start = stop
    return {"rho": rho, "lse_near": lse_near, "cross": cross}


def horizon_trial(model: GrowthModel, rng, backend: str = "numba", chunk: int = 1 << 16, L_max: int = 1 << 24) -> tuple[float, float]:
    """``(Z_N, L*)`` for one query without control: near keys transported literally, far scores streamed
    from the exact law until ``Σ_far e^{s} ≥ Z_N`` (``L*`` is the first ``L`` with ``ρ_D ≥ ½``)."""
    rng = as_generator(rng)
    d, D, lam = model.family.d, model.D, model.lam
    q = equal_energy_query(d)
    keys = uniform_sphere(rng, (max(D, 1),), d)
    keys[: (D if model.near == "all" else 1)] = q
    lse_near = lse(_orthogonal_scores(model, max(D, 1), keys, q, rng, backend)[:D], backend)
    acc, start = -math.inf, D
    while start < L_max:
        x = lam * haar_coordinates(rng, chunk, d)
        cum = np.logaddexp(acc, _cum_lse(x))
        hit = np.nonzero(cum >= lse_near)[0]
        if hit.size:
            return math.exp(lse_near), float(start + hit[0] + 1)
        acc, start = float(cum[-1]), start + chunk
    return math.exp(lse_near), math.nan


# --------------------------------------------------------------------------------------------
# benchmark rows for `stylized bench`
# --------------------------------------------------------------------------------------------
def _timed(fn, repeat: int) -> tuple[float, float]:
    """Median seconds over ``repeat`` calls, and the peak traced Python/NumPy memory (MiB) of one call."""
    fn()  # warm-up / JIT
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return float(np.median(times)), peak


def bench_rows(repeat: int = 5) -> list[dict]:
    """Streaming far mass vs SciPy ``logsumexp`` on materialised logits (medians, side by side).

    Row 1: ``M = 10⁸`` streamed (Numba, O(1) memory) vs the NumPy twin (chunks of 2²⁰ + SciPy).
    Row 2: ``M = 10⁷`` streamed vs drawing the array with NumPy and one SciPy ``logsumexp``
    (the materialised baseline at a size that fits comfortably; its memory is ``8M`` bytes).
    """
    rows = []
    M = 10**8
    t, pk = _timed(lambda: stream_lse(1, M, -4.0, 4.0), repeat)
    tb, pkb = _timed(lambda: stream_lse(1, M, -4.0, 4.0, backend="numpy"), max(1, min(repeat, 2)))
    rows.append({"name": "far mass stream M=1e8 (numba) vs numpy chunks+scipy", "kind": "kernel",
                 "baseline": "numpy counter chunks + scipy.special.logsumexp", "seconds": t,
                 "baseline_seconds": tb, "ratio": tb / t, "peak_mib": pk, "baseline_peak_mib": pkb})
    M = 10**7
    t, pk = _timed(lambda: stream_lse(1, M, -4.0, 4.0), repeat)

    def materialised():
        x = np.random.default_rng(1).uniform(-4.0, 4.0, M)
        return special.logsumexp(x)

    tb, pkb = _timed(materialised, repeat)
    rows.append({"name": "far mass stream M=1e7 (numba) vs materialised scipy logsumexp", "kind": "kernel",
                 "baseline": "rng.uniform array + scipy.special.logsumexp", "seconds": t,
                 "baseline_seconds": tb, "ratio": tb / t, "peak_mib": pk, "baseline_peak_mib": pkb})
    return rows
