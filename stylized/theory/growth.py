"""Predicted far mass ``E[ρ_D(L)]``, absolute near weights and the horizon, from the model's laws alone.

No Monte Carlo sample of the check enters: with near sum ``N`` and far sum ``F`` independent,
``E[ρ_D] = E[F/(F+N)] = ∫_0^∞ E[F e^{−σF}] E[e^{−σN}] dσ`` (:func:`stylized.theory.weight_laws.laplace_ratio_mean`),
the expectation of the ratio, not the ratio of expectations.  The Laplace transforms come from
:mod:`stylized.theory.weight_laws`: the far law in closed form (``μ``) and by quadrature, the near window from the
transport chain (or the target's exact moments).  Controls enter as factors ``c_n`` on the weight at
route length ``n``: 1 (none), ``e^{−mn}`` (ALiBi), ``λ → λ ln L/ln L_train`` (log-scaling, every logit),
``E e^{G_n} = φ^n`` (forget gate: *approximation*, the random gate factors replaced by their means).

:func:`wald_horizon`: mean first ``L`` with far sum ≥ near sum, by Wald's identity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core._broadcast import ArgumentTypeError, check, check_callable, check_choice, check_instance
from ..laws.controls import GROWTH_CONTROLS, growth_control
from ..laws.law_type import StepLawType
from .bounds import horizon_prediction
from .weight_laws import (
    FarLaw,
    IsotropicChain,
    ReferenceChain,
    far_laplace_sum,
    laplace_ratio_mean,
    near_chain,
    plane_harmonics,
    sigma_grid,
    so2_overlap_mgf,
)

__all__ = ["wald_horizon", "wald_horizon_bounds", "control_factor", "control_lambda", "mean_near_sum", "predict_growth",
           "ratio_of_means", "horizon_crossing", "predict_transfer", "geometric_sum", "target_chain"]


@dataclass(frozen=True)
class GrowthModel:
    """Parameters of the far-mass growth model (see :mod:`stylized.engine.farmass`).

    ``near = "all"``: every near key equals ``q``; ``"target"``: only the key at route length 0.
    ``m`` ALiBi slope; ``L_train`` of log-scaling (logits × ``ln L / ln L_train``); forget gates
    ``f = σ(g)``, ``g ~ N(gate, gate_sd²)`` per token; ``beta`` of the contraction ``I − β w wᵀ``.
    """

    family: StepLawType
    lam: float
    D: int
    near: str = "all"
    m: float = 1 / 16
    L_train: int = 512
    gate: float = 4.0
    gate_sd: float = 1.0
    beta: float = 0.5


# ---------------------------------------------------------------------------------------
# argument checks (the model, its chain, the context lengths)
# ---------------------------------------------------------------------------------------
_GROWTH_CONTROLS = tuple(n for n, c in GROWTH_CONTROLS.items() if c.predicted)  # those with a prediction


def _check_model(model):
    """``model`` a :class:`GrowthModel` whose fields lie in their domains (else a
    ``ValueError`` naming the field)."""
    check_instance("model", model, GrowthModel, "a GrowthModel (stylized.theory.growth)")
    check_instance("model.family", model.family, StepLawType, "a step law (StepLaw, see make_family)")
    check("model.lam (λ)", model.lam, 0, scalar=True)
    check("model.D", model.D, 1, integer=True, scalar=True)
    check_choice("model.near", model.near, ("all", "target"))
    check("model.m (ALiBi slope)", model.m, 0, lo_open=True, scalar=True)
    check("model.L_train", model.L_train, 2, integer=True, scalar=True)
    check("model.gate", model.gate, scalar=True)
    check("model.gate_sd", model.gate_sd, 0, scalar=True)
    return model


def _check_chain(name: str, chain, methods: tuple[str, ...], *, optional: bool = True):
    """``chain`` ``None`` (when ``optional``) or an object with the callable ``methods`` (a near or target chain)."""
    if (optional and chain is None) or all(callable(getattr(chain, m, None)) for m in methods):
        return chain
    raise ArgumentTypeError(f"{name} must be a chain with {', '.join(methods)} (IsotropicChain, ReferenceChain)"
                            f"{' or None' if optional else ''}, got {type(chain).__name__}")


def _check_lengths(Ls, D: int) -> np.ndarray:
    """Context lengths ``L > D`` (a non-empty 1-D array of integers) as int64."""
    return check("Ls (context lengths)", Ls, D + 1, integer=True, ndim=1, nonempty=True)


# ---------------------------------------------------------------------------------------
# horizon and the forget gate's mean factors
# ---------------------------------------------------------------------------------------
def wald_horizon(mean_near: float, far: FarLaw, D: int) -> tuple[float, float]:
    """Mean first context length ``L*`` at which the far sum reaches the near sum ``N`` (claim C4, *derived here*).

    Wald's identity for ``τ = min{k : X_1 + … + X_k ≥ N}`` (``N`` independent of the ``X``):
    ``E τ = (E N + E[overshoot]) / μ``, ``L* = D + τ``.  The mean overshoot is taken at its renewal limit
    ``E X²/(2μ)``.  Returns ``(D + (E N + E X²/(2μ))/μ, D + E N/μ)``: the prediction and the ratio-of-means
    horizon ``L_{1/2}`` where ``(L − D)μ = E N``.  ``mean_near ≥ 0``, ``D ≥ 0`` an integer.
    """
    mean_near = check("mean_near", mean_near, 0, scalar=True)
    check_instance("far", far, FarLaw)
    D = check("D", D, 0, integer=True, scalar=True)
    mu = far.mean
    return D + (mean_near + far.second_moment / (2 * mu)) / mu, horizon_prediction(mean_near, mu, D)


def wald_horizon_bounds(mean_near: float, far: FarLaw, D: int) -> tuple[float, float]:
    """Exact bounds on the mean first context length ``L*`` of :func:`wald_horizon` (claim C4, *derived here*).

    Wald's identity ``E τ = (E N + E R)/μ`` is exact; the mean overshoot ``R = S_τ − N`` obeys
    ``0 ≤ E R ≤ E X²/μ`` at every level (Lorden's inequality, i.i.d. ``X ≥ 0``), so
    ``D + E N/μ ≤ E L* ≤ D + (E N + E X²/μ)/μ``; :func:`wald_horizon`'s renewal-limit ``E X²/(2μ)`` is the
    midpoint.  The same holds given ``N`` (``mean_near`` a query's own near sum).
    """
    mean_near = check("mean_near", mean_near, 0, scalar=True)
    check_instance("far", far, FarLaw)
    D = check("D", D, 0, integer=True, scalar=True)
    mu = far.mean
    return D + mean_near / mu, D + (mean_near + far.second_moment / mu) / mu


def geometric_sum(r: float, start: int, stop: int, power: int = 1) -> float:
    """``Σ_{start ≤ n < stop} r^{kn}`` (``k = power``, ``0 < r < 1``) as ``r^{k·start} (1 − r^{k(stop−start)})/(1 − r^k)``.

    The far weight of the controls with ``c_n = r^n`` (ALiBi ``r = e^{−m}``, the forget gate's mean ``φ``)
    summed over far route lengths; ``expm1`` keeps it accurate for ``r`` near 1.
    """
    return r ** (power * start) * -math.expm1(power * (stop - start) * math.log(r)) / (1 - r**power)


# ---------------------------------------------------------------------------------------
# the growth model's predicted ρ_D(L) per control
# ---------------------------------------------------------------------------------------
def _far_terms(far: FarLaw, c_of_n, D: int, Ls: np.ndarray, sig: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``log E e^{−σF(L)}`` and ``E[F e^{−σF}]/E e^{−σF}`` for ``F(L) = Σ_{D≤n<L} c_n X_n`` at every ``L``.

    ``c_of_n=None``: ``c_n = 1`` (closed in ``M = L − D``).  Else ``c_n = r^n`` geometric: explicit terms while
    ``c_n σ_max e^λ > 10⁻³``, then the tail to second order in ``σ c_n`` (geometric sums).
    """
    M = (Ls - D).astype(float)[:, None]
    if c_of_n is None:
        lp, tl = far.laplace_pair(sig)
        return M * lp[None, :], M * tl[None, :]
    r = float(c_of_n)
    n_cut = int(min(Ls.max(), D + max(1, math.ceil(math.log(1e-3 / (sig.max() * math.exp(lam) * far.scale)) / math.log(r)))))
    n = np.arange(D, n_cut)
    lp, tl = far_laplace_sum(far, r**n, sig)
    mu, m2 = far.mean, far.second_moment
    out_lp, out_tl = np.empty((Ls.size, sig.size)), np.empty((Ls.size, sig.size))
    for k, L in enumerate(Ls):
        if L <= n_cut:
            out_lp[k], out_tl[k] = lp[L - D - 1], tl[L - D - 1]
            continue
        g1, g2 = geometric_sum(r, n_cut, L), geometric_sum(r, n_cut, L, power=2)
        out_lp[k] = lp[-1] - sig * mu * g1 + 0.5 * sig**2 * m2 * g2
        out_tl[k] = tl[-1] + mu * g1 - sig * (m2 - mu * mu) * g2
    return out_lp, out_tl


def control_factor(model, control: str) -> float | None:
    """Geometric weight factor ``r`` of a control (``c_n = r^n``), ``None`` for ``c_n = 1`` (the control's own
    :meth:`~stylized.laws.controls.GrowthControl.weight_factor`)."""
    return growth_control(control).weight_factor(model)


def control_lambda(model, control: str, L: int) -> float:
    """The logit scale at context length ``L``: ``λ ln L/ln L_train`` under log-scaling, else ``λ`` (the control's own
    :meth:`~stylized.laws.controls.GrowthControl.lam_at`)."""
    return growth_control(control).lam_at(model, L)


def mean_near_sum(model, lam: float, r: float | None, chain, far: FarLaw) -> float:
    """(claim C4, *derived here*) ``E N = Σ_{n<D} c_n E e^{λ t_n}`` (aligned keys) or ``c_0 e^λ + Σ_{0<n<D} c_n μ`` (target only).

    ``lam`` finite, ``r ∈ (0, 1]`` (or ``None``: ``c_n = 1``), ``chain`` the near chain (used for aligned keys),
    ``far`` a :class:`FarLaw`.
    """
    _check_model(model)
    lam = check("lam (λ)", lam, scalar=True)
    if r is not None:
        r = check("r (weight factor)", r, 0, 1, lo_open=True, scalar=True)
    _check_chain("chain", chain, ("mgf",), optional=model.near != "all")
    check_instance("far", far, FarLaw)
    D = model.D
    c = np.ones(D) if r is None else r ** np.arange(D, dtype=float)
    per = chain.mgf(lam, D) if model.near == "all" else np.r_[math.exp(lam), np.full(D - 1, far.mean)]
    return float(c @ per)


def predict_growth(model, Ls, controls, far_law=FarLaw, chain=None, h: float = 0.1) -> dict:
    """(claim C4, *derived here*) Predicted ``E[ρ_D(L)]`` per control (``none``, ``alibi``, ``log-scaling``, ``forget-gate``) at every ``L``.

    ``model``: a :class:`GrowthModel`.  ``far_law(lam, d)`` builds the far law and ``chain``
    is the near chain (default :func:`stylized.theory.weight_laws.near_chain`); both are parameters so that a mutation
    test can hand in wrong ones.  Returns ``{control: (values over Ls, kind)}`` with ``kind`` ``"closed
    form"`` (Laplace transforms by quadrature), ``"approximation"`` (forget gate: the gate factors
    ``e^{G_n}`` replaced by their means ``φ^n``; error ≈ 0.5% of ρ_D in tests), ``"simulated reference"``
    (near chain simulated: SO(2) blocks, or any law without a one-dimensional chain, with aligned near keys) or
    the chain's ``"estimated (Monte Carlo, n = …)"`` (an isotropic law without a closed-form operator).
    ``Ls``: context lengths ``L > D``; ``controls``: names from ``none``, ``alibi``, ``log-scaling``,
    ``forget-gate``, ``contraction`` (skipped: no prediction); ``h ∈ (0, 1]`` the quadrature step in ``ln σ``.
    """
    _check_model(model)
    Ls = _check_lengths(Ls, model.D)
    if isinstance(controls, str) or not isinstance(controls, (list, tuple)):
        raise ArgumentTypeError(f"controls must be a list of control names ({', '.join(GROWTH_CONTROLS)}), "
                                f"got {type(controls).__name__} {controls!r:.40}")
    for c in controls:
        check_choice("controls", c, tuple(GROWTH_CONTROLS))
    check_callable("far_law", far_law)
    _check_chain("chain", chain, ("mgf", "log_laplace"))
    h = check("h (quadrature step)", h, 0, 1, lo_open=True, scalar=True)
    D, d = model.D, model.family.d
    kind0 = "closed form"
    if model.near == "all" and chain is None:
        chain, kind0 = near_chain(model.family, D)
    elif model.near == "all":
        kind0 = getattr(chain, "theory_kind", kind0)
    out = {}
    for c in controls:
        ctl = growth_control(c)
        if not ctl.predicted:
            continue
        r = ctl.weight_factor(model)
        groups = [(Ls, model.lam)] if not ctl.length_scaled else [(Ls[j:j + 1], ctl.lam_at(model, int(L)))
                                                                  for j, L in enumerate(Ls)]
        vals = []
        for sel, lm in groups:
            far = far_law(lm, d)
            cn = np.ones(D) if r is None else r ** np.arange(D, dtype=float)
            top = mean_near_sum(model, lm, r, chain, far) + far.mean * float(sel.max() - D)
            sig, hh = sigma_grid(1e-10 / top, 40.0 * math.exp(-lm), h)
            if model.near == "target":
                lpn = -sig * math.exp(lm) + far.log_laplace(np.outer(cn[1:], sig)).sum(axis=0)
            else:
                lpn = chain.log_laplace(lm, cn, sig)
            lpf, tlf = _far_terms(far, r, D, sel, sig, lm)
            vals.append(laplace_ratio_mean(lpf, tlf, lpn[None, :], sig, hh))
        kind = "approximation" if ctl.approximation else (kind0 if model.near == "all" else "closed form")
        out[c] = (np.concatenate(vals), kind)
    return out


def ratio_of_means(model, Ls, control: str, far_law=FarLaw, chain=None) -> np.ndarray:
    """(claim C4, *derived here*) ``E F / (E F + E N)`` per ``L``: the ratio of expectations, for comparison with ``E[F/(F+N)]`` (the prediction).

    Their difference is the Jensen gap of the ratio; it vanishes where one sum dominates (small and large ``L``).
    ``Ls``: context lengths ``L > D``; ``control``: ``none``, ``alibi``, ``log-scaling`` or ``forget-gate``.
    """
    _check_model(model)
    Ls = _check_lengths(Ls, model.D)
    check_choice("control", control, _GROWTH_CONTROLS)
    check_callable("far_law", far_law)
    _check_chain("chain", chain, ("mgf", "log_laplace"))
    if model.near == "all" and chain is None:
        chain = near_chain(model.family, model.D)[0]
    r, out = control_factor(model, control), np.empty(Ls.size)
    for k, L in enumerate(Ls):
        lm = control_lambda(model, control, int(L))
        far = far_law(lm, model.family.d)
        EF = far.mean * ((L - model.D) if r is None else geometric_sum(r, model.D, L))
        out[k] = EF / (EF + mean_near_sum(model, lm, r, chain, far))
    return out


def horizon_crossing(model, far_law=FarLaw, chain=None, h: float = 0.1) -> float:
    """(claim C4, *derived here*) The context length ``L_{1/2}`` where the predicted ``E[ρ_D(L)]`` without control equals ½ (real ``L``).

    Bisection in ``ln M`` on the exact Laplace form (``M = L − D`` far keys); ``h ∈ (0, 1]`` the quadrature step.
    """
    _check_model(model)
    check_callable("far_law", far_law)
    _check_chain("chain", chain, ("mgf", "log_laplace"))
    h = check("h (quadrature step)", h, 0, 1, lo_open=True, scalar=True)
    D = model.D
    if model.near == "all" and chain is None:
        chain = near_chain(model.family, D)[0]
    far = far_law(model.lam, model.family.d)
    EN = mean_near_sum(model, model.lam, None, chain, far)
    sig, hh = sigma_grid(1e-12 / EN, 40.0 * math.exp(-model.lam), h)
    lpn = chain.log_laplace(model.lam, np.ones(D), sig) if model.near == "all" else \
        -sig * math.exp(model.lam) + (D - 1) * far.log_laplace(sig)
    lp1, tl1 = far.laplace_pair(sig)

    def rho(M):
        return float(laplace_ratio_mean(M * lp1, M * tl1, lpn, sig, hh))

    lo, hi = 1.0, 4.0 * EN / far.mean + 10.0
    while rho(hi) < 0.5:
        hi *= 2
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if rho(mid) < 0.5 else (lo, mid)
    return D + math.sqrt(lo * hi)


# ---------------------------------------------------------------------------------------
# the transfer model: one planted target among uniform keys
# ---------------------------------------------------------------------------------------
def target_chain(family: StepLawType, n: int):
    """The transport law of the planted target ``t_n = qᵀP_n q``: the :class:`IsotropicChain` of an isotropic
    orthogonal law, ``None`` for commuting planes with closed-form harmonics (exact Jacobi–Anger moments), else a
    :class:`ReferenceChain` (simulated reference chains of the law)."""
    if IsotropicChain.supports(family):
        return IsotropicChain(family)
    return None if plane_harmonics(family) else ReferenceChain(family, n + 1)


def _target_laplace(family: StepLawType, lam: float, n: int, sig: np.ndarray, q: np.ndarray,
                    chain=None) -> tuple[np.ndarray, np.ndarray, str]:
    """For the planted target ``Y = e^{λ qᵀP_n q}``: ``log E e^{−σY}``, ``E[Y e^{−σY}]/E e^{−σY}`` and the kind.

    ``n = 0``: ``Y = e^λ``.  ``chain`` (default :func:`target_chain`): an isotropic law's chain operator (closed
    form by quadrature, or estimated), or a simulated reference.  SO(2) planes (``chain`` ``None``):
    third-order cumulant closure ``log E e^{−σY} ≈ −σκ₁ + σ²κ₂/2 − σ³κ₃/6`` from the exact moments
    ``E Y^k = E e^{kλ qᵀP_n q}`` (:func:`so2_overlap_mgf`), capped by ``−σ e^{−λ}`` (``Y ≥ e^{−λ}``) where
    ``σ`` is so large that the cap binds ("approximation").
    """
    if n == 0:
        return -sig * math.exp(lam), np.full(sig.size, math.exp(lam)), "closed form"
    chain = target_chain(family, n) if chain is None else chain
    if chain is not None:
        lp, tl = chain.laplace_at(lam, n, sig)
        return lp, tl, chain.theory_kind
    m1, m2, m3 = (so2_overlap_mgf(family, n, k * lam, q) for k in (1, 2, 3))
    k1, k2, k3 = m1, m2 - m1 * m1, m3 - 3 * m1 * m2 + 2 * m1**3
    lp = -sig * k1 + sig**2 * k2 / 2 - sig**3 * k3 / 6
    tl = k1 - sig * k2 + sig**2 * k3 / 2
    cap = lp > -sig * math.exp(-lam)
    return np.where(cap, -sig * math.exp(-lam), lp), np.where(cap, math.exp(-lam), tl), "approximation"


def predict_transfer(family: StepLawType, lam: float, D: int, target_n: int, Ls, q: np.ndarray,
                     far_law=FarLaw, h: float = 0.1, chain=None) -> dict:
    """(claim C3, *derived here*) Predicted means of the transfer model (target ``k = q`` at route length ``target_n``, other keys uniform).

    Near sum ``N = Y + R`` (``Y`` the target's weight, ``R`` the ``D − 1`` uniform near keys), far sum ``F``
    (``L − D`` uniform keys).  Returns ``rho`` (``E[F/(F+N)]`` per ``L``), ``alpha_target`` (``E[Y/(F+N)]``
    per ``L``: the absolute near weight, which depends on ``L`` through the normaliser), ``alpha_renorm``
    (``E[Y/N]``, the renormalised near weight: no ``L`` in it), ``mean_near`` (``E N``) and ``kind``.
    ``chain``: the target's transport law (default :func:`target_chain`; a batch chain for an estimate's radius).
    ``lam ≥ 0``, ``D ≥ 1``, ``0 ≤ target_n < D``, ``Ls`` context lengths ``L > D``, ``q`` a finite vector of
    length ``d``, ``h ∈ (0, 1]``.
    """
    check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")
    lam = check("lam (λ)", lam, 0, scalar=True)
    D = check("D", D, 1, integer=True, scalar=True)
    target_n = check("target_n", target_n, 0, D - 1, integer=True, scalar=True)
    Ls = _check_lengths(Ls, D)
    q = check("q", q, ndim=1, size=family.d)
    check_callable("far_law", far_law)
    h = check("h (quadrature step)", h, 0, 1, lo_open=True, scalar=True)
    _check_chain("chain", chain, ("mgf", "laplace_at"))
    far = far_law(lam, family.d)
    chain = target_chain(family, target_n) if chain is None and target_n > 0 else chain
    y_mean = math.exp(lam) if target_n == 0 else (
        chain.mgf(lam, target_n + 1)[target_n] if chain is not None else so2_overlap_mgf(family, target_n, lam, q))
    mean_near = y_mean + (D - 1) * far.mean
    sig, hh = sigma_grid(1e-10 / (mean_near + far.mean * float(Ls.max() - D)), 40.0 * math.exp(lam) / D, h)
    lpy, tly, kind = _target_laplace(family, lam, target_n, sig, q, chain)
    lp1, tl1 = far.laplace_pair(sig)
    lpr = (D - 1) * lp1
    M = (Ls - D).astype(float)[:, None]
    rho = laplace_ratio_mean(M * lp1, M * tl1, (lpr + lpy)[None, :], sig, hh)
    alpha = laplace_ratio_mean(M * lp1 + lpr, np.broadcast_to(tly, (Ls.size, sig.size)), lpy[None, :], sig, hh)
    renorm = float(laplace_ratio_mean(lpr, tly, lpy, sig, hh))
    return {"rho": rho, "alpha_target": alpha, "alpha_renorm": renorm, "mean_near": mean_near, "kind": kind}
