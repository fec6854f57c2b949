"""C1 — finite mixing window: ``E[qᵀ P_n q] = qᵀ E[M]^n q`` decays like ``(1 − γ)^n``.

For i.i.d. steps ``E[P_{j→i}] = E[M]^n`` (``n = i − j``), so the correlation of the
transported query with itself decays geometrically at the rate of the spectral gap,
whatever the context length.  The check estimates ``E[qᵀ P_n q]`` for the unit query
with equal energy in every coordinate at each route length ``n`` and every chosen
family, against ``qᵀ E[M]^n q`` and the envelope ``(1 − γ)^n``.

Verdict: every row's theory value lies inside its Bonferroni-corrected interval
(joint 95% over all rows), and ``|qᵀ E[M]^n q| ≤ (1 − γ)^n``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.estimators import bonferroni_level, mean_ci
from stylized.montecarlo import check_positive_int, chunked_generators, progress
from stylized.registry import Check, Option, int_list, register
from stylized.sampling import equal_energy_query, sample_overlaps

from ._common import caption, families_from_params, family_options, finite, new_figure, save_figure

NAME = "mixing"


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    trials = check_positive_int("trials", params["trials"], 2)
    ns = np.asarray(sorted(set(params["n"])), dtype=np.int64)
    if ns.size == 0 or ns[0] < 0:
        raise ValueError(f"n must be a list of route lengths ≥ 0, got {params['n']!r}")
    fams = families_from_params(params)
    rows, summary = [], []
    level = bonferroni_level(0.95, len(fams) * ns.size)
    for f_idx, fam in enumerate(fams):
        q = equal_energy_query(fam.d)
        samples = np.concatenate([
            sample_overlaps(fam, ns, size, rng, backend, q=q)
            for size, rng in _progress(chunked_generators(trials, seed + 1000 * f_idx), trials, fam.name, progress)
        ])
        gamma = fam.spectral_gap
        for c, n in enumerate(ns):
            est = mean_ci(samples[:, c])
            joint = mean_ci(samples[:, c], level=level)
            theory = float(q @ fam.mean_power(int(n)) @ q)
            rows.append({"family": fam.name, "n": int(n), **est.as_row(), "theory": theory,
                         "bound": (1.0 - gamma) ** int(n), "within_joint_ci": joint.contains(theory)})
        summary.append({"family": fam.name, "d": fam.d, "spectral_gap": gamma, "window_eps_0.01": fam.mixing_window(0.01)})
    inside = sum(r["within_joint_ci"] for r in rows)
    bound_ok = all(abs(r["theory"]) <= r["bound"] + 1e-12 for r in rows)
    worst = max(rows, key=lambda r: abs(r["estimate"] - r["theory"]) / max(r["ci_high"] - r["estimate"], 1e-300))
    return {
        "holds": inside == len(rows) and bound_ok,
        "rows": rows,
        "families": summary,
        "headline": {
            "quantity": f"E[qᵀP_n q], {worst['family']} n={worst['n']} (worst row)",
            "estimate": worst["estimate"], "ci_low": worst["ci_low"], "ci_high": worst["ci_high"],
            "n_samples": worst["n_samples"], "theory": worst["theory"],
            "verdict": (f"{inside}/{len(rows)} rows have qᵀE[M]^n q inside the joint 95% interval "
                        f"(Bonferroni over {len(rows)} rows); |qᵀE[M]^n q| ≤ (1−γ)^n on every row: {bound_ok}. "
                        + "; ".join(f"{s['family']}: γ={s['spectral_gap']:.4g}, W(0.01)={s['window_eps_0.01']:g}" for s in summary)),
        },
    }


def _progress(it, trials, name, enabled):
    return progress(it, total=-(-trials // 256), desc=f"mixing {name}", enabled=enabled)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Correlation ``E[qᵀP_n q]`` against route length, one colour per family, theory lines dashed."""
    fig, (ax,) = new_figure(width=7.5, height=4.8)
    rows = result["rows"]
    for name in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == name and r["n"] > 0]
        n = np.array([r["n"] for r in rs])
        est, lo, hi, th = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high", "theory"))
        line = ax.errorbar(n, np.abs(est), yerr=[np.abs(est) - np.clip(np.abs(est) - (est - lo), 1e-12, None),
                                                   hi - est], fmt="o", ms=4, capsize=2, label=f"{name} (MC)")
        ax.plot(n, np.clip(np.abs(th), 1e-12, None), "--", color=line[0].get_color(), lw=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.5)
    ax.set_xlabel("route length n = i − j (steps)")
    ax.set_ylabel("|E[qᵀ P_n q]|  (correlation with the query)")
    ax.set_title("C1: transported-query correlation decays at the spectral gap")
    ax.legend(fontsize=8, ncol=2, title="dashed: qᵀE[M]ⁿq", title_fontsize=8)
    p = result["params"]
    caption(fig, f"d={p['d']}, ω={p['omega']}, σ={p['sigma']}, p={p['p']}, base={p['base']}; "
                 f"{p['trials']} trials per family, seed {p['seed']}; bars: 95% CI (floored at 1e-4 on the log axis)")
    return [save_figure(fig, outdir, NAME)]


CHECK = register(Check(
    name=NAME,
    claim="C1",
    statement="For i.i.d. steps with gap γ > 0, E[qᵀP_n q] = qᵀE[M]ⁿq, bounded by (1−γ)ⁿ: a finite mixing window.",
    options=family_options("all", 64, multi=True) + (
        Option("n", [0, 1, 2, 5, 10, 20, 50, 100, 200, 500], "route lengths n (comma list)", int_list),
        Option("trials", 4000, "Monte Carlo chains per family", int),
    ),
    run=run,
    plot=plot,
    module="simulations.mixing",
    extra={"order": 0},
))
