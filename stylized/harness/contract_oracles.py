"""Items of the step-law contract holding a law's theory and transport to dense oracles, and rebuilding it at other d.

* ``gap-oracle`` — ``γ`` equals ``1 − ||E[M]||_op`` of the dense mean (SVD) to ``1e-12``;
* ``mean-power`` — ``E[M]ⁿ`` and ``qᵀE[M]ⁿq`` equal dense matrix powers at ``n = 0, 1, 2, 9``;
* ``window`` — ``||E[M]^W||_op ≤ ε`` at ``W = W(ε)``, the least such ``W`` when ``0 < γ < 1``;
* ``random-state`` — an integer seed and a Generator seeded with it draw the same steps, route steps included;
* ``one-step`` — ``E[qᵀ m_1 k] = qᵀE[M]k`` through the law's route transport (4.5 standard errors);
* ``backends`` — route and position transport, the ``cupy`` path on NumPy and compiled kernels against ``P_{j→i}``;
* ``dimensions`` — the law rebuilt at ``d = 1`` refused, at ``d = 2, 3, 4, 7, 33`` built, a declared closed-form ``γ``
  at ``d = 2048`` in under 0.5 s.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..core.backend import numpy_standin_for_cupy
from ..core.step_ops import uniform_sphere
from ..engine.transport_reference import (
    position_to_route,
    reference_scores,
    reference_sum,
    route_product,
    route_products,
)
from ..laws.base import StepLaw
from .contract_item import contract_item

__all__ = ["check_law_gap_oracle", "check_law_mean_power", "check_law_window", "check_law_random_state",
           "check_law_one_step", "check_law_backends", "check_law_dimensions", "Z_ORACLE", "TOL_TRANSPORT"]

Z_ORACLE = 4.5
"""Band of ``one-step`` in standard errors (two-sided ≈ 7e-6 for a true difference of 0)."""

TOL_TRANSPORT = 1e-10
"""Agreement of a transport path with the dense route product (float64 rounding over ≤ 20 steps)."""


def _route_steps(law, shape: tuple, rng):
    """Steps fixed pathwise (:meth:`pathwise_steps`: dense Haar matrices for a law applied in law) and their
    ``shape + (d, d)`` matrices."""
    steps = law.pathwise_steps(rng, shape, np)
    if np.ndim(steps) == len(shape) + 2:  # already dense (a dense law's draws, or Haar matrices)
        return steps, np.asarray(steps, dtype=float)
    flat = np.reshape(steps, (-1,) + np.shape(steps)[len(shape):])
    return steps, np.asarray(law.dense(flat, rng), dtype=float).reshape(tuple(shape) + (law.d, law.d))


def _close(a, b, atol: float) -> bool:
    """``np.allclose(a, b, atol=atol)`` (its default ``rtol = 1e-5``): the tolerance the family tests used."""
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), atol=atol))


@contract_item("gap-oracle")
def check_law_gap_oracle(law, seed, samples):
    """``γ`` (a closed form where the law declares one) against ``1 − ||E[M]||_op`` by dense SVD, to ``1e-12``."""
    if not law.iid:
        return True, "dependent steps (iid = False): γ is the chain's, not 1 − ||E[M]||_op"
    dense = 1.0 - float(np.linalg.norm(np.asarray(law.theory_mean(), dtype=float), ord=2))
    err = abs(law.spectral_gap - dense)
    return err <= 1e-12, f"γ = {law.spectral_gap:.6g}, dense SVD {dense:.6g}: |Δ| = {err:.2g}"


@contract_item("mean-power")
def check_law_mean_power(law, seed, samples):
    """``E[M]ⁿ`` and ``qᵀE[M]ⁿq`` (one ``n`` and an array of them) against dense matrix powers, ``n = 0, 1, 2, 9``."""
    if not law.iid:
        return True, "dependent steps (iid = False): E[P_n] ≠ E[M]ⁿ, compared in distribution by walk-vs-mean"
    q = np.random.default_rng(seed + 3).standard_normal(law.d)
    ns = (0, 1, 2, 9)
    mean = np.asarray(law.theory_mean(), dtype=float)
    dense = [np.linalg.matrix_power(mean, n) for n in ns]
    powers = [law.mean_power(n) for n in ns]
    err_p = max(float(np.max(np.abs(p - P))) for p, P in zip(powers, dense))
    want = np.array([q @ P @ q for P in dense])
    one = np.array([float(law.mean_overlap(q, n)) for n in ns])
    many = np.asarray(law.mean_overlap(q, np.array(ns)), dtype=float)
    ok = all(_close(p, P, 1e-13) for p, P in zip(powers, dense)) and _close(many, want, 1e-13)
    ok = ok and bool(np.all(np.abs(one - want) <= np.maximum(1e-13, 1e-12 * np.abs(want))))
    return ok, (f"max |E[M]ⁿ − dense| {err_p:.2g}, max |qᵀE[M]ⁿq − dense| {float(np.max(np.abs(one - want))):.2g} "
                f"(one n), {float(np.max(np.abs(many - want))):.2g} (array), n = 0, 1, 2, 9")


@contract_item("window")
def check_law_window(law, seed, samples):
    """``||E[M]^W||_op ≤ ε`` at ``W = W(ε)`` for ``ε = 0.5, 0.05, 1e-4``; with ``0 < γ < 1`` also
    ``(1−γ)^{W−1} > ε`` (the least such ``W``); ``W = ∞`` only when ``γ = 0``."""
    g, bad = law.spectral_gap, []
    for eps in (0.5, 0.05, 1e-4):
        W = law.mixing_window(eps)
        if math.isinf(W):
            bad += [] if g == 0.0 else [f"W({eps:g}) = ∞ with γ = {g:.3g}"]
            continue
        norm = float(np.linalg.norm(law.mean_power(int(W)), 2))
        if norm > eps * (1 + 1e-9):
            bad.append(f"||E[M]^W||_op = {norm:.3g} > ε = {eps:g} at W = {W:g}")
        if 0.0 < g < 1.0 and not (1 - g) ** (W - 1) > eps:
            bad.append(f"W({eps:g}) = {W:g} is not the least window (γ = {g:.3g})")
    return not bad, "; ".join(bad) or f"W(ε) bounds ||E[M]^W||_op at ε = 0.5, 0.05, 1e-4 (γ = {g:.4g})"


@contract_item("random-state")
def check_law_random_state(law, seed, samples):
    """``rvs(7, s)`` twice and ``rvs(7, default_rng(s))`` draw the same steps; route steps (``pathwise_steps``,
    ``(3, 5)``) repeat under the same seed and differ under the next (a random law)."""
    a, b, c = law.rvs(7, seed + 3), law.rvs(7, seed + 3), law.rvs(7, np.random.default_rng(seed + 3))
    ok = np.array_equal(a, b) and np.array_equal(a, c)
    dense = law.dense(law.rvs(5, seed), seed)
    random = not all(np.array_equal(dense[0], x) for x in dense[1:])
    if law.pathwise or law.has_pathwise_steps:
        r1, _ = _route_steps(law, (3, 5), np.random.default_rng(seed + 11))
        r2, _ = _route_steps(law, (3, 5), np.random.default_rng(seed + 11))
        r3, _ = _route_steps(law, (3, 5), np.random.default_rng(seed + 12))
        ok = ok and np.array_equal(r1, r2) and (not random or not np.array_equal(r1, r3))
    return ok, "int seed = Generator of that seed; route steps repeat under a seed" + (
        ", differ under the next" if random else " (one matrix: deterministic)")


@contract_item("one-step")
def check_law_one_step(law, seed, samples):
    """``E[qᵀ m_1 k] = qᵀE[M]k`` on 20,000 one-step routes through :meth:`route_scores` (4.5 standard errors plus
    the radius of an estimated mean)."""
    d, rng, T = law.d, np.random.default_rng(seed + 5), 20000
    q, k = uniform_sphere(rng, (2,), d)
    if law.pathwise or law.has_pathwise_steps:
        steps, xrng = law.pathwise_steps(rng, (T, 2), np), None
    else:
        steps, xrng = law.sample(rng, (T, 2), np), rng
    s = np.asarray(law.route_scores(steps, q, np.broadcast_to(k, (T, 2, d)).copy(), xrng=xrng))[:, 1]
    want = float(q @ np.asarray(law.theory_mean(), dtype=float) @ k)
    excess = abs(s.mean() - want) - Z_ORACLE * s.std(ddof=1) / math.sqrt(T) - law.mean_radius - 1e-12
    return excess <= 0, f"E[qᵀm_1k] (20000 routes) vs qᵀE[M]k = {want:.4g}: excess over 4.5 se {excess:.3g}"


@contract_item("backends")
def check_law_backends(law, seed, samples):
    """Route transport (scores, sums with shared preparation, queries), the same on the ``cupy`` path with NumPy
    standing in, transport by position and the law's compiled kernels, against the dense route product."""
    if not (law.pathwise or law.has_pathwise_steps):
        return True, "applied in law without pathwise steps: compared in distribution by one-step and walk-vs-mean"
    d, rng, T, N = law.d, np.random.default_rng(seed + 7), 3, 9
    steps, mats = _route_steps(law, (T, N), rng)
    q = uniform_sphere(rng, (), d)
    keys, values, a = uniform_sphere(rng, (T, N), d), rng.standard_normal((T, N, d)), rng.random((T, N))
    want_s, want_v = reference_scores(mats, q, keys), reference_sum(mats, a, values)
    P = route_products(mats)
    prepared = law.prepare_routes(steps)
    pairs = {"scores": (law.route_scores(steps, q, keys), want_s), "sums": (law.route_sum(steps, a, values), want_v),
             "shared sums": (law.route_sum(steps, 2 * a, values, prepared=prepared), 2 * want_v),
             "queries": (law.route_queries(steps, q), np.einsum("tnde,d->tne", P, q))}
    with numpy_standin_for_cupy():
        pairs["cupy scores"] = (law.route_scores(steps, q, keys), want_s)
        pairs["cupy sums"] = (law.route_sum(steps, a, values), want_v)
    if law.pathwise:  # one context by position (query at i = L−1, steps[t] = M_t) and the compiled kernels
        pos = law.rvs(N, rng)
        pos_mats = np.asarray(law.dense(pos), dtype=float)
        U = np.stack([route_product(pos_mats, j, N - 1).T @ q for j in range(N)])
        pairs["by position"] = (law.transported_queries(pos, q, rng), U)
        want = sum(a[0, j] * route_product(pos_mats, j, N - 1) @ values[0, j] for j in range(N))
        pairs["sum by position"] = (law.transported_sum(pos, a[0], values[0], rng), want)
        pairs["route order"] = (route_products(position_to_route(pos_mats)[None])[0, 4],
                                route_product(pos_mats, N - 5, N - 1))
        for backend in ("numba", "numpy"):
            fast = law.fast_transported_queries(pos, q, backend)
            if fast is not None:
                pairs[f"{backend} kernel"] = (fast, U)
    errs = {k: float(np.max(np.abs(np.asarray(x, dtype=float) - y))) for k, (x, y) in pairs.items()}
    failed = [k for k, (x, y) in pairs.items() if not _close(x, y, TOL_TRANSPORT)]
    worst = max(errs, key=errs.get)
    return not failed, (f"{len(errs)} paths (T={T}, N={N}): max error {errs[worst]:.2e} ({worst})"
                        + (f"; off: {', '.join(failed)}" if failed else ""))


