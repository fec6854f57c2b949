"""Far retrieval of a passkey by content (issue 17): closed forms for a key equal to the query at route length ``n``.

The model.  A query ``q`` (unit) at position ``i``; the context holds ``M + 1`` keys at route lengths
``0 … M``.  The **passkey** sits at route length ``n`` (``1 ≤ n ≤ M``) and equals the query, ``k = q``;
the other ``M`` keys (the haystack) are uniform on ``S^{d−1}``.  Logits ``κλ qᵀP_{j→i}k_j + ln c(j)``, with
a far-mass control: ``c(j) = e^{−mj}`` (ALiBi), ``c(j) = f^j`` (forget gate with a constant gate
``f = σ(g)``), ``κ = ln L/ln L_train`` (log-scaling, ``L = M + 1``), else ``c = 1``, ``κ = 1``.

Every function takes the step law's properties from the law itself (no test of its name or class):

* **score**: ``E[λ qᵀP_n q] = λ qᵀE[M]ⁿq`` (:func:`expected_score`): ``λ Σ_b |q_b|² Re χ_bⁿ`` for commuting
  planes (``planes``, :meth:`chi`), ``λ cⁿ|q|²`` for an isotropic law (``E[M] = c·I``), ``λ qᵀE[M]ⁿq``
  (:meth:`mean_overlap`) otherwise; ``E[M]`` estimated where the law has no closed form.  The **non-mixing
  share** is ``Σ_{b: W_b(ε) > L} |q_b|²``, the query energy in planes whose window exceeds the context
  (:func:`nonmixing_share`, :meth:`plane_windows`; a law without planes mixes as a whole); those planes carry
  the floor ``λ Σ_{b: W_b > L} |q_b|² Re χ_bⁿ``.
* **law of the passkey score** ``s_n = qᵀP_n q`` (:func:`passkey_law`): the law's own rule
  (:meth:`~stylized.laws.base.StepLaw.overlap_law`; :mod:`stylized.theory.overlap_laws`): per-plane phase laws
  convolved (planes with a continuous angle law), an atom plus a Haar coordinate (lazy Haar), the chain's
  quadrature rule (Householder; smooth functionals only).  Mixed routes (:func:`mixed_law`): the post-mixing
  law (Haar coordinate or uniform phases) of a law that declares ``mixes_to_uniform``.
* **rank**: the passkey outranks all ``M`` haystack keys with probability
  ``P_1 = E[F_H(s_n)^M]``, ``F_H`` the CDF of a Haar coordinate ``(1+ξ)/2 ~ Beta((d−1)/2, (d−1)/2)``
  (:func:`rank_one_probability`); once the passkey's law is the haystack's, ``P_1 = 1/(M+1)`` (chance).
* **weight**: ``E[α_n] = E[Y/(Y + F)] = ∫_0^∞ E[Y e^{−σY}] E[e^{−σF}] dσ`` with ``Y = c(n) e^{κλ s_n}``
  and ``F = Σ_{j≠n} c(j) e^{κλ ξ_j}`` (:func:`expected_weight`), the far Laplace transforms of
  :mod:`stylized.theory.weight_laws` / :mod:`stylized.theory.growth`.  With ALiBi the passkey's weight carries
  ``e^{−mn}``: it is suppressed exponentially in ``n`` whatever its content.

Example
-------
>>> from stylized.laws.families import make_family
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
from scipy import stats

from ..core._broadcast import ArgumentTypeError, check, check_instance
from ..laws.law_type import StepLawType
from .overlap_laws import H_DEFAULT, far_overlap_law, haar_bins
from .weight_laws import FarLaw

__all__ = ["RetrievalControl", "CONTROLS", "expected_score", "nonmixing_share", "nonmixing_floor", "passkey_law",
           "mixed_law", "haar_bins", "rank_one_probability", "chance", "haystack_log_laplace", "expected_weight",
           "weight_moments", "skewness", "top_logit_probability", "H_DEFAULT"]

CONTROLS = ("none", "alibi", "forget-gate", "log-scaling")
MAX_GRID = 2**26
"""Most nodes of the extended grid of :func:`haystack_log_laplace` (0.5 GiB of float64)."""


def _law(family) -> StepLawType:
    return check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")


def _unit_query(q, d: int | None = None) -> np.ndarray:
    """``q`` a finite unit vector of length ``≥ 2`` (``d`` when given)."""
    q = check("q", q, ndim=1, size=d)
    if q.size < 2 or abs(float(q @ q) - 1.0) > 1e-9:
        raise ValueError(f"q must be a finite unit vector of length ≥ 2, got norm {float(np.linalg.norm(q))!r}")
    return q


def _route(n) -> int:
    return check("n (route length)", n, 0, integer=True, scalar=True)


def _routes(n) -> np.ndarray:
    """Route lengths ``n ≥ 0`` (an integer or an array of them) as a float array of their shape."""
    return check("n (route length)", n, 0, integer=True).astype(float)


def _rule(points, weights) -> tuple[np.ndarray, np.ndarray]:
    """A quadrature rule of a score ``s_n = qᵀP_n q``: non-empty 1-D finite ``points`` in ``[−1, 1]`` (widened by
    the largest grid step, 0.1: a gridded law's end nodes overhang) and ``weights`` of one length."""
    pts = check("points", points, -1.1, 1.1, ndim=1, nonempty=True)
    wts = check("weights", weights, ndim=1)
    if wts.size != pts.size:
        raise ValueError(f"points and weights must have one length (a weight per point), got {pts.size} and {wts.size}")
    return pts, wts


def _control(control) -> RetrievalControl:
    return check_instance("control", control, RetrievalControl)


def _per_plane(family: StepLawType) -> bool:
    """Whether ``qᵀE[P_n]q = Σ_b |q_b|² Re χ_bⁿ``: commuting planes with i.i.d. steps."""
    return bool(family.planes and family.iid)


# ---------------------------------------------------------------------------------------
# expected score and the non-mixing planes
# ---------------------------------------------------------------------------------------
def _matrix_overlap(family: StepLawType, q: np.ndarray, x: np.ndarray, chi_scale: float) -> np.ndarray:
    """``qᵀE[P_n]q`` for a law without planes or isotropy: :meth:`mean_overlap` at integer ``x``; a scaled mean or a
    non-integer power (mutation tests) by the eigen-decomposition of ``E[M]`` (eigenvalues clipped to ``|·| ≤ 1``)."""
    xs = np.ravel(x)
    if chi_scale == 1.0 and np.all(xs == np.round(xs)):
        return np.asarray(family.mean_overlap(q, xs.astype(np.int64)), dtype=float).reshape(np.shape(x))
    ev, V = np.linalg.eig(family.theory_mean())
    ev = ev * chi_scale
    ev = np.where(np.abs(ev) > 1.0, ev / np.abs(ev), ev)
    left, right = q @ V, np.linalg.solve(V, q.astype(complex))
    return np.real(np.power.outer(ev, xs.astype(complex)).T @ (left * right)).reshape(np.shape(x))


def expected_score(family: StepLawType, q, n, lam: float = 1.0, chi_scale: float = 1.0, exponent=None):
    """``E[λ qᵀP_n q] = λ qᵀE[M]ⁿq``: ``λ Σ_b |q_b|² Re χ_bⁿ`` for commuting planes, ``λ cⁿ|q|²`` for an isotropic law
    (``E[M] = c·I``), ``λ qᵀE[M]ⁿq`` otherwise (``E[M]`` estimated where the law has no closed form; its radius is
    ``λ`` :meth:`mean_overlap_radius`). (claim C3, beyond the paper; derived here)

    ``n``: a route length or an array of them.  ``chi_scale`` multiplies every ``χ_b`` (clipped to ``|χ| ≤ 1``) and
    ``exponent`` replaces ``n`` in the power: both exist for mutation tests (a wrong ``χ``, a window ``∝ L``).
    ``n`` route lengths ``≥ 0``, ``lam`` finite, ``chi_scale ≥ 0``, ``exponent`` (if given) finite and ``≥ 0``.
    """
    q = _unit_query(q, _law(family).d)
    n_arr = _routes(n)
    lam = check("lam (λ)", lam, scalar=True)
    chi_scale = check("chi_scale", chi_scale, 0, scalar=True)
    x = n_arr if exponent is None else check("exponent", exponent, 0)
    if _per_plane(family):
        chi = family.chi() * chi_scale
        chi = np.where(np.abs(chi) > 1.0, chi / np.abs(chi), chi)
        w = q[0::2] ** 2 + q[1::2] ** 2
        out = lam * (w @ np.real(np.power.outer(chi, np.ravel(x)))).reshape(np.shape(x))
    elif family.isotropic:
        c0 = float(family.theory_mean()[0, 0])  # E[M] = c·I
        c = math.copysign(min(1.0, abs(c0) * chi_scale), c0)
        out = lam * float(q @ q) * np.power(c, x)
    else:
        out = lam * _matrix_overlap(family, q, x, chi_scale)
    return float(out) if np.ndim(out) == 0 else out


def nonmixing_share(family: StepLawType, q, L: int, eps: float = 0.05) -> tuple[float, int]:
    """``(Σ_{b: W_b(ε) > L} |q_b|², #planes)``: query energy in the planes that do not mix within ``L`` tokens. (claim C3, beyond the paper; derived here)

    ``W_b(ε) = ⌈ln ε/ln|χ_b|⌉`` (:meth:`plane_windows`, laws with ``planes``); any other law mixes as a whole
    (share 0 when ``W(ε) ≤ L``, else 1, as one "plane").  ``L ≥ 0`` an integer, ``ε ∈ (0, 1)``.
    """
    q = _unit_query(q, _law(family).d)
    L = check("L (context length)", L, 0, integer=True, scalar=True)
    eps = check("eps", eps, 0, 1, lo_open=True, hi_open=True, scalar=True)
    if family.planes:
        slow = family.plane_windows(eps) > L
        return float(np.sum((q[0::2] ** 2 + q[1::2] ** 2)[slow])), int(slow.sum())
    slow = family.mixing_window(eps) > L
    return (1.0, 1) if slow else (0.0, 0)


def nonmixing_floor(family: StepLawType, q, n, L: int, lam: float = 1.0, eps: float = 0.05):
    """``λ Σ_{b: W_b(ε) > L} |q_b|² Re χ_bⁿ``: the part of the expected passkey score carried by non-mixing planes. (claim C3, beyond the paper; derived here)

    ``n`` route lengths ``≥ 0``, ``L ≥ 0`` an integer, ``lam`` finite, ``ε ∈ (0, 1)``."""
    q = _unit_query(q, _law(family).d)
    n_arr = _routes(n)
    L = check("L (context length)", L, 0, integer=True, scalar=True)
    lam = check("lam (λ)", lam, scalar=True)
    eps = check("eps", eps, 0, 1, lo_open=True, hi_open=True, scalar=True)
    if not _per_plane(family):
        return expected_score(family, q, n, lam) if nonmixing_share(family, q, L, eps)[1] else 0.0 * n_arr
    slow = family.plane_windows(eps) > L
    w = np.where(slow, q[0::2] ** 2 + q[1::2] ** 2, 0.0)
    out = lam * (w @ np.real(np.power.outer(family.chi(), np.ravel(n_arr)))).reshape(np.shape(n_arr))
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------
# the law of s_n = qᵀP_n q
# ---------------------------------------------------------------------------------------
def passkey_law(family: StepLawType, q, n: int, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """The law of ``s_n = qᵀP_n q`` as a rule ``(points, weights)``: ``E g(s_n) ≈ Σ_k weights_k g(points_k)``. (claim C3, beyond the paper; derived here)

    The law's own rule (:meth:`~stylized.laws.base.StepLaw.overlap_law`): planes with a continuous angle law, exact
    per-plane folded CDFs binned on the grid ``hℤ`` and convolved (weights ≥ 0, sum 1; error ``O(h)``); lazy Haar /
    Haar, atom ``|q|²`` of weight ``(1 − p)ⁿ`` plus a binned Haar coordinate; Householder, the Chebyshev nodes and
    weights ``e_0ᵀKⁿ`` of the transport chain (signed weights; accurate for smooth ``g`` only).  A law without one
    is refused (estimate it: :func:`stylized.theory.overlap_laws.estimated_rule`).
    """
    q, n = _unit_query(q, _law(family).d), _route(n)
    h = check("h (grid step)", h, 0, 0.1, lo_open=True, scalar=True)
    rule = family.overlap_law(q, n, h)
    if rule is None:
        raise ValueError(f"no passkey law for family {family.name!r}: its law of qᵀP_n q has no closed form "
                         "(overlap_law); estimate it (stylized.theory.overlap_laws.estimated_rule)")
    return rule[0], rule[1]


def mixed_law(family: StepLawType, q, h: float = H_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """The post-mixing law of ``s = qᵀPq`` (route ``≫ W``) binned on ``hℤ``: uniform phases (planes) or a Haar coordinate
    (isotropic), for a law that declares ``mixes_to_uniform`` (:func:`stylized.theory.overlap_laws.far_overlap_law`)."""
    q = _unit_query(q)
    rule = far_overlap_law(family, q, h)
    if rule is None:
        raise ValueError(f"no post-mixing law for family {family.name!r}: it does not declare mixes_to_uniform")
    return rule


# ---------------------------------------------------------------------------------------
# rank and weight among M haystack keys
# ---------------------------------------------------------------------------------------
def chance(M: int) -> float:
    """``1/(M+1)``: the rank-1 probability of a key whose score has the haystack's law. (claim C3, beyond the paper; derived here)

    ``M ≥ 0`` an integer (or an array of them)."""
    M = check("M", M, 0, integer=True)
    out = 1.0 / (M + 1.0)
    return float(out) if out.ndim == 0 else out


def rank_one_probability(points, weights, d: int, M: int) -> float:
    """``P(s_n > max_{j≤M} ξ_j) = E[F_H(s_n)^M]`` for ``M`` independent Haar coordinates ``ξ_j`` on ``S^{d−1}``. (claim C3, beyond the paper; derived here)

    ``points``/``weights``: the rule of ``s_n`` (1-D, one length); ``d ≥ 2``, ``M ≥ 1`` integers."""
    M = check("M", M, 1, integer=True, scalar=True)
    d = check("d", d, 2, integer=True, scalar=True)
    points, weights = _rule(points, weights)
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
        if not isinstance(self.name, str) or self.name not in CONTROLS:
            raise ValueError(f"control must be one of {', '.join(CONTROLS)}; got name={self.name!r:.40}")
        object.__setattr__(self, "m", check("m (ALiBi slope)", self.m, 0, lo_open=True, scalar=True))
        object.__setattr__(self, "gate", check("gate", self.gate, scalar=True))
        object.__setattr__(self, "L_train", check("L_train", self.L_train, 2, integer=True, scalar=True))

    @property
    def r(self) -> float | None:
        """Per-step weight factor (``None`` for ``c = 1``)."""
        decay = _DECAY.get(self.name)
        return None if decay is None else decay(self)

    def log_factor(self, j) -> np.ndarray:
        """``ln c(j) = j ln r`` (0 without a decaying control)."""
        r = self.r
        return np.zeros(np.shape(j)) if r is None else np.asarray(j, dtype=float) * math.log(r)

    def kappa(self, M: int) -> float:
        """Logit scale factor ``κ``: ``ln(M+1)/ln L_train`` under log-scaling, else 1."""
        scale = _LOGIT_SCALE.get(self.name)
        return 1.0 if scale is None else scale(self, M)


#: what each control does, in one place: the per-step weight factor ``r`` of a decaying control (ALiBi
#: ``e^{−m}``, a constant forget gate ``σ(gate)``), and the logit scale ``κ`` of log-scaling (``ln L/ln L_train``,
#: ``L = M + 1``); a control in neither table leaves both alone
_DECAY = {"alibi": lambda c: math.exp(-c.m), "forget-gate": lambda c: 1.0 / (1.0 + math.exp(-c.gate))}
_LOGIT_SCALE = {"log-scaling": lambda c, M: math.log(M + 1) / math.log(c.L_train)}


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
    M = check("M", M, 1, integer=True, scalar=True)
    d = check("d", d, 2, integer=True, scalar=True)
    n = _route(n)
    if not 1 <= n <= M:
        raise ValueError(f"n must lie in [1, M] = [1, {M}], got {n}")
    control = _control(control)
    lam = check("lam (λ)", lam, 0, lo_open=True, scalar=True)
    oversample = check("oversample", oversample, 1, 1024, integer=True, scalar=True)
    points, weights = _rule(points, weights)
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
    position ``n`` is removed later (:func:`expected_weight`).  ``lam > 0``, ``d ≥ 2``, ``M ≥ 1``, ``h_sigma ∈ (0, 1]``.
    """
    control = _control(control)
    lam = check("lam (λ)", lam, 0, lo_open=True, scalar=True)
    d = check("d", d, 2, integer=True, scalar=True)
    M = check("M", M, 1, integer=True, scalar=True)
    h_sigma = check("h_sigma", h_sigma, 0, 1, lo_open=True, scalar=True)
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
    if k_sub * (M // k_res) > MAX_GRID:
        raise ValueError(f"M: {M:,} keys under a decaying control need a grid of {k_sub * (M // k_res):,} nodes, "
                         f"more than {MAX_GRID:,}; past ~{math.ceil(40 / dl):,} keys the decay makes the rest negligible")
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
    M = check("M", M, 1, integer=True, scalar=True)
    n = _route(n)
    if not 1 <= n <= M:
        raise ValueError(f"n must lie in [1, M] = [1, {M}], got {n}")
    k_max = check("k_max", k_max, 1, 8, integer=True, scalar=True)
    control = _control(control)
    check("lam (λ)", lam, 0, lo_open=True, scalar=True)
    points, weights = _rule(points, weights)
    if not (isinstance(haystack, tuple) and len(haystack) == 4 and isinstance(haystack[3], FarLaw)):
        raise ArgumentTypeError(f"haystack must be the tuple (σ, h, log E e^(−σF), far) of haystack_log_laplace, "
                                f"got {type(haystack).__name__}")
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
    m = check("m", m, -1e100, 1e100, ndim=1)
    if m.size < 3:
        raise ValueError(f"m must hold the raw moments (m₁, m₂, m₃), got {m.size} value(s)")
    m1, m2, m3 = (float(x) for x in m[:3])
    var = m2 - m1 * m1
    if var <= 1e-200 or var <= 1e-12 * m2:
        return 0.0
    return (m3 - 3 * m1 * m2 + 2 * m1**3) / var**1.5
