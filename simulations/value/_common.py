"""Shared pieces of the C5 value checks: options, the engine loop over ``M``, the joint verdict, mutants.

Every value check draws its samples through :func:`energy_rows` (one Monte Carlo engine,
:func:`stylized.engine.values.far_energy_samples`) and takes its exact values from :func:`row_theory`;
both look up the engine and the closed forms in this module at run time, which is where the
mutants (:func:`no_transport`, :func:`chi_scaled_theory`, …) patch them.

The verdict of a check is a list of tests on rows, all at one Bonferroni-joint 95% level
(:func:`judge`): ``m`` tests, each at ``1 − 0.05/m``.  Levels are tested twice: row by row, and pooled over
the rows (:func:`pooled_level`, the inverse-variance mean of ``estimate/theory − 1``), which is what makes a
few-percent error in a theory's level visible at the reduced sizes.

Laws: every check takes any orthogonal law (:func:`check_law` refuses a contraction before any work).  A
law without a closed-form ``E[M]`` gets the estimated theory (:attr:`StepLaw.theory_kind`), its 95% radius
in the row (``theory_radius``, ``plugin_radius``) and every comparison widened by it.
"""

from __future__ import annotations

from collections.abc import Callable
from unittest import mock

import numpy as np
from scipy import stats

from stylized.core.counter_rng import chunked_generators
from stylized.core.estimators import mean_ci
from stylized.core.montecarlo import check_positive_int, progress
from stylized.core.options import Choice, Float, Int
from stylized.engine import values as _values
from stylized.engine.values import chunk_size, far_energy_samples, in_law_sums
from stylized.harness import plotting as sp
from stylized.harness.registry import Mutant, Option, Theory
from stylized.laws.base import StepLaw
from stylized.theory.value_theory import (
    coherent_sum,
    correlation_pairs,
    has_correlation_pairs,
    lag_correlations,
    qk_interference_theory,
    qkv_asymptote,
    qkv_interference_radius,
    qkv_interference_theory,
)

from .._common import finite

__all__ = ["COLORS", "check_common", "check_law", "check_laws", "equals_theory", "zero_excess", "pooled_level", "theory_scaled",
           "mean_scaled", "far_counts", "energy_rows", "row_theory", "judge", "label",
           "verdict_key", "passed", "energy_panel", "caption_params", "with_default", "OPT_D", "OPT_W", "OPT_LAM", "OPT_KA", "OPT_NOISE",
           "no_transport", "chi_scaled_theory", "chi_scaled_pairs", "asymptote_theory", "repeated_steps",
           "one_source", "level_theory", "halving_bound"]

COLORS = {"qk": "tab:red", "qkv": "tab:blue", "qkv-indep": "tab:green"}
LEVEL = 0.95


# ---------------------------------------------------------------------------------------
# options and the engine loop
# ---------------------------------------------------------------------------------------
def check_common(params: dict) -> None:
    """Validate the options shared by the value checks (raises ``ValueError`` naming the option)."""
    if params.get("weights", "equal") not in ("equal", "softmax"):
        raise ValueError(f"weights must be 'equal' or 'softmax', got {params['weights']!r}")
    if not (params.get("lam", 0.0) >= 0 and np.isfinite(params.get("lam", 0.0))):
        raise ValueError(f"lam (λ) must be a finite number ≥ 0, got {params['lam']!r}")
    if not (params.get("noise", 0.0) >= 0 and np.isfinite(params.get("noise", 0.0))):
        raise ValueError(f"noise (σ of ξ_j) must be a finite number ≥ 0, got {params['noise']!r}")
    if not (0.0 <= params.get("key_align", 0.0) <= 1.0):
        raise ValueError(f"key_align must lie in [0, 1], got {params['key_align']!r}")
    if "D" in params:
        check_positive_int("D", params["D"], 1)


