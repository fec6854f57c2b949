"""C3 — concentration and the score gap: far scores are O(1/√d), near targets keep ``qᵀP_n q ≈ 1``.

Four kinds of rows (column ``kind``), for each family of ``--family`` and each ``d``:

* ``tail``: far-score tails ``P(s ≥ t)`` of the post-mixing law (verified by ``haar-law``, C2):
  Haar coordinate for O(d) families, with the exact tail as ``theory`` and the Lévy bound
  ``exp(−d t²/2)``; uniform phases ``Σ_b a_b cos U_b`` for SO(2) blocks, with the Hoeffding
  bound ``exp(−t²/(2Σ_b a_b²))`` (no closed-form tail: ``theory`` empty).  ``k = q`` (far
  copies of the target key), so ``a_b = |q_b|² = 2/d``.
* ``near``: near-route preservation ``E[qᵀ P_n q]`` for route lengths ``n`` below the window,
  sampled with the family's own transport, against ``qᵀE[M]ⁿq``.
* ``suppression``: the per-token ratio ``E[e^{λ s_far}] / e^{λ c_near}`` with
  ``c_near = qᵀE[M]^{n_t}q`` (target at route length ``n_t = --target-n``); ``theory`` from the
  closed-form moment generating functions *(derived)*: ``₀F₁(; d/2; λ²/4)`` (Haar) and
  ``Π_b I₀(λ a_b)`` (uniform phases).  Top-level ``far_to_near``: ``M ×`` the ratio, the expected
  far/near weight ratio of the softmax for ``M`` far copies, per family, ``d`` and ``M``.
* ``gap``: the score gap ``λ(s_near − max_far s)`` over ``M`` far copies (``--M``), ``s_near``
  sampled with the family's transport at ``n_t``; the maximum of ``M`` Haar coordinates is drawn
  exactly as ``F^{-1}(V^{1/M})``; ``theory = λ(c_near − E[max])``.  Haar far law only (the
  maximum of ``M`` uniform-phase sums has no cheap exact sampler).

``--backend cupy``: the far scores, the near routes and the uniforms of the maximum sampler are drawn
on the device (:func:`~stylized.sampling.haar_coordinates`, :func:`~stylized.scores.uniform_phase_scores`,
:func:`~stylized.sampling.sample_overlaps`); each sample comes to the host once for the intervals.

Verdict: every theory value lies in its joint 95% interval (Bonferroni over all rows with a
theory), and no tail estimate exceeds its bound beyond its interval (``ci_low ≤ bound``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from stylized.backend import to_numpy, xp_generator
from stylized.bounds import haar_coordinate_tail, hoeffding_tail, levy_tail
from stylized.estimators import bonferroni_level, mean_ci, proportion_ci
from stylized.montecarlo import check_positive_int
from stylized.registry import Check, Option, float_list, int_list, register, str_list
from stylized.sampling import equal_energy_query, haar_coordinates, sample_overlaps
from stylized.scores import (
    far_law_name,
    haar_expected_max,
    haar_max_quantile_samples,
    haar_mgf,
    uniform_phase_mgf,
    uniform_phase_scores,
)

from ._common import caption, errorbar_rows, family_from_params, family_options, new_figure, save_figure

NAME = "score-gap"


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    names = params["family"]
    names = [names] if isinstance(names, str) else list(names)
    ds = sorted(set(params["d"]))
    ts = sorted(set(params["t"]))
    Ms = sorted(set(params["M"]))
    ns = sorted(set(params["n_near"]))
    lam = float(params["lam"])
    if not (lam >= 0 and math.isfinite(lam)):
        raise ValueError(f"lam (λ) must be a finite number ≥ 0, got {lam!r}")
    if not ts or ts[0] < 0 or ts[-1] >= 1:
        raise ValueError(f"t must be a list of thresholds in [0, 1), got {params['t']!r}")
    if not Ms or Ms[0] < 1:
        raise ValueError(f"M must be a list of far counts ≥ 1, got {params['M']!r}")
    if not ns or ns[0] < 1:
        raise ValueError(f"n_near must be a list of route lengths ≥ 1, got {params['n_near']!r}")
    trials = check_positive_int("trials", params["trials"], 100)
    t_near = check_positive_int("trials_near", params["trials_near"], 10)
    nt = check_positive_int("target_n", params["target_n"], 0)
    rows, far_to_near = [], []
    for f_idx, name in enumerate(names):
        for d_idx, d in enumerate(ds):
            fam = family_from_params({**params, "d": d}, name)
            rng = np.random.default_rng([seed, f_idx, d_idx])
            xrng = xp_generator(backend, rng)  # rng itself on numpy/numba
            q = equal_energy_query(d)
            law = far_law_name(fam)
            a = np.hypot(q[0::2], q[1::2]) ** 2
            far = (to_numpy(haar_coordinates(xrng, (trials,), d)) if law == "haar"
                   else uniform_phase_scores(a, trials, rng, backend))
            base = {"family": name, "d": d, "law": law}
            bnd = levy_tail(np.array(ts), d) if law == "haar" else hoeffding_tail(np.array(ts), a)
            for t, b in zip(ts, bnd):
                e = proportion_ci(int(np.count_nonzero(far >= t)), trials)
                th = float(haar_coordinate_tail(t, d)) if law == "haar" else None
                rows.append({"kind": "tail", **base, "t": t, "n": None, "M": None, **e.as_row(), "theory": th,
                             "bound": float(b), "bound_holds": bool(e.ci_low <= b), "_x": far >= t, "_p": True})
            near = sample_overlaps(fam, ns, t_near, rng, backend, q=q)
            for c, n in enumerate(ns):
                e = mean_ci(near[:, c])
                rows.append({"kind": "near", **base, "t": None, "n": n, "M": None, **e.as_row(),
                             "theory": float(q @ fam.mean_power(n) @ q), "bound": None, "_x": near[:, c]})
            c_near = float(q @ fam.mean_power(nt) @ q)
            mgf = haar_mgf(lam, d) if law == "haar" else uniform_phase_mgf(lam, a)
            e = mean_ci(np.exp(lam * far - lam * c_near))
            rows.append({"kind": "suppression", **base, "t": None, "n": nt, "M": None, **e.as_row(),
                         "theory": mgf * math.exp(-lam * c_near), "bound": None,
                         "_x": np.exp(lam * far - lam * c_near)})
            far_to_near.append({"family": name, "d": d, "law": law,
                                **{f"M={M}": M * mgf * math.exp(-lam * c_near) for M in Ms}})
            if law != "haar":
                continue
            s_near = sample_overlaps(fam, [nt], t_near, rng, backend, q=q)[:, 0] if nt else np.ones(t_near)
            for M in Ms:
                gap = lam * (s_near - haar_max_quantile_samples(xrng, t_near, d, M))
                e = mean_ci(gap)
                rows.append({"kind": "gap", **base, "t": None, "n": nt, "M": M, **e.as_row(),
                             "theory": lam * (c_near - haar_expected_max(d, M)), "bound": None,
                             "far_to_near": M * mgf * math.exp(-lam * c_near), "_x": gap})
    # joint 95% over every row with a theory value
    with_theory = [r for r in rows if r["theory"] is not None]
    level = bonferroni_level(0.95, len(with_theory))
    for r in rows:
        x = r.pop("_x")
        is_prop = r.pop("_p", False)
        if r["theory"] is None:
            r["within_joint_ci"] = None
            continue
        j = proportion_ci(int(np.count_nonzero(x)), x.size, level=level) if is_prop else mean_ci(x, level=level)
        r["within_joint_ci"] = bool(j.contains(r["theory"]))
    inside = sum(bool(r["within_joint_ci"]) for r in with_theory)
    bound_ok = all(r["bound_holds"] for r in rows if r["kind"] == "tail")
    holds = inside == len(with_theory) and bound_ok
    head = _headline(rows, ds, Ms, lam, nt, inside, len(with_theory), bound_ok)
    return {"holds": holds, "rows": rows, "headline": head, "lam": lam, "far_to_near": far_to_near}


def _headline(rows, ds, Ms, lam, nt, inside, total, bound_ok) -> dict:
    gaps = [r for r in rows if r["kind"] == "gap"]
    g = next((r for r in gaps if r["d"] == 64 and r["M"] == Ms[-1]), gaps[-1] if gaps else rows[0])
    sup = {(r["family"], r["d"]): r for r in rows if r["kind"] == "suppression"}
    near = [r for r in rows if r["kind"] == "near" and r["n"] == min(x["n"] for x in rows if x["kind"] == "near")]
    sup_txt = "; ".join(f"{f} d={d}: {r['estimate']:.3g}" for (f, d), r in sup.items() if d in (ds[0], ds[-1]))
    near_txt = "; ".join(f"{r['family']} d={r['d']}: {r['estimate']:.4f}" for r in near if r["d"] in (ds[0], ds[-1]))
    verdict = (f"{inside}/{total} rows have their theory inside the joint 95% interval; every tail below its "
               f"Lévy/Hoeffding bound within its interval: {bound_ok}. Score gap λ(s_near − max_far) at λ={lam:g}, "
               f"target route n={nt}: {g.get('family')} d={g['d']}, M={g.get('M')}: {g['estimate']:.3g} "
               f"(theory {g['theory']:.3g}). Per-token suppression E[e^(λs_far)]/e^(λc_near): {sup_txt}. "
               f"Near preservation E[qᵀP_n q] at n={near[0]['n'] if near else '—'}: {near_txt}.")
    return {"quantity": f"score gap λ(s_near − max_far s), d={g['d']}, M={g.get('M')}", "estimate": g["estimate"],
            "ci_low": g["ci_low"], "ci_high": g["ci_high"], "n_samples": g["n_samples"], "theory": g["theory"],
            "verdict": verdict}


def _estimate_vs_d(ax, rows: list[dict], key: str, label) -> None:
    """One colour per value of ``key``: estimates with their intervals vs ``d``, the theory dashed."""
    for i, g in enumerate(dict.fromkeys(r[key] for r in rows)):
        rs = [r for r in rows if r[key] == g]
        d = [r["d"] for r in rs]
        errorbar_rows(ax, d, rs, fmt="o", color=f"C{i}", ms=4, capsize=2, label=label(g, rs))
        ax.plot(d, [r["theory"] for r in rs], "--", color=f"C{i}", lw=1)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: score gap vs d per far count M.  Middle: far tails vs bounds.  Right: per-token suppression vs d."""
    p = result["params"]
    rows = result["rows"]
    fig, (ax1, ax2, ax3) = new_figure(ncols=3, width=5.0, height=4.4)
    gaps = [r for r in rows if r["kind"] == "gap"]
    _estimate_vs_d(ax1, gaps, "M", lambda M, rs: f"M = {M:,} far")
    ax1.axhline(0, color="0.4", lw=0.8)
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("dimension d")
    ax1.set_ylabel("score gap λ(s_near − max_far s)  (logit units)")
    ax1.set_title(f"C3: score gap, λ = {p['lam']:g} (dashed: theory)")
    ax1.legend(fontsize=8)
    tails = [r for r in rows if r["kind"] == "tail"]
    tcol = {t: f"C{i}" for i, t in enumerate(dict.fromkeys(r["t"] for r in tails))}
    for f_i, fam in enumerate(dict.fromkeys(r["family"] for r in tails)):
        for t, col in tcol.items():
            rs = [r for r in tails if r["family"] == fam and r["t"] == t]
            d = np.array([r["d"] for r in rs]) * (1.06 if f_i else 1 / 1.06)  # side by side
            errorbar_rows(ax2, d, rs, floor=1e-9, fmt="os"[f_i % 2], mfc="none" if f_i else col, color=col, ms=4,
                          capsize=2, label=f"{fam} ({rs[0]['law']}), t={t:g}")
            ax2.plot(d, [r["bound"] for r in rs], "-" if rs[0]["law"] == "haar" else "-.", color=col, lw=1, alpha=0.7)
            if rs[0]["theory"] is not None:
                ax2.plot(d, [max(r["theory"], 1e-12) for r in rs], ":", color=col, lw=1.2)
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_ylim(max(0.2 / p["trials"], 1e-9), 1.5)
    ax2.set_xlabel("dimension d")
    ax2.set_ylabel("P(s_far ≥ t)")
    ax2.set_title("far tails (— Lévy, -· Hoeffding bound; ··· exact Haar)", fontsize=10)
    ax2.legend(fontsize=6.5, ncol=1, loc="lower left")
    sup = [r for r in rows if r["kind"] == "suppression"]
    _estimate_vs_d(ax3, sup, "family", lambda fam, rs: f"{fam} ({rs[0]['law']} far law)")
    ax3.set_xscale("log", base=2)
    ax3.set_yscale("log")
    ax3.set_xlabel("dimension d")
    ax3.set_ylabel("E[e^(λ s_far)] / e^(λ c_near)  (per far token)")
    ax3.set_title("per-token suppression (dashed: closed form)")
    ax3.legend(fontsize=8)
    caption(fig, f"families {', '.join(p['family'])}; λ={p['lam']:g}; target at route n={p['target_n']}; "
                 f"{p['trials']:,} far scores per (family, d), {p['trials_near']:,} near/gap samples; seed {p['seed']}; "
                 "bars: 95% CI; far keys k = q")
    return [save_figure(fig, outdir, NAME)]


CHECK = register(Check(
    name=NAME,
    claim="C3",
    statement="Far scores concentrate (Lévy / Hoeffding tails), near routes keep qᵀP_n q ≈ 1: a score gap "
              "λ(c_near − max_far s) and exponentially suppressed far tokens.",
    options=(Option("family", ["householder", "so2-uniform"], "step families (comma list)", str_list),
             Option("d", [16, 32, 64, 128, 256, 512, 768], "dimensions d (comma list)", int_list))
    + family_options()[2:] + (
        Option("t", [0.1, 0.2, 0.3], "tail thresholds t (comma list)", float_list),
        Option("trials", 100000, "far scores per (family, d)", int),
        Option("n_near", [1, 2, 4, 8], "near route lengths n (comma list)", int_list),
        Option("trials_near", 4000, "near-route and gap samples per (family, d)", int),
        Option("lam", 8.0, "logit scale λ", float),
        Option("target_n", 1, "route length of the near target", int),
        Option("M", [64, 512, 4096, 65536], "far counts M (comma list)", int_list),
    ),
    run=run,
    plot=plot,
    module="simulations.score_gap",
    extra={"order": 1},
))
