"""Shared pieces of the C5 value checks: options, the engine loop over ``M``, the joint verdict, mutants.

Every value check draws its samples through :func:`energy_rows` (one Monte Carlo engine,
:func:`stylized.values.far_energy_samples`) and takes its exact values from :func:`row_theory`;
both look up the engine and the closed forms in this module at run time, which is where the
mutants (:func:`no_transport`, :func:`chi_scaled_theory`, …) patch them.

The verdict of a check is a list of tests on rows, all at one Bonferroni-joint 95% level
(:func:`judge`): ``m`` tests, each at ``1 − 0.05/m``.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from scipy import stats

from stylized import plotting as sp
from stylized import values as _values
from stylized.counter_rng import chunked_generators
from stylized.estimators import mean_ci
from stylized.families import StepFamily
from stylized.montecarlo import check_positive_int, progress
from stylized.options import Choice, Float, Int
from stylized.registry import Mutant, Option
from stylized.value_theory import (
    coherent_sum,
    correlation_pairs,
    qk_interference_theory,
    qkv_asymptote,
    qkv_interference_theory,
)
from stylized.values import chunk_size, far_energy_samples

from ._common import finite

__all__ = ["COLORS", "check_common", "far_counts", "energy_rows", "row_theory", "judge", "label",
           "verdict_key", "passed", "energy_panel", "caption_params", "with_default", "OPT_D", "OPT_W", "OPT_LAM", "OPT_KA", "OPT_NOISE",
           "no_transport", "chi_scaled_theory", "chi_scaled_pairs", "asymptote_theory", "repeated_steps"]

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


def far_counts(params: dict) -> list[int]:
    """The sorted far counts ``M`` of ``params['M']`` (each ≥ 1)."""
    Ms = sorted(set(params["M"]))
    if not Ms or Ms[0] < 1:
        raise ValueError(f"M must be a list of far counts ≥ 1, got {params['M']!r}")
    return Ms


def _samples(fam: StepFamily, M: int, params: dict, seed: int, *, weights: str, key_align: float,
             independent: bool, show: bool, backend: str) -> dict[str, np.ndarray]:
    """All trials for one (family, M): per-trial host arrays, concatenated over chunks."""
    trials = check_positive_int("trials", params["trials"], 2)
    chunk = chunk_size(fam, params["D"] + M, dense=fam.kind == "haar" and weights != "equal", backend=backend)
    parts = [far_energy_samples(fam, M, params["D"], size, rng, weights=weights, lam=params["lam"],
                                key_align=key_align, noise=params["noise"], independent=independent,
                                backend=backend)
             for size, rng in progress(chunked_generators(trials, seed, chunk), total=-(-trials // chunk),
                                       desc=f"{fam.name} M={M}", enabled=show)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def background(fam: StepFamily) -> np.ndarray:
    """The shared value background ``b`` of every value check: ``b̂ = (1, …, 1)/√d``."""
    return np.full(fam.d, 1.0 / np.sqrt(fam.d))


def row_theory(fam: StepFamily, variant: str, M: int, noise: float) -> float:
    """Exact ``r`` for equal weights: ``qk`` → :func:`qk_interference_theory`, else :func:`qkv_interference_theory`."""
    b = background(fam)
    if variant == "qk":
        return qk_interference_theory(fam.d, b, M, noise)
    return qkv_interference_theory(fam, b, M, noise)


def energy_rows(fam: StepFamily, params: dict, seed: int, variants: tuple[str, ...], *, weights: str,
                key_align: float, show: bool, backend: str, extra: dict | None = None) -> list[dict]:
    """One row per (M, variant): the mean of ``||F/ρ_D||²/||b||²`` with its 95% interval.

    Equal weights: ``theory`` is the exact value (:func:`row_theory`).  Softmax weights: every
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
                row.update(theory=row_theory(fam, v, M, params["noise"]), theory_kind="closed form")
            elif v != "qk":  # the plug-in of the drawn weights and the paired excess over it
                exc = mean_ci(s[v] - s["plugin"])
                row.update({"plugin": float(s["plugin"].mean()), "excess": exc.estimate,
                            "excess_ci_low": exc.ci_low, "excess_ci_high": exc.ci_high})
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


def passed(test: tuple[dict, str, str, float]) -> bool:
    """Whether a judged test ``(row, field, kind, value)`` passed."""
    row, field, kind, _ = test
    return bool(row[verdict_key(field, kind)]["passed"])


