"""Step families: random orthogonal steps ``M_t`` with a known mean ``E[M]`` and gap ``γ``.

Every family is a sampler object in the style of :mod:`scipy.stats`: it knows its
dimension ``d``, its exact mean ``E[M]``, the spectral gap ``γ = 1 − ||E[M]||_op``
and the mixing window ``W(ε) = ⌈ln ε / ln(1 − γ)⌉``, and it draws steps with
:meth:`StepFamily.rvs` from a seed or a :class:`numpy.random.Generator`.

Draws keep the structure of the family (never ``d × d`` matrices unless the family
is dense by nature):

* SO(2) families (``so2-uniform``, ``so2-normal``, ``rope-random``, ``token``) draw
  angles ``θ`` of shape ``(n, d/2)``; plane ``b`` of ``M_t`` is ``R(θ_{t,b})``.
* ``householder`` draws unit vectors ``w`` of shape ``(n, d)``; ``M_t = I − 2 w_t w_tᵀ``.
* ``lazy-haar`` and ``haar`` draw a boolean "Haar step" mask of shape ``(n,)``; the
  Haar matrices themselves are only drawn by :meth:`StepFamily.dense` (the small-d
  reference).  Transport uses the exact law instead: after one Haar step a
  transported vector is uniform on ``S^{d−1}``, independent of what came before.

Example
-------
>>> fam = make_family("householder", d=16)
>>> round(fam.spectral_gap, 4)
0.125
>>> fam.mixing_window(0.01)
35.0
>>> fam.rvs(3, random_state=0).shape
(3, 16)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import ortho_group

from .bounds import chi_power_correlation, mixing_window, window_from_log_rate
from .counter_rng import as_generator  # noqa: F401  (re-exported: seeding lives in the RNG module)
from .family_args import FAMILY_ARG_RANGES, validate_family_args

__all__ = ["StepFamily", "SO2Family", "SO2Uniform", "SO2Normal", "RopeRandom", "TokenAngles", "Householder", "LazyHaar",
           "Haar", "FAMILY_NAMES", "make_family", "validate_family_args", "FAMILY_ARG_RANGES", "rope_frequencies",
           "as_generator", "uniform_sphere"]


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """RoPE frequencies ``ω_b = base^{−2b/d}``, ``b = 0 … d/2 − 1``."""
    d = validate_family_args("rope-random", d, base=base)
    return float(base) ** (-2.0 * np.arange(d // 2) / d)


def _sinc(x: np.ndarray) -> np.ndarray:
    """``sin(x)/x`` with ``sinc(0) = 1`` (numpy's ``sinc`` is normalised by π)."""
    return np.sinc(np.asarray(x, dtype=float) / np.pi)


@dataclass(frozen=True)
class StepFamily:
    """Base class of a law of i.i.d. orthogonal steps ``M_t ∈ O(d)``.

    Subclasses give ``E[M]`` and, where one exists, the closed-form ``γ`` (every family here
    has one: the dense SVD of the base class is the fallback and the test oracle).
    """

    d: int
    name: str = field(init=False, default="")

    # -- exact laws -------------------------------------------------------------------
    def mean(self) -> np.ndarray:
        """The exact mean step ``E[M]`` as a dense ``d × d`` matrix."""
        raise NotImplementedError

    @property
    def spectral_gap(self) -> float:
        """``γ = 1 − ||E[M]||_op``."""
        return float(1.0 - np.linalg.norm(self.mean(), ord=2))

    def mixing_window(self, eps: float) -> float:
        """``W(ε) = ⌈ln ε / ln(1 − γ)⌉``: route length after which ``||E[P_n]||_op ≤ ε``.

        Returns ``inf`` when ``γ = 0`` and ``1`` when ``γ = 1``.
        """
        return mixing_window(max(0.0, min(1.0, self.spectral_gap)), eps)

    def mean_power(self, n: int) -> np.ndarray:
        """``E[P_n] = E[M]^n`` for i.i.d. steps (dense ``d × d``)."""
        return np.linalg.matrix_power(self.mean(), int(n))

    def mean_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        """``qᵀ E[M]ⁿ q = E[qᵀ P_n q]`` for route length(s) ``n`` (an int or an array of them)."""
        q = np.asarray(q, dtype=float)
        out = np.array([q @ self.mean_power(int(k)) @ q for k in np.ravel(n)])
        return float(out[0]) if np.ndim(n) == 0 else out.reshape(np.shape(n))

    # -- sampling ---------------------------------------------------------------------
    def rvs(self, size: int, random_state=None) -> np.ndarray:
        """Draw ``size`` steps in the family's structured form (NumPy): :meth:`sample` with shape ``(size,)``."""
        return self.sample(as_generator(random_state), (int(size),))

    def sample(self, xrng, shape: tuple, xp=np):
        """Steps of shape ``shape`` plus the family's trailing axis, drawn with the Generator ``xrng`` of the
        array namespace ``xp`` (NumPy, or CuPy on a GPU): the family's one sampler, for every backend."""
        raise NotImplementedError

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        """Dense matrices ``M_t`` of shape ``(n, d, d)`` for structured ``draws`` (reference)."""
        raise NotImplementedError

    @property
    def kind(self) -> str:
        """``"so2"``, ``"householder"`` or ``"haar"`` (lazy or not): how transport is computed."""
        raise NotImplementedError


# ---------------------------------------------------------------------------------------
# SO(2) block families: angles, never matrices
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SO2Family(StepFamily):
    """Block-diagonal ``M = diag(R(θ_1), …, R(θ_{d/2}))`` with independent plane angles.

    Each plane has characteristic value ``χ_b = E[e^{iθ_b}]``; the plane mean is
    ``[[Re χ_b, −Im χ_b], [Im χ_b, Re χ_b]]`` and ``||E[M]||_op = max_b |χ_b|``.
    """

    @property
    def kind(self) -> str:
        return "so2"

    @property
    def n_planes(self) -> int:
        return self.d // 2

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
        out = chi_power_correlation(self.chi(), np.ravel(n).astype(float), q[0::2] ** 2 + q[1::2] ** 2)
        return float(out[0]) if np.ndim(n) == 0 else out.reshape(np.shape(n))

    def plane_windows(self, eps: float) -> np.ndarray:
        """Per-plane windows ``W_b(ε) = ⌈ln ε / ln |χ_b|⌉`` (``inf`` where ``|χ_b| = 1``)."""
        if not (0.0 < eps < 1.0):
            raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
        a = np.abs(self.chi())
        with np.errstate(divide="ignore"):
            w = window_from_log_rate(np.log(np.minimum(a, 1.0)), eps)
        return np.where(a <= 0.0, 1.0, w)

    def mean_power(self, n: int) -> np.ndarray:
        chi = self.chi() ** int(n)
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

    omega: float | tuple = 1.0

    def __post_init__(self):
        validate_family_args("so2-uniform", self.d, omega=self.omega)
        object.__setattr__(self, "name", "so2-uniform")

    @property
    def omegas(self) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.omega, dtype=float), (self.d // 2,)).copy()

    def chi(self) -> np.ndarray:
        return _sinc(self.omegas).astype(complex)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.uniform(-1.0, 1.0, size=tuple(shape) + (self.d // 2,)) * xp.asarray(self.omegas)


@dataclass(frozen=True)
class RopeRandom(SO2Uniform):
    """``rope-random``: ``θ_b ~ U(−ω_b, ω_b)`` with RoPE's ``ω_b = base^{−2b/d}``.

    Plane 0 (``ω = 1``) mixes within a few steps; the last plane (``ω ≈ base^{−1}``)
    needs far more steps than any context holds.
    """

    base: float = 10000.0
    omega: float | tuple = field(init=False, default=1.0)

    def __post_init__(self):
        object.__setattr__(self, "omega", tuple(rope_frequencies(self.d, self.base)))
        SO2Uniform.__post_init__(self)
        object.__setattr__(self, "name", "rope-random")


@dataclass(frozen=True)
class SO2Normal(SO2Family):
    """SO(2) blocks with ``θ_b ~ N(μ_b, σ_b²)``: ``E[M]_b = e^{−σ_b²/2} R(μ_b)``.

    Example
    -------
    >>> round(SO2Normal(d=2, sigma=1.0).spectral_gap, 4)
    0.3935
    """

    sigma: float | tuple = 1.0
    mu: float | tuple = 0.0

    def __post_init__(self):
        validate_family_args("so2-normal", self.d, sigma=self.sigma, mu=self.mu)
        object.__setattr__(self, "name", "so2-normal")

    def _mu_sigma(self) -> tuple[np.ndarray, np.ndarray]:
        B = self.d // 2
        return (np.broadcast_to(np.asarray(self.mu, dtype=float), (B,)).copy(),
                np.broadcast_to(np.asarray(self.sigma, dtype=float), (B,)).copy())

    def chi(self) -> np.ndarray:
        mu, sg = self._mu_sigma()
        return np.exp(-0.5 * sg**2) * np.exp(1j * mu)

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

    table: np.ndarray = None  # (V, d/2)
    probs: np.ndarray = None  # (V,)

    def __post_init__(self):
        validate_family_args("token", self.d, table=self.table, probs=self.probs)
        table = np.asarray(self.table, dtype=float)
        probs = np.ones(table.shape[0]) / table.shape[0] if self.probs is None else np.asarray(self.probs, float)
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "name", "token")

    def chi(self) -> np.ndarray:
        return self.probs @ np.exp(1j * self.table)

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


# ---------------------------------------------------------------------------------------
# O(d) families
# ---------------------------------------------------------------------------------------
def uniform_sphere(rng, shape: tuple, d: int, xp=np):
    """Uniform unit vectors on ``S^{d−1}``: normalised Gaussians, shape ``shape + (d,)``, drawn with the
    Generator ``rng`` of the array namespace ``xp``."""
    g = rng.standard_normal(tuple(shape) + (d,))
    return g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))


