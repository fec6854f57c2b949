"""C5 — near signal against far interference: QKV keeps the signal above the interference to longer contexts.

One query with ``K`` near sources (route lengths ``0 … K−1``, key ``q``, value the target ``t``)
and ``L − K`` far sources (values ``b + ξ``, ``b ⟂ t``), full softmax over all ``L`` logits.
The near target survives transport, ``E||P_n t − t||² = 2 − 2tᵀE[M]ⁿt`` *(exact; measured on
``trials_near`` routes of length ``K``)*; the
signal-to-interference ratio ``SIR = E[(tᵀN)²]/E||F||²`` (``N`` near, ``F`` far output) is measured
for QK-only and QKV, and the context length where it crosses 1 (the horizon) is compared.

Any orthogonal law with pathwise steps (odd ``d`` included).  For a law without a closed-form ``E[M]``
(``cayley``, a user's) the near profile is compared with the estimated ``2 − 2tᵀÊⁿt``: the Hotelling test
then takes the theory anywhere in its 95% box (``± 2·mean_overlap_radius``), the largest p-value over it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from unittest import mock

import numpy as np
from scipy import optimize, stats

from stylized.core.counter_rng import chunked_generators
from stylized.core.estimators import mean_ci
from stylized.core.montecarlo import check_positive_int
from stylized.core.montecarlo import progress as bar
from stylized.core.options import Int, IntList
from stylized.engine import values
from stylized.engine.values import chunk_size, ratio_ci, snr_samples
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, headline, register
from stylized.laws.base import StepLaw

from .._common import family_from_params, family_options, finite, limits
from ._common import (
    COLORS,
    LEVEL,
    OPT_KA,
    OPT_LAM,
    OPT_NOISE,
    REPEATED_STEPS,
    caption_params,
    check_common,
    check_law,
    check_laws,
    label,
    level_theory,
    mean_scaled,
    theory_scaled,
    with_default,
)

__all__ = ["run_snr", "near_transport_theory"]


def near_transport_theory(fam: StepLaw, t: np.ndarray, n: int, *, factor: float = 1.0) -> float:
    """``E||P_n t − t||² = 2 − 2 tᵀE[P_n]t`` for a unit target ``t``: ``E[P_n] = E[M]ⁿ`` (exact or estimated
    :meth:`StepLaw.theory_mean`) for i.i.d. steps, the law's :meth:`StepLaw.mean_overlap` for dependent ones
    (``iid = False``).  ``factor`` scales ``E[M]`` (a mutant)."""
    if not getattr(fam, "iid", True):
        return float(2.0 - 2.0 * factor**n * fam.mean_overlap(t, n))
    return float(2.0 - 2.0 * t @ np.linalg.matrix_power(factor * fam.theory_mean(), n) @ t)


def untransported_snr(*args, **kwargs) -> dict[str, np.ndarray]:
    """Wrong model: :func:`stylized.engine.values.snr_samples` with the values left untransported (QKV = QK)."""
    out = values.snr_samples(*args, **kwargs)
    out.update(signal_qkv=out["signal_qk"].copy(), interf_qkv=out["interf_qk"].copy(),
               overlap=np.ones_like(out["overlap"]))
    return out


def near_overlaps(fam: StepLaw, K: int, t: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """``tᵀP_n t`` for ``n = 0 … K−1`` on ``trials`` fresh routes of length ``K`` (host, shape ``(trials, K)``)."""
    out = []
    for size, rng in chunked_generators(trials, seed, 4096):
        steps = values.draw_route_steps(fam, size, K, rng)
        out.append(fam.route_scores(steps, t, np.broadcast_to(t, (size, K, t.size))))
    return np.concatenate(out)


def near_profile_pvalue(x: np.ndarray, theory: np.ndarray, radius: np.ndarray | None = None) -> float:
    """p-value of Hotelling's T² for ``E[x[:, n]] = theory[n]`` jointly over the columns with spread.

    ``x`` [trials, K]; columns without spread (``n = 0``, exactly 0) must equal their theory to
    rounding, otherwise the p-value is 0.  ``radius`` (an estimated theory's 95% radius per column):
    the largest p-value over every theory in the box ``theory ± radius`` (T² minimised over the box).
    """
    spread = x.std(axis=0) > 0
    rad = np.zeros_like(theory) if radius is None else np.asarray(radius, float)
    if np.any(np.abs(x[:, ~spread].mean(axis=0) - theory[~spread]) > rad[~spread] + 1e-12):
        return 0.0
    X, mu, r = x[:, spread], theory[spread], rad[spread]
    n, p = X.shape
    if p == 0:
        return 1.0
    if np.any(r > 0):
        S_inv = np.linalg.inv(np.atleast_2d(np.cov(X.T)))
        xbar = X.mean(axis=0)

        def t2(m: np.ndarray) -> float:
            dm = xbar - m
            return float(n * dm @ S_inv @ dm)

        # a convex quadratic over a box: its minimum is attained, L-BFGS-B finds it
        m = optimize.minimize(t2, np.clip(xbar, mu - r, mu + r), jac=lambda m: -2.0 * n * S_inv @ (xbar - m),
                              bounds=list(zip(mu - r, mu + r)), method="L-BFGS-B").x
        val = min(t2(m), t2(mu))
    else:
        dm = X.mean(axis=0) - mu
        val = float(n * dm @ np.linalg.solve(np.atleast_2d(np.cov(X.T)), dm))
    return float(stats.f.sf((n - p) / (p * (n - 1)) * val, p, n - p))


def untransported_overlaps(fam: StepLaw, K: int, t: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """Wrong model: the near target not transported, ``tᵀt = 1`` at every ``n``."""
    return np.ones((check_positive_int("trials_near", trials, 2), K))


def _snr_vectors(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query and target ``q = t`` (equal energy), background ``b ⟂ t`` (alternating signs), all unit."""
    q = np.full(d, 1.0 / np.sqrt(d))
    b = np.where(np.arange(d) % 4 < 2, 1.0, -1.0) / np.sqrt(d)
    if abs(b @ q) > 1e-12:  # d not a multiple of 4
        b = b - (b @ q) * q
        b /= np.linalg.norm(b)
    return q, q.copy(), b


def _horizon(L: np.ndarray, sir: np.ndarray, level: float = 1.0) -> float | None:
    """First ``L`` where the SIR crosses ``level`` from above (log-log interpolation); None if it never does."""
    for a in range(len(L) - 1):
        if sir[a] >= level > sir[a + 1]:
            x0, x1, y0, y1 = np.log(L[a]), np.log(L[a + 1]), np.log(sir[a]), np.log(sir[a + 1])
            return float(np.exp(x0 + (np.log(level) - y0) * (x1 - x0) / (y1 - y0)))
    return None if sir[0] >= level else float(L[0])


def _context_lengths(params: dict) -> list[int]:
    """The sorted distinct ``--L``, each beyond the ``--K`` near sources (refused, naming both flags, otherwise)."""
    K = check_positive_int("K", params["K"], 1)
    Ls = sorted(set(params["L"]))
    if not Ls or Ls[0] <= K:
        raise ValueError(f"--L: every context length must be > --K (the near sources sit at route lengths 0 … K−1), "
                         f"got L={Ls[0] if Ls else params['L']!r}, K={K}")
    return Ls


def _validate(params: dict) -> None:
    """``Check.validate``: the shared value options, the law and the context lengths against ``--K``, before any work."""
    check_common(params)
    check_laws([family_from_params(params)])
    _context_lengths(params)


def run_snr(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    check_common(params)
    fam = check_law(family_from_params(params))
    K = check_positive_int("K", params["K"], 1)
    trials = check_positive_int("trials", params["trials"], 2)
    Ls = _context_lengths(params)
    q, t, b = _snr_vectors(fam.d)
    rows = []
    for l_idx, L in enumerate(Ls):
        chunk = chunk_size(fam, L, backend=backend)
        parts = [snr_samples(fam, L, K, size, rng, lam=params["lam"], key_align=params["key_align"],
                             noise=params["noise"], q=q, t=t, b=b, backend=backend)
                 for size, rng in bar(chunked_generators(trials, seed + 104729 * l_idx, chunk),
                                           total=-(-trials // chunk), desc=f"snr L={L}", enabled=progress)]
        s = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        rho = mean_ci(s["rho"])
        for v in ("qk", "qkv"):
            r, lo, hi = ratio_ci(s[f"signal_{v}"], s[f"interf_{v}"])
            rows.append({"variant": v, "L": L, "M": L - K, "estimate": r, "ci_low": lo, "ci_high": hi, "theory": None,
                         "n_samples": trials, "signal": float(s[f"signal_{v}"].mean()),
                         "interference": float(s[f"interf_{v}"].mean()), "far_mass": rho.estimate})
    ov = near_overlaps(fam, K, t, check_positive_int("trials_near", params["trials_near"], 2), seed + 7)
    near_rows = []
    for n in range(K):
        row = {"variant": "near-transport", "n": n, **mean_ci(2.0 - 2.0 * ov[:, n]).as_row(),
               "theory": near_transport_theory(fam, t, n), "theory_kind": fam.theory_kind, "in_verdict": True}
        if fam.mean_radius > 0:  # estimated E[M]: the theory's own 95% radius, 2·|Δ tᵀE[M]ⁿt|
            row["theory_radius"] = 2.0 * float(fam.mean_overlap_radius(t, n))
        rows.append(row)
        near_rows.append(row)
    # one joint test of the whole near profile (the rows share their routes, so they are correlated):
    # Hotelling's T² of the n ≥ 1 means against the closed forms at level 5%; n = 0 is exact (0)
    p_near = near_profile_pvalue(2.0 - 2.0 * ov, np.array([r["theory"] for r in near_rows]),
                                 np.array([r.get("theory_radius", 0.0) for r in near_rows]))
    n_pass, n_tests = int(p_near >= 1.0 - LEVEL), 1
    for r in near_rows:
        r["joint_pvalue"] = p_near
    label(rows)
    Larr = np.array(Ls, float)
    horizons = {v: _horizon(Larr, np.array([r["estimate"] for r in rows if r["variant"] == v])) for v in ("qk", "qkv")}
    hq, hk = horizons["qkv"], horizons["qk"]
    longer = hk is not None and (hq is None or hq > hk)
    worst_near = max(r["estimate"] for r in rows if r["variant"] == "near-transport")

    exact_txt = "exact" if fam.mean_radius == 0 else f"{fam.theory_kind} (over its 95% box)"

    def fmt(h: float | None) -> str:
        return f"> {Ls[-1]}" if h is None else f"≈ {h:.0f}"

    last = [r for r in rows if r.get("L") == Ls[-1]]
    return {
        "holds": bool(longer and n_pass == n_tests),
        "rows": rows,
        "horizons": horizons,
        "headline": headline(
            f"signal-to-interference ratio of QKV at L={Ls[-1]} ({fam.name})", last[1],
            n_samples=trials, theory=None, theory_kind=None,
            verdict=(f"Near target survives transport (E||P_n t − t||² ≤ {worst_near:.3g} for n < K={K}; "
                     f"the profile matches the {exact_txt} 2 − 2tᵀE[M]ⁿt: Hotelling T² p = {p_near:.3g} ≥ 0.05: {bool(n_pass)}). SIR = 1 horizon "
                     f"(point estimate, log-log interpolation): QK {fmt(hk)}, QKV {fmt(hq)} tokens: QKV longer "
                     f"{longer}; at L={Ls[-1]} SIR QK {last[0]['estimate']:.3g}, QKV {last[1]['estimate']:.3g} "
                     f"(ρ_D={last[0]['far_mass']:.3f})."),
        ),
    }


@sp.themed
def plot_snr(result: dict, outdir: Path) -> list[Path]:
    fig, (ax,) = sp.figure(height=4.0)
    rows = result["rows"]
    for v in ("qk", "qkv"):
        rs = [r for r in rows if r["variant"] == v]
        L = np.array([r["L"] for r in rs])
        est, lo, hi = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high"))
        sp.theory_vs_measurement(ax, L, est, np.clip(lo, 1e-12, None), hi, color=COLORS[v], ls="-",
                                 label=rf"{v}: measured $(t^\top N)^2 / \|F\|^2$")
        h = result["horizons"][v]
        if h is not None:
            ax.axvline(h, color=COLORS[v], ls=":", lw=1.2, label=f"{v} horizon (SIR = 1): L ≈ {h:,.0f}")
    ax.axhline(1.0, color="0.2", lw=0.9, ls="--", label="SIR = 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"context length $L$ (tokens; $K$ near + $L-K$ far sources)")
    ax.set_ylabel(r"SIR $\mathbb{E}[(t^\top N)^2] / \mathbb{E}\|F\|^2$")
    ax.set_title("C5: near signal vs far interference, QK-only vs QKV")
    ax.legend(loc="upper right")
    p = result["params"]
    sp.caption(fig, caption_params(p, ("family", "d", "omega", "sigma", "p", "base", "K", "lam", "key_align", "noise",
                                     "trials", "seed")) + "; bars: 95% delta-method CI")
    return [sp.save(fig, Path(outdir) / "value-snr")]


register(limits(Check(
    name="value-snr", claim="C5",
    statement="The near target survives transport: E||P_n t − t||² equals the exact 2 − 2tᵀE[M]ⁿt for n < K; and "
              "the signal-to-interference ratio E[(tᵀN)²]/E||F||² of QKV crosses 1 at a longer context than "
              "QK-only's (or not within the L grid).",
    options=with_default(family_options("so2-uniform", 16), omega=0.25) + (
        Option("L", [64, 256, 1024, 4096, 16384, 65536], "context lengths L (comma list)", IntList(2, 2**30, size=True)),
        Option("K", 4, "near sources (route lengths 0 … K−1) carrying the target value t, key q", Int(1, 4096, size=True)),
        with_default((OPT_LAM,), lam=8.0)[0], OPT_KA, OPT_NOISE, Option("trials", 100, "Monte Carlo queries per L", Int(2, 10**6, size=True)),
        Option("trials_near", 4000, "routes of length K for the near-transport law E||P_n t − t||²", Int(2, 10**7, size=True))),
    run=run_snr, plot=plot_snr, module="simulations.value.snr", validate=_validate,
    extra={"order": 2, "needs": ("orthogonal",)},
    mutants=(
        Mutant("no-value-transport", "near and far values not rotated (QKV sums = QK sums)",
               patch=lambda: mock.patch.multiple("simulations.value.snr", snr_samples=untransported_snr,
                                                 near_overlaps=untransported_overlaps)),
        Mutant("chi-off-3pct", "the near-transport law with E[M] × 0.97 (χ 3% low)",
               patch=lambda: mock.patch("simulations.value.snr.near_transport_theory",
                                        partial(near_transport_theory, factor=0.97))),
        REPEATED_STEPS,
        Mutant("theory-x0.97", "the near-transport law 2 − 2tᵀE[M]ⁿt × 0.97 (its level 3% low)",
               patch=theory_scaled("simulations.value.snr.near_transport_theory", 0.97)),
        Mutant("theory-x1.03", "the near-transport law 2 − 2tᵀE[M]ⁿt × 1.03 (its level 3% high)",
               patch=theory_scaled("simulations.value.snr.near_transport_theory", 1.03)),
        Mutant("mean-off-3pct-cayley", "cayley (estimated E[M]): the theory's E[M] × 0.97", patch=mean_scaled(0.97),
               params={"family": "cayley", "L": [64, 256, 1024]}),
    ),
    reduced={"L": [64, 256, 1024, 4096], "trials": 60},
    theories=(level_theory("2 − 2tᵀE[M]ⁿt", "the near-transport law E||P_n t − t||² × factor at every n < K (n = 0 stays 0, "
                           "P_0 = I by definition; the SIR horizons are compared between QK and QKV, no theory)",
                           "simulations.value.snr.near_transport_theory"),),
)))
