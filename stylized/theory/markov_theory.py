"""Closed forms for SO(2) steps driven by a stationary Markov chain of tokens (the ``markov-tokens`` law).

Tokens ``x_1, x_2, …`` form a stationary Markov chain with row-stochastic transition matrix ``T``
(``V × V``, ``T[u, v] = P(x_{t+1} = v | x_t = u)``) and stationary law ``π`` (``πT = π``), and the step
``M_t = f(x_t)`` rotates plane ``b`` by ``θ_{t,b} = table[x_t, b]``.  The steps are *not* i.i.d., so
``E[P_n] ≠ E[M]ⁿ``: on plane ``b`` the route ``P_n = M_n ⋯ M_1`` is the rotation by
``A_{n,b} = θ_{1,b} + … + θ_{n,b}``, and with ``D_b = diag(e^{i·table[v, b]})``

.. math:: E[e^{iA_{n,b}}] = π D_b (T D_b)^{n−1} 1,   n ≥ 1   (and 1 at n = 0),

the *twisted transfer operator* ``T D_b`` (``(T D_b)[u, v] = T[u, v] e^{i·table[v, b]}``) applied
``n − 1`` times: the first token ``x_1 ~ π`` carries its angle through ``D_b``, each of the next
``n − 1`` transitions moves the chain one step and carries the new token's angle.  By ``πT = π`` the
same number is ``π (T D_b)ⁿ 1``.  Convention checks:

* the i.i.d. limit ``T = 1πᵀ`` (every row ``π``) gives ``(π D_b 1)ⁿ = χ_bⁿ`` with
  ``χ_b = Σ_v π_v e^{i·table[v, b]}``, the i.i.d. closed form;
* the direction of the chain is *not* identifiable from ``E[P_n]``: the time reversal
  ``T* = diag(π)⁻¹ Tᵀ diag(π)`` has the same stationary law, the reversed path ``(x_n, …, x_1)`` is a
  ``T*``-chain, and ``A_{n,b}`` is a sum (the planes commute), so ``T`` and ``T*`` give the same
  ``E[e^{iA_{n,b}}]`` at every ``n`` (:func:`time_reversal`; tested to rounding);
* ``Tᵀ`` in place of ``T`` (a transposed convention, not a Markov chain unless ``T`` is doubly
  stochastic) is wrong and changes the numbers as soon as ``π`` is not uniform.

Rate and window.  ``|E[e^{iA_{n,b}}]|^{1/n} → ρ_b = ρ(T D_b)`` (spectral radius; Gelfand), so plane ``b``
decorrelates like ``ρ_bⁿ`` and its window is ``W_b(ε) = ⌈ln ε / ln ρ_b⌉``.  The Markov rate ``ρ_b``
and the i.i.d. one ``|χ_b|`` are not ordered in general (random 3-state chains give ``ρ_b < |χ_b|``
about one time in seven).  A sticky chain (``T = (1 − s)I + s·1πᵀ``, ``s`` small) repeats a token for
runs of mean length ``1/s``: with wide angles (``|χ_b|`` small) a run keeps the phase coherent and
``ρ_b`` stays near ``1 − s``, far above ``|χ_b|``, so the Markov window is far longer than the i.i.d. one
``⌈ln ε / ln |χ_b|⌉``; with narrow angles the repeated angles add coherently, ``Var A_{n,b}`` grows faster
than under i.i.d. tokens, and ``ρ_b < |χ_b|`` (a shorter window).  ``ρ_b`` is an
asymptotic rate, not a bound at every ``n`` (``|E[e^{iA_{n,b}}]|`` may exceed ``ρ_bⁿ`` by a constant).

Everything is vectorised over the planes ``b`` (stacks ``(B, V, V)``) and over route lengths ``n``
(sorted, advanced by matrix powers of the increments).
"""

from __future__ import annotations

import numpy as np

from ..core._broadcast import check
from .bounds import window_from_log_rate

__all__ = ["validate_transition", "stationary_law", "time_reversal", "sticky_transition", "twisted_operator",
           "route_characteristic", "route_characteristic_grid", "iid_characteristic", "twisted_radius",
           "overlap_from_characteristic", "markov_overlap", "iid_overlap", "windows_from_rate", "sustained_crossing",
           "MAX_STATES", "MAX_CELLS"]