@dataclass(frozen=True)
class _ScalarMean(StepFamily):
    """A family with ``E[M] = (1 − γ) I``: the mean, its powers and ``qᵀE[M]ⁿq`` from the closed-form ``γ``."""

    def mean(self) -> np.ndarray:
        return (1.0 - self.spectral_gap) * np.eye(self.d)

    def mean_power(self, n: int) -> np.ndarray:
        return (1.0 - self.spectral_gap) ** int(n) * np.eye(self.d)

    def mean_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        q = np.asarray(q, dtype=float)
        out = (1.0 - self.spectral_gap) ** np.asarray(n, dtype=float) * float(q @ q)
        return float(out) if np.ndim(n) == 0 else out


@dataclass(frozen=True)
class Householder(_ScalarMean):
    """Householder reflections ``M = I − 2 w wᵀ``, ``w`` uniform on ``S^{d−1}``.

    ``E[w wᵀ] = I/d`` so ``E[M] = (1 − 2/d) I`` and ``γ = 2/d``.
    """

    def __post_init__(self):
        validate_family_args("householder", self.d)
        object.__setattr__(self, "name", "householder")

    @property
    def kind(self) -> str:
        return "householder"

    @property
    def spectral_gap(self) -> float:
        """``γ = 2/d`` (closed form)."""
        return 2.0 / self.d

    def sample(self, xrng, shape: tuple, xp=np):
        return uniform_sphere(xrng, shape, self.d, xp)

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        w = np.asarray(draws, dtype=float)
        return np.eye(self.d) - 2.0 * w[:, :, None] * w[:, None, :]


