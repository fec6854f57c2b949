"""Far retrieval of a passkey by content (issue 17): closed forms for a key equal to the query at route length ``n``.

The model.  A query ``q`` (unit) at position ``i``; the context holds ``M + 1`` keys at route lengths
``0 … M``.  The **passkey** sits at route length ``n`` (``1 ≤ n ≤ M``) and equals the query, ``k = q``;
the other ``M`` keys (the haystack) are uniform on ``S^{d−1}``.  Logits ``κλ qᵀP_{j→i}k_j + ln c(j)``, with
a far-mass control: ``c(j) = e^{−mj}`` (ALiBi), ``c(j) = f^j`` (forget gate with a constant gate
``f = σ(g)``), ``κ = ln L/ln L_train`` (log-scaling, ``L = M + 1``), else ``c = 1``, ``κ = 1``.

* **score**: ``E[λ qᵀP_n q] = λ qᵀE[M]ⁿq``; for SO(2) blocks ``λ Σ_b |q_b|² Re χ_bⁿ``
  (:func:`expected_score`).  The **non-mixing share** is ``Σ_{b: W_b(ε) > L} |q_b|²``, the query energy in
  planes whose window exceeds the context (:func:`nonmixing_share`); those planes carry the floor
  ``λ Σ_{b: W_b > L} |q_b|² Re χ_bⁿ``.
* **law of the passkey score** ``s_n = qᵀP_n q`` (:func:`passkey_law`), as a rule ``(points, weights)`` with
  ``E g(s_n) ≈ Σ weights·g(points)``.  SO(2) blocks: ``s_n = Σ_b a_b cos A_{n,b}`` with ``a_b = |q_b|²`` and
  independent plane phases ``A_{n,b}``, whose folded CDF ``G(u) = P(|A| ≤ u)`` is exact: the Irwin–Hall
  law, wrapped (uniform angles, ``n ≤ 16``), or the Fourier series
  ``G(u) = u/π + (2/π) Σ_{j≥1} Re χ_b(j)ⁿ sin(ju)/j`` (truncated below ``10⁻¹³``); each plane's
  ``a_b cos A`` is binned on a grid of step ``h`` and the planes are convolved (discretisation error
  ``O(h)``, ``h = 2⁻¹³`` by default).  Lazy Haar: an atom ``s = |q|²`` of weight ``(1 − p)ⁿ``, else a Haar
  coordinate.  Householder: the quadrature rule ``e_0ᵀKⁿ`` of the transport chain
  (:class:`stylized.weight_laws.IsotropicChain`; smooth functionals only).  Mixed routes
  (:func:`mixed_law`): the post-mixing law (Haar coordinate or uniform phases).
* **rank**: the passkey outranks all ``M`` haystack keys with probability
  ``P_1 = E[F_H(s_n)^M]``, ``F_H`` the CDF of a Haar coordinate ``(1+ξ)/2 ~ Beta((d−1)/2, (d−1)/2)``
  (:func:`rank_one_probability`); once the passkey's law is the haystack's, ``P_1 = 1/(M+1)`` (chance).
* **weight**: ``E[α_n] = E[Y/(Y + F)] = ∫_0^∞ E[Y e^{−σY}] E[e^{−σF}] dσ`` with ``Y = c(n) e^{κλ s_n}``
  and ``F = Σ_{j≠n} c(j) e^{κλ ξ_j}`` (:func:`expected_weight`), the far Laplace transforms of
  :mod:`stylized.weight_laws` / :mod:`stylized.growth`.  With ALiBi the passkey's weight carries
  ``e^{−mn}``: it is suppressed exponentially in ``n`` whatever its content.

Example
-------
>>> from stylized.families import make_family
>>> fam = make_family("so2-uniform", 8, omega=1.0)
>>> q = np.full(8, 8 ** -0.5)
>>> pts, w = passkey_law(fam, q, 3)
>>> bool(abs(w @ pts - expected_score(fam, q, 3)) < 1e-3), bool(abs(w.sum() - 1) < 1e-12)
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal, special, stats

from .families import Householder, SO2Family, SO2Normal, SO2Uniform, StepFamily
from .weight_laws import FarLaw, IsotropicChain, _harmonic_chi

__all__ = ["RetrievalControl", "CONTROLS", "expected_score", "nonmixing_share", "nonmixing_floor", "passkey_law",
           "mixed_law", "haar_bins", "rank_one_probability", "chance", "haystack_log_laplace", "expected_weight",
           "weight_moments", "skewness", "top_logit_probability", "H_DEFAULT"]

H_DEFAULT = 2.0**-13
"""Grid step of the binned SO(2) passkey law (score units)."""
CONTROLS = ("none", "alibi", "forget-gate", "log-scaling")
_IH_MAX = 16  # Irwin–Hall formula up to this many steps (alternating sum: rounding ~1e-10 at n = 16, 1e-5 at n = 24)


def _unit_query(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim != 1 or q.size < 2 or not np.all(np.isfinite(q)) or abs(float(q @ q) - 1.0) > 1e-9:
        raise ValueError(f"q must be a finite unit vector of length ≥ 2, got norm {float(np.linalg.norm(q))!r}")
    return q


def _route(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n (route length) must be an integer ≥ 0, got {n!r}")
    return int(n)


# ---------------------------------------------------------------------------------------
# expected score and the non-mixing planes
# ---------------------------------------------------------------------------------------
def expected_score(family: StepFamily, q, n, lam: float = 1.0, chi_scale: float = 1.0, exponent=None):
    """``E[λ qᵀP_n q] = λ qᵀE[M]ⁿq`` (closed form): ``λ Σ_b |q_b|² Re χ_bⁿ`` for SO(2) blocks, ``λ(1 − γ)ⁿ|q|²`` else. (claim C3, beyond the paper; derived here)

    ``n``: a route length or an array of them.  ``chi_scale`` multiplies every ``χ_b`` (clipped to ``|χ| ≤ 1``) and
    ``exponent`` replaces ``n`` in the power: both exist for mutation tests (a wrong ``χ``, a window ``∝ L``).
    """
    q = _unit_query(q)
    n_arr = np.asarray(n, dtype=float)
    x = n_arr if exponent is None else np.asarray(exponent, dtype=float)
    if np.any(n_arr < 0):
        raise ValueError(f"n (route length) must be ≥ 0, got {n!r}")
    if isinstance(family, SO2Family):
        chi = family.chi() * chi_scale
        chi = np.where(np.abs(chi) > 1.0, chi / np.abs(chi), chi)
        w = q[0::2] ** 2 + q[1::2] ** 2
        out = lam * (w @ np.real(np.power.outer(chi, np.ravel(x)))).reshape(np.shape(x))
    else:
        c = min(1.0, (1.0 - family.spectral_gap) * chi_scale)
        out = lam * float(q @ q) * np.power(c, x)
    return float(out) if np.ndim(out) == 0 else out


def nonmixing_share(family: StepFamily, q, L: int, eps: float = 0.05) -> tuple[float, int]:
    """``(Σ_{b: W_b(ε) > L} |q_b|², #planes)``: query energy in the planes that do not mix within ``L`` tokens. (claim C3, beyond the paper; derived here)

    ``W_b(ε) = ⌈ln ε/ln|χ_b|⌉`` (:meth:`SO2Family.plane_windows`); O(d) families mix as a whole (share 0 when
    ``W(ε) ≤ L``, else 1, as one "plane").
    """
    q = _unit_query(q)
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if isinstance(family, SO2Family):
        slow = family.plane_windows(eps) > L
        return float(np.sum((q[0::2] ** 2 + q[1::2] ** 2)[slow])), int(slow.sum())
    slow = family.mixing_window(eps) > L
    return (1.0, 1) if slow else (0.0, 0)


def nonmixing_floor(family: StepFamily, q, n, L: int, lam: float = 1.0, eps: float = 0.05):
    """``λ Σ_{b: W_b(ε) > L} |q_b|² Re χ_bⁿ``: the part of the expected passkey score carried by non-mixing planes. (claim C3, beyond the paper; derived here)"""
    q = _unit_query(q)
    if not isinstance(family, SO2Family):
        return expected_score(family, q, n, lam) if nonmixing_share(family, q, L, eps)[1] else 0.0 * np.asarray(n)
    slow = family.plane_windows(eps) > L
    w = np.where(slow, q[0::2] ** 2 + q[1::2] ** 2, 0.0)
    out = lam * (w @ np.real(np.power.outer(family.chi(), np.ravel(np.asarray(n, float))))).reshape(np.shape(n))
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------
# the law of s_n = qᵀP_n q
# ---------------------------------------------------------------------------------------
def _irwin_hall_cdf(y: np.ndarray, n: int) -> np.ndarray:
    """CDF of the sum of ``n`` independent ``U(0, 1)``: ``(1/n!) Σ_{k≤y} (−1)^k C(n,k)(y − k)^n``."""
    y = np.clip(np.asarray(y, dtype=float), 0.0, n)
    k = np.arange(n + 1)
    coef = (-1.0) ** k * special.comb(n, k) / math.factorial(n)
    return np.clip(np.clip(y[..., None] - k, 0.0, None) ** n @ coef, 0.0, 1.0)


def _folded_cdf(family: SO2Family, b: int, n: int, u: np.ndarray) -> np.ndarray:
    """``G(u) = P(|A_{n,b}| ≤ u)`` for ``u ∈ [0, π]``, ``A_{n,b}`` the accumulated angle of plane ``b`` wrapped to ``(−π, π]``."""
    if isinstance(family, SO2Uniform) and n <= _IH_MAX:
        om = float(family.omegas[b])
        F = lambda x: _irwin_hall_cdf((x + n * om) / (2 * om), n)  # noqa: E731
        W = int(math.ceil((n * om + math.pi) / (2 * math.pi)))
        return np.clip(sum(F(u + 2 * math.pi * w) - F(-u + 2 * math.pi * w) for w in range(-W, W + 1)), 0.0, 1.0)
    if isinstance(family, SO2Uniform):
        om = float(family.omegas[b])
        J = math.ceil(max(math.sqrt(6 * 32 / n), 10 ** (13 / n)) / om)
    elif isinstance(family, SO2Normal):
        sg = float(np.broadcast_to(np.asarray(family.sigma, float), (family.d // 2,))[b])
        J = math.ceil(math.sqrt(2 * 32 / n) / sg)
    else:
        raise ValueError(f"no passkey law for family {family.name!r} (uniform or normal plane angles only)")
    if J > 400_000:
        raise ValueError(f"plane {b} needs {J} harmonics at n={n}; use a coarser grid step h")
    out = u / math.pi
    for s in range(1, J + 1, 4096):
        j = np.arange(s, min(J, s + 4095) + 1)
        c = np.real(_harmonic_chi(family, j)[:, b] ** n)
        out = out + (2 / math.pi) * (np.sin(np.outer(u, j)) @ (c / j))
    return np.clip(out, 0.0, 1.0)


def _split(x: float, h: float, pts_index: dict) -> None:
    """Mass 1 at ``x`` split between the two neighbouring grid points so that the mean is kept."""
    k = math.floor(x / h)
    f = x / h - k
    pts_index[k] = pts_index.get(k, 0.0) + 1.0 - f
    pts_index[k + 1] = pts_index.get(k + 1, 0.0) + f


def passkey_law(family: StepFamily, q, n: int, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """The law of ``s_n = qᵀP_n q`` as a rule ``(points, weights)``: ``E g(s_n) ≈ Σ_k weights_k g(points_k)``. (claim C3, beyond the paper; derived here)

    SO(2) blocks (uniform or normal angles): exact per-plane folded CDFs binned on the grid ``hℤ`` and convolved
    (weights ≥ 0, sum 1; error ``O(h)``).  Lazy Haar / Haar: atom ``|q|²`` of weight ``(1 − p)ⁿ`` plus a binned
    Haar coordinate.  Householder: the Chebyshev nodes and weights ``e_0ᵀKⁿ`` of the transport chain (signed
    weights; accurate for smooth ``g`` only).
    """
    q, n = _unit_query(q), _route(n)
    if not (0 < h <= 0.1):
        raise ValueError(f"h (grid step) must lie in (0, 0.1], got {h!r}")
    if isinstance(family, Householder):
        chain = IsotropicChain(family)
        w = np.linalg.matrix_power(chain.K, n)[0]
        return chain.nodes.copy(), w
    if family.kind == "haar":
        atom = (1.0 - family.p) ** n
        pts, w = haar_bins(family.d, h)
        pts, w = np.r_[pts, 1.0], np.r_[(1.0 - atom) * w, atom]
        return pts, w
    if not isinstance(family, SO2Family):
        raise ValueError(f"no passkey law for family {family.name!r}")
    a = q[0::2] ** 2 + q[1::2] ** 2
    chi_n = np.real(family.chi() ** n)
    pmf, lo, delta = np.ones(1), 0, {0: 1.0}
    for b in range(family.n_planes):
        if a[b] == 0:
            continue
        if a[b] * (1.0 - chi_n[b]) <= h / 4:  # this plane barely moves: a point mass at its mean
            nxt: dict = {}
            for k, v in delta.items():
                tmp: dict = {}
                _split(a[b] * chi_n[b], h, tmp)
                for k2, v2 in tmp.items():
                    nxt[k + k2] = nxt.get(k + k2, 0.0) + v * v2
            delta = nxt
            continue
        m = int(math.ceil(a[b] / h))
        j = np.arange(-m, m + 1)
        up = np.arccos(np.clip((j + 0.5) * h / a[b], -1.0, 1.0))
        down = np.arccos(np.clip((j - 0.5) * h / a[b], -1.0, 1.0))
        Gd, Gu = _folded_cdf(family, b, n, down), _folded_cdf(family, b, n, up)
        pmf = signal.fftconvolve(pmf, np.clip(Gd - Gu, 0.0, None))
        lo -= m
    ks = np.array(sorted(delta))
    dm = np.array([delta[k] for k in ks])
    full = np.convolve(pmf, np.bincount(ks - ks[0], weights=dm)) if ks.size > 1 else pmf * dm[0]
    lo += int(ks[0])
    full = np.clip(full, 0.0, None)
    keep = full > 1e-300
    pts = (lo + np.nonzero(keep)[0]) * h
    return pts, full[keep] / full[keep].sum()


def haar_bins(d: int, h: float = H_DEFAULT, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A Haar coordinate ``scale·ξ`` binned on ``hℤ``: ``(points, P(bin))`` from the Beta CDF."""
    m = int(math.ceil(scale / h))
    j = np.arange(-m, m + 1)
    e = np.clip(np.r_[j - 0.5, m + 0.5] * h / scale, -1.0, 1.0)
    beta = stats.beta((d - 1) / 2.0, (d - 1) / 2.0)
    w = np.diff(beta.cdf((1.0 + e) / 2.0))
    return j * h, w / w.sum()


def mixed_law(family: StepFamily, q, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """The post-mixing law of ``s = qᵀPq`` (route ``≫ W``) binned on ``hℤ``: uniform phases (SO(2)) or a Haar coordinate."""
    q = _unit_query(q)
    if isinstance(family, SO2Family):
        return passkey_law(SO2Uniform(d=family.d, omega=math.pi), q, 1, h)  # θ ~ U(−π, π): uniform phases
    return haar_bins(family.d, h, float(q @ q))


# ---------------------------------------------------------------------------------------
# rank and weight among M haystack keys
# ---------------------------------------------------------------------------------------
def chance(M: int) -> float:
    """``1/(M+1)``: the rank-1 probability of a key whose score has the haystack's law. (claim C3, beyond the paper; derived here)"""
    return 1.0 / (M + 1.0)


def rank_one_probability(points, weights, d: int, M: int) -> float:
    """``P(s_n > max_{j≤M} ξ_j) = E[F_H(s_n)^M]`` for ``M`` independent Haar coordinates ``ξ_j`` on ``S^{d−1}``. (claim C3, beyond the paper; derived here)"""
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
        raise ValueError(f"M must be an integer ≥ 1, got {M!r}")
    F = stats.beta.cdf((1.0 + np.clip(np.asarray(points, float), -1, 1)) / 2.0, (d - 1) / 2.0, (d - 1) / 2.0)
    return float(np.clip(np.asarray(weights) @ F**M, 0.0, 1.0))


@dataclass(frozen=True)
class RetrievalControl:
    """A far-mass control on the passkey's context: weight factor ``c(j) = r^j`` and logit scale ``κ``.

    ``none``: ``r = 1, κ = 1``; ``alibi``: ``r = e^{−m}``; ``forget-gate``: ``r = σ(gate)`` (constant gate);
    ``log-scaling``: ``κ = ln L/ln L_train`` with ``L = M + 1``.
    """

    name: str
    m: float = 1 / 16
    gate: float = 4.0
    L_train: int = 512

    def __post_init__(self):
        if self.name not in CONTROLS:
            raise ValueError(f"control must be one of {', '.join(CONTROLS)}; got {self.name!r}")
        if not (self.m > 0 and math.isfinite(self.m)):
            raise ValueError(f"m (ALiBi slope) must be a finite number > 0, got {self.m!r}")
        if not math.isfinite(self.gate):
            raise ValueError(f"gate must be finite, got {self.gate!r}")
        if isinstance(self.L_train, bool) or not isinstance(self.L_train, (int, np.integer)) or self.L_train < 2:
            raise ValueError(f"L_train must be an integer ≥ 2, got {self.L_train!r}")

    @property
    def r(self) -> float | None:
        """Per-step weight factor (``None`` for ``c = 1``)."""
        if self.name == "alibi":
            return math.exp(-self.m)
        if self.name == "forget-gate":
            return 1.0 / (1.0 + math.exp(-self.gate))
        return None

    def log_factor(self, j) -> np.ndarray:
        """``ln c(j) = j ln r`` (0 without a decaying control)."""
        r = self.r
        return np.zeros(np.shape(j)) if r is None else np.asarray(j, dtype=float) * math.log(r)

    def kappa(self, M: int) -> float:
        """Logit scale factor ``κ``: ``ln(M+1)/ln L_train`` under log-scaling, else 1."""
        return math.log(M + 1) / math.log(self.L_train) if self.name == "log-scaling" else 1.0


def top_logit_probability(points, weights, d: int, M: int, n: int, control: RetrievalControl, lam: float,
                          oversample: int = 8) -> float:
    """``P(κλ s_n + ln c(n) > max_{j≠n} κλ ξ_j + ln c(j))``: the passkey holds the largest logit of the context. (claim C3, beyond the paper; derived here)

    Key ``j`` outscores the passkey iff ``ξ_j > s_n + (j − n)a`` with ``a = ln(1/r)/(κλ)``, so the probability is
    ``E[Π_{j≠n} F_H(s_n + (j − n)a)]`` (``F_H`` the Haar-coordinate CDF).  Without a decaying control (``r = 1``;
    log-scaling only rescales every logit) it is :func:`rank_one_probability`.  With one, keys ``2/a`` or more
    positions beyond the passkey never win and a key ``2/a`` or more positions nearer always does: for
    ``n ≥ 2/a`` the passkey never holds the top logit (ALiBi: ``n ≥ 2κλ/m``).  The sum over ``j`` is taken on a grid
    of step ``a/oversample`` (prefix sums per residue class) and interpolated at ``points``.
    """
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
        raise ValueError(f"M must be an integer ≥ 1, got {M!r}")
    n = _route(n)
    if not 1 <= n <= M:
        raise ValueError(f"n must lie in [1, M] = [1, {M}], got {n}")
    r = control.r
    if r is None:
        return rank_one_probability(points, weights, d, M)
    a = -math.log(r) / (lam * control.kappa(M))
    if n * a >= 2.0:
        return 0.0
    pts, wts = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    P, step = int(oversample), a / int(oversample)
    k_hi = int(min(M - n, math.ceil(2.0 / a)))
    lo, hi = float(pts.min()), float(pts.max())
    n_s = int(math.ceil((hi - lo) / step)) + 1
    N = n * P + n_s + k_hi * P + 1
    x = lo + (np.arange(N) - n * P) * step
    half = (d - 1) / 2.0
    G = np.log(np.maximum(stats.beta.cdf((1.0 + np.clip(x, -1.0, 1.0)) / 2.0, half, half), 1e-300))
    total = np.empty(n_s)
    i_s = n * P + np.arange(n_s)  # grid indices of the score grid lo, lo + step, …
    for rho in range(P):
        sel = np.nonzero(i_s % P == rho)[0]
        if sel.size == 0:
            continue
        C = np.r_[0.0, np.cumsum(G[rho::P])]
        t = i_s[sel] // P
        total[sel] = C[t + k_hi + 1] - C[t - n] - G[i_s[sel]]  # Σ_{k=−n}^{k_hi} G[i + kP], k ≠ 0
    logp = np.interp(pts, lo + np.arange(n_s) * step, total)
    return float(np.clip(wts @ np.exp(logp), 0.0, 1.0))


def haystack_log_laplace(control: RetrievalControl, lam: float, d: int, M: int, h_sigma: float = 0.1):
    """The haystack over route lengths ``0 … M``: ``(σ, h, log E e^{−σF_all}, far)`` with
    ``F_all = Σ_{j=0}^{M} c(j) X_j``, ``X_j = e^{κλξ_j}`` i.i.d. (exact far law, :class:`FarLaw`).

    ``log E e^{−σF_all} = Σ_j g(ln σ + j ln r)`` with ``g(u) = log E e^{−e^u X}``.  The nodes ``σ = e^u`` form a
    geometric grid (trapezoid rule in ``u``, step ``h ≤ h_sigma``) chosen so that every shift ``j ln r`` is a whole
    number of steps (or, for ``|ln r| < h``, a whole number plus one of ``k`` fixed offsets): ``g`` is evaluated once
    on an extended grid and the ``M + 1`` terms are window sums of prefix sums, ``O(M + grid)``.  The passkey's own
    position ``n`` is removed later (:func:`expected_weight`).
    """
    lk = lam * control.kappa(M)
    far = FarLaw(lk, d)
    u_lo = math.log(1e-10 / (far.mean * (M + 1) + math.exp(lk)))
    u_hi = math.log(60.0) + lk
    r = control.r
    if r is None:
        h = h_sigma
        u = np.arange(u_lo, u_hi + h, h)
        return np.exp(u), h, (M + 1) * far.log_laplace(np.exp(u)), far
    dl = -math.log(r)
    if dl >= h_sigma:  # j ln r = j·k steps of h
        k_sub, k_res = math.ceil(dl / h_sigma), 1
        h = dl / k_sub
    else:  # j = ρ + k·t: shift ρ·dl (ρ < k) plus t steps of h = k·dl
        k_sub, k_res = 1, max(1, int(h_sigma // dl))
        h = k_res * dl
    u = np.arange(u_lo, u_hi + h, h)
    total = np.zeros(u.size)
    for rho in range(k_res):
        t_max = (M - rho) // k_res  # j = ρ + k_res·t ≤ M
        if t_max < 0:
            continue
        steps = k_sub * t_max
        ext = u[0] - rho * dl - h * np.arange(steps, 0, -1)  # grid extended downwards
        g = np.maximum(far.log_laplace(np.exp(np.r_[ext, u - rho * dl])), -1e200)  # −inf (underflow) → finite
        idx = np.arange(u.size) + steps
        for c in range(k_sub):  # Σ_{t=0}^{t_max} g[i − k_sub·t] by prefix sums within each residue class of i
            sel = idx[idx % k_sub == c]
            pc = np.r_[0.0, np.cumsum(g[c::k_sub])]
            total[sel - steps] += pc[sel // k_sub + 1] - pc[sel // k_sub - t_max]
    return np.exp(u), h, np.where(total < -1e199, -np.inf, total), far


def weight_moments(points, weights, n: int, control: RetrievalControl, lam: float, M: int, haystack,
                   k_max: int = 3) -> np.ndarray:
    """``E[α_n^k]``, ``k = 1 … k_max``: moments of the passkey's softmax weight ``α_n = Y/(Y + F)``.

    From ``x^{−k} = ∫_0^∞ σ^{k−1} e^{−σx} dσ/(k−1)!`` and the independence of ``Y`` and ``F``:
    ``E[α^k] = ∫_0^∞ σ^{k−1}/(k−1)! · E[Y^k e^{−σY}] · E[e^{−σF}] dσ``, with ``Y = c(n) e^{κλ s_n}`` (``s_n`` from the
    rule ``points, weights``) and ``F = Σ_{j≠n} c(j) e^{κλξ_j}`` over the ``M`` haystack keys.  ``haystack``: a
    precomputed :func:`haystack_log_laplace` (``d`` and ``κλ`` are taken from it).  The ``σ``-integral is done on a
    grid of 301 scores over the law's mass (the integrand is smooth in ``s`` on the scale ``1/κλ``) and interpolated in ``log``.
    """
    n = _route(n)
    if not 1 <= n <= M:
        raise ValueError(f"n must lie in [1, M] = [1, {M}], got {n}")
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or not 1 <= k_max <= 8:
        raise ValueError(f"k_max must be an integer in [1, 8], got {k_max!r}")
    sig, h, lp_all, far = haystack
    lp_n = far.log_laplace(sig * math.exp(float(control.log_factor(n))))
    lp = np.where(np.isfinite(lp_all), lp_all - np.where(np.isfinite(lp_n), lp_n, 0.0), -np.inf)
    pts, wts = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    order = np.argsort(pts, kind="stable")
    pts, wts = pts[order], wts[order]
    cw = np.cumsum(np.abs(wts)) / np.sum(np.abs(wts))
    lo, hi = pts[min(np.searchsorted(cw, 1e-15), pts.size - 1)], pts[min(np.searchsorted(cw, 1 - 1e-15), pts.size - 1)]
    keep = (pts >= lo) & (pts <= hi)  # the law's mass up to 1e-15 on each side
    pts, wts = pts[keep], wts[keep]
    grid = np.linspace(pts.min(), pts.max(), max(2, min(pts.size, 301)))
    logy = far.lam * grid + float(control.log_factor(n))
    ys = np.exp(logy)[:, None] * sig[None, :]  # yσ
    f = np.exp(logy[:, None] - ys + lp[None, :] + np.log(sig)[None, :])
    out = np.empty(k_max)
    for k in range(1, k_max + 1):
        if k > 1:
            f = f * ys / (k - 1)  # σ^{k−1}/(k−1)!·y^k e^{−σy} from the previous power
        wy = h * (f.sum(axis=1) - 0.5 * (f[:, 0] + f[:, -1]))
        with np.errstate(divide="ignore"):
            lw = np.log(np.clip(wy, 1e-300, None))
        out[k - 1] = float(np.clip(wts @ np.exp(np.interp(pts, grid, lw)), 0.0, 1.0))
    return out


def expected_weight(points, weights, n: int, control: RetrievalControl, lam: float, M: int, haystack) -> float:
    """``E[α_n] = ∫_0^∞ E[Y e^{−σY}] E[e^{−σF}] dσ``: the passkey's expected softmax weight (:func:`weight_moments`). (claim C3, beyond the paper; derived here)"""
    return float(weight_moments(points, weights, n, control, lam, M, haystack, k_max=1)[0])


def skewness(m: np.ndarray) -> float:
    """Skewness ``γ₁ = (m₃ − 3m₁m₂ + 2m₁³)/(m₂ − m₁²)^{3/2}`` from raw moments ``m = (m₁, m₂, m₃)`` (0 if no spread)."""
    m1, m2, m3 = (float(x) for x in m[:3])
    var = m2 - m1 * m1
    if var <= 1e-200 or var <= 1e-12 * m2:
        return 0.0
    return (m3 - 3 * m1 * m2 + 2 * m1**3) / var**1.5