def check_law(fam: StepLaw, *, pathwise: bool = True) -> StepLaw:
    """Refuse, before any work, a law the value theory does not cover (one ``ValueError`` line naming the property).

    The exact forms rest on orthogonal steps (``P_{k→i}`` preserves ``b̂ᵀ…``, ``orthogonal=True``); the
    transports that share a route (softmax weights, the near signal) need steps fixed pathwise
    (:meth:`StepLaw.pathwise_steps`: ``pathwise=True`` or an override).
    """
    if not fam.orthogonal:
        raise ValueError(f"family {fam.name}: this check needs orthogonal steps (orthogonal=True)")
    if pathwise and not fam.has_pathwise_steps:
        raise ValueError(f"family {fam.name}: this check needs steps fixed pathwise (pathwise=True or a "
                         "pathwise_steps override)")
    return fam


def check_laws(fams, *, pathwise: bool = True) -> None:
    """:func:`check_law` of every law in ``fams``, its refusal naming ``--family`` (a ``Check.validate`` helper)."""
    for fam in fams:
        try:
            check_law(fam, pathwise=pathwise)
        except ValueError as e:
            raise ValueError(f"--family: {e}") from None


def far_counts(params: dict) -> list[int]:
    """The sorted far counts ``M`` of ``params['M']`` (each ≥ 1)."""
    Ms = sorted(set(params["M"]))
    if not Ms or Ms[0] < 1:
        raise ValueError(f"M must be a list of far counts ≥ 1, got {params['M']!r}")
    return Ms