def judge(tests: list[tuple[dict, str, str, float]], level: float = LEVEL) -> tuple[int, int]:
    """Run every test of a verdict at one Bonferroni-joint level; returns (passed, number of tests).

    A test is ``(row, field, kind, value)``: ``field`` is ``"estimate"`` or a paired-difference
    field (``"excess"``, ``"contrast"``) whose 95% Student-t interval the row carries; ``kind`` is
    ``"equals"`` (``value`` inside the two-sided interval at level ``1 − (1−level)/m``), ``"above"``
    or ``"below"`` (one-sided bound at that level beyond ``value``).  Each tested row gets
    ``in_verdict = True`` and ``{kind, value, passed}`` under :func:`verdict_key`.
    """
    m = sum(r[_keys(f)[1]] > r[_keys(f)[0]] for r, f, _, _ in tests)  # rows without spread cannot fail by chance
    alpha = (1.0 - level) / max(m, 1)
    n_ok = 0
    for row, field, kind, value in tests:
        est_k, hi_k = _keys(field)
        est, hi, n = row[est_k], row[hi_k], row["n_samples"]
        se = (hi - est) / stats.t.ppf(0.5 + LEVEL / 2, n - 1)
        tol = 1e-12 * max(1.0, abs(value))  # rows without spread (QK without noise, n = 0) are exact
        if kind == "equals":
            ok = abs(est - value) <= se * stats.t.ppf(1 - alpha / 2, n - 1) + tol
        elif kind == "above":
            ok = est - se * stats.t.ppf(1 - alpha, n - 1) > value
        elif kind == "below":
            ok = est + se * stats.t.ppf(1 - alpha, n - 1) < value
        else:
            raise ValueError(f"unknown test kind {kind!r}")
        row["in_verdict"] = True
        row[verdict_key(field, kind)] = {"kind": kind, "value": value, "passed": bool(ok)}
        n_ok += bool(ok)
    return n_ok, len(tests)


def label(rows: list[dict]) -> None:
    """Every row without a verdict test gets ``in_verdict = False``."""
    for r in rows:
        r.setdefault("in_verdict", False)


# ---------------------------------------------------------------------------------------
# plotting
# ---------------------------------------------------------------------------------------
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
                                 label=f"{label_prefix}{v}: measured", theory_label=f"{label_prefix}{v}: exact finite-M")
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


def chi_scaled_theory(family: StepFamily, b: np.ndarray, M: int, noise: float = 0.0, *,
                      factor: float = 1.03) -> float:
    """Wrong theory: :func:`qkv_interference_theory` with every ``χ`` (every ``E[M]`` eigenvalue) times ``factor``."""
    w, z = correlation_pairs(family, b)
    z = z * factor
    z = z / np.maximum(np.abs(z), 1.0)  # keep |χ| ≤ 1
    return float(np.real(coherent_sum(z, M)) @ w) / M**2 + noise**2 * family.d / (M * float(np.dot(b, b)))


def chi_scaled_pairs(family: StepFamily, b: np.ndarray, *, factor: float = 1.03) -> tuple[np.ndarray, np.ndarray]:
    """Wrong theory: :func:`stylized.value_theory.correlation_pairs` with every ``χ`` times ``factor`` (patched into
    the engine's plug-in ``ᾱᵀCᾱ``)."""
    w, z = correlation_pairs(family, b)
    z = z * factor
    return w, z / np.maximum(np.abs(z), 1.0)


def asymptote_theory(family: StepFamily, b: np.ndarray, M: int, noise: float = 0.0) -> float:
    """Wrong theory: the large-``M`` form ``Σ w(1+χ)/((1−χ)M)`` taken as the exact finite-``M`` value."""
    return qkv_asymptote(family, b, M, noise)


def repeated_steps(draw):
    """Wrong model: every step of a route equal to its first, ``P_n = m^n`` (commuting, not independent);
    wraps :func:`stylized.values.draw_route_steps`."""
    def drawn(family, size, N, rng, *, backend="numpy"):
        steps = draw(family, size, N, rng, backend=backend)
        rep = steps[:, 1:2] if N > 1 else steps[:, :1]
        return np.broadcast_to(rep, steps.shape).copy()
    return drawn


# The two model mutants every value check shares (``Check.mutants``).
NO_VALUE_TRANSPORT = Mutant(
    "no-value-transport", "QK-only sums in place of the transported QKV sums (values not rotated)",
    patch=lambda: mock.patch("simulations.value_common.far_energy_samples", no_transport))
REPEATED_STEPS = Mutant(
    "repeated-steps", "every step of a route equal to its first, P_n = mⁿ (commuting, not i.i.d.)",
    patch=lambda: mock.patch("stylized.values.draw_route_steps", repeated_steps(_values.draw_route_steps)))
