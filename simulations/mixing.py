"""C1 — finite mixing window: ``E[qᵀ P_n q] = qᵀ E[M]^n q`` decays like ``(1 − γ)^n``.

For i.i.d. steps ``E[P_{j→i}] = E[M]^n`` (``n = i − j``), so the correlation of the
transported query with itself decays geometrically at the rate of the spectral gap,
whatever the context length.  Three measured parts, each against the law's ``E[M]`` (its closed form,
or for a law without one, such as ``cayley`` or a user's law with only ``sample``, its Monte Carlo
estimate: then rows are labelled ``law.theory_kind`` and every comparison accepts when the measured
interval meets the theory's own 95% interval, ``theory ± theory_radius`` from ``law.mean_overlap_radius``):

* ``rows``: ``E[qᵀP_n q]`` over independent chains (equal-energy unit query) at each route
  length ``n`` and family, against the closed form ``qᵀE[M]ⁿq`` (``theory``) and the bound
  ``(1 − γ)ⁿ`` (``bound``).  Student-t intervals, Bonferroni over all rows.  Rows with zero
  variance (``n = 0``: every sample is ``qᵀq``) are compared at the rounding tolerance
  ``(d + T + 4)·2⁻⁵³·|theory|`` (:func:`~stylized.core.estimators.rounding_tolerance`), never by exact equality.
* ``windows``: for each context length ``L`` (``--L``), independent contexts of length ``L``;
  ``qᵀ P_{j→i} q`` averaged over the pairs of route length ``n`` inside each context, as the law plans
  and measures it (``law.context_plan`` / ``law.context_overlaps``: SO(2) planes every pair by FFT,
  other laws queries on a stride grid), Student-t band over contexts, Bonferroni
  over all windows.  The measured window is the first ``n`` where the correlation falls below
  ``ε`` (``--eps``), with the interval ``[first n with ci_low < ε, first n with ci_high < ε]``,
  against the exact crossing ``n* = min{n : qᵀE[M]ⁿq < ε}`` (the same at every ``L``; estimated ``E[M]``:
  the interval ``[crossing_low, crossing_high]`` of the curve ∓ its radius) and the bound
  ``W(ε) = ⌈ln ε / ln(1 − γ)⌉ ≥ n*``.  Every ``L`` gets ``--window-steps`` steps.
* ``op_norm``: ``‖E[P_n]‖_op`` from the mean of ``--trials-op`` sampled dense products at
  ``d = --d-op`` (≤ 32), bootstrap interval ``‖Ê‖ ± h`` (``h``: Bonferroni level of ``‖Ê* − Ê‖``),
  against the closed form ``‖E[M]ⁿ‖_op`` and the bound ``(1 − γ)ⁿ``.

Level: the verdict is one joint test at 95%: each part gets ``α/3`` (``α = 0.05``), Bonferroni over
its rows inside (an estimated ``E[M]`` adds one 95% event per law, ``‖Ê − E[M]‖_op ≤ r``, which covers every
row, window and ``n`` of that law).  Verdict: every row's theory inside its interval, ``|qᵀE[M]ⁿq| ≤ (1 − γ)ⁿ``,
every window interval contains ``n*`` (no crossing seen where ``n* ≥ L``), every ``‖E[M]ⁿ‖_op`` inside
its interval and below ``(1 − γ)ⁿ``.

The model pieces (``sample_overlaps``, ``sample_steps``) and the theory pieces (``theory_overlap``,
``exact_crossing``, ``theory_op_norm``) are module-level names, so the mutants in ``MUTANTS`` can
replace them.  ``--backend cupy``: chains and in-context windows on the device through the array
namespace; the small dense ``op_norm`` part stays on the host, identical for every backend.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from stylized.core.backend import to_numpy, xp_generator
from stylized.core.counter_rng import chunked_generators
from stylized.core.estimators import bonferroni_level, mean_ci, rounding_tolerance
from stylized.core.montecarlo import check_positive_int, progress
from stylized.core.options import Float, Int, IntList
from stylized.engine.sampling import equal_energy_query, sample_overlaps, sample_steps
from stylized.engine.scores import first_crossing
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.laws.base import StepLaw
from stylized.laws.families import FAMILY_NAMES

from ._common import families_from_params, family_options, limits
from ._mixing_mutants import estimated_mean_scaled as _estimated_mean_scaled
from ._mixing_mutants import frozen_steps as _frozen_steps
from ._mixing_mutants import householder_gap_half as _householder_gap_half
from ._mixing_mutants import no_transport as _no_transport
from ._mixing_mutants import overlap_3pct_low as _overlap_3pct_low
from ._mixing_plot import plot_mixing

NAME = "mixing"
ALPHA = 0.05
"""Level of the whole verdict: each of the three parts (rows, windows, op_norm) is tested at ``ALPHA/3``."""


# -- theory pieces (module-level so that mutants can replace them) -----------------------------------
# Exact where the law defines ``mean()``; otherwise from its Monte Carlo ``E[M]`` (``law.theory_kind``), and
# then every comparison is widened by the theory's own 95% radius (``0`` for a closed form).
def theory_overlap(fam: StepLaw, q: np.ndarray, n) -> np.ndarray | float:
    """``qᵀE[M]ⁿq = E[qᵀP_n q]`` (closed form or estimated ``E[M]``, vectorised over ``n``)."""
    return fam.mean_overlap(q, n)


def theory_radius(fam: StepLaw, q: np.ndarray, n) -> np.ndarray | float:
    """95% radius of :func:`theory_overlap` from an estimated ``E[M]`` (``law.mean_overlap_radius``; ``0`` exact)."""
    return fam.mean_overlap_radius(q, n)


def exact_crossing(fam: StepLaw, q: np.ndarray, eps: float, L: int, side: int = 0) -> int | None:
    """``n* = min{n < L : qᵀE[M]ⁿq < ε}`` (``None`` if the curve stays ≥ ε up to ``L − 1``).

    ``side = −1`` / ``+1``: the same for the curve minus / plus its radius (:func:`theory_radius`), the
    earliest / latest ``n*`` an estimated ``E[M]`` allows (all three agree for a closed form).
    """
    ns = np.arange(L)
    curve = theory_overlap(fam, q, ns)
    if side:
        curve = curve + side * theory_radius(fam, q, ns)
    idx = np.flatnonzero(curve < eps)
    return int(idx[0]) if idx.size else None


def theory_op_norm(fam: StepLaw, n: int) -> float:
    """``‖E[M]ⁿ‖_op`` from the closed-form or estimated mean (dense, ``d ≤ 32``)."""
    return float(np.linalg.norm(fam.mean_power(n), 2))


def theory_op_radius(fam: StepLaw, n: int) -> float:
    """95% bound on ``|‖Êⁿ‖_op − ‖E[M]ⁿ‖_op| ≤ ‖Êⁿ − E[M]ⁿ‖_op``: :meth:`mean_overlap_radius` of a unit vector."""
    return float(fam.mean_overlap_radius(np.eye(fam.d)[0], n))


def refusal(law: StepLaw) -> str | None:
    """Why the check cannot take ``law`` (one line naming the property), or ``None``: it needs i.i.d. steps."""
    if not law.iid:
        return (f"family {law.name}: this check needs i.i.d. steps (iid=True): its theory is E[P_n] = E[M]ⁿ "
                "(dependent steps: check markov-tokens)")
    return None


def _laws(params: dict) -> tuple[list[StepLaw], list[StepLaw]]:
    """The laws ``params["family"]`` names at ``d`` and at ``d_op``, each refused before any work (``--dry-run`` too)."""
    fams = families_from_params(params)
    if not fams:
        raise ValueError(f"family must name at least one of {', '.join(FAMILY_NAMES)} (or 'all'), got {params['family']!r}")
    for why in filter(None, map(refusal, fams)):
        raise ValueError(why)
    _validate_extra(params)
    try:
        return fams, families_from_params({**params, "d": params["d_op"]})
    except ValueError as e:  # the laws at d_op (an odd d_op for an SO(2) law): named
        raise ValueError(f"--d-op: {str(e).splitlines()[0] if str(e) else type(e).__name__} (the laws at d = --d-op, "
                         "for ‖E[P_n]‖_op)") from None


def _validate(params: dict) -> None:
    """``Check.validate``: the laws and the window/operator-norm settings, refused before any work."""
    _laws(params)


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    """The check on the laws ``params["family"]`` names (any i.i.d. :class:`~stylized.laws.base.StepLaw`)."""
    return run_laws(*_laws(params), params, seed=seed, backend=backend, progress=progress)


def run_laws(fams: list[StepLaw], op_fams: list[StepLaw], params: dict, *, seed: int, backend: str,
             progress: bool = True) -> dict:
    """The three parts on the laws ``fams`` (and ``op_fams``, the same laws at ``d = d_op``, for ``‖E[P_n]‖_op``).

    Every i.i.d. law is accepted (``E[P_n] = E[M]ⁿ`` needs nothing else); ``iid = False`` is refused.  A law without a
    closed-form mean is compared with its estimated ``E[M]`` (rows labelled ``law.theory_kind``), each
    comparison widened by the theory's 95% radius (``theory_radius``, ``theory_low``/``theory_high``).
    """
    for why in filter(None, map(refusal, [*fams, *op_fams])):
        raise ValueError(why)
    trials = check_positive_int("trials", params["trials"], 2)
    ns = np.asarray(sorted(set(params["n"])), dtype=np.int64)
    if ns.size == 0 or ns[0] < 0:
        raise ValueError(f"n must be a list of route lengths ≥ 0, got {params['n']!r}")
    _validate_extra(params)
    rows, summary = [], []
    level = bonferroni_level(1.0 - ALPHA / 3, len(fams) * ns.size)
    chunk = 256 if backend != "cupy" else 4096  # chains per chunk (cupy: all trials at once, blocks of steps)
    for f_idx, fam in enumerate(fams):
        q = equal_energy_query(fam.d)
        chunks = chunked_generators(trials, seed + 1000 * f_idx, chunk)
        samples = np.concatenate([
            sample_overlaps(fam, ns, size, rng, backend, q=q)
            for size, rng in _progress(chunks, -(-trials // chunk), fam.name, progress)
        ])
        gamma = fam.spectral_gap
        theory = np.atleast_1d(theory_overlap(fam, q, ns))
        radius = np.broadcast_to(theory_radius(fam, q, ns), theory.shape)
        for c, n in enumerate(ns):
            est = mean_ci(samples[:, c])
            joint = mean_ci(samples[:, c], level=level)
            tol = rounding_tolerance(theory[c], fam.d + trials)
            th, r = float(theory[c]), float(radius[c])
            extra = {} if fam.has_exact_mean else {"theory_radius": r, "theory_low": th - r, "theory_high": th + r}
            rows.append({"family": fam.name, "n": int(n), **est.as_row(), "theory": th,
                         "theory_kind": fam.theory_kind, **extra, "bound": (1.0 - gamma) ** int(n),
                         "bound_kind": "upper bound on |theory|", "joint_low": joint.ci_low,
                         "joint_high": joint.ci_high, "rounding_tol": tol,
                         "within_joint_ci": joint.contains(th, tol + r)})  # intervals meet (r = 0: closed form)
        summary.append({"family": fam.name, "d": fam.d, "spectral_gap": gamma, "window_eps_0.01": fam.mixing_window(0.01),
                        **({} if fam.has_exact_mean else {"theory_kind": fam.theory_kind,
                                                          "spectral_gap_interval": list(fam.gap_interval)})})
    windows = _window_part(fams, params, seed, backend)
    op_norm = _op_norm_part(op_fams, params, seed)
    win_ok = all(w["ok"] for w in windows)
    op_ok = all(r["within_ci"] and r["theory"] <= r["bound"] + 1e-12 for r in op_norm)
    inside = sum(r["within_joint_ci"] for r in rows)
    bound_ok = all(abs(r["theory"]) <= r["bound"] + 1e-12 for r in rows)
    worst = max(rows, key=lambda r: abs(r["estimate"] - r["theory"])
                / max(r["joint_high"] - r["estimate"] + r.get("theory_radius", 0.0), r["rounding_tol"], 1e-300))
    estimated = [s["family"] for s in summary if "theory_kind" in s]
    return {
        "holds": inside == len(rows) and bound_ok and win_ok and op_ok,
        "rows": rows,
        "families": summary,
        "windows": windows,
        "op_norm": op_norm,
        "headline": headline(
            f"E[qᵀP_n q], {worst['family']} n={worst['n']} (worst row)", worst,
            verdict=(f"{inside}/{len(rows)} rows have the closed form qᵀE[M]^n q inside the joint interval "
                     f"(joint level 1−α/3 over {len(rows)} rows, Bonferroni; zero-variance rows at a rounding tolerance); "
                     f"|qᵀE[M]^n q| ≤ (1−γ)^n on every row: {bound_ok}. "
                     + _estimated_note(estimated, fams)
                     + "; ".join(f"{s['family']}: γ={s['spectral_gap']:.4g}, W(0.01)={s['window_eps_0.01']:g}" for s in summary)
                     + ". " + _window_verdict(windows, params["eps"])
                     + f" ‖E[P_n]‖_op (d={params['d_op']}, {params['trials_op']} dense products) within its bootstrap "
                     f"interval of ‖E[M]ⁿ‖_op ≤ (1−γ)ⁿ on {sum(r['within_ci'] for r in op_norm)}/{len(op_norm)} rows."),
            theory_kind=worst["theory_kind"],
        ),
    }


def _estimated_note(estimated: list[str], fams: list[StepLaw]) -> str:
    """The verdict's sentence on laws without a closed-form ``E[M]`` (empty when every law has one)."""
    if not estimated:
        return ""
    kind = next(f.theory_kind for f in fams if not f.has_exact_mean)
    return (f"No closed-form E[M] for {', '.join(estimated)}: its theory qᵀÊⁿq, n*, ‖Êⁿ‖_op is {kind}, and each "
            "comparison accepts when the measured interval meets the theory's own 95% interval "
            "(theory ± theory_radius; n* in [crossing_low, crossing_high]). ")


