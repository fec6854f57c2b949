"""Far-mass controls of the growth model: what each does to the logit at route length ``n``, and its theory.

A control is an object, as a step law is: the engine (:mod:`stylized.engine.farmass`) and the theory
(:mod:`stylized.theory.growth`) ask it through these methods, never by its name.  Its parameters live on the
:class:`~stylized.theory.growth.GrowthModel` (``m``, ``L_train``, ``gate``, ``gate_sd``, ``beta``); the control
reads them.

==============================  ====================================================================================
theory
``weight_factor(model)``        ``r`` of the weight factors ``c_n = r^n`` (``None``: ``c_n = 1``)
``lam_at(model, L)``            the logit scale at context length ``L`` (``λ``, or ``λ ln L/ln L_train``)
``predicted``                   whether :func:`~stylized.theory.growth.predict_growth` has a prediction for it
``approximation``               whether that prediction is an approximation (the forget gate's mean factors)
``far_mass_bound(model, L)``    ``(bound on ρ_D(L) or None, "lower" | "upper" | "", what it is)``
``saturates``                   whether its far mass stops growing (a decaying weight: ALiBi, the forget gate)
engine
``length_scaled``               logits rescaled per context length (``logit_scales``): near and far sums per ``L``
``literal_logits(route)``       logits over the literally simulated route (numpy/numba path)
``near_logits_xp(...)``         the near window's logits of ``T`` queries at once (array-namespace path)
``chunk_logits(...)``           logits of a block of streamed far route lengths (both paths), with the control's state
==============================  ====================================================================================

Draw order is part of the law of a run: the literal route draws every control's randomness (registry order),
whichever controls are asked, so one control's rows do not depend on the others asked; streamed blocks draw
only the asked controls', in registry order.

Example
-------
>>> from stylized.laws.families import make_family
>>> from stylized.theory.growth import GrowthModel
>>> model = GrowthModel(make_family("householder", 8), lam=2.0, D=4, m=0.5)
>>> round(growth_control("alibi").weight_factor(model), 4), growth_control("none").weight_factor(model)
(0.6065, None)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = ["GrowthControl", "LiteralRoute", "GROWTH_CONTROLS", "growth_control", "register_control"]


@dataclass(frozen=True)
class LiteralRoute:
    """One query's literally simulated route: scores ``s_n = λ qᵀP_n k_n`` without control (``n = 0 … N−1``),
    route lengths ``n`` (float), the query, the keys, the run's Generator and backend."""

    model: Any
    s: np.ndarray
    n: np.ndarray
    q: np.ndarray
    keys: np.ndarray
    rng: np.random.Generator
    backend: str


def _column(state):
    """A per-query state ``(T,)`` as a column against a block ``(T, b)``; a scalar state as it is."""
    return state if np.ndim(state) == 0 else state[:, None]


class GrowthControl:
    """No control: the base class; a control overrides what it changes."""

    name: ClassVar[str] = "none"
    predicted: ClassVar[bool] = True
    approximation: ClassVar[bool] = False
    length_scaled: ClassVar[bool] = False
    saturates: ClassVar[bool] = False

    # -- theory --------------------------------------------------------------------------------------------------
    def weight_factor(self, model) -> float | None:
        """``r`` in ``c_n = r^n`` (``None``: ``c_n = 1``)."""
        return None

    def lam_at(self, model, L: int) -> float:
        """The logit scale ``λ`` at context length ``L``."""
        return model.lam

    def far_mass_bound(self, model, L: int) -> tuple[float | None, str, str]:
        """A bound on ``ρ_D(L)`` that holds by construction: ``(value, "lower" | "upper", what it is)``, or
        ``(None, "", why there is none)``.  Logits in ``[−λ, λ]``: ``ρ_D ≥ M/(M + K e^{2λ})``, ``M = L − D``."""
        from ..theory.bounds import far_mass_lower_bound

        return far_mass_lower_bound(model.D, L - model.D, model.lam), "lower", \
            "lower bound M/(M+Ke^{2λ}) (any logits ≤ λ)"

    # -- engine --------------------------------------------------------------------------------------------------
    def logit_scales(self, model, Ls: np.ndarray) -> np.ndarray:
        """Per context length, the factor on every logit (1 unless :attr:`length_scaled`)."""
        return np.ones(np.shape(Ls))

    def literal_logits(self, route: LiteralRoute) -> tuple[np.ndarray, Any]:
        """``(logits over the literal route, state carried into the streamed blocks)``."""
        return route.s, None

    def near_logits_xp(self, model, s_near, xrng, xp) -> tuple[Any, Any]:
        """The near window's logits ``(T, D)`` from its scores ``s_near``, and the state."""
        return s_near, None

    def chunk_logits(self, model, base, offsets, xrng, state, xp) -> tuple[Any, Any]:
        """Logits of far route lengths ``offsets`` (``base`` = ``λξ``, ``(b,)`` or ``(T, b)``) and the new state."""
        return base, state


