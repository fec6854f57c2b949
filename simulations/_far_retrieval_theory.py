"""The far-retrieval check's theory per step law: which rule gives the law of ``s_n = qᵀP_n q``, and the rank and weight
theories built on it, each with its kind and (for an estimated rule) its own 95% radius.

The rule for route length ``n`` (:func:`overlap_rule`), asked of the law and never of its name or class:

* the law's own :meth:`~stylized.laws.base.StepLaw.overlap_law` (``"closed form"``, or Householder's
  ``"approximation (chain quadrature)"`` before the route has mixed);
* once mixed (``n ≥ 3W(0.01)``), where the law's own rule is not a closed form: the post-mixing law
  (:func:`stylized.theory.overlap_laws.far_overlap_law`, a law declaring ``mixes_to_uniform``), else one estimated from
  reference chains at ``⌈3W⌉`` steps;
* otherwise an estimated rule from reference chains at ``n`` (:func:`stylized.theory.overlap_laws.estimated_rule`).

A refusal (:func:`refusal`) names the one property a law lacks: orthogonal steps (the haystack's content scores
are Haar coordinates only under an orthogonal transport) and i.i.d. steps (``E[P_n] = E[M]ⁿ``, the phase sums).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from stylized.engine.sampling import equal_energy_query
from stylized.theory.bounds import mixing_window
from stylized.theory.overlap_laws import (
    H_DEFAULT,
    OverlapRule,
    estimated_rule,
    far_overlap_law,
    reference_draws,
    rule_radius,
)
from stylized.theory.retrieval import (
    haystack_log_laplace,
    rank_one_probability,
    skewness,
    top_logit_probability,
    weight_moments,
)

__all__ = ["refusal", "window", "own_rule", "estimated_lengths", "overlap_rule", "far_rule", "mixed_rate", "law_theory",
           "rank_probability", "rank_times", "law_theory_times", "mixed_rate_times"]


def refusal(law) -> str | None:
    """Why the check cannot take ``law`` (one line naming the missing property), or ``None``."""
    if not law.orthogonal:
        return (f"family {law.name}: this check needs orthogonal steps (orthogonal=True): the haystack's content "
                "scores are Haar coordinates only under an orthogonal transport")
    if not getattr(law, "iid", True):
        return (f"family {law.name}: this check needs i.i.d. steps (iid=True): its theory rests on "
                "E[P_n] = E[M]ⁿ and on the passkey's overlap law along i.i.d. routes")
    return None


def window(law, share: float) -> float:
    """``W(0.01)`` of a law that mixes within the context (``share = 0``), from the lower end of its gap interval
    (the point ``γ`` for a closed form, so a conservative window for an estimated one); ``inf`` otherwise."""
    if share != 0:
        return math.inf
    return mixing_window(max(0.0, min(1.0, law.gap_interval[0])), 0.01)


def _memo(fn):
    """``lru_cache`` for hashable laws (frozen dataclasses); a call on an unhashable law is not cached."""
    cached = functools.lru_cache(maxsize=1024)(fn)

    @functools.wraps(fn)
    def call(law, *args):
        try:
            hash(law)
        except TypeError:
            return fn(law, *args)
        return cached(law, *args)

    call.cache_clear = cached.cache_clear
    return call


@_memo
def far_rule(law, W: float) -> OverlapRule | None:
    """The post-mixing law of ``qᵀPq`` (equal-energy ``q``): the law's declared limit, else estimated at ``⌈3W⌉``
    steps; ``None`` for a law that does not mix (``W = ∞``) and declares no limit."""
    q = equal_energy_query(law.d)
    rule = far_overlap_law(law, q, H_DEFAULT)
    if rule is not None:
        return OverlapRule(*rule)
    if not math.isfinite(W):
        return None
    return estimated_rule(reference_draws(law, q, [max(1, math.ceil(3 * W))])[:, 0])


@_memo
def own_rule(law, n: int):
    """The law's own rule for ``s_n`` (equal-energy ``q``): :meth:`overlap_law` ``(points, weights, kind)`` or ``None``."""
    return law.overlap_law(equal_energy_query(law.d), n, H_DEFAULT)


def estimated_lengths(law, ns, W: float) -> tuple:
    """The route lengths ``n < 3W`` at which the law has no rule of its own (estimated from reference chains)."""
    return tuple(n for n in ns if n < 3 * W and own_rule(law, n) is None)


@_memo
def overlap_rule(law, n: int, mixed: bool, est_ns: tuple, W: float) -> OverlapRule:
    """The rule for ``s_n`` (module docstring); ``est_ns`` are all the route lengths the run estimates, drawn along
    the same reference chains (so one walk serves every ``n``)."""
    q = equal_energy_query(law.d)
    own = own_rule(law, n)
    if own is not None and (own[2] == "closed form" or not mixed):
        return OverlapRule(*own)
    if mixed:
        return far_rule(law, W)
    return estimated_rule(reference_draws(law, q, list(est_ns))[:, list(est_ns).index(n)])