def _rebuilt(law: StepLaw, d: int):
    """``law`` with dimension ``d`` (:func:`dataclasses.replace`), or the ``ValueError`` refusing it."""
    try:
        return dataclasses.replace(law, d=d)
    except ValueError as e:
        return e


@contract_item("dimensions")
def check_law_dimensions(law, seed, samples):
    """A dataclass law rebuilt at ``d = 1``: refused (``ValueError`` "d must be …"); at ``d = 2, 3, 4, 7, 33``: built
    with that ``d`` (declared planes at odd ``d``: refused "d must be even"; a parameter sized by ``d`` may refuse,
    naming it); a declared closed-form ``γ`` at ``d = 2048`` in under 0.5 s.  ``mixing_window(1.5)`` is refused naming
    ``eps``.  The refusals are tested on a law whose class validates its arguments (defines ``__post_init__``)."""
    bad = []
    try:
        law.mixing_window(1.5)
        bad.append("mixing_window(1.5) not refused")
    except ValueError as e:
        if "eps" not in str(e):
            bad.append(f"mixing_window(1.5) refused without naming eps: {e}")
    if not dataclasses.is_dataclass(law) or "d" not in {f.name for f in dataclasses.fields(law)}:
        return not bad, "; ".join(bad) or "eps checked; not a dataclass with field d: not rebuilt at other d"
    validates = hasattr(type(law), "__post_init__")  # a law with no validation has no refusal to test
    one = _rebuilt(law, 1)
    if validates and not (isinstance(one, ValueError) and "d must be" in str(one)):
        bad.append(f"d = 1 not refused 'd must be …' ({one!r})"[:160])
    for d in (2, 3, 4, 7, 33):
        got = _rebuilt(law, d)
        if law.planes and d % 2:
            if validates and not (isinstance(got, ValueError) and "d must be even" in str(got)):
                bad.append(f"odd d = {d} not refused 'd must be even'")
        elif isinstance(got, ValueError) and "d must be" in str(got):
            bad.append(f"d = {d} refused: {got}"[:160])
        elif not isinstance(got, ValueError) and got.d != d:
            bad.append(f"rebuilt at d = {d} has d = {got.d}")
    closed = type(law).spectral_gap is not StepLaw.spectral_gap
    if closed:
        big = _rebuilt(law, 2048)
        if not isinstance(big, ValueError):
            t0 = time.perf_counter()
            g = big.spectral_gap
            took = time.perf_counter() - t0
            if not (took < 0.5 and 0.0 <= g <= 1.0):
                bad.append(f"γ at d = 2048 = {g:.3g} took {took:.2f} s (closed form: < 0.5 s)")
    return not bad, "; ".join(bad) or ("d = 1 refused, d = 2, 3, 4, 7, 33 built (planes: even only), eps checked"
                                       + ("; closed-form γ at d = 2048 fast" if closed else ""))