@dataclass(frozen=True)
class LazyHaar(_ScalarMean):
    """Lazy Haar steps: ``M = U ~ Haar(O(d))`` with probability ``p``, else ``I``.

    ``E[M] = (1 − p) I``, ``γ = p``.  ``rvs`` draws the Haar-step mask only.
    """

    p: float = 0.5

    def __post_init__(self):
        validate_family_args("lazy-haar", self.d, p=self.p)
        object.__setattr__(self, "name", "lazy-haar")

    @property
    def kind(self) -> str:
        return "haar"

    @property
    def spectral_gap(self) -> float:
        """``γ = p`` (closed form; ``1`` for Haar)."""
        return float(self.p)

    def sample(self, xrng, shape: tuple, xp=np):
        return xrng.random(tuple(shape)) < self.p

    def dense(self, draws: np.ndarray, random_state=None) -> np.ndarray:
        mask = np.asarray(draws, dtype=bool)
        out = np.broadcast_to(np.eye(self.d), (mask.size, self.d, self.d)).copy()
        k = int(mask.sum())
        if k:
            rng = as_generator(random_state)
            u = ortho_group.rvs(self.d, size=k, random_state=rng)
            out[mask] = u.reshape(k, self.d, self.d)
        return out


@dataclass(frozen=True)
class Haar(LazyHaar):
    """Haar steps ``M ~ Haar(O(d))``: ``E[M] = 0``, ``γ = 1``."""

    p: float = field(init=False, default=1.0)

    def __post_init__(self):
        LazyHaar.__post_init__(self)
        object.__setattr__(self, "name", "haar")


FAMILY_NAMES = ("so2-uniform", "so2-normal", "rope-random", "householder", "lazy-haar", "haar")


def make_family(
    name: str,
    d: int,
    *,
    omega: float = 1.0,
    sigma: float = 0.5,
    mu: float = 0.0,
    p: float = 0.1,
    base: float = 10000.0,
) -> StepFamily:
    """Build a step family by name; the keyword arguments irrelevant to that family are ignored.

    Parameters
    ----------
    name : one of ``FAMILY_NAMES``.
    d : dimension (even for SO(2) families).
    omega : half-width of the uniform angle law (``so2-uniform``).
    sigma, mu : normal angle law (``so2-normal``); ``sigma`` defaults to 0.5, the command line's ``--sigma``.
    p : Haar probability (``lazy-haar``); defaults to 0.1, the command line's ``--p``.
    base : RoPE base (``rope-random``).
    """
    if not isinstance(name, str) or name not in FAMILY_NAMES:
        raise ValueError(f"family must be one of {', '.join(FAMILY_NAMES)}; got {name!r}")
    if name == "so2-uniform":
        return SO2Uniform(d=d, omega=omega)
    if name == "so2-normal":
        return SO2Normal(d=d, sigma=sigma, mu=mu)
    if name == "rope-random":
        return RopeRandom(d=d, base=base)
    if name == "householder":
        return Householder(d=d)
    if name == "lazy-haar":
        return LazyHaar(d=d, p=p)
    return Haar(d=d)
