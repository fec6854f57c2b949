"""``markov-tokens``: SO(2) steps ``M_t = f(x_t)`` driven by a stationary Markov chain of tokens.

The case of real text: the token at position ``t + 1`` depends on the one at ``t``.  Plane ``b`` of
``M_t`` rotates by ``θ_{t,b} = table[x_t, b]`` (as :class:`~stylized.laws.so2.TokenAngles`), but the
tokens ``x_t`` follow a Markov chain with row-stochastic transition matrix ``transition`` (``T``, ``V × V``),
started from its stationary law ``π``.  The steps are therefore identically distributed (each ``M_t``
has the one-step mean ``E[M]`` of :meth:`MarkovTokens.chi`) but **not independent**, and the i.i.d.
identity ``E[P_n] = E[M]ⁿ`` of the base protocol fails.  This law overrides every piece of theory that
rests on it with the twisted transfer operator of :mod:`stylized.theory.markov_theory`::

    E[e^{iA_{n,b}}] = π D_b (T D_b)^{n−1} 1,   D_b = diag(e^{i·table[v, b]}),   ρ_b = ρ(T D_b).

Drawing.  :meth:`MarkovTokens.sample` draws one chain along the **last axis of** ``shape`` (the step
axis is time: ``x[..., 0] ~ π``, ``x[..., t+1] ~ T[x[..., t]]``); every other axis holds independent
chains.  A caller that wants i.i.d. rows must put them on the leading axes.  Reading the step axis
backwards gives the time-reversed chain ``T*``; for commuting planes ``T`` and ``T*`` give the same law of
every route angle sum ``A_{n,b}``, so route transport does not depend on the direction the caller reads.

Example
-------
>>> from stylized.laws.registry import make_family
>>> law = make_family("markov-tokens", 8, switch=1.0)   # s = 1: i.i.d. tokens
>>> bool(np.allclose(law.route_characteristic(5), law.chi() ** 5))
True
>>> sticky = make_family("markov-tokens", 8, switch=0.1)
>>> bool(sticky.spectral_gap < 1 - np.max(np.abs(sticky.chi())))   # slower asymptotic decay than i.i.d.
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..core.counter_rng import as_generator
from .base import check_dimension, check_route_length
from .so2 import SO2Family

__all__ = ["MarkovTokens", "markov_tokens", "zipf_law"]


def _theory():
    """:mod:`stylized.theory.markov_theory`, the law's exact mean and windows (imported on first use: a law
    reaches the closed forms it overrides with only from inside its methods)."""
    from ..theory import markov_theory

    return markov_theory


@dataclass(frozen=True, eq=False)
class MarkovTokens(SO2Family):
    """Plane angles ``θ_{t,b} = table[x_t, b]`` of a stationary Markov token chain ``x_t`` (``T = transition``).

    Parameters
    ----------
    d : even dimension (``d/2`` SO(2) planes).
    table : ``(V, d/2)`` finite angles, ``table[v, b]`` the rotation of plane ``b`` by token ``v``.
    transition : ``(V, V)`` row-stochastic ``T[u, v] = P(x_{t+1} = v | x_t = u)`` with a unique stationary law.

    Theory (all exact, no Monte Carlo): :meth:`route_characteristic` ``E[e^{iA_{n,b}}]``,
    :meth:`mean_overlap` ``E[qᵀP_n q]``, :meth:`mean_power` ``E[P_n]``, :meth:`twisted_radius` ``ρ_b``,
    :attr:`spectral_gap` ``γ = 1 − max_b ρ_b`` (the asymptotic rate ``||E[P_n]||_op^{1/n} → 1 − γ``, not a
    one-step quantity), :meth:`plane_windows` ``⌈ln ε / ln ρ_b⌉``; :meth:`chi` stays the one-step
    stationary ``χ_b = Σ_v π_v e^{i·table[v, b]}`` (so :meth:`mean` is the one-step ``E[M]``) and
    :meth:`iid_plane_windows` the i.i.d. windows ``⌈ln ε / ln |χ_b|⌉`` for comparison.
    """

    law_name: ClassVar[str] = "markov-tokens"
    iid: ClassVar[bool] = False  # the steps are dependent: E[P_n] ≠ E[M]ⁿ

    table: np.ndarray = None  # (V, d/2)
    transition: np.ndarray = None  # (V, V)

    def __post_init__(self):
        d = check_dimension(self.d)
        if d % 2:
            raise ValueError(f"d must be even for SO(2) blocks (d = 2, 4, 6, …), got {d}")
        if self.table is None or self.transition is None:
            raise ValueError("table and transition are required (or build the default: make_family('markov-tokens', d))")
        try:
            table = np.array(self.table, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"table must be a (V, d/2) array of angles, got {type(self.table).__name__}") from None
        if table.ndim != 2 or table.shape[1] != d // 2 or table.shape[0] < 1:
            raise ValueError(f"table must have shape (V, d/2) = (V, {d // 2}), got {table.shape}")
        if not np.all(np.isfinite(table)):
            raise ValueError("table must have finite angles")
        t = _theory().validate_transition(self.transition)
        if t.shape[0] != table.shape[0]:
            raise ValueError(f"transition must be (V, V) with V = {table.shape[0]} (the table's rows), got {t.shape}")
        table.flags.writeable = False
        t.flags.writeable = False
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "transition", t)
        _ = self.stationary  # refuses a chain without a unique stationary law, here

    # -- the chain ---------------------------------------------------------------------------
    @property
    def vocab(self) -> int:
        """``V``, the number of tokens."""
        return int(self.table.shape[0])

    @cached_property
    def stationary(self) -> np.ndarray:
        """The stationary law ``π`` of ``T`` (``πT = π``), where every chain starts."""
        pi = _theory().stationary_law(self.transition)
        pi.flags.writeable = False
        return pi

    def time_reversed(self) -> MarkovTokens:
        """The same law read backwards: ``T* = diag(π)⁻¹ Tᵀ diag(π)`` (same ``π``, same ``E[P_n]``)."""
        return MarkovTokens(d=self.d, table=self.table, transition=_theory().time_reversal(self.transition, self.stationary))

    # -- the theory: twisted transfer operator -------------------------------------------------
    def chi(self) -> np.ndarray:
        """One-step ``χ_b = E[e^{iθ_{t,b}}] = Σ_v π_v e^{i·table[v, b]}`` (the stationary mean; not ``E[P_n]^{1/n}``)."""
        return self.stationary @ np.exp(1j * self.table)

    def route_characteristic(self, n) -> np.ndarray:
        """``E[e^{iA_{n,b}}] = π D_b (T D_b)^{n−1} 1``: shape ``np.shape(n) + (d/2,)``."""
        return _theory().route_characteristic(self.transition, self.table, n, self.stationary)

    def twisted_radius(self) -> np.ndarray:
        """``ρ_b = ρ(T D_b)`` per plane: ``|E[e^{iA_{n,b}}]|^{1/n} → ρ_b``."""
        return _theory().twisted_radius(self.transition, self.table)

    @property
    def spectral_gap(self) -> float:
        """``γ = 1 − max_b ρ(T D_b)``: the asymptotic per-step decay of ``||E[P_n]||_op = max_b |E[e^{iA_{n,b}}]|``.

        Not ``1 − ||E[M]||_op`` (that is the one-step ``1 − max_b |χ_b|``), and not a bound at every
        ``n``: ``||E[P_n]||_op ≤ C (1 − γ)ⁿ`` with a constant ``C ≥ 1`` set by the eigenvectors of ``T D_b``.
        """
        return float(1.0 - np.max(self.twisted_radius()))

    def mean_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        """``E[qᵀP_n q] = Σ_b (q_{2b}² + q_{2b+1}²) Re π D_b (T D_b)^{n−1} 1`` (exact)."""
        return _theory().markov_overlap(self.transition, self.table, q, n, self.stationary)

    def iid_overlap(self, q: np.ndarray, n) -> np.ndarray | float:
        """The i.i.d. shortcut ``Σ_b (q_{2b}² + q_{2b+1}²) Re χ_bⁿ`` (wrong for this law unless ``T = 1πᵀ``)."""
        return _theory().iid_overlap(self.stationary, self.table, q, n)

    def mean_power(self, n: int) -> np.ndarray:
        """``E[P_n]`` (dense ``d × d``): plane blocks ``[[Re c_b, −Im c_b], [Im c_b, Re c_b]]``, ``c_b = E[e^{iA_{n,b}}]``."""
        c = self.route_characteristic(check_route_length(n))
        out = np.zeros((self.d, self.d))
        for b, cb in enumerate(c):
            out[2 * b : 2 * b + 2, 2 * b : 2 * b + 2] = [[cb.real, -cb.imag], [cb.imag, cb.real]]
        return out

    def plane_windows(self, eps: float) -> np.ndarray:
        """Per-plane Markov windows ``W_b(ε) = ⌈ln ε / ln ρ_b⌉`` (``inf`` where ``ρ_b = 1``)."""
        return _theory().windows_from_rate(self.twisted_radius(), eps)

    def iid_plane_windows(self, eps: float) -> np.ndarray:
        """What the i.i.d. shortcut would say: ``⌈ln ε / ln |χ_b|⌉``."""
        return _theory().windows_from_rate(np.abs(self.chi()), eps)

    # -- drawing: a Markov chain along the last axis -------------------------------------------
    def sample_tokens(self, xrng, shape: tuple, xp=np, start=None):
        """Tokens ``(shape)``: an independent chain along the last axis of every leading index.

        ``x[..., 0] ~ π`` (or ``~ T[start]`` when ``start`` ``shape[:-1]`` holds the previous tokens, to
        continue chains block by block), then ``x[..., t+1] ~ T[x[..., t], :]`` by inverse CDF on one
        uniform per step.
        """
        shape = tuple(int(s) for s in shape)
        V = self.vocab
        if not shape:
            raise ValueError("shape must have a step axis (the last one)")
        u = xrng.random(shape)
        out = xp.empty(shape, dtype=xp.int64)
        rows = xp.asarray(np.cumsum(self.transition, axis=1))
        pi_cdf = xp.asarray(np.cumsum(self.stationary))
        prev = None if start is None else xp.asarray(start)
        for t in range(shape[-1]):
            cdf = pi_cdf if prev is None else rows[prev]
            x = (u[..., t, None] >= cdf).sum(axis=-1)
            prev = xp.minimum(x, V - 1)
            out[..., t] = prev
        return out

    def rvs_tokens(self, size: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        """One chain of ``size`` tokens and its angles ``(size, d/2)``."""
        x = self.sample_tokens(as_generator(random_state), (int(size),))
        return x, self.table[x]

    def sample(self, xrng, shape: tuple, xp=np):
        """Angles ``table[x]`` ``shape + (d/2,)`` of Markov token chains along the last axis of ``shape`` (time)."""
        return xp.asarray(self.table)[self.sample_tokens(xrng, shape, xp)]

    def _angle_block(self, xrng, size: int, m: int, xp, state):
        """The next ``m`` tokens of ``size`` stationary chains, continuing from ``state`` (each chain's last token),
        as plane angles: :meth:`SO2Family.walk_scores` carries the chain across blocks."""
        x = self.sample_tokens(xrng, (size, m), xp, start=state)
        return xp.asarray(self.table)[x], x[:, -1]

def zipf_law(V: int, exponent: float = 1.0) -> np.ndarray:
    """``π_v ∝ (v + 1)^{−exponent}``: a text-like (Zipf) token law."""
    w = (np.arange(V) + 1.0) ** (-float(exponent))
    return w / w.sum()


def markov_tokens(d: int, *, vocab: int = 8, switch: float = 0.2, omega: float = 1.0, zipf: float = 1.0,
                  table_seed: int = 0, table=None, transition=None) -> MarkovTokens:
    """The ``markov-tokens`` law as :func:`~stylized.laws.registry.make_family` builds it.

    Defaults: ``V = vocab`` tokens with a Zipf law ``π_v ∝ (v + 1)^{−zipf}``, the sticky chain
    ``T = (1 − s) I + s·1πᵀ`` (``s = switch``: keep the token with probability ``1 − s``, else redraw it
    from ``π``; stationary law ``π``; ``s = 1`` is i.i.d.), angles ``table[v, b] = ω·u_{v,b}`` with
    ``u ~ U(−1, 1)`` from ``default_rng(table_seed)`` (``ω = omega``, the ``--omega`` of ``so2-uniform``).
    ``table`` and/or ``transition`` given explicitly replace the defaults (``vocab`` then follows them).
    """
    d = check_dimension(d)
    if table is not None:
        V = int(np.shape(table)[0]) if np.ndim(table) == 2 else -1
    elif transition is not None:
        V = int(np.shape(transition)[0]) if np.ndim(transition) == 2 else -1
    else:
        if isinstance(vocab, bool) or not isinstance(vocab, (int, np.integer)) or not 1 <= vocab <= 4096:
            raise ValueError(f"vocab must be an integer in [1, 4096], got {vocab!r}")
        V = int(vocab)
    if V < 1:
        raise ValueError("table and transition must be 2-d arrays (V, d/2) and (V, V)")
    if transition is None:
        if not (isinstance(zipf, (int, float, np.floating, np.integer)) and not isinstance(zipf, bool)
                and np.isfinite(zipf) and 0.0 <= zipf <= 10.0):
            raise ValueError(f"zipf must lie in [0, 10], got {zipf!r}")
        if not (isinstance(switch, (int, float, np.floating, np.integer)) and not isinstance(switch, bool)
                and 0.0 < switch <= 1.0):
            raise ValueError(f"switch must lie in (0, 1], got {switch!r}")
        transition = _theory().sticky_transition(zipf_law(V, zipf), switch)
    if table is None:
        if d % 2:
            raise ValueError(f"d must be even for SO(2) blocks (d = 2, 4, 6, …), got {d}")
        if not (isinstance(omega, (int, float, np.floating, np.integer)) and not isinstance(omega, bool)
                and 0.0 < omega <= np.pi):
            raise ValueError(f"omega must lie in (0, π], got {omega!r}")
        if isinstance(table_seed, bool) or not isinstance(table_seed, (int, np.integer)) or table_seed < 0:
            raise ValueError(f"table_seed must be an integer ≥ 0, got {table_seed!r}")
        table = float(omega) * np.random.default_rng(int(table_seed)).uniform(-1.0, 1.0, (V, d // 2))
    return MarkovTokens(d=d, table=table, transition=transition)