class Alibi(GrowthControl):
    """ALiBi: ``−m n`` on the logit at route length ``n`` (weight factor ``e^{−m}``)."""

    name = "alibi"
    saturates = True

    def weight_factor(self, model) -> float:
        return math.exp(-model.m)

    def far_mass_bound(self, model, L):
        from ..theory.bounds import alibi_far_mass_bound

        return alibi_far_mass_bound(model.lam, model.m, model.D), "upper", "upper bound S/(S+Z_min), every L"

    def literal_logits(self, route):
        return route.s - route.model.m * route.n, None

    def near_logits_xp(self, model, s_near, xrng, xp):
        return s_near - model.m * xp.arange(s_near.shape[1], dtype=xp.float64), None

    def chunk_logits(self, model, base, offsets, xrng, state, xp):
        return base - model.m * offsets, state


class LogScaling(GrowthControl):
    """Log-scaling: every logit times ``ln L/ln L_train`` (``λ → λ ln L/ln L_train``)."""

    name = "log-scaling"
    length_scaled = True

    def lam_at(self, model, L: int) -> float:
        return model.lam * math.log(L) / math.log(model.L_train)

    def far_mass_bound(self, model, L):
        from ..theory.bounds import far_mass_lower_bound

        return far_mass_lower_bound(model.D, L - model.D, self.lam_at(model, L)), "lower", "lower bound at λκ(L)"

    def logit_scales(self, model, Ls):
        return np.log(Ls) / math.log(model.L_train)


class ForgetGate(GrowthControl):
    """FoX-style forget gate: ``G_n = Σ log σ(g)`` over the route's tokens, ``g ~ N(gate, gate_sd²)``.

    Theory: the gate factors ``e^{G_n}`` replaced by their means ``φ^n``, ``φ = E σ(g)`` (an approximation)."""

    name = "forget-gate"
    approximation = True
    saturates = True

    def far_mass_bound(self, model, L):
        return None, "", "none (logits unbounded below)"

    def weight_factor(self, model) -> float | None:
        from ..theory.bounds import forget_gate_mean

        r = forget_gate_mean(model.gate, model.gate_sd)
        return None if r >= 1.0 else r  # σ(g) = 1 in float64 (g ≳ 37): no decay, c_n = 1

    @staticmethod
    def _log_gates(model, rng, shape, xp=np):
        """``log σ(g)``, ``g ~ N(gate, gate_sd²)`` per token, drawn from ``rng`` in namespace ``xp``."""
        return -xp.logaddexp(0.0, -(model.gate + model.gate_sd * rng.standard_normal(size=shape)))

    def literal_logits(self, route):
        logf = self._log_gates(route.model, route.rng, route.s.shape[0])
        logf[0] = 0.0
        G = np.cumsum(logf)  # Σ over the n tokens of the route
        return route.s + G, float(G[-1])

    def near_logits_xp(self, model, s_near, xrng, xp):
        logf = self._log_gates(model, xrng, s_near.shape, xp)
        logf[:, 0] = 0.0
        G = xp.cumsum(logf, axis=1)
        return s_near + G, G[:, -1]

    def chunk_logits(self, model, base, offsets, xrng, state, xp):
        G = _column(state) + xp.cumsum(self._log_gates(model, xrng, base.shape, xp), axis=-1)
        return base + G, G[..., -1]