def _samples(fam: StepLaw, M: int, params: dict, seed: int, *, weights: str, key_align: float,
             independent: bool, show: bool, backend: str) -> dict[str, np.ndarray]:
    """All trials for one (family, M): per-trial host arrays, concatenated over chunks."""
    trials = check_positive_int("trials", params["trials"], 2)
    chunk = chunk_size(fam, params["D"] + M, dense=False if in_law_sums(fam, weights) else None, backend=backend)
    parts = [far_energy_samples(fam, M, params["D"], size, rng, weights=weights, lam=params["lam"],
                                key_align=key_align, noise=params["noise"], independent=independent,
                                backend=backend)
             for size, rng in progress(chunked_generators(trials, seed, chunk), total=-(-trials // chunk),
                                       desc=f"{fam.name} M={M}", enabled=show)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def background(fam: StepLaw) -> np.ndarray:
    """The shared value background ``b`` of every value check: ``b̂ = (1, …, 1)/√d``."""
    return np.full(fam.d, 1.0 / np.sqrt(fam.d))


def row_theory(fam: StepLaw, variant: str, M: int, noise: float) -> float:
    """Exact ``r`` for equal weights: ``qk`` → :func:`qk_interference_theory`, else :func:`qkv_interference_theory`."""
    b = background(fam)
    if variant == "qk":
        return qk_interference_theory(fam.d, b, M, noise)
    return qkv_interference_theory(fam, b, M, noise)


def energy_rows(fam: StepLaw, params: dict, seed: int, variants: tuple[str, ...], *, weights: str,
                key_align: float, show: bool, backend: str, extra: dict | None = None) -> list[dict]:
    """One row per (M, variant): the mean of ``||F/ρ_D||²/||b||²`` with its 95% interval.

    Equal weights: ``theory`` is the exact value (:func:`row_theory`; ``theory_kind`` the law's, with
    ``theory_radius`` when ``E[M]`` is estimated).  Softmax weights: every
    transported variant also gets the paired ``excess`` over the independent-weights plug-in
    ``ᾱᵀCᾱ + σ²dΣᾱ²`` of its drawn weights; with ``qkv-indep`` the qkv row gets the paired
    ``contrast`` ``||F_same||² − ||F_indep||²``.
    """
    rows = []
    for m_idx, M in enumerate(far_counts(params)):
        s = _samples(fam, M, params, seed + 7919 * m_idx, weights=weights, key_align=key_align,
                     independent="qkv-indep" in variants, show=show, backend=backend)
        for v in variants:
            row = {"family": fam.name, "weights": weights, "key_align": key_align, "variant": v, "M": M,
                   **mean_ci(s[v]).as_row(), "theory": None, "in_verdict": False}
            if weights == "equal":
                row.update(theory=row_theory(fam, v, M, params["noise"]),
                           theory_kind="closed form" if v == "qk" else fam.theory_kind)
                if v != "qk" and fam.mean_radius > 0:  # estimated E[M]: the theory's own 95% radius
                    row["theory_radius"] = qkv_interference_radius(fam, background(fam), M)
            elif v != "qk":  # the plug-in of the drawn weights and the paired excess over it
                exc = mean_ci(s[v] - s["plugin"])
                row.update({"plugin": float(s["plugin"].mean()), "plugin_kind": fam.theory_kind,
                            "excess": exc.estimate, "excess_ci_low": exc.ci_low, "excess_ci_high": exc.ci_high})
                if "plugin-radius" in s:
                    row["plugin_radius"] = float(s["plugin-radius"].mean())
            if v == "qkv" and "qkv-indep" in variants:
                c = mean_ci(s["qkv"] - s["qkv-indep"])
                row.update({"contrast": c.estimate, "contrast_ci_low": c.ci_low, "contrast_ci_high": c.ci_high})
            if v == "qkv" and weights == "equal":
                row["asymptote"] = qkv_asymptote(fam, background(fam), M, params["noise"])
            row.update(extra or {})
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------
# the joint verdict
# ---------------------------------------------------------------------------------------
def _keys(field: str) -> tuple[str, str]:
    return ("estimate", "ci_high") if field == "estimate" else (field, f"{field}_ci_high")


def verdict_key(field: str, kind: str) -> str:
    """Where :func:`judge` records a test: ``<field>_test`` (equals) or ``<field>_<kind>_test`` (above, below)."""
    return f"{field}_test" if kind == "equals" else f"{field}_{kind}_test"


def passed(test: tuple) -> bool:
    """Whether a judged test ``(row, field, kind, value[, radius])`` passed."""
    row, field, kind = test[:3]
    return bool(row[verdict_key(field, kind)]["passed"])


def equals_theory(row: dict) -> tuple:
    """The test "``estimate`` equals ``theory``", widened by the theory's 95% radius (an estimated ``E[M]``)."""
    return row, "estimate", "equals", row["theory"], row.get("theory_radius", 0.0)


def zero_excess(row: dict) -> tuple:
    """The test "the paired excess over the plug-in ``ᾱᵀCᾱ`` is 0" (weights independent of the transport),
    labelled with the plug-in's kind and widened by its 95% radius (``plugin_radius``) when ``E[M]`` is estimated."""
    row.update(excess_theory=0.0, excess_theory_kind=row.get("plugin_kind", "closed form"))
    rad = row.get("plugin_radius", 0.0)
    if rad:
        row["excess_theory_radius"] = rad
    return row, "excess", "equals", 0.0, rad


def judge(tests: list[tuple], level: float = LEVEL) -> tuple[int, int]:
    """Run every test of a verdict at one Bonferroni-joint level; returns (passed, number of tests).

    A test is ``(row, field, kind, value)``: ``field`` is ``"estimate"`` or a paired-difference
    field (``"excess"``, ``"contrast"``) whose 95% Student-t interval the row carries; ``kind`` is
    ``"equals"`` (``value`` inside the two-sided interval at level ``1 − (1−level)/m``), ``"above"``
    or ``"below"`` (one-sided bound at that level beyond ``value``).  An optional fifth entry is the
    95% radius of an estimated ``value`` (both intervals: the comparison is widened by it).  Each tested
    row gets ``in_verdict = True`` and ``{kind, value, passed}`` (and ``theory_radius``) under :func:`verdict_key`.
    """
    m = sum(t[0][_keys(t[1])[1]] > t[0][_keys(t[1])[0]] for t in tests)  # rows without spread cannot fail by chance
    alpha = (1.0 - level) / max(m, 1)
    n_ok = 0
    for row, field, kind, value, *radius in tests:
        rad = float(radius[0]) if radius else 0.0
        est_k, hi_k = _keys(field)
        est, hi, n = row[est_k], row[hi_k], row["n_samples"]
        se = (hi - est) / stats.t.ppf(0.5 + LEVEL / 2, n - 1)
        tol = 1e-12 * max(1.0, abs(value))  # rows without spread (QK without noise, n = 0) are exact
        if kind == "equals":
            ok = abs(est - value) <= se * stats.t.ppf(1 - alpha / 2, n - 1) + rad + tol
        elif kind == "above":
            ok = est - se * stats.t.ppf(1 - alpha, n - 1) - rad > value
        elif kind == "below":
            ok = est + se * stats.t.ppf(1 - alpha, n - 1) + rad < value
        else:
            raise ValueError(f"unknown test kind {kind!r}")
        row["in_verdict"] = True
        row[verdict_key(field, kind)] = {"kind": kind, "value": value, "passed": bool(ok),
                                         **({"theory_radius": rad} if rad else {})}
        n_ok += bool(ok)
    return n_ok, len(tests)


_SPREAD = 1e-9  # relative half-width below which a row counts as exact (rounding), not as a sample


def pooled_level(rows: list[dict], field: str = "estimate") -> dict | None:
    """The level of a theory pooled over independent rows: ``δ = Σ_i w_i δ_i / Σ_i w_i`` with ``w_i = 1/se(δ_i)²``.

    ``field="estimate"``: ``δ_i = estimate_i/theory_i − 1`` (rows with a ``theory``); ``"excess"``:
    ``δ_i = excess_i/plugin_i`` (the paired excess over the plug-in ``ᾱᵀCᾱ``, relative).  Its theory is ``0``;
    ``theory_radius`` pools the rows' relative radii the same way (an estimated ``E[M]``).  A row is a
    pseudo-row for :func:`judge` (``n_samples`` the smallest row's); ``None`` when no row has spread above
    rounding (relative half-width ≤ 10⁻⁹: those rows are exact and tested one by one).
    """
    ref = "theory" if field == "estimate" else "plugin"
    hi_k = "ci_high" if field == "estimate" else f"{field}_ci_high"
    rad_k = "theory_radius" if field == "estimate" else "plugin_radius"
    # spread above rounding: a row whose interval is rounding-sized (an exact row, e.g. M = 1) is tested on
    # its own; pooled, its weight 1/se² would swamp every real row
    use = [r for r in rows if r.get(ref) and r[hi_k] - r[field] > _SPREAD * abs(r[ref])]
    if not use:
        return None
    th = np.array([r[ref] for r in use], float)
    est = np.array([r[field] for r in use], float)
    n = min(r["n_samples"] for r in use)
    se = np.array([(r[hi_k] - r[field]) / stats.t.ppf(0.5 + LEVEL / 2, r["n_samples"] - 1) for r in use]) / np.abs(th)
    dev = est / th - 1.0 if field == "estimate" else est / th
    w = 1.0 / se**2
    pooled, se_p = float(w @ dev / w.sum()), float(1.0 / np.sqrt(w.sum()))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * se_p
    rad = float(w @ (np.array([r.get(rad_k, 0.0) for r in use]) / np.abs(th)) / w.sum())
    return {"variant": use[0].get("variant"), "field": field, "M": [r["M"] for r in use], "estimate": pooled,
            "ci_low": pooled - half, "ci_high": pooled + half, "n_samples": n, "theory": 0.0,
            "theory_kind": use[0].get("theory_kind" if field == "estimate" else "plugin_kind", "closed form"),
            **({"theory_radius": rad} if rad else {}), "in_verdict": False}


def label(rows: list[dict]) -> None:
    """Every row without a verdict test gets ``in_verdict = False``."""
    for r in rows:
        r.setdefault("in_verdict", False)


# ---------------------------------------------------------------------------------------
# plotting
# ---------------------------------------------------------------------------------------
def _kind_word(rows: list[dict]) -> str:
    """``exact``, or ``estimated`` when the rows' theory rests on an estimated ``E[M]``."""
    return "estimated" if str(rows[0].get("theory_kind", "")).startswith("estimated") else "exact"


def energy_panel(ax, rows: list[dict], variants, label_prefix: str = "") -> None:
    """Monte Carlo ``r`` per variant against ``M`` with the exact curve or the plug-in, log–log."""
    for v in variants:
        rs = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["M"])
        if not rs:
            continue
        M = np.array([r["M"] for r in rs])
        est, lo, hi, th = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high", "theory"))
        has_th = np.isfinite(th).any()
        sp.theory_vs_measurement(ax, M, est, np.clip(lo, 1e-9, None), hi, theory=th if has_th else None, color=COLORS[v],
                                 label=f"{label_prefix}{v}: measured",
                                 theory_label=f"{label_prefix}{v}: {_kind_word(rs)} finite-M")
        if not has_th and "plugin" in rs[0] and v == "qkv":
            ax.plot(M, finite([r["plugin"] for r in rs]), ":", color="k", lw=1.3,
                    label=r"independent-weights plug-in $\bar\alpha^\top C \bar\alpha$")
        asy = finite([r.get("asymptote") for r in rs])
        if np.isfinite(asy).any():
            ax.plot(M, asy, ":", color="0.45", lw=1.2, label=r"large-$M$ form $\sum_b w_b (1+\chi_b)/((1-\chi_b) M)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$M$ (far sources at route lengths $D, \ldots, D+M-1$)")
    ax.set_ylabel(r"$\mathbb{E}\|F\|^2 / (\rho_D^2 \|b\|^2)$ (1 = coherent)")
    ax.legend(loc="lower left")


def caption_params(p: dict, keys: tuple[str, ...]) -> str:
    return ", ".join(f"{k}={p[k]}" for k in keys if k in p)


def with_default(opts: tuple[Option, ...], **defaults) -> tuple[Option, ...]:
    """``opts`` with the defaults of the named options replaced."""
    return tuple(Option(o.name, defaults[o.name], o.help, o.parse) if o.name in defaults else o for o in opts)


OPT_D = Option("D", 16, "near window D: far sources at route lengths n ≥ D", Int(1, 10**5, size=True))
OPT_W = Option("weights", "equal", "far weights: 'equal' or 'softmax' (λ qᵀP_n k_n)", Choice("equal", "softmax"))
OPT_LAM = Option("lam", 4.0, "logit scale λ ≥ 0 (softmax weights)", Float(0, 100))
OPT_KA = Option("key_align", 0.0, "far keys ∝ a·b̂ + √(1−a²)·uniform, a ∈ [0,1] (0: weights independent of the "
                "steps; 1: keys = b̂, weights select routes that keep b̂)", Float(0, 1))
OPT_NOISE = Option("noise", 0.0, "σ of the per-source value noise ξ_j ~ N(0, σ²I_d)", Float(0, 1e6))


# ---------------------------------------------------------------------------------------
# wrong models and wrong theories (the mutants patch these in)
# ---------------------------------------------------------------------------------------
def no_transport(*args, **kwargs) -> dict[str, np.ndarray]:
    """Wrong model: the engine with the values left untransported (QK-only in place of QKV, and of the
    independent stream)."""
    out = _values.far_energy_samples(*args, **kwargs)
    for k in ("qkv", "qkv-indep"):
        if k in out:
            out[k] = out["qk"].copy()
    return out


def chi_scaled_theory(family: StepLaw, b: np.ndarray, M: int, noise: float = 0.0, *,
                      factor: float = 1.03) -> float:
    """Wrong theory: :func:`qkv_interference_theory` with every ``χ`` (every ``E[M]`` eigenvalue) times ``factor``
    (laws without correlation pairs: every lag ``c_m`` times ``factor^m``)."""
    if not has_correlation_pairs(family):
        c = lag_correlations(family, b, M) * factor ** np.arange(M)
        m = np.arange(1, M)
        coh = float(M * c[0] + 2.0 * (c[1:] @ (M - m).astype(float))) / M**2
        return coh + noise**2 * family.d / (M * float(np.dot(b, b)))
    w, z = correlation_pairs(family, b)
    z = z * factor
    z = z / np.maximum(np.abs(z), 1.0)  # keep |χ| ≤ 1
    return float(np.real(coherent_sum(z, M)) @ w) / M**2 + noise**2 * family.d / (M * float(np.dot(b, b)))


def chi_scaled_pairs(family: StepLaw, b: np.ndarray, *, factor: float = 1.03) -> tuple[np.ndarray, np.ndarray]:
    """Wrong theory: :func:`stylized.theory.value_theory.correlation_pairs` with every ``χ`` times ``factor`` (patched into
    the engine's plug-in ``ᾱᵀCᾱ``)."""
    w, z = correlation_pairs(family, b)
    z = z * factor
    return w, z / np.maximum(np.abs(z), 1.0)


def asymptote_theory(family: StepLaw, b: np.ndarray, M: int, noise: float = 0.0) -> float:
    """Wrong theory: the large-``M`` form ``Σ w(1+χ)/((1−χ)M)`` taken as the exact finite-``M`` value."""
    return qkv_asymptote(family, b, M, noise)


def repeated_steps(draw):
    """Wrong model: every step of a route equal to its first, ``P_n = m^n`` (commuting, not independent);
    wraps :func:`stylized.engine.values.draw_route_steps`."""
    def drawn(family, size, N, rng, *, backend="numpy"):
        steps = draw(family, size, N, rng, backend=backend)
        rep = steps[:, 1:2] if N > 1 else steps[:, :1]
        return np.broadcast_to(rep, steps.shape).copy()
    return drawn


def theory_scaled(target: str, factor: float, *, keep: Callable[..., bool] | None = None):
    """Wrong theory: the function at ``target`` (``module.name``) with its value (each entry of a tuple) times
    ``factor``: a few-percent error in a theory's level (a :attr:`Mutant.patch`; ``theory_scaled(t, f)()`` is a
    :attr:`Theory.perturb`).  A call where ``keep(*args, **kwargs)`` is true keeps its value (fixed by definition)."""
    import importlib

    mod, _, name = target.rpartition(".")

    def patch():
        orig = getattr(importlib.import_module(mod), name)

        def scaled(*args, **kwargs):
            out = orig(*args, **kwargs)
            if keep is not None and keep(*args, **kwargs):
                return out
            return tuple(factor * x for x in out) if isinstance(out, tuple) else factor * out
        return mock.patch(target, scaled)
    return patch


def one_source(pos: int) -> Callable[..., bool]:
    """A ``keep`` for :func:`theory_scaled`: the call whose far count ``M`` (positional ``pos``, or ``M=``) is 1.
    One far source is coherent by definition: ``r(1) = ||P b||²/||b||² = 1``, ``ᾱᵀCᾱ = C_00 = 1``."""
    return lambda *a, **k: int(k["M"] if "M" in k else a[pos]) == 1


def level_theory(name: str, description: str, target: str, *, m_arg: int | None = None,
                 params: dict | None = None) -> Theory:
    """A :class:`Theory` whose ``perturb(f)`` is :func:`theory_scaled` of ``target`` by ``f`` (``m_arg``: the position of
    ``M``; ``M = 1`` left alone, :func:`one_source`)."""
    keep = None if m_arg is None else one_source(m_arg)
    return Theory(name, description, lambda f: theory_scaled(target, f, keep=keep)(), params=params or {})


def halving_bound(qk: float) -> float:
    """The bound a transported far energy must stay below at the largest ``M``: ``½ r_QK`` (a :class:`Theory` scales
    it where the check's module looks it up)."""
    return 0.5 * qk


def mean_scaled(factor: float):
    """Wrong theory: every law's theory ``E[M]`` (:meth:`StepLaw.theory_mean`, the estimated one for a law without
    a closed form) times ``factor`` (a :attr:`Mutant.patch`; the estimated path, e.g. ``family="cayley"``)."""
    from stylized.laws.base import StepLaw

    orig = StepLaw.theory_mean
    return lambda: mock.patch.object(StepLaw, "theory_mean", lambda self: factor * orig(self))


# The two model mutants every value check shares (``Check.mutants``).
NO_VALUE_TRANSPORT = Mutant(
    "no-value-transport", "QK-only sums in place of the transported QKV sums (values not rotated)",
    patch=lambda: mock.patch("simulations.value._common.far_energy_samples", no_transport))
REPEATED_STEPS = Mutant(
    "repeated-steps", "every step of a route equal to its first, P_n = mⁿ (commuting, not i.i.d.)",
    patch=lambda: mock.patch("stylized.engine.values.draw_route_steps", repeated_steps(_values.draw_route_steps)))