@_memo
def _mixed_rate(law, M: int, W: float) -> tuple[float, float] | None:
    rule = far_rule(law, W)
    if rule is None:
        return None
    return rank_probability(rule, law.d, M)


def mixed_rate(law, M: int, W: float) -> tuple[float | None, float]:
    """Chance for a mixed route: the rank-1 rate ``E[F_H(s)^M]`` of the post-mixing law, and its radius."""
    r = _mixed_rate(law, M, W)
    return (None, 0.0) if r is None else r


def rank_probability(rule: OverlapRule, d: int, M: int) -> tuple[float, float]:
    """``P(rank 1) = E[F_H(s_n)^M]`` on ``rule`` and its 95% radius (``0`` for a closed form)."""
    f = functools.partial(_rank, d=d, M=M)
    return f(rule.points, rule.weights), rule_radius(rule, f)


def _rank(points, weights, d: int, M: int) -> float:
    return rank_one_probability(points, weights, d, M)


@functools.lru_cache(maxsize=512)
def haystack(control, lam: float, d: int, M: int):
    return haystack_log_laplace(control, lam, d, M)


@_memo
def law_theory(law, n: int, M: int, lam: float, ctrl: tuple, mixed: bool, est_ns: tuple, W: float):
    """Per control: weight moments ``E[α_n^k]`` and the radius of ``E[α_n]``, the top-logit probability (decaying
    controls) and its radius; and the predicted skewness of ``s_n`` (pure: cached across seeds)."""
    rule = overlap_rule(law, n, mixed, est_ns, W)
    pts, wts = rule.points, rule.weights
    moments, m_rad, tops, t_rad = [], [], [], []
    for c in ctrl:
        hay = haystack(c, lam, law.d, M)
        moments.append(weight_moments(pts, wts, n, c, lam, M, hay))
        m_rad.append(rule_radius(rule, lambda p, w, c=c, hay=hay: weight_moments(p, w, n, c, lam, M, hay, k_max=1)[0]))
        if c.r is None:
            tops.append(None)
            t_rad.append(0.0)
            continue
        top = functools.partial(top_logit_probability, d=law.d, M=M, n=n, control=c, lam=lam)
        tops.append(top(pts, wts))
        t_rad.append(rule_radius(rule, top))
    raw = [float(wts @ pts**k) for k in (1, 2, 3)]
    return moments, m_rad, skewness(np.array(raw)), tops, t_rad


# -- perturbations (the power of the check: ``Check.theories``) --------------------------------------------------
def _prob_times(p: float | None, factor: float) -> float | None:
    """A probability ``p`` times ``factor``, capped at 1 when raised (``None`` kept; 0 stays 0)."""
    if p is None:
        return None
    return factor * p if factor <= 1 else min(1.0, factor * p)


def rank_times(factor: float):
    """``rank_theory`` with ``P(rank 1) = E[F_H(s_n)^M]`` times ``factor`` (capped at 1), its 95% radius kept."""
    def rank(rule: OverlapRule, d: int, M: int) -> tuple[float, float]:
        p, radius = rank_probability(rule, d, M)
        return _prob_times(p, factor), radius
    return rank


def law_theory_times(orig, *, weight: float = 1.0, top: float = 1.0):
    """``law_theory`` with the law of ``α_n`` scaled by ``weight`` (``E[α_n^k]·weightᵏ``: ``E[α_n]`` times ``weight``, the
    predicted skewness behind the admission of a mean's row unchanged) and the top-logit probabilities
    ``E[Π_{j≠n} F_H(s_n + (j − n)a)]`` times ``top`` (capped at 1); radii and the skewness of ``s_n`` kept."""
    def theory(law, n, M, lam, ctrl, mixed, est_ns, W):
        moments, m_rad, g_s, tops, t_rad = orig(law, n, M, lam, ctrl, mixed, est_ns, W)
        moments = [np.asarray(m) * weight ** np.arange(1, len(m) + 1) for m in moments]
        return moments, m_rad, g_s, [_prob_times(t, top) for t in tops], t_rad
    return theory


def mixed_rate_times(orig, factor: float):
    """``mixed_rate`` with chance (the post-mixing rank-1 rate ``E[F_H(s)^M]``, ``1/(M+1)`` for an isotropic law) times
    ``factor`` (capped at 1), its radius kept."""
    def rate(law, M: int, W: float) -> tuple[float | None, float]:
        p, radius = orig(law, M, W)
        return _prob_times(p, factor), radius
    return rate
