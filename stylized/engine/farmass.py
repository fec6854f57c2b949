"""The stylized far-mass growth model: near keys aligned with the query, far keys uniform, and the controls.

* **model** (:class:`GrowthModel`, :func:`growth_trial`): the query ``q`` at ``i``, near keys aligned
  with ``q`` (all of them, or only the target at route length 0), far keys uniform on ``S^{d−1}``,
  scores ``λ qᵀ P_{j→i} k_j``, and the controls ``none``, ``alibi``, ``log-scaling``,
  ``forget-gate``, ``contraction``.  Routes up to ``L_sim`` are simulated literally (steps, keys,
  transport); longer ones are streamed from the exact law of a far score (below).
* **horizon** (:func:`horizon_trial`): the first ``L`` at which the far sum reaches the near sum.
* **batches** (:func:`growth_trials`, :func:`horizon_trials`): numpy/numba loop over queries with the
  literal model above; ``backend="cupy"`` runs all queries of a chunk at once through the array
  namespace, near window from :func:`stylized.engine.sampling.sample_overlaps` and every far score from the
  exact law below (so ``L_sim`` does not enter), drawn on the device in blocks of route steps.
* closed forms (:func:`~stylized.theory.score_laws.haar_mgf`, :func:`~stylized.theory.bounds.alibi_far_mass_bound`,
  :func:`~stylized.theory.bounds.horizon_prediction`) live in :mod:`stylized.theory`; the model's parameters
  (:class:`~stylized.theory.growth.GrowthModel`) and the predictions of its means in :mod:`stylized.theory.growth`;
  the streaming log-sum-exp and the bound's far-mass streams in :mod:`stylized.engine.lse`; the contraction's
  route kernels in :mod:`stylized.engine.score_chains`.

Exact far law.  A far key ``k_j`` uniform on ``S^{d−1}`` and independent of the steps makes
``P_{j→i} k_j`` uniform for *any* orthogonal ``P``, so the far scores are i.i.d. ``λξ`` with
``(1 + ξ)/2 ~ Beta(a, a)`` at every route length (not only past the mixing window).  For the
contraction ``I − β w wᵀ`` the score is ``λ ||u_n|| ξ`` with ``u_n = P_nᵀ q`` and, ``w`` being
uniform, ``||u_{n+1}||² = ||u_n||² (1 − β(2 − β) c)``, ``c ~ Beta(½, (d−1)/2)`` exactly.

Example
-------
>>> from stylized.laws.families import make_family
>>> from stylized.theory.growth import GrowthModel
>>> model = GrowthModel(make_family("householder", 8), lam=2.0, D=4)
>>> out = growth_trial(model, np.array([16, 64]), 64, rng=0)
>>> bool(0 < out["rho"]["none"][0] < out["rho"]["none"][1] < 1)
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..core.backend import array_namespace, to_numpy, xp_generator
from ..core.counter_rng import as_generator
from ..core.step_ops import uniform_sphere
from ..laws.controls import GROWTH_CONTROLS, LiteralRoute
from ..theory.growth import GrowthModel
from .lse import _XP_ELEMS, _fold_lse, _lse_xp, _rho, lse
from .lse import cum_lse as _cum_lse
from .sampling import equal_energy_query, haar_coordinates, sample_overlaps
from .transport import transported_queries

__all__ = ["CONTROLS", "growth_trial", "growth_trials", "horizon_trial", "horizon_trials"]


# --------------------------------------------------------------------------------------------
# the stylized growth model with far-mass controls
# --------------------------------------------------------------------------------------------
CONTROLS = tuple(GROWTH_CONTROLS)  # registry order: none, alibi, log-scaling, forget-gate, contraction


def _orthogonal_scores(model: GrowthModel, N: int, keys: np.ndarray, q: np.ndarray, rng, backend: str) -> np.ndarray:
    """``λ qᵀ P_n k_n`` for ``n = 0 … N−1`` (route-length order), steps of the family: the law's compiled
    transport where it has one (:meth:`StepLaw.fast_transported_queries`), else :func:`transported_queries`."""
    fam = model.family
    steps = fam.rvs(N, rng)
    U = fam.fast_transported_queries(steps, q, backend)
    if U is None:
        U = transported_queries(fam, steps, q, rng)
    # position j = N−1−n ↔ route length n
    return model.lam * np.einsum("nd,nd->n", U[::-1], keys)


def growth_trial(model: GrowthModel, Ls: np.ndarray, L_sim: int, rng, backend: str = "numba",
                 controls: tuple[str, ...] = CONTROLS, chunk: int = 1 << 17) -> dict:
    """One query: ``ρ_D(L)`` for every control and every ``L`` in ``Ls`` (sorted), plus ``Z_N``.

    Route lengths ``n < min(max L, L_sim)`` are simulated literally; longer ones are streamed in
    chunks from the exact far law (module docstring).  Every ``L`` uses the same draws (a prefix
    of the longest context), so each ``ρ_D(L)`` has the right law; rows are correlated across ``L``.
    Returns ``{"rho": {control: array over Ls}, "lse_near": {control: float or array}, "cross": L*}``
    where ``L*`` is the first ``L`` with ``ρ_D ≥ ½`` without control (``nan`` if none up to ``max L``).
    """
    rng = as_generator(rng)
    Ls = np.asarray(Ls, dtype=np.int64)
    lam, D, d = model.lam, model.D, model.family.d
    N = int(min(Ls.max(), L_sim))
    q = equal_energy_query(d)
    keys = uniform_sphere(rng, (N,), d)
    keys[: (D if model.near == "all" else 1)] = q
    s = _orthogonal_scores(model, N, keys, q, rng, backend)
    route = LiteralRoute(model, s, np.arange(N, dtype=float), q, keys, rng, backend)
    # every control draws its literal randomness (registry order), whichever are asked
    literal = {name: ctl.literal_logits(route) for name, ctl in GROWTH_CONTROLS.items()}
    asked = [GROWTH_CONTROLS[c] for c in GROWTH_CONTROLS if c in controls]
    scaled = [ctl for ctl in asked if ctl.length_scaled]
    kappa = {ctl.name: ctl.logit_scales(model, Ls) for ctl in scaled}

    rho = {c: np.full(Ls.size, np.nan) for c in controls}
    lse_near = {}
    far_acc = {}  # running far LSE per L-independent control
    for ctl in asked:
        if ctl.length_scaled:
            continue
        x = literal[ctl.name][0]
        lse_near[ctl.name] = lse(x[:D], backend)
        cum = _cum_lse(x[D:])
        far_acc[ctl.name] = float(cum[-1]) if cum.size else -math.inf
        for k, L in enumerate(Ls):
            if L <= N:
                rho[ctl.name][k] = _rho(float(cum[L - D - 1]) if L > D else -math.inf, lse_near[ctl.name])
    # L* (no control) inside the literal range
    cross = math.nan
    if "none" in controls:
        cum = _cum_lse(s[D:])
        hit = np.nonzero(cum >= lse_near["none"])[0]
        if hit.size:
            cross = float(D + hit[0] + 1)
    far_ls = {}  # length-scaled controls: far LSE per L
    for ctl in scaled:
        x, c = literal[ctl.name][0], ctl.name
        lse_near[c] = np.array([lse(kp * x[:D], backend) for kp in kappa[c]])
        far_ls[c] = np.array([lse(kp * x[D:min(L, N)], backend) for kp, L in zip(kappa[c], Ls)])
        for k, L in enumerate(Ls):
            if L <= N:
                rho[c][k] = _rho(float(far_ls[c][k]), float(lse_near[c][k]))
    # streamed continuation for L > N
    big = Ls[Ls > N]
    if big.size:
        state = {ctl.name: literal[ctl.name][1] for ctl in asked}
        start = N
        while start < big.max():
            stop = int(min(start + chunk, big[big > start].min()))  # chunks end on every L
            m = stop - start
            nn = np.arange(start, stop, dtype=float)
            ls = lam * haar_coordinates(rng, m, d)
            chunk_x = {}
            for ctl in asked:  # the asked controls draw, in registry order
                chunk_x[ctl.name], state[ctl.name] = ctl.chunk_logits(model, ls, nn, rng, state[ctl.name], np)
            prev = far_acc.get("none", -math.inf)
            for c in far_acc:
                far_acc[c] = float(np.logaddexp(far_acc[c], lse(chunk_x[c], backend)))
            if "none" in controls and math.isnan(cross) and far_acc["none"] >= lse_near["none"]:
                cum = np.logaddexp(prev, _cum_lse(ls))
                cross = float(start + np.nonzero(cum >= lse_near["none"])[0][0] + 1)
            for k, L in enumerate(Ls):
                for ctl in scaled:
                    if start < L:
                        c = ctl.name
                        far_ls[c][k] = float(np.logaddexp(far_ls[c][k], lse(kappa[c][k] * chunk_x[c][: L - start],
                                                                                backend)))
                if L == stop:
                    for c in far_acc:
                        rho[c][k] = _rho(far_acc[c], lse_near[c])
                    for ctl in scaled:
                        rho[ctl.name][k] = _rho(float(far_ls[ctl.name][k]), float(lse_near[ctl.name][k]))
            start = stop
    return {"rho": rho, "lse_near": lse_near, "cross": cross}


def horizon_trial(model: GrowthModel, rng, backend: str = "numba", chunk: int = 1 << 16, L_max: int = 1 << 24) -> tuple[float, float]:
    """``(Z_N, L*)`` for one query without control: near keys transported literally, far scores streamed
    from the exact law until ``Σ_far e^{s} ≥ Z_N`` (``L*`` is the first ``L`` with ``ρ_D ≥ ½``).

    The far scores come in blocks that double from 256 up to ``chunk`` (a short horizon draws little)."""
    rng = as_generator(rng)
    d, D, lam = model.family.d, model.D, model.lam
    q = equal_energy_query(d)
    keys = uniform_sphere(rng, (max(D, 1),), d)
    keys[: (D if model.near == "all" else 1)] = q
    lse_near = lse(_orthogonal_scores(model, max(D, 1), keys, q, rng, backend)[:D], backend)
    acc, start, block = -math.inf, D, min(256, chunk)
    while start < L_max:
        x = lam * haar_coordinates(rng, block, d)
        cum = np.logaddexp(acc, _cum_lse(x))
        hit = np.nonzero(cum >= lse_near)[0]
        if hit.size:
            return math.exp(lse_near), float(start + hit[0] + 1)
        acc, start, block = float(cum[-1]), start + block, min(2 * block, chunk)
    return math.exp(lse_near), math.nan


# --------------------------------------------------------------------------------------------
# batches of queries: numpy/numba loop the literal model, cupy runs all queries at once
# --------------------------------------------------------------------------------------------
def growth_trials(model: GrowthModel, Ls: np.ndarray, L_sim: int, size: int, rng, backend: str = "numba",
                  controls: tuple[str, ...] = CONTROLS) -> list[dict]:
    """``size`` queries of :func:`growth_trial`, one dict per query (host values, same keys).

    numpy/numba call :func:`growth_trial` in turn on ``rng`` (literal routes up to ``L_sim``).  cupy:
    all queries at once through the array namespace (:func:`_growth_trials_xp`); ``L_sim`` does not
    enter, every far score comes from the exact law.
    """
    if backend != "cupy":
        return [growth_trial(model, Ls, L_sim, rng, backend, controls) for _ in range(size)]
    return _growth_trials_xp(model, np.asarray(Ls, dtype=np.int64), size, as_generator(rng), backend, tuple(controls))


def horizon_trials(model: GrowthModel, size: int, rng, backend: str = "numba") -> list[tuple[float, float]]:
    """``size`` queries of :func:`horizon_trial`: ``(Z_N, L*)`` each; cupy runs them at once on the device."""
    if backend != "cupy":
        return [horizon_trial(model, rng, backend) for _ in range(size)]
    rng = as_generator(rng)
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    target = _lse_xp(_near_scores_xp(model, size, rng, xrng, xp, backend), xp)
    m, s, cross = xp.full(size, -xp.inf), xp.zeros(size), xp.full(size, xp.nan)
    chunk, start, L_max = max(1, _XP_ELEMS // size), model.D, 1 << 24
    while start < L_max:
        x = model.lam * haar_coordinates(xrng, (size, min(chunk, L_max - start)), model.family.d)
        cross = _first_crossing_xp(m, s, x, target, start, cross, xp)
        m, s = _fold_lse(m, s, x, xp)
        start += x.shape[1]
        if not bool(xp.isnan(cross).any()):  # one host sync per block of route steps
            break
    return [(float(z), float(ell)) for z, ell in zip(np.exp(to_numpy(target)), to_numpy(cross))]


def _near_scores_xp(model: GrowthModel, T: int, rng, xrng, xp, backend: str):
    """Logits ``λ qᵀ P_n k_n`` of the near window ``n < D`` for ``T`` queries, ``(T, D)`` on the device.

    Aligned keys (``k_n = q``): ``λ qᵀP_n q`` from :func:`sample_overlaps` (joint over ``n``, one small
    host→device copy); uniform keys: ``λξ``, ``ξ`` a Haar coordinate (exact for any orthogonal ``P``).
    """
    n_al = model.D if model.near == "all" else 1
    ov = xp.asarray(sample_overlaps(model.family, np.arange(n_al), T, random_state=rng, backend=backend))
    parts = [model.lam * ov]
    if model.D > n_al:
        parts.append(model.lam * haar_coordinates(xrng, (T, model.D - n_al), model.family.d))
    return xp.concatenate(parts, axis=1)


def _first_crossing_xp(m, s, x, target, start: int, cross, xp):
    """First ``L`` where the running far ``LSE`` (state ``(m, s)`` before block ``x``) reaches ``target``.

    ``x`` ``(T, b)`` holds route lengths ``start … start+b−1``; rows of ``cross`` that are still NaN and
    cross inside the block get ``start + index + 1`` (context length ``L`` includes route length ``L−1``).
    """
    ref = xp.maximum(m, x.max(axis=1))
    cum = xp.log((s * xp.exp(m - ref))[:, None] + xp.cumsum(xp.exp(x - ref[:, None]), axis=1)) + ref[:, None]
    hit = cum >= target[:, None]
    first = xp.where(hit, xp.arange(x.shape[1]), x.shape[1]).min(axis=1)  # first hit (b if none)
    return xp.where(xp.isnan(cross) & (first < x.shape[1]), start + first + 1.0, cross)


def _growth_trials_xp(model: GrowthModel, Ls: np.ndarray, T: int, rng: np.random.Generator, backend: str,
                      controls: tuple[str, ...]) -> list[dict]:
    """:func:`growth_trial` for ``T`` queries at once through the array namespace (CuPy on a GPU).

    Near window ``n < D``: :func:`_near_scores_xp`, forget gates, and the contraction walked literally
    (``D`` steps, all queries together).  Far route lengths ``D ≤ n < max L`` in blocks of
    ``≈ _XP_ELEMS / T`` steps that end on every ``L``, drawn on the device from the exact far law
    (``λξ``; ``λ ||u_n|| ξ`` with ``||u_n||²`` shrinking by ``1 − β(2−β)c``, ``c ~ Beta(½, (d−1)/2)``),
    folded into running ``(max, sum)`` per query and control.  ``Ls`` sorted; host values at the end.
    """
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    lam, D, d = model.lam, model.D, model.family.d
    s_near = _near_scores_xp(model, T, rng, xrng, xp, backend)
    asked = [GROWTH_CONTROLS[c] for c in GROWTH_CONTROLS if c in controls]
    near, cstate = {}, {}
    for ctl in asked:  # the asked controls draw, in registry order
        near[ctl.name], cstate[ctl.name] = ctl.near_logits_xp(model, s_near, xrng, xp)
    lse_near = {ctl.name: _lse_xp(near[ctl.name], xp) for ctl in asked if not ctl.length_scaled}
    state = {c: (xp.full(T, -xp.inf), xp.zeros(T)) for c in lse_near}
    far = {c: xp.empty((T, Ls.size)) for c in controls}
    scaled = [ctl for ctl in asked if ctl.length_scaled]
    kappa = {ctl.name: ctl.logit_scales(model, Ls) for ctl in scaled}
    ls_state = {}
    for ctl in scaled:
        c = ctl.name
        lse_near[c] = _lse_xp(xp.asarray(kappa[c])[None, :, None] * near[c][:, None, :], xp)
        ls_state[c] = [(xp.full(T, -xp.inf), xp.zeros(T)) for _ in kappa[c]]
    cross = xp.full(T, xp.nan)
    block, start, k = max(1, _XP_ELEMS // T), D, 0
    while k < Ls.size:
        stop = int(min(start + block, Ls[k]))
        xi = lam * haar_coordinates(xrng, (T, stop - start), d)
        offsets = xp.arange(start, stop, dtype=xp.float64)
        x = {}
        for ctl in asked:
            x[ctl.name], cstate[ctl.name] = ctl.chunk_logits(model, xi, offsets, xrng, cstate[ctl.name], xp)
        if "none" in controls:
            cross = _first_crossing_xp(*state["none"], xi, lse_near["none"], start, cross, xp)
        state = {c: _fold_lse(*state[c], x[c], xp) for c in state}
        for ctl in scaled:
            c = ctl.name
            ls_state[c][k:] = [_fold_lse(m, s, kappa[c][j] * x[c], xp)
                               for j, (m, s) in enumerate(ls_state[c][k:], start=k)]
        while k < Ls.size and Ls[k] == stop:  # record every L that ends here
            for c in state:
                far[c][:, k] = state[c][0] + xp.log(state[c][1])
            for ctl in scaled:
                far[ctl.name][:, k] = ls_state[ctl.name][k][0] + xp.log(ls_state[ctl.name][k][1])
            k += 1
        start = stop
    near_h = {c: to_numpy(v) for c, v in lse_near.items()}
    rho = {c: special.expit(to_numpy(far[c]) - (near_h[c] if near_h[c].ndim == 2 else near_h[c][:, None]))
           for c in controls}
    cross_h = to_numpy(cross)
    return [{"rho": {c: rho[c][t] for c in controls},
             "lse_near": {c: near_h[c][t] if near_h[c].ndim == 2 else float(near_h[c][t]) for c in controls},
             "cross": float(cross_h[t])} for t in range(T)]
