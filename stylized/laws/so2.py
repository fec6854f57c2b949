"""SO(2) block laws: ``M = diag(R(θ_1), …, R(θ_{d/2}))`` with commuting planes, drawn as angles.

``so2-uniform``, ``rope-random``, ``so2-normal`` and ``token``: each knows its per-plane characteristic
values ``χ_b = E[e^{iθ_b}]`` (the closed-form ``E[M]``), and transports by accumulated angles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..core.backend import namespace_of
from ..core.counter_rng import as_generator
from ..core.step_ops import rotate_planes, so2_rotate, so2_trig
from .base import StepLaw, check_route_length
from .family_args import validate_family_args

__all__ = ["rope_frequencies", "SO2Family", "SO2Uniform", "RopeRandom", "SO2Normal", "TokenAngles"]


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """RoPE frequencies ``ω_b = base^{−2b/d}``, ``b = 0 … d/2 − 1``.

    Parameters
    ----------
    d : int
        Even dimension (``d/2`` planes).
    base : float, default 10000.0
        RoPE's base.

    Returns
    -------
    numpy.ndarray of shape (d/2,)
        ``ω_b``, from 1 down to ``base^{−(d−2)/d}``.

    Examples
    --------
    >>> rope_frequencies(8)
    array([1.   , 0.1  , 0.01 , 0.001])
    """
    d = validate_family_args("rope-random", d, planes=True, base=base)
    return float(base) ** (-2.0 * np.arange(d // 2) / d)


def _sinc(x: np.ndarray) -> np.ndarray:
    """``sin(x)/x`` with ``sinc(0) = 1`` (numpy's ``sinc`` is normalised by π)."""
    return np.sinc(np.asarray(x, dtype=float) / np.pi)


# ---------------------------------------------------------------------------------------
# SO(2) block families: angles, never matrices
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SO2Family(StepLaw):
    """Block-diagonal ``M = diag(R(θ_1), …, R(θ_{d/2}))`` with independent plane angles.

    Each plane has characteristic value ``χ_b = E[e^{iθ_b}]``; the plane mean is
    ``[[Re χ_b, −Im χ_b], [Im χ_b, Re χ_b]]`` and ``||E[M]||_op = max_b |χ_b|``.
    """

    planes: ClassVar[bool] = True
    step_ndim: ClassVar[int] = 1

    @property
    def n_planes(self) -> int:
        return self.d // 2

    @property
    def post_mixing_class(self) -> type:
        """:class:`~stylized.theory.score_laws.UniformPhaseSum` when the accumulated angles equidistribute
        (:attr:`mixes_to_uniform`), else the base's estimated reference."""
        if self.mixes_to_uniform:
            from ..theory.score_laws import UniformPhaseSum

            return UniformPhaseSum
        return super().post_mixing_class

    def chi(self) -> np.ndarray:
        """Per-plane characteristic values ``χ_b = E[e^{iθ_b}]`` (complex, shape ``(d/2,)``)."""
        raise NotImplementedError

    def mean(self) -> np.ndarray:
        chi = self.chi()
        out = np.zeros((self.d, self.d))
        for b, c in enumerate(chi):
            out[2 * b : 2 * b + 2, 2 * b : 2 * b + 2] = [[c.real, -c.imag], [c.imag, c.real]]
        return out

    @property
    def spectral_gap(self) -> float:
        """``γ = 1 − max_b |χ_b|`` (closed form: ``E[M]`` is block-diagonal with blocks ``|χ_b|·R(arg χ_b)``)."""
        return float(1.0 - np.max(np.abs(self.chi())))

    def mean_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        """``qᵀE[M]ⁿq = Σ_b (q_{2b}² + q_{2b+1}²) Re χ_bⁿ`` (no dense matrices)."""
        q = np.asarray(q, dtype=float)
        from ..theory.bounds import chi_power_correlation

        out = chi_power_correlation(self.chi(), np.ravel(n).astype(float), q[0::2] ** 2 + q[1::2] ** 2)
        return float(out[0]) if np.ndim(n) == 0 else out.reshape(np.shape(n))

    def plane_windows(self, eps: float) -> np.ndarray:
        """Per-plane windows ``W_b(ε) = ⌈ln ε / ln |χ_b|⌉`` (``inf`` where ``|χ_b| = 1``)."""
        if not (0.0 < eps < 1.0):
            raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
        a = np.abs(self.chi())
        with np.errstate(divide="ignore"):
            from ..theory.bounds import window_from_log_rate

            w = window_from_log_rate(np.log(np.minimum(a, 1.0)), eps)
        return np.where(a <= 0.0, 1.0, w)

    # -- transport: accumulated plane angles -------------------------------------------------
    def apply(self, step, x, *, transpose: bool = False, xrng=None):
        """``R(±θ) x`` plane by plane (``step`` the plane angles ``(..., d/2)``)."""
        return rotate_planes(x, -step if transpose else step)

    def prepare_routes(self, steps):
        """``(cos A_n, sin A_n)`` of the accumulated route angles (:func:`so2_trig`), shared by several transports."""
        return so2_trig(steps)

    def route_queries(self, steps, q, *, xrng=None, prepared=None):
        c, s = prepared or so2_trig(steps)
        return so2_rotate((c, -s), q)

    def route_scores(self, steps, q, keys, *, xrng=None, prepared=None):
        return so2_rotate(prepared or so2_trig(steps), keys) @ q

    def route_sum(self, steps, weights, values, *, xrng=None, prepared=None):
        rv = so2_rotate(prepared or so2_trig(steps), values)
        return namespace_of(values).einsum("...n,...nd->...d", weights, rv)

    def walk_scores(self, ns, size: int, xrng, xp=np, q=None, k=None, block: int | None = None):
        """``qᵀ P_n k = Σ_b cos(A_{n,b}) dot_b + sin(A_{n,b}) cross_b`` from accumulated angles, walked in
        blocks of at most ``block`` steps (default and cap: ``size·block·d/2`` within ``XP_CHUNK_ELEMENTS``)."""
        from ..engine.sampling import XP_CHUNK_ELEMENTS

        ns, qh, kh, out, want = self._walk_frame(ns, size, xp, q, k)
        d = self.d
        dot = xp.asarray(qh[0::2] * kh[0::2] + qh[1::2] * kh[1::2])
        cross = None if k is None else xp.asarray(qh[1::2] * kh[0::2] - qh[0::2] * kh[1::2])
        fit = max(1, XP_CHUNK_ELEMENTS // max(1, size * (d // 2)))
        block = fit if block is None else max(1, min(int(block), fit))
        A = xp.zeros((size, d // 2))
        nmax, state = (max(ns) if ns else 0), None
        for start in range(0, nmax, block):
            m = min(block, nmax - start)
            angles, state = self._angle_block(xrng, size, m, xp, state)
            Ab = A[:, None, :] + xp.cumsum(angles, axis=1)
            for t in range(m):
                if start + t + 1 in want:
                    s = xp.cos(Ab[:, t, :]) @ dot
                    out[:, want[start + t + 1]] = s if cross is None else s + xp.sin(Ab[:, t, :]) @ cross
            A = Ab[:, -1, :]
        return out

    def _angle_block(self, xrng, size: int, m: int, xp, state):
        """The plane angles of the next ``m`` steps of ``size`` chains, and the state to carry to the next block
        (i.i.d. steps carry none; a law whose steps form a chain overrides this)."""
        return self.sample(xrng, (size, m), xp), None

    # -- in-context windows (mixing) -------------------------------------------------------------
    def context_plan(self, L: int, window: float, backend: str = "numpy") -> tuple[int, int, int]:
        """Every pair of a context at once (FFT): ``nmax = L − 1``, ``stride = 1``, ``2¹⁶/L`` contexts per batch."""
        return L - 1, 1, max(1, (1 << 16) // L)

    def context_overlaps(self, steps, q, nmax: int, *, stride: int = 1, xrng=None, backend: str = "numpy"):
        """All pairs (``stride = 1``): ``Σ_b (q_{2b}² + q_{2b+1}²) mean_{i−j=n} cos A_{j→i,b}`` by the FFT
        autocorrelation of ``e^{iC_t}`` (:func:`stylized.engine.scores.so2_pair_correlation`); the generic walk
        for a coarser grid."""
        if stride != 1:
            return StepLaw.context_overlaps(self, steps, q, nmax, stride=stride, xrng=xrng, backend=backend)
        from ..engine.scores import so2_pair_correlation

        if not 0 <= nmax <= steps.shape[-2] - 1:
            raise ValueError(f"nmax must lie in [0, L − 1] = [0, {steps.shape[-2] - 1}], got {nmax}")
        q = np.asarray(q, dtype=float)
        w = namespace_of(steps).asarray(q[0::2] ** 2 + q[1::2] ** 2)
        return so2_pair_correlation(steps, nmax) @ w

    # -- attention sweep and harmonics (transfer, far-mass-growth) ---------------------------------
    def context_sweep(self, L: int, size: int, xrng, q, lam: float, D: int, target_n: int | None = None, xp=np,
                      backend: str = "numpy"):
        """The plane sweep: angles and per-plane key projections drawn by :func:`stylized.engine.context_sweep.so2_context_inputs`,
        scored by the Numba kernel ``so2_context_numba`` (``backend="numba"``) or its namespace twin ``so2_context_numpy``."""
        from ..engine.context_sweep import so2_context_inputs, so2_context_numba, so2_context_numpy

        sweep = so2_context_numba if backend == "numba" else so2_context_numpy
        return sweep(*so2_context_inputs(self, L, size, xrng, q, target_n, xp), lam, D)

    def chi_harmonic(self, j) -> np.ndarray:
        """``χ_b(j) = E e^{ijθ_b}`` for harmonics ``j`` (complex, ``(len(j), d/2)``); a plane law without a closed
        form does not define it."""
        raise NotImplementedError(f"{self.name} has no closed-form harmonics E e^{{ijθ_b}}")

    # -- per-plane phase laws (far-retrieval) -----------------------------------------------------
    def phase_harmonics(self, b: int, n: int) -> int:
        """Harmonics ``J`` the Fourier series of plane ``b``'s folded phase law after ``n`` steps needs
        (``|χ_b(j)|ⁿ`` negligible past ``J``); a plane law without a continuous angle law (a token table)
        does not define it, and then has no closed-form :meth:`folded_phase_cdf`."""
        raise NotImplementedError(f"{self.name} has no continuous law of its plane angles")

    def folded_phase_cdf(self, b: int, n: int, u):
        """``G(u) = P(|A_{n,b}| ≤ u)`` for ``u ∈ [0, π]``, ``A_{n,b}`` plane ``b``'s accumulated angle after ``n``
        i.i.d. steps wrapped to ``(−π, π]``: ``u/π + (2/π) Σ_{j≤J} Re χ_b(j)ⁿ sin(ju)/j``
        (:func:`stylized.theory.overlap_laws.phase_series_cdf`, ``J`` from :meth:`phase_harmonics`)."""
        from ..theory.overlap_laws import phase_series_cdf

        return phase_series_cdf(self, b, n, u, self.phase_harmonics(b, n))

    def mean_power(self, n: int) -> np.ndarray:
        chi = self.chi() ** check_route_length(n)
        out = np.zeros((self.d, self.d))
        for b, c in enumerate(chi):
            out[2 * b : 2 * b + 2, 2 * b : 2 * b + 2] = [[c.real, -c.imag], [c.imag, c.real]]
        return out

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        theta = np.asarray(draws, dtype=float)
        n = theta.shape[0]
        out = np.zeros((n, self.d, self.d))
        c, s = np.cos(theta), np.sin(theta)
        for b in range(self.n_planes):
            i = 2 * b
            out[:, i, i] = c[:, b]
            out[:, i, i + 1] = -s[:, b]
            out[:, i + 1, i] = s[:, b]
            out[:, i + 1, i + 1] = c[:, b]
        return out


@dataclass(frozen=True)
class SO2Uniform(SO2Family):
    """SO(2) blocks with ``θ_b ~ U(−ω_b, ω_b)``: ``E[M] = diag(sinc ω_b)``, ``γ = 1 − max_b sinc ω_b``.

    ``omega`` is one value for every plane or an array of ``d/2`` values in ``(0, π]``.

    Example
    -------
    >>> fam = SO2Uniform(d=4, omega=1.0)
    >>> round(fam.spectral_gap, 4)
    0.1585
    """

    law_name: ClassVar[str] = "so2-uniform"

    omega: float | tuple = 1.0

    def __post_init__(self):
        validate_family_args("so2-uniform", self.d, planes=self.planes, omega=self.omega)

    @property
    def mixes_to_uniform(self) -> bool:  # value checks: angles with a density equidistribute on the torus
        return True

    @property
    def omegas(self) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.omega, dtype=float), (self.d // 2,)).copy()

    def chi(self) -> np.ndarray:
        return _sinc(self.omegas).astype(complex)

    def chi_harmonic(self, j) -> np.ndarray:
        return np.sinc(np.asarray(j, dtype=float)[:, None] * self.omegas[None, :] / np.pi).astype(complex)

    # -- per-plane phase laws (far-retrieval) -----------------------------------------------------
    def phase_harmonics(self, b: int, n: int) -> int:
        """``J = ⌈max(√(192/n), 10^{13/n})/ω_b⌉`` (``|sinc(jω_b)|ⁿ ≤ (jω_b)^{−n}``)."""
        return math.ceil(max(math.sqrt(6 * 32 / n), 10 ** (13 / n)) / float(self.omegas[b]))

    def folded_phase_cdf(self, b: int, n: int, u):
        """The wrapped Irwin–Hall law for ``n ≤`` :data:`stylized.theory.overlap_laws.IH_MAX` (exact), else the series."""
        from ..theory import overlap_laws

        if n <= overlap_laws.IH_MAX:
            return overlap_laws.wrapped_uniform_sum_cdf(float(self.omegas[b]), n, u)
        return SO2Family.folded_phase_cdf(self, b, n, u)

    def fast_context_sweep(self, L: int, size: int, rng, q, lam: float, D: int, target_n: int | None, backend: str):
        """The fused counter-RNG kernel on ``backend="numba"`` (:func:`stylized.engine.kernels.so2_context_sampled`)."""
        if backend != "numba":
            return None
        from ..engine.kernels import so2_context_sampled

        return so2_context_sampled(self, L, size, int(rng.integers(2**63)), q, lam, D, target_n)

    # -- score chains (score-gap, haar-law) --------------------------------------------------
    def score_chains(self, N: int, size: int, seed, q, k, backend: str = "numba"):
        """Uniform plane angles ``θ_b = ω_b(2u − 1)``: the counter-stream kernel (``numba``) or its twin
        (:func:`stylized.engine.score_chains.so2_chains`)."""
        from ..engine.score_chains import so2_chains

        return so2_chains(q, k, int(N), int(size), seed, backend, False, np.zeros(self.d // 2), self.omegas)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.uniform(-1.0, 1.0, size=tuple(shape) + (self.d // 2,)) * xp.asarray(self.omegas)


@dataclass(frozen=True)
class RopeRandom(SO2Uniform):
    """``rope-random``: ``θ_b ~ U(−ω_b, ω_b)`` with RoPE's ``ω_b = base^{−2b/d}``.

    Plane 0 (``ω = 1``) mixes within a few steps; the last plane (``ω ≈ base^{−1}``)
    needs far more steps than any context holds.
    """

    law_name: ClassVar[str] = "rope-random"

    base: float = 10000.0
    omega: float | tuple = field(init=False, default=1.0)

    def __post_init__(self):
        object.__setattr__(self, "omega", tuple(rope_frequencies(self.d, self.base)))
        SO2Uniform.__post_init__(self)


@dataclass(frozen=True)
class SO2Normal(SO2Family):
    """SO(2) blocks with ``θ_b ~ N(μ_b, σ_b²)``: ``E[M]_b = e^{−σ_b²/2} R(μ_b)``.

    Example
    -------
    >>> round(SO2Normal(d=2, sigma=1.0).spectral_gap, 4)
    0.3935
    """

    law_name: ClassVar[str] = "so2-normal"

    sigma: float | tuple = 1.0
    mu: float | tuple = 0.0

    def __post_init__(self):
        validate_family_args("so2-normal", self.d, planes=self.planes, sigma=self.sigma, mu=self.mu)

    @property
    def mixes_to_uniform(self) -> bool:  # value checks: angles with a density equidistribute on the torus
        return True

    def _mu_sigma(self) -> tuple[np.ndarray, np.ndarray]:
        B = self.d // 2
        return (np.broadcast_to(np.asarray(self.mu, dtype=float), (B,)).copy(),
                np.broadcast_to(np.asarray(self.sigma, dtype=float), (B,)).copy())

    def chi(self) -> np.ndarray:
        mu, sg = self._mu_sigma()
        return np.exp(-0.5 * sg**2) * np.exp(1j * mu)

    def chi_harmonic(self, j) -> np.ndarray:
        mu, sg = self._mu_sigma()
        j = np.asarray(j, dtype=float)[:, None]
        return np.exp(-0.5 * (j * sg) ** 2 + 1j * j * mu)

    def phase_harmonics(self, b: int, n: int) -> int:  # per-plane phase laws (far-retrieval)
        """``J = ⌈√(64/n)/σ_b⌉`` (``|χ_b(j)|ⁿ = e^{−nj²σ_b²/2}``)."""
        return math.ceil(math.sqrt(2 * 32 / n) / float(self._mu_sigma()[1][b]))

    # -- score chains (score-gap, haar-law) --------------------------------------------------
    def score_chains(self, N: int, size: int, seed, q, k, backend: str = "numba"):
        """Normal plane angles ``θ_b = μ_b + σ_b g``: the counter-stream kernel (``numba``) or its twin
        (:func:`stylized.engine.score_chains.so2_chains`)."""
        from ..engine.score_chains import so2_chains

        mu, sg = self._mu_sigma()
        return so2_chains(q, k, int(N), int(size), seed, backend, True, mu, sg)

    def sample(self, xrng, shape: tuple, xp=np):
        mu, sg = self._mu_sigma()
        return xp.asarray(mu) + xp.asarray(sg) * xrng.standard_normal(tuple(shape) + (self.d // 2,))


@dataclass(frozen=True, eq=False)
class TokenAngles(SO2Family):
    """Token-dependent SO(2) steps ``M_t = f(x_t)``: plane angles ``θ_{t,b} = table[x_t, b]``.

    Tokens are i.i.d. ``x_t ~ probs`` over a vocabulary of size ``V``; then
    ``χ_b = Σ_v p_v e^{i·table[v, b]}``.  ``rvs`` returns angles; :meth:`rvs_tokens`
    returns the tokens too.
    """

    law_name: ClassVar[str] = "token"

    table: np.ndarray = None  # (V, d/2)
    probs: np.ndarray = None  # (V,)

    def __post_init__(self):
        validate_family_args("token", self.d, planes=self.planes, table=self.table, probs=self.probs)
        table = np.asarray(self.table, dtype=float)
        probs = np.ones(table.shape[0]) / table.shape[0] if self.probs is None else np.asarray(self.probs, float)
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "probs", probs)

    def chi(self) -> np.ndarray:
        return self.probs @ np.exp(1j * self.table)

    def chi_harmonic(self, j) -> np.ndarray:
        j = np.asarray(j, dtype=float)[:, None]
        return np.einsum("v,jvb->jb", self.probs, np.exp(1j * j[:, :, None] * self.table[None]))

    def sample_tokens(self, xrng, shape: tuple, xp=np):
        """Tokens ``x_t ~ probs`` by inverse CDF (NumPy's ``Generator.choice`` with ``p``, draw for draw)."""
        cdf = xp.asarray(np.cumsum(self.probs))
        cdf /= cdf[-1]
        return xp.minimum(xp.searchsorted(cdf, xrng.random(tuple(shape)), side="right"), cdf.shape[0] - 1)

    def rvs_tokens(self, size: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        x = self.sample_tokens(as_generator(random_state), (int(size),))
        return x, self.table[x]

    def sample(self, xrng, shape: tuple, xp=np):
        return xp.asarray(self.table)[self.sample_tokens(xrng, shape, xp)]
