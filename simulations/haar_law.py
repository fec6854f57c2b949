"""C2 — decorrelation towards Haar: after a route much longer than the window, ``s = qᵀ P_n k`` has the post-mixing law.

For families that mix on O(d) (householder, lazy-haar, haar) the transported key is
close in law to a uniform point of ``S^{d−1}``, so ``(1 + s)/2 ~ Beta((d−1)/2, (d−1)/2)``
*(derived)*.  Lazy Haar is exactly a mixture: with probability ``(1 − p)^n`` no Haar
step happened and ``s = qᵀk``; that mixture is the law used.  For SO(2) blocks the
phases become uniform instead: ``s = Σ_b a_b cos U_b`` (``a_b = |q_b||k_b|``), compared with
an exactly simulated reference sample of that law (two-sample KS).

``q`` is the equal-energy unit query and ``k = q`` (a far copy of the target key: the hardest
case, ``s = 1`` at ``n = 0``).  Rows: ``P(s ≥ t)`` with its Wilson interval against the law's
tail (``theory``) and the concentration bound (``bound``: Lévy ``exp(−d t²/2)`` or Hoeffding
``exp(−t²/(2Σa_b²))``).

``--backend cupy``: the far scores (and the uniform-phase reference sample) are drawn on the device
by :func:`~stylized.scores.far_scores` / :func:`~stylized.scores.uniform_phase_scores` in chunks of
8192 trials; the tests run on the host.

Verdict: the KS p-value is ≥ 0.01 (lazy Haar: KS on the scores after a Haar step, and a
binomial test of the unmixed share against ``(1 − p)^n``, p ≥ 0.01) and every ``theory`` lies
in its joint 95% interval (Bonferroni over the thresholds).  Below the window (small ``--n``) it must fail.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from stylized.bounds import haar_coordinate_cdf, haar_coordinate_tail, hoeffding_tail, levy_tail
from stylized.estimators import bonferroni_level, proportion_ci
from stylized.montecarlo import check_positive_int, chunked_generators
from stylized.montecarlo import progress as _progress
from stylized.registry import Check, Option, float_list, headline, register
from stylized.sampling import equal_energy_query
from stylized.scores import far_law_name, far_scores, tail_estimates, uniform_phase_scores

from ._common import caption, errorbar_rows, family_from_params, family_options, new_figure, save_figure

NAME = "haar-law"


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    fam = family_from_params(params)
    n = check_positive_int("n", params["n"], 0)
    trials = check_positive_int("trials", params["trials"], 20)
    ts = sorted(set(params["t"]))
    if not ts or ts[0] < 0 or ts[-1] >= 1:
        raise ValueError(f"t must be a list of thresholds in [0, 1), got {params['t']!r}")
    d = fam.d
    q = equal_energy_query(d)
    k = q
    chunk = 1024 if backend != "cupy" else 8192
    chunks = chunked_generators(trials, seed, chunk=chunk)
    s = np.concatenate([far_scores(fam, n, size, rng, backend, q, k)
                        for size, rng in _progress(chunks, total=-(-trials // chunk), desc=NAME, enabled=progress)])
    law = far_law_name(fam)
    unmixed = (1.0 - getattr(fam, "p", 1.0)) ** n if fam.kind == "haar" else None
    level = bonferroni_level(0.95, len(ts))
    ref = None
    if law == "haar":
        u = unmixed or 0.0
        # the exact law has an atom at qᵀk (no Haar step yet): KS on the Haar part, binomial test on the atom
        atom = s >= q @ k - 1e-12
        ks = stats.kstest(s[~atom], lambda x: haar_coordinate_cdf(x, d))
        p_atom = float(stats.binomtest(int(atom.sum()), s.size, u).pvalue) if u > 0 else float(not atom.any())
        theory = [(1 - u) * float(haar_coordinate_tail(t, d)) + u * float(q @ k >= t) for t in ts]
        bound = levy_tail(np.array(ts), d)
        law_text = ("Haar coordinate (1+s)/2 ~ Beta((d−1)/2,(d−1)/2)" if u == 0 else
                    f"lazy-Haar mixture: Haar coordinate w.p. 1−(1−p)^n, s=qᵀk w.p. (1−p)^n = {u:.3g}")
        ref_est = [None] * len(ts)
    else:
        a = np.hypot(q[0::2], q[1::2]) * np.hypot(k[0::2], k[1::2])
        ref = uniform_phase_scores(a, 4 * trials, np.random.default_rng([seed, 99]), backend)
        ks = stats.ks_2samp(s, ref)
        ref_est = tail_estimates(ref, ts)
        theory = [e.estimate for e in ref_est]
        bound = hoeffding_tail(np.array(ts), a)
        law_text = f"uniform phases Σ_b a_b cos U_b (reference sample of {ref.size:,} exact draws)"
        p_atom = None
    rows = []
    for i, (t, est) in enumerate(zip(ts, tail_estimates(s, ts))):
        k_hits = int(round(est.estimate * s.size))
        joint = proportion_ci(k_hits, s.size, level=level)
        if ref_est[i] is None:
            inside = joint.contains(theory[i])
        else:  # two samples: the joint intervals of the run and of the reference overlap
            rj = proportion_ci(int(round(ref_est[i].estimate * ref.size)), ref.size, level=level)
            inside = joint.ci_low <= rj.ci_high and rj.ci_low <= joint.ci_high
        rows.append({"t": t, **est.as_row(), "theory": theory[i], "bound": float(bound[i]), "law": law,
                     "within_joint_ci": bool(inside), "bound_holds": bool(est.ci_low <= bound[i])})
    holds = bool(ks.pvalue >= 0.01 and (p_atom is None or p_atom >= 0.01) and all(r["within_joint_ci"] for r in rows))
    lim = min(1.0, max(np.abs(s).max(), 4.0 / math.sqrt(d)) * 1.05)
    edges = np.linspace(-lim, lim, 81)
    counts = np.histogram(s, edges)[0]
    ref_counts = np.histogram(ref, edges)[0].tolist() if ref is not None else None
    grid = np.linspace(0.0, max(ts[-1], float(np.quantile(s, 0.9999))), 80)
    emp_tail = [float(np.mean(s >= g)) for g in grid]
    if law == "haar":
        u = unmixed or 0.0
        law_tail = ((1 - u) * haar_coordinate_tail(grid, d) + u * (q @ k >= grid)).tolist()
        centers = 0.5 * (edges[1:] + edges[:-1])
        law_density = ((1 - u) * 0.5 * stats.beta.pdf((1 + centers) / 2, (d - 1) / 2, (d - 1) / 2)).tolist()
        bound_grid = levy_tail(grid, d).tolist()
    else:
        law_tail = [float(np.mean(ref >= g)) for g in grid]
        law_density = None
        bound_grid = hoeffding_tail(grid, a).tolist()
    h = rows[0]
    W = fam.mixing_window(0.01)
    atom_txt = "" if unmixed is None else (f"unmixed share (no Haar step) {float(np.mean(s >= q @ k - 1e-12)):.4g} "
                                           f"vs (1−p)^n = {unmixed:.4g} (binomial p={p_atom:.3g}); ")
    verdict = (f"{fam.name}, d={d}, n={n} (W(0.01)={W:g}): KS vs {law} law D={ks.statistic:.4f}, p={ks.pvalue:.3g} "
               f"({trials:,} scores); {atom_txt}{sum(r['within_joint_ci'] for r in rows)}/{len(rows)} tails P(s≥t) match the law "
               f"(joint 95%); P(s≥{h['t']:g}) = {h['estimate']:.4g} vs {h['theory']:.4g} (bound {h['bound']:.3g}). "
               + ("Matches the post-mixing law." if holds else "Does NOT match the post-mixing law at this n"
                  + (" (route below or near the window: not mixed yet)." if n < 3 * W else ".")))
    return {
        "holds": holds,
        "rows": rows,
        "law": law_text,
        "ks_stat": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
        "unmixed_probability": unmixed,
        "unmixed_binom_pvalue": p_atom,
        "mixing_window_0.01": W,
        "hist": {"edges": edges.tolist(), "counts": counts.tolist(), "ref_counts": ref_counts,
                 "law_density": law_density},
        "tail_curve": {"t": grid.tolist(), "empirical": emp_tail, "law": law_tail, "bound": bound_grid},
        "headline": headline(f"P(s ≥ {h['t']:g}), s = qᵀP_n k, {fam.name} d={d} n={n}", h, verdict),
    }


def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: histogram of far scores over the exact law's density (log y).  Right: tails with the bound."""
    p = result["params"]
    fig, (ax1, ax2) = new_figure(ncols=2, width=6.0, height=4.4)
    hst = result["hist"]
    e = np.array(hst["edges"])
    c = np.array(hst["counts"], float)
    w = np.diff(e)
    ax1.stairs(c / c.sum() / w, e, color="C0", lw=1.5, label=f"Monte Carlo ({int(c.sum()):,} scores)")
    if hst["law_density"] is not None:
        ax1.plot(0.5 * (e[1:] + e[:-1]), hst["law_density"], "k--", lw=1.2, label="exact Haar law")
    if hst["ref_counts"] is not None:
        r = np.array(hst["ref_counts"], float)
        ax1.stairs(r / r.sum() / w, e, color="k", ls="--", lw=1.0, label="uniform-phase reference")
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=0.5 / c.sum() / w.mean())
    ax1.set_xlabel("far score s = qᵀ P_n k  (unit q, k; k = q)")
    ax1.set_ylabel("density")
    ax1.set_title(f"C2: far-score law, KS p = {result['ks_pvalue']:.3g}")
    ax1.legend(fontsize=8)
    tc = result["tail_curve"]
    ax2.step(tc["t"], np.clip(tc["empirical"], 1e-12, None), where="post", color="C0", label="Monte Carlo P(s ≥ t)")
    ax2.plot(tc["t"], np.clip(tc["law"], 1e-12, None), "k--", lw=1.2, label="post-mixing law")
    ax2.plot(tc["t"], tc["bound"], color="C3", lw=1.2,
             label="Lévy bound exp(−d t²/2)" if result["rows"][0]["law"] == "haar" else "Hoeffding bound")
    rows = result["rows"]
    errorbar_rows(ax2, [r["t"] for r in rows], rows, floor=1e-12, fmt="o", color="C0", ms=4, capsize=2,
                  label="rows (95% CI)")
    ax2.set_yscale("log")
    ax2.set_ylim(max(0.2 / rows[0]["n_samples"], 1e-9), 1.5)
    ax2.set_xlabel("threshold t")
    ax2.set_ylabel("P(s ≥ t)")
    ax2.set_title("tail of the far score")
    ax2.legend(fontsize=8)
    caption(fig, f"{p['family']}, d={p['d']}, route n={p['n']} (W(0.01)={result['mixing_window_0.01']:g}); "
                 f"{p['trials']:,} trials, seed {p['seed']}; law: {result['law']}")
    return [save_figure(fig, outdir, NAME)]


CHECK = register(Check(
    name=NAME,
    claim="C2",
    statement="Past the mixing window, s = qᵀP_n k follows the Haar-coordinate law (O(d) families) "
              "or the uniform-phase law (SO(2) blocks).",
    options=family_options("householder", 64) + (
        Option("n", 500, "route length n (well past the window W)", int),
        Option("trials", 10000, "Monte Carlo scores", int),
        Option("t", [0.1, 0.2, 0.3, 0.4], "tail thresholds t (comma list)", float_list),
    ),
    run=run,
    plot=plot,
    module="simulations.haar_law",
    extra={"order": 0},
))