_ROW_TOL = 1e-9
MAX_STATES = 2048
"""Most tokens ``V`` a chain may have (its stationary law is an ``O(V³)`` solve)."""
MAX_CELLS = 2**27
"""Most complex numbers one call may hold (``B·V²`` for the operators, ``(nmax + 1)·B`` for a grid): ~2 GiB."""


def _stochastic(transition, name: str, either: bool) -> np.ndarray:
    t = check(name, transition, 0.0, ndim=2)
    if t.shape[0] != t.shape[1] or not 1 <= t.shape[0] <= MAX_STATES:
        raise ValueError(f"{name} must be a square (V, V) matrix with 1 ≤ V ≤ {MAX_STATES}, got shape {t.shape}")
    tol = _ROW_TOL * t.shape[0]
    if np.allclose(t.sum(axis=1), 1.0, rtol=0.0, atol=tol):
        return t
    if either and np.allclose(t.sum(axis=0), 1.0, rtol=0.0, atol=tol):
        return t  # the transposed convention (a theory mutant evaluates it): still spectral radius 1
    raise ValueError(f"{name} must be row-stochastic (every row summing to 1), got row sums "
                     f"{np.round(t.sum(axis=1), 6).tolist()[:8]}")


def validate_transition(transition, name: str = "transition") -> np.ndarray:
    """``transition`` as a float ``(V, V)`` row-stochastic matrix, or a ValueError naming ``name``."""
    return _stochastic(transition, name, either=False)


def _operator(transition, table) -> tuple[np.ndarray, np.ndarray]:
    """``T`` (row-stochastic, or column-stochastic: the transposed convention) and ``table`` ``(V, B)``, checked."""
    t = _stochastic(transition, "transition", either=True)
    tab = check("table", table, ndim=2)
    V = t.shape[0]
    if tab.shape[0] != V or tab.shape[1] < 1:
        raise ValueError(f"table must be a (V, B) array of angles with V = {V} rows (one per token) and B ≥ 1 "
                         f"planes, got shape {tab.shape}")
    if tab.shape[1] * V * V > MAX_CELLS:
        raise ValueError(f"table: B·V² = {tab.shape[1] * V * V:,} exceeds {MAX_CELLS:,} (too large to hold)")
    return t, tab


def _law(pi, V: int | None, name: str = "pi") -> np.ndarray:
    """A probability vector (finite, ≥ 0, summing to 1), of length ``V`` when given."""
    p = check(name, pi, 0.0, 1.0, ndim=1, size=V, nonempty=True)
    if abs(p.sum() - 1.0) > _ROW_TOL * p.size:
        raise ValueError(f"{name} must sum to 1 (a probability law), got sum {p.sum()!r}")
    return p


def _stationary_or(pi, t: np.ndarray) -> np.ndarray:
    return stationary_law(t) if pi is None else _law(pi, t.shape[0])


def _lengths(n, name: str = "n") -> np.ndarray:
    return np.asarray(check(name, n, 0, integer=True), dtype=np.int64)