def _validate_extra(params: dict) -> None:
    """Fail fast on the window and operator-norm options (before any sampling), naming the flags."""
    if not 0.0 < float(params["eps"]) < 1.0:
        raise ValueError(f"--eps: must lie in (0, 1), got {params['eps']!r}")
    if not params["L"] or min(params["L"]) < 2:
        raise ValueError(f"--L: must be a list of context lengths ≥ 2, got {params['L']!r}")
    steps = params["window_steps"]
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 2 * max(params["L"]):
        raise ValueError(f"--window-steps: must be ≥ 2·max(--L) = {2 * max(params['L'])} (at least two contexts of "
                         f"the longest L), got window_steps={steps!r}, max L={max(params['L'])}")
    if not 2 <= check_positive_int("d_op", params["d_op"], 2) <= 32:
        raise ValueError(f"--d-op: must lie in [2, 32] (dense products), got {params['d_op']}")
    check_positive_int("trials_op", params["trials_op"], 10)
    if not params["n_op"] or min(params["n_op"]) < 1:
        raise ValueError(f"--n-op: must be a list of route lengths ≥ 1, got {params['n_op']!r}")


def _window_part(fams: list[StepLaw], params: dict, seed: int, backend: str) -> list[dict]:
    """Measured first crossing of ``ε`` by the in-context correlation, per family and context length ``L``."""
    eps = float(params["eps"])
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    Ls = sorted(set(params["L"]))
    if not Ls or Ls[0] < 2:
        raise ValueError(f"L must be a list of context lengths ≥ 2, got {params['L']!r}")
    steps = check_positive_int("window_steps", params["window_steps"], 2 * Ls[-1])
    # the verdict needs every window: two-sided ALPHA/3, Bonferroni over all of them
    level = 1.0 - ALPHA / 6 / (len(fams) * len(Ls))
    out = []
    for f_idx, fam in enumerate(fams):
        q = equal_energy_query(fam.d)
        W = fam.mixing_window(eps)
        for l_idx, L in enumerate(Ls):
            n_star = exact_crossing(fam, q, eps, L)
            # the n* an estimated E[M] allows (a point for a closed form)
            a, b = exact_crossing(fam, q, eps, L, side=-1), exact_crossing(fam, q, eps, L, side=1)
            rng = np.random.default_rng([seed, 7, f_idx, l_idx])
            chains = max(2, steps // L)
            curves, nmax = _context_curves(fam, q, L, chains, rng, backend, W)
            stride = fam.context_plan(L, W, backend)[1]
            m = curves.mean(axis=0)
            half = stats.t.ppf(level, chains - 1) * curves.std(axis=0, ddof=1) / math.sqrt(chains)
            ns = np.arange(nmax + 1)
            cr = first_crossing(ns, m, m - half, m + half, eps)
            # interval [window_low, window_high]; a missing upper end means "beyond nmax" (noise too large there)
            hi = math.inf if cr["window_high"] is None else cr["window_high"]
            # some n* in [a, b] is seen inside [window_low, window_high] (a, b ≤ nmax), or lies beyond nmax and
            # the band never falls below ε (for a closed form, a = b = n*)
            seen = (cr["window_low"] is not None and a is not None and a <= nmax
                    and max(a, cr["window_low"]) <= min(nmax if b is None else b, hi, nmax))
            ok = seen or ((b is None or b > nmax) and cr["window_high"] is None)
            grid = np.unique(np.round(np.geomspace(1, nmax, 60)).astype(int))
            extra = {} if fam.has_exact_mean else {"crossing_low": a, "crossing_high": b}
            out.append({"family": fam.name, "L": L, "eps": eps, **cr, "exact_crossing": n_star, **extra,
                        "theory_kind": fam.theory_kind, "W_bound": W, "bound_kind": "upper bound on n*",
                        "resolved": cr["window_high"] is not None, "chains": chains,
                        "routes_per_n": int(chains * len(range(L - 1, -1, -stride))), "nmax": nmax,
                        "ok": bool(ok), "curve_n": grid.tolist(), "curve": m[grid].tolist(),
                        "curve_half": half[grid].tolist()})
    return out


def _context_curves(fam: StepLaw, q: np.ndarray, L: int, chains: int, rng, backend: str, W: float):
    """Per-context mean of ``qᵀ P_{i−n→i} q`` over the routes of length ``n`` inside it: ``(chains, nmax+1)``.

    The law plans the measurement (:meth:`~stylized.laws.base.StepLaw.context_plan`: route lengths,
    query stride, contexts per batch; SO(2) planes: every pair by FFT) and measures each batch of
    contexts (:meth:`~stylized.laws.base.StepLaw.context_overlaps`: FFT autocorrelation, the exact
    Haar-step law, the Numba reflection kernel, or the generic walk).  Returns host NumPy curves and ``nmax``.
    """
    xrng = xp_generator(backend, rng)
    nmax, stride, batch = fam.context_plan(L, W, backend)
    curves = []
    for s in range(0, chains, batch):
        steps = sample_steps(fam, (min(batch, chains - s), L), xrng, backend)
        c = fam.context_overlaps(steps, q, nmax, stride=stride, xrng=xrng, backend=backend)
        curves.append(to_numpy(c).reshape(-1, nmax + 1))
    return np.concatenate(curves), nmax


def _op_norm_part(fams: list[StepLaw], params: dict, seed: int) -> list[dict]:
    """``‖E[P_n]‖_op`` from the mean of sampled dense products ``P_n = M_n ⋯ M_1`` at small ``d`` (the laws ``fams``)."""
    d = check_positive_int("d_op", params["d_op"], 2)
    if d > 32:
        raise ValueError(f"d_op must lie in [2, 32] (dense products), got {d}")
    T = check_positive_int("trials_op", params["trials_op"], 10)
    ns = sorted(set(params["n_op"]))
    if not ns or ns[0] < 1:
        raise ValueError(f"n_op must be a list of route lengths ≥ 1, got {params['n_op']!r}")
    rows = []
    # ‖Ê − E‖_op is a Lipschitz function of the draws and concentrates: its bootstrap law (‖Ê* − Ê‖) gives
    # the half-width mean + z·sd with z Bonferroni-corrected over all rows (jointly at level ALPHA/3).
    z = float(stats.norm.ppf(1.0 - ALPHA / 3 / (len(fams) * len(ns))))
    for f_idx, fam in enumerate(fams):
        d = fam.d
        rng = np.random.default_rng([seed, 11, f_idx])
        P = np.broadcast_to(np.eye(d), (T, d, d)).copy()
        gamma = fam.spectral_gap
        boot = rng.multinomial(T, np.full(T, 1.0 / T), size=200) / T  # bootstrap weights
        for n in range(1, ns[-1] + 1):
            P = fam.dense(fam.rvs(T, rng), rng) @ P
            if n not in ns:
                continue
            flat = P.reshape(T, d * d)
            mean = flat.mean(axis=0)
            est = float(np.linalg.norm(mean.reshape(d, d), 2))
            dev = np.linalg.norm((boot @ flat - mean).reshape(-1, d, d), ord=2, axis=(1, 2))
            q95 = float(dev.mean() + z * dev.std(ddof=1))
            theory = theory_op_norm(fam, n)
            r = theory_op_radius(fam, n)
            lo, hi = max(0.0, est - q95), est + q95
            extra = {} if fam.has_exact_mean else {"theory_radius": r, "theory_low": theory - r,
                                                    "theory_high": theory + r}
            rows.append({"family": fam.name, "d": d, "n": n, "estimate": est, "ci_low": lo, "ci_high": hi,
                         "theory": theory, "theory_kind": fam.theory_kind, **extra, "bound": (1.0 - gamma) ** n,
                         "bound_kind": "upper bound on theory", "n_samples": T,
                         "within_ci": bool(lo - r <= theory <= hi + r)})
    return rows


def _window_verdict(windows: list[dict], eps: float) -> str:
    parts = []
    for name in dict.fromkeys(w["family"] for w in windows):
        ws = [w for w in windows if w["family"] == name]
        meas = ", ".join(f"L={w['L']}: " + (f"{w['window']} [{w['window_low']}, {w['window_high']}]"
                                             if w["window"] is not None else "none")
                         + (f" vs n*={w['exact_crossing']}" if w["exact_crossing"] is not None else " vs n* ≥ L")
                         for w in ws)
        parts.append(f"{name}: {meas} (bound W={ws[0]['W_bound']:g})")
    ok = sum(w["ok"] for w in windows)
    return (f"Window where the in-context correlation first falls below ε={eps:g}, by context length: "
            + "; ".join(parts) + f" — {ok}/{len(windows)} measured windows contain the closed-form crossing n* "
            "(one n* for every L).")


def _progress(it, trials, name, enabled):
    return progress(it, total=-(-trials // 256), desc=f"mixing {name}", enabled=enabled)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Correlation vs route length; window by context length; ‖E[P_n]‖_op (see :mod:`simulations._mixing_plot`)."""
    return plot_mixing(result, outdir, NAME)


# -- mutants: a wrong theory or a wrong model must turn the verdict false ---------------------------
_EXACT_CROSSING = exact_crossing


def _crossing_plus_one(fam: StepLaw, q: np.ndarray, eps: float, L: int, side: int = 0) -> int | None:
    """Theory mutant: the window formula one step late."""
    n = _EXACT_CROSSING(fam, q, eps, L, side)
    return None if n is None else n + 1


def _crossing_grows_with_L(fam: StepLaw, q: np.ndarray, eps: float, L: int, side: int = 0) -> int | None:
    """Theory mutant: a window proportional to the context, ``n*·L/256``."""
    n = _EXACT_CROSSING(fam, q, eps, L, side)
    return None if n is None else max(1, round(n * L / 256))


def _patch(name: str, new):
    return patched(__name__, name, new)


_ESTIMATED = {"family": ["cayley"], "n": [0, 1, 2, 5, 10]}  # on the built-in law without a closed-form mean

MUTANTS = (
    Mutant("E[M] 3% low", "theory: qᵀ(0.97·E[M])ⁿq instead of qᵀE[M]ⁿq (also moves n*)",
           _patch("theory_overlap", _overlap_3pct_low)),
    Mutant("householder γ = 1/d", "theory: Householder gap 1/d instead of 2/d (mean, bound and window follow)",
           _householder_gap_half),
    Mutant("window one step late", "theory: the closed-form crossing n* + 1", _patch("exact_crossing", _crossing_plus_one)),
    Mutant("window ∝ L", "theory: a window that grows with the context, n*·L/256", _patch("exact_crossing", _crossing_grows_with_L)),
    Mutant("estimated E[M] 3% low", "theory, estimated path (cayley: no closed-form mean): 0.97·Ê instead of its "
           "Monte Carlo mean Ê (radius kept), so qᵀÊⁿq, γ̂, n* and ‖Êⁿ‖_op are off",
           lambda: _estimated_mean_scaled(0.97), params=_ESTIMATED),
    Mutant("estimated E[M] 3% high", "theory, estimated path (cayley): 1.03·Ê instead of Ê (radius kept)",
           lambda: _estimated_mean_scaled(1.03), params=_ESTIMATED),
    Mutant("no transport", "model: P_n = I, every chain sample is qᵀq", _patch("sample_overlaps", _no_transport)),
    Mutant("frozen steps", "model: M_t = M_1 along each context (not i.i.d.; RoPE-like) in the window part",
           _patch("sample_steps", _frozen_steps)),
)

REDUCED = {"d": 16, "n": [0, 1, 2, 5, 10, 20, 50], "trials": 2000, "L": [64, 1024], "window_steps": 1 << 14,
           "d_op": 8, "n_op": [1, 2, 5, 10], "trials_op": 200}

def _overlap_times(factor: float):
    """:attr:`Theory.perturb` of the closed form: ``qᵀE[M]ⁿq`` times ``factor`` at every ``n ≥ 1``."""
    orig = theory_overlap

    def times(fam, q, n):
        n_arr = np.asarray(n)
        return orig(fam, q, n) * np.where(n_arr > 0, factor, 1.0) if n_arr.ndim else (
            orig(fam, q, n) * (factor if int(n) > 0 else 1.0))

    return patched(__name__, "theory_overlap", times)()


CHECK = register(limits(Check(
    name=NAME,
    claim="C1",
    statement=("Measured for i.i.d. steps of every family: E[qᵀP_n q] over independent chains matches the closed form "
               "qᵀE[M]ⁿq, which lies below (1−γ)ⁿ; the route length where the in-context correlation first falls "
               "below ε matches the closed-form crossing n* at every context length L (the window does not grow "
               "with L); ‖E[P_n]‖_op of sampled dense products matches ‖E[M]ⁿ‖_op ≤ (1−γ)ⁿ. Joint level 95%."),
    options=family_options("all", 64, multi=True) + (
        Option("n", [0, 1, 2, 5, 10, 20, 50, 100, 200, 500], "route lengths n (comma list)", IntList(0, 10**6, size=True)),
        Option("trials", 4000, "Monte Carlo chains per family", Int(2, 10**7, size=True)),
        Option("L", [512, 65536], "context lengths L for the window measurement (comma list)", IntList(2, 2**30, size=True)),
        Option("eps", 0.05, "correlation level ε defining the window W(ε)", Float(0, 1, lo_open=True, hi_open=True)),
        Option("window_steps", 1 << 18, "steps simulated per family and L (contexts = steps / L)", Int(1, 2**32, size=True)),
        Option("d_op", 16, "dimension of the dense products for ‖E[P_n]‖_op (≤ 32)", Int(2, 32, size=True)),
        Option("n_op", [1, 2, 5, 10, 20, 40], "route lengths n ≥ 1 for ‖E[P_n]‖_op (comma list)", IntList(1, 10**5, size=True)),
        Option("trials_op", 1000, "dense products per family for ‖E[P_n]‖_op", Int(10, 10**6, size=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.mixing",
    validate=_validate,
    extra={"order": 0, "needs": ("iid",)},
    mutants=MUTANTS,
    reduced=REDUCED,
    theories=(Theory("qᵀE[M]ⁿq", "the closed form of E[qᵀP_n q] at n ≥ 1 (and the crossing n* it implies); "
                     "n = 0 is qᵀq by definition", _overlap_times),),
)))