class ContractionControl(GrowthControl):
    """PaTH-style contraction ``I − β w wᵀ`` in place of the orthogonal steps (no prediction here).

    Far scores are ``λ ||u_n|| ξ`` with ``||u_{n+1}||² = ||u_n||² (1 − β(2−β)c)``, ``c ~ Beta(½, (d−1)/2)``."""

    name = "contraction"
    predicted = False

    def literal_logits(self, route):
        from ..core.step_ops import uniform_sphere
        from ..engine.score_chains import contraction_queries_numba, contraction_queries_numpy

        model, d = route.model, route.model.family.d
        w = uniform_sphere(route.rng, (route.s.shape[0],), d)
        kernel = contraction_queries_numba if route.backend == "numba" else contraction_queries_numpy
        U = kernel(w, route.q, model.beta)
        return model.lam * np.einsum("nd,nd->n", U, route.keys), math.log(max(float(U[-1] @ U[-1]), 1e-300))

    def near_logits_xp(self, model, s_near, xrng, xp):
        from ..engine.sampling import equal_energy_query, haar_coordinates
        from ..engine.score_chains import contraction_queries_numpy

        (T, D), d = s_near.shape, model.family.d
        n_al = D if model.near == "all" else 1
        g = xrng.standard_normal(size=(D, T, d))
        q = xp.asarray(equal_energy_query(d))
        U = contraction_queries_numpy(g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True)), q, model.beta)
        norms = xp.sqrt(xp.sum(U[n_al:] ** 2, axis=-1)).T
        near = xp.concatenate([model.lam * (U[:n_al] @ q).T,
                               model.lam * norms * haar_coordinates(xrng, norms.shape, d)], axis=1)
        return near, xp.log(xp.maximum(xp.sum(U[-1] ** 2, axis=-1), 1e-300))

    def chunk_logits(self, model, base, offsets, xrng, state, xp):
        from ..engine.sampling import haar_coordinates

        d = model.family.d
        shrink = model.beta * (2.0 - model.beta)
        lu = _column(state) + xp.cumsum(xp.log1p(-shrink * xrng.beta(0.5, (d - 1) / 2.0, size=base.shape)), axis=-1)
        return model.lam * xp.exp(0.5 * lu) * haar_coordinates(xrng, base.shape, d), lu[..., -1]


GROWTH_CONTROLS: dict[str, GrowthControl] = {}
"""Registered controls by name, in registry (draw) order."""


def register_control(control: GrowthControl) -> GrowthControl:
    """Register ``control`` under its :attr:`~GrowthControl.name` (appended to the draw order)."""
    if not isinstance(control, GrowthControl):
        raise TypeError(f"a control is a GrowthControl instance, got {type(control).__name__}")
    if control.name in GROWTH_CONTROLS and type(GROWTH_CONTROLS[control.name]) is not type(control):
        raise ValueError(f"control {control.name!r} is registered twice")
    GROWTH_CONTROLS[control.name] = control
    return control


for _c in (GrowthControl(), Alibi(), LogScaling(), ForgetGate(), ContractionControl()):
    register_control(_c)


def growth_control(name: str) -> GrowthControl:
    """The registered control called ``name`` (``ValueError`` naming the choices otherwise)."""
    try:
        return GROWTH_CONTROLS[name]
    except (KeyError, TypeError):
        raise ValueError(f"control must be one of {', '.join(GROWTH_CONTROLS)}; got {name!r}") from None