def stationary_law(transition) -> np.ndarray:
    """The stationary law ``π`` (``πT = π``, ``Σπ = 1``) of ``T``; a ValueError when it is not unique.

    Unique means ``T − I`` has rank ``V − 1`` (a single closed communicating class).
    """
    t = validate_transition(transition)
    V = t.shape[0]
    a = t.T - np.eye(V)
    if V > 1 and np.linalg.matrix_rank(a, tol=1e-10) < V - 1:
        raise ValueError("transition must have a unique stationary law (one closed class), "
                         "e.g. an irreducible chain; a reducible one (such as T = I) has several")
    # solve (Tᵀ − I) π = 0 with Σπ = 1 (least squares on the stacked system: exact up to rounding)
    sys_ = np.vstack([a, np.ones((1, V))])
    rhs = np.zeros(V + 1)
    rhs[-1] = 1.0
    pi = np.linalg.lstsq(sys_, rhs, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def time_reversal(transition, pi=None) -> np.ndarray:
    """The time-reversed chain ``T*[u, v] = π_v T[v, u] / π_u`` (same stationary law ``π``)."""
    t = validate_transition(transition)
    pi = _stationary_or(pi, t)
    if not np.allclose(pi @ t, pi, rtol=0.0, atol=1e-8):
        raise ValueError("pi must be the stationary law of transition (πT = π)")
    support = pi > 1e-12
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = (t.T * pi[None, :]) / pi[:, None]
    out[~support] = np.eye(t.shape[0])[~support]  # states outside the support: any stochastic row
    out[support] = np.clip(out[support], 0.0, 1.0)  # ≤ 1 exactly when πT = π; rounding only
    return out


def sticky_transition(pi, switch: float) -> np.ndarray:
    """``T = (1 − s) I + s·1πᵀ``: keep the token with probability ``1 − s``, else redraw it from ``π``.

    Its stationary law is ``π`` for every ``s ∈ (0, 1]``; ``s = 1`` is i.i.d. tokens.
    """
    pi = _law(pi, None)
    s = check("switch", switch, 0.0, 1.0, lo_open=True, scalar=True)
    return (1.0 - s) * np.eye(pi.size) + s * np.outer(np.ones(pi.size), pi)


def twisted_operator(transition, table) -> np.ndarray:
    """``T D_b`` for every plane: ``(B, V, V)`` complex, ``(T D_b)[u, v] = T[u, v] e^{i·table[v, b]}``."""
    t, table = _operator(transition, table)
    phase = np.exp(1j * table).T  # (B, V)
    return t[None, :, :] * phase[:, None, :]


def route_characteristic(transition, table, n, pi=None) -> np.ndarray:
    """``E[e^{iA_{n,b}}] = π D_b (T D_b)^{n−1} 1`` for route length(s) ``n``: shape ``np.shape(n) + (B,)``.

    ``n = 0`` gives ``1`` (the empty route).  Lengths are walked once in increasing order, each
    increment by a stacked matrix power, so the cost is ``O(B·V³·Σ log Δn)``.
    """
    t, table = _operator(transition, table)
    pi = _stationary_or(pi, t)
    ns = np.ravel(_lengths(n))
    B = table.shape[1]
    if ns.size > 64 and ns.max() <= 16 * ns.size:  # a dense set of lengths: one pass over the grid
        return route_characteristic_grid(t, table, int(ns.max()), pi)[ns].reshape(np.shape(n) + (B,))
    op = twisted_operator(t, table)  # (B, V, V)
    out = np.empty((ns.size, B), dtype=complex)
    row = pi[None, :] * np.exp(1j * table).T  # π D_b: the first token's angle, (B, V)
    at = 1
    for idx in np.argsort(ns, kind="stable"):
        m = int(ns[idx])
        if m == 0:
            out[idx] = 1.0
            continue
        if m > at:
            row = np.einsum("bu,buv->bv", row, np.linalg.matrix_power(op, m - at))
            at = m
        out[idx] = row.sum(axis=1)
    return out.reshape(np.shape(n) + (B,))


def route_characteristic_grid(transition, table, nmax: int, pi=None, block: int = 256) -> np.ndarray:
    """``E[e^{iA_{n,b}}]`` at every ``n = 0 … nmax``: ``(nmax + 1, B)``, by blocks of ``block`` lengths.

    With ``v_k = (T D_b)^k 1`` (``k < block``, computed once) and ``r_j = π D_b (T D_b)^{j·block}``, the value
    at ``n = j·block + k + 1`` is ``r_j · v_k``: ``nmax / block`` Python steps instead of ``nmax``.
    """
    t, table = _operator(transition, table)
    pi = _stationary_or(pi, t)
    nmax = check("nmax", nmax, 0, integer=True, scalar=True)
    block = check("block", block, 1, 2**16, integer=True, scalar=True)
    if table.shape[1] * (nmax + 1 + min(block, nmax) * t.shape[0]) > MAX_CELLS:
        raise ValueError(f"nmax: (nmax + 1)·B = {(nmax + 1) * table.shape[1]:,} values (and a block of "
                         f"{min(block, nmax)}·B·V) exceed {MAX_CELLS:,}: too large to hold; ask for fewer lengths")
    op = twisted_operator(t, table)
    B, V = table.shape[1], t.shape[0]
    K = max(1, min(int(block), nmax))
    v = np.empty((B, K, V), dtype=complex)
    v[:, 0] = 1.0
    for k in range(1, K):
        v[:, k] = np.einsum("buv,bv->bu", op, v[:, k - 1])
    jump = np.linalg.matrix_power(op, K)
    out = np.empty((nmax + 1, B), dtype=complex)
    out[0] = 1.0
    row = pi[None, :] * np.exp(1j * table).T
    for start in range(1, nmax + 1, K):
        m = min(K, nmax + 1 - start)
        out[start:start + m] = np.einsum("bv,bkv->kb", row, v[:, :m])
        row = np.einsum("bu,buv->bv", row, jump)
    return out


def iid_characteristic(pi, table, n) -> np.ndarray:
    """The i.i.d. shortcut ``χ_bⁿ`` (``χ_b = Σ_v π_v e^{i·table[v, b]}``): shape ``np.shape(n) + (B,)``."""
    pi = _law(pi, None)
    table = check("table", table, ndim=2)
    if table.shape[0] != pi.size or table.shape[1] < 1:
        raise ValueError(f"table must be a (V, B) array of angles with V = {pi.size} rows (one per token of pi) "
                         f"and B ≥ 1 planes, got shape {table.shape}")
    n = _lengths(n)
    if n.size * table.shape[1] > MAX_CELLS:
        raise ValueError(f"n: {n.size:,} lengths × {table.shape[1]} planes exceed {MAX_CELLS:,} values")
    chi = pi @ np.exp(1j * table)
    with np.errstate(under="ignore"):
        return chi ** n.astype(float)[..., None]


def twisted_radius(transition, table) -> np.ndarray:
    """Per-plane spectral radius ``ρ_b = ρ(T D_b)`` (``(B,)``): the asymptotic decay rate of plane ``b``."""
    return np.max(np.abs(np.linalg.eigvals(twisted_operator(transition, table))), axis=-1)


def overlap_from_characteristic(q, char) -> np.ndarray:
    """``Σ_b (q_{2b}² + q_{2b+1}²) Re c_b`` for characteristic values ``char`` ``(..., B)``."""
    char = check("char", char, complex_ok=True, abs_max=1e12)
    if char.ndim < 1 or char.shape[-1] < 1:
        raise ValueError(f"char must be an array (..., B) with B ≥ 1 planes, got shape {char.shape}")
    q = check("q", q, ndim=1)
    if q.size != 2 * char.shape[-1]:
        raise ValueError(f"q and char: q must have 2B entries for the B = {char.shape[-1]} planes of char "
                         f"(…, B), got {q.size}")
    return np.real(char) @ (q[0::2] ** 2 + q[1::2] ** 2)


def markov_overlap(transition, table, q, n, pi=None):
    """``E[qᵀP_n q] = Σ_b (q_{2b}² + q_{2b+1}²) Re π D_b (T D_b)^{n−1} 1`` (scalar for a scalar ``n``)."""
    out = overlap_from_characteristic(q, route_characteristic(transition, table, n, pi))
    return float(out) if np.ndim(n) == 0 else out


def iid_overlap(pi, table, q, n):
    """The i.i.d. shortcut ``Σ_b (q_{2b}² + q_{2b+1}²) Re χ_bⁿ`` (what ``E[M]ⁿ`` would give)."""
    out = overlap_from_characteristic(q, iid_characteristic(pi, table, n))
    return float(out) if np.ndim(n) == 0 else out


def windows_from_rate(rate, eps: float) -> np.ndarray:
    """``⌈ln ε / ln r⌉`` per entry of ``rate`` (``inf`` where ``r ≥ 1``, ``1`` where ``r = 0``)."""
    eps = check("eps", eps, 0.0, 1.0, lo_open=True, hi_open=True, scalar=True)
    r = check("rate", rate, 0.0)
    with np.errstate(divide="ignore"):
        w = window_from_log_rate(np.log(np.minimum(r, 1.0)), eps)
    return np.where(r <= 0.0, 1.0, w)


def sustained_crossing(mod, eps: float) -> int | None:
    """``min{n : mod[m] < ε for every m ≥ n}`` over a curve ``mod[n]``, ``n = 0, 1, …`` (``None`` if ``mod[-1] ≥ ε``).

    The window of an oscillating modulus (several eigenvalues of ``T D_b`` beat): the route length after
    which the correlation stays below ``ε`` on the whole horizon, not the first dip.
    """
    eps = check("eps", eps, 0.0, 1.0, lo_open=True, hi_open=True, scalar=True)
    above = np.flatnonzero(check("mod", mod, 0.0, ndim=1) >= eps)
    if not above.size:
        return 0
    return None if above[-1] == len(mod) - 1 else int(above[-1] + 1)
