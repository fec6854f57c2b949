"""C1 — the per-plane mixing-window spectrum of random RoPE angles (``rope-random``).

With ``θ_b ~ U(−ω_b, ω_b)`` and RoPE's ``ω_b = base^{−2b/d}``, plane ``b`` has ``χ_b = sinc ω_b``
and ``E[cos A_{n,b}] = sinc(ω_b)ⁿ``, so the route length where it first falls below ``ε`` is the
closed form ``W_b(ε) = ⌈ln ε / ln sinc ω_b⌉``: a few steps for ``ω ≈ 1``, far more than any
context for ``ω ≈ 1/base``.

Measured: ``--chains`` contexts of length ``--L-eval``; in each, the per-plane correlation
``cos(A_{j→i,b})`` is averaged over *every* pair ``(j, i)`` at route length ``n`` (FFT
autocorrelation), with a Student-t band over contexts (Bonferroni over planes, joint 95%).  Per
plane the measured window is the first ``n`` where the correlation falls below ``ε``, with the
interval ``[first n with ci_low < ε, first n with ci_high < ε]``; a missing end means "beyond
``L_eval − 1``" (``resolved`` = the upper end is inside the context).  A slow plane's pairs share
one long random walk per context, so the pair-averaged correlation is noisy near ``n ≈ W_b`` and
only the faster planes are resolved; for a plane with ``W_b ≥ L_eval`` the test is that its band
never falls below ``ε`` inside the context.

The model piece (``sample_steps``) and the theory piece (``plane_windows``) are module-level names,
so the mutants in ``MUTANTS`` can replace them.  ``--backend cupy``: the angles and the FFT
autocorrelations run on the device; numpy and numba run the identical host code.

Verdict: every plane has ``min(W_b, L_eval)`` inside its measured interval.  Reports how many planes
decorrelate within the training length (``--L-train``) and within the evaluation length.

The check takes no ``--family``: its claim is about RoPE's frequency ladder ``ω_b = base^{−2b/d}``
(``--d``, ``--base``), so it builds the ``rope-random`` law itself.  Any law's in-context window,
SO(2) planes or not, is measured by ``check mixing``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from stylized.core.backend import array_namespace, to_numpy, xp_generator
from stylized.core.montecarlo import check_positive_int
from stylized.core.montecarlo import progress as _progress
from stylized.core.options import Float, Int
from stylized.engine.sampling import sample_steps
from stylized.engine.scores import first_crossing, so2_pair_correlation
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.laws.families import RopeRandom

from ._common import limits

NAME = "mixing-spectrum"


def plane_windows(fam: RopeRandom, eps: float, L_train: int, L_eval: int) -> np.ndarray:
    """Closed form ``W_b(ε) = ⌈ln ε / ln sinc ω_b⌉``: the first ``n`` with ``sinc(ω_b)ⁿ < ε``, per plane.

    (``L_train`` and ``L_eval`` are not used: the window does not depend on the context; they are
    arguments so that a mutant can make it depend on them.)
    """
    return fam.plane_windows(eps)


def _check_params(params: dict) -> tuple[RopeRandom, float, int, int, int]:
    """``(law, eps, L_train, L_eval, chains)``, the limits between the options refused (one line naming the flags):
    an even ``--d`` (SO(2) planes) and an evaluation context longer than the training one (``--L-eval > --L-train``)."""
    d = check_positive_int("d", params["d"], 2)
    if d % 2:
        raise ValueError(f"--d: d must be even for SO(2) blocks (d = 2, 4, 6, …), got {d}")
    fam = RopeRandom(d=d, base=float(params["base"]))
    eps = float(params["eps"])
    if not 0.0 < eps < 1.0:
        raise ValueError(f"--eps: must lie in (0, 1), got {eps!r}")
    Lt = check_positive_int("L_train", params["L_train"], 2)
    Le = check_positive_int("L_eval", params["L_eval"], 3)
    if Le <= Lt:
        raise ValueError(f"--L-eval: must be > --L-train (planes that mix within the training length against those "
                         f"that mix within a longer context), got L_eval={Le}, L_train={Lt}")
    chains = check_positive_int("chains", params["chains"], 3)
    return fam, eps, Lt, Le, chains


def _validate(params: dict) -> None:
    """``Check.validate``: :func:`_check_params`, before any work (``--dry-run`` too)."""
    _check_params(params)


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    fam, eps, Lt, Le, chains = _check_params(params)
    B = fam.n_planes
    xp, xrng = array_namespace(backend), xp_generator(backend, np.random.default_rng(seed))
    tot = xp.zeros((Le, B))
    tot2 = xp.zeros((Le, B))
    shift = None  # sums of c − c₁ (the first chain): Σc² − (Σc)²/k cancels all digits where c ≈ 1 with a tiny spread
    for _ in _progress(range(chains), total=chains, desc=NAME, enabled=progress):
        c = so2_pair_correlation(sample_steps(fam, (Le,), xrng, backend))
        shift = c if shift is None else shift
        dc = c - shift
        tot += dc
        tot2 += dc * dc
    tot, tot2, shift = to_numpy(tot), to_numpy(tot2), to_numpy(shift)
    mean = shift + tot / chains
    sd = np.sqrt(np.maximum(tot2 - tot**2 / chains, 0.0) / (chains - 1))
    half = stats.t.ppf(1 - 0.025 / B, chains - 1) * sd / math.sqrt(chains)  # joint over planes
    n = np.arange(Le)
    W = np.asarray(plane_windows(fam, eps, Lt, Le), dtype=float)
    omega = fam.omegas
    rows = []
    for b in range(B):
        cr = first_crossing(n, mean[:, b], mean[:, b] - half[:, b], mean[:, b] + half[:, b], eps)
        # interval [window_low, window_high]; a missing end means "beyond the longest route L_eval − 1"
        lo = cr["window_low"] if cr["window_low"] is not None else Le
        hi = cr["window_high"] if cr["window_high"] is not None else math.inf
        ok = lo <= min(W[b], Le) <= hi
        est = cr["window"]
        rows.append({"plane": b, "omega": float(omega[b]), "chi": float(np.sinc(omega[b] / np.pi)),
                     "estimate": est, "ci_low": cr["window_low"], "ci_high": cr["window_high"],
                     "theory": float(W[b]), "theory_kind": "closed form", "n_samples": chains, "routes_per_n": chains * Le,
                     "decorrelates_in_train": bool(W[b] <= Lt), "decorrelates_in_eval": bool(W[b] <= Le),
                     "resolved": cr["window_high"] is not None, "consistent": bool(ok)})
    grid = np.unique(np.round(np.geomspace(1, max(2, Le // 2), 80)).astype(int))  # ≥ L/2 pairs per context
    k_train = sum(r["decorrelates_in_train"] for r in rows)
    k_eval = sum(r["decorrelates_in_eval"] for r in rows)
    meas_train = sum(r["estimate"] is not None and r["estimate"] <= Lt for r in rows)
    meas_eval = sum(r["estimate"] is not None for r in rows)
    n_ok = sum(r["consistent"] for r in rows)
    resolved = [r["plane"] for r in rows if r["resolved"]]
    crossing = [r for r in rows if r["estimate"] is not None and r["resolved"]]
    h = crossing[-1] if crossing else rows[0]
    verdict = (f"rope-random d={fam.d}, base={fam.base:g}, ε={eps:g}: {n_ok}/{B} planes agree with W_b = ⌈ln ε/ln sinc ω_b⌉ "
               f"({chains} contexts of {Le:,} tokens, all pairs; window bounded above inside the context for "
               f"{len(resolved)} planes (b ≤ {max(resolved) if resolved else '—'}); slower planes are too noisy near "
               f"their window to bound it from above). Planes that decorrelate within the training length "
               f"{Lt}: {k_train} by theory, {meas_train} measured; within {Le:,}: {k_eval} by theory, {meas_eval} measured; "
               f"the other {B - k_eval} planes (ω_b < {omega[k_eval] if k_eval < B else float('nan'):.3g}) never "
               f"decorrelate inside any context, W_b up to {W[-1]:.3g}.")
    return {
        "holds": n_ok == B,
        "rows": rows,
        "curves": {"n": grid.tolist(), "mean": mean[grid].T.tolist(), "half": half[grid].T.tolist()},
        "planes_train": k_train,
        "planes_eval": k_eval,
        "headline": headline(f"measured window of plane {h['plane']} (ω={h['omega']:.3g}), the slowest resolved",
                             h, verdict, n_samples=chains, theory_kind="closed form"),
    }


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: window per plane (log y) with L_train and L_eval.  Right: per-plane correlation decay."""
    p = result["params"]
    rows = result["rows"]
    fig, (ax1, ax2) = sp.figure(2, 1, height=6.6)
    b = np.array([r["plane"] for r in rows])
    ax1.semilogy(b, [r["theory"] for r in rows], "k--", lw=1, label=r"theory $W_b(\varepsilon) = \lceil \ln\varepsilon / \ln \mathrm{sinc}\,\omega_b \rceil$")
    m = [r for r in rows if r["estimate"] is not None and r["resolved"]]
    sp.theory_vs_measurement(ax1, [r["plane"] for r in m], *([r[k] for r in m] for k in ("estimate", "ci_low", "ci_high")),
                             color="C0", mfc="none", label="measured first crossing (joint 95%)")
    u = [r for r in rows if r["ci_low"] is not None and not r["resolved"]]
    if u:  # lower end only: the upper end lies beyond the context
        ax1.vlines([r["plane"] for r in u], [r["ci_low"] for r in u], p["L_eval"], color="C1", lw=1.5)
        ax1.plot([r["plane"] for r in u], [r["ci_low"] for r in u], "^", color="C1", ms=5,
                 label="unresolved: window ≥ lower end")
    ax1.axhline(p["L_train"], color="C2", ls="--", lw=1.2, label=f"training length {p['L_train']}")
    ax1.axhline(p["L_eval"], color="C3", ls="--", lw=1.2, label=f"evaluation length {p['L_eval']:,}")
    ax1.set_xlabel(r"plane $b$  ($\omega_b = \mathrm{base}^{-2b/d}$)")
    ax1.set_ylabel(r"mixing window $W_b$ (steps)")
    ax1.set_title(f"C1: window per plane ({result['planes_train']} planes mix within {p['L_train']}, "
                  f"{result['planes_eval']} within {p['L_eval']:,})")
    ax1.set_ylim(top=ax1.get_ylim()[1] * 30)
    ax1.legend(loc="upper left", ncol=2)
    cv = result["curves"]
    n = np.array(cv["n"])
    B = len(rows)
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]
    mean, half = np.asarray(cv["mean"], float), np.asarray(cv["half"], float)
    floor = float(np.median(half[:, -1]))  # 95% half-width where every plane has decorrelated
    for k in range(0, B, max(1, B // 8)):
        col = cmap(k / max(B - 1, 1))
        ok = mean[k] - half[k] > 0  # resolved from zero
        ax2.plot(n, np.where(ok, mean[k], np.nan), color=col, lw=1.3, label=rf"$b={k}$, $\omega_b={rows[k]['omega']:.2g}$")
        ax2.fill_between(n, np.where(ok, mean[k] - half[k], np.nan), mean[k] + half[k], color=col, alpha=0.25, lw=0)
        ax2.plot(n, np.clip(rows[k]["chi"] ** n, 1e-4, None), color=col, ls="--", lw=0.9)
    ax2.axhline(p["eps"], color="0.2", lw=0.9, ls="-.")
    ax2.axvline(p["L_train"], color="C2", ls="--", lw=1)
    ax2.axvline(p["L_eval"], color="C3", ls="--", lw=1)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_ylim(1e-3, 1.5)
    sp.noise_floor(ax2, floor, label="noise floor (95% half-width)")
    ax2.plot([], [], "k--", lw=0.9, label=r"theory $\mathrm{sinc}(\omega_b)^n$")
    ax2.set_xlabel("route length n (steps)")
    ax2.set_ylabel(r"$\mathbb{E}[\cos A_{n,b}]$ (per plane)")
    ax2.set_xlabel(r"route length $n$ (steps; vertical: $L_{train}$, $L_{eval}$; dash-dot: $\varepsilon$)")
    ax2.set_title("per-plane decay, measured (band: 95% CI) vs theory")
    ax2.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    sp.caption(fig, f"rope-random, d={p['d']}, base={p['base']:g}, ε={p['eps']:g}; {p['chains']} contexts of "
                 f"{p['L_eval']:,} tokens, correlation averaged over all pairs (curves shown to n = L/2); seed {p['seed']}; curves stop where the 95% CI reaches 0")
    return [sp.save(fig, Path(outdir) / NAME)]


# -- mutants: a wrong theory or a wrong model must turn the verdict false ---------------------------
def _windows_all_mix_in_training(fam: RopeRandom, eps: float, L_train: int, L_eval: int) -> np.ndarray:
    """Theory mutant: non-mixing planes counted as mixing, ``min(W_b, L_train)``."""
    return np.minimum(fam.plane_windows(eps), L_train)


def _windows_chi_times(factor: float):
    """Theory mutant factory: ``χ_b`` times ``factor``, ``⌈ln ε / ln(factor·sinc ω_b)⌉`` (``∞`` where
    ``factor·χ_b ≥ 1``: a plane that would never decorrelate)."""
    def windows(fam: RopeRandom, eps: float, L_train: int, L_eval: int) -> np.ndarray:
        chi = factor * np.sinc(fam.omegas / np.pi)
        with np.errstate(divide="ignore"):
            return np.where(chi < 1.0, np.ceil(np.log(eps) / np.log(np.minimum(chi, 1.0))), np.inf)

    return windows


def _windows_times(factor: float):
    """Theory perturbation factory: the window's ratio times ``factor`` inside the ceiling,
    ``⌈factor · ln ε / ln sinc ω_b⌉`` (a window is a whole number of steps: scaling ``W_b`` after the ceiling
    would make every non-integer theory fail at any ``factor ≠ 1``, which measures the rounding, not power)."""
    def windows(fam: RopeRandom, eps: float, L_train: int, L_eval: int) -> np.ndarray:
        chi = np.abs(np.sinc(fam.omegas / np.pi))
        with np.errstate(divide="ignore"):
            return np.where(chi < 1.0, np.ceil(factor * np.log(eps) / np.log(np.minimum(chi, 1.0))), np.inf)

    return windows


def _windows_grow_with_L(fam: RopeRandom, eps: float, L_train: int, L_eval: int) -> np.ndarray:
    """Theory mutant: a window that grows with the context, ``W_b·L_eval/L_train``."""
    return fam.plane_windows(eps) * (L_eval / L_train)


def _rope_steps(fam: RopeRandom, shape: tuple, xrng, backend: str = "numpy"):
    """Model mutant: RoPE, ``θ_{t,b} = ω_b`` at every token (fixed rotation, no randomness)."""
    x = sample_steps_ref(fam, shape, xrng, backend)
    return x * 0.0 + array_namespace(backend).asarray(fam.omegas)


def _half_width_steps(fam: RopeRandom, shape: tuple, xrng, backend: str = "numpy"):
    """Model mutant: angles ``U(−ω_b/2, ω_b/2)``, half the width the theory assumes."""
    return 0.5 * sample_steps_ref(fam, shape, xrng, backend)


sample_steps_ref = sample_steps


def _patch(name: str, new):
    return patched(__name__, name, new)


MUTANTS = (
    Mutant("non-mixing planes mix", "theory: every plane counted as mixing within L_train, min(W_b, L_train)",
           _patch("plane_windows", _windows_all_mix_in_training)),
    Mutant("χ 3% low", "theory: ⌈ln ε / ln(0.97·sinc ω_b)⌉", _patch("plane_windows", _windows_chi_times(0.97))),
    Mutant("window ∝ L", "theory: W_b·L_eval/L_train, a window that grows with the context",
           _patch("plane_windows", _windows_grow_with_L)),
    Mutant("RoPE (fixed angles)", "model: θ_{t,b} = ω_b at every token, P_n = R(nω) never decorrelates",
           _patch("sample_steps", _rope_steps)),
    Mutant("half-width angles", "model: θ_b ~ U(−ω_b/2, ω_b/2) instead of U(−ω_b, ω_b)",
           _patch("sample_steps", _half_width_steps)),
)

REDUCED = {"d": 32, "L_eval": 8192, "chains": 64}  # 64 chains: W_b resolved to about ±5% (16 gave ±11%)

THEORIES = (
    Theory("χ_b = sinc ω_b", "the per-plane mean of the step (|E e^{iθ_b}|), from which every window follows",
           lambda factor: _patch("plane_windows", _windows_chi_times(factor))()),
    Theory("W_b(ε)", "the closed-form window ⌈ln ε/ln sinc ω_b⌉ itself, every plane (its ratio ln ε/ln sinc ω_b "
           "times factor inside the ceiling: a window is a whole number of steps, so below about 33 steps a 3% error "
           "moves it by less than one step; longer windows are resolved to about ±3–10% by 32 contexts)",
           lambda factor: _patch("plane_windows", _windows_times(factor))()),
)

CHECK = register(limits(Check(
    name=NAME,
    claim="C1",
    statement=("Measured with random RoPE angles θ_b ~ U(−ω_b, ω_b): in each plane b the route length where the "
               "all-pairs correlation first falls below ε matches the closed form W_b(ε) = ⌈ln ε/ln sinc ω_b⌉ "
               "(joint 95% over planes; planes with W_b ≥ L_eval must stay above ε inside the context): "
               "some planes mix within the training length, some never inside any context."),
    options=(
        Option("d", 64, "head dimension d (even)", Int(2, 4096, size=True)),
        Option("base", 10000.0, "RoPE base (ω_b = base^(−2b/d))", Float(1, 1e12, lo_open=True)),
        Option("eps", 0.05, "correlation level ε defining the window", Float(1e-6, 1, hi_open=True)),
        Option("L_train", 512, "training context length (drawn in)", Int(2, 2**30, size=True)),
        Option("L_eval", 65536, "evaluation context length = simulated context length (> L_train; ≥ 256: above the fastest "
               "plane's window)",
               Int(256, 2**30, size=True)),
        Option("chains", 32, "independent contexts of length L_eval", Int(3, 10**6, size=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.mixing_spectrum",
    validate=_validate,
    extra={"order": 1},
    mutants=MUTANTS,
    reduced=REDUCED,
    theories=THEORIES,
)))
