"""C1 — finite mixing window: ``E[qᵀ P_n q] = qᵀ E[M]^n q`` decays like ``(1 − γ)^n``.

For i.i.d. steps ``E[P_{j→i}] = E[M]^n`` (``n = i − j``), so the correlation of the
transported query with itself decays geometrically at the rate of the spectral gap,
whatever the context length.  The check estimates ``E[qᵀ P_n q]`` for the unit query
with equal energy in every coordinate at each route length ``n`` and every chosen
family, against ``qᵀ E[M]^n q`` and the envelope ``(1 − γ)^n``.

Two further parts (top-level keys of the result):

* ``windows``: for each context length ``L`` (``--L``), independent contexts of length ``L``
  are simulated; the correlation ``qᵀ P_{j→i} q`` is averaged over the pairs ``(j, i)`` of route
  length ``n`` inside each context (SO(2): every pair, by FFT; O(d) families: queries on a
  stride grid), with a Student-t band over contexts at the joint level 95% over all measured
  windows (Bonferroni: ``1 − 0.05/(2·#windows)`` quantile).  The measured window is the first
  ``n`` where the correlation falls below ``ε`` (``--eps``), with the interval
  ``[first n with ci_high… ci_low < ε]``; it is compared with the exact first crossing
  ``n* = min{n : qᵀE[M]ⁿq < ε}`` and the bound ``W(ε) = ⌈ln ε / ln(1 − γ)⌉ ≥ n*``.
  Every ``L`` gets the same number of simulated steps (``--window-steps``).
* ``op_norm``: ``‖E[P_n]‖_op`` from the mean of ``--trials-op`` sampled dense products at
  ``d = --d-op`` (≤ 32), with a bootstrap interval ``‖Ê‖ ± h``, ``h`` the joint-95% (Bonferroni) level of
  ``‖Ê* − Ê‖`` (triangle inequality), against ``‖E[M]ⁿ‖_op`` and ``(1 − γ)ⁿ``.

``--backend cupy``: the chains and the in-context windows are simulated on the device through the
array namespace (the same code as numpy: :func:`stylized.sampling.sample_overlaps`, the NumPy twins of
the window kernels run batched over contexts); only the small dense ``op_norm`` part (``d ≤ 32``,
SciPy's Haar sampler) stays on the host, identical for every backend.

Verdict: every row's theory value lies inside its Bonferroni-corrected interval
(joint 95% over all rows), ``|qᵀ E[M]^n q| ≤ (1 − γ)^n``, every measured window interval
contains ``n*`` (or no crossing is seen where ``n* ≥ L``), and every ``‖E[M]ⁿ‖_op`` lies in
its bootstrap interval and below ``(1 − γ)ⁿ``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from stylized.backend import array_namespace, to_numpy, xp_generator
from stylized.estimators import bonferroni_level, mean_ci
from stylized.families import SO2Family, StepFamily
from stylized.montecarlo import check_positive_int, chunked_generators, progress
from stylized.registry import Check, Option, headline, int_list, register
from stylized.sampling import XP_CHUNK_ELEMENTS, equal_energy_query, sample_overlaps, sample_steps
from stylized.scores import (
    first_crossing,
    haar_window_sums,
    householder_window_sums_numba,
    householder_window_sums_numpy,
    so2_pair_correlation,
)

from ._common import caption, errorbar_rows, families_from_params, family_options, finite, new_figure, save_figure

NAME = "mixing"


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    trials = check_positive_int("trials", params["trials"], 2)
    ns = np.asarray(sorted(set(params["n"])), dtype=np.int64)
    if ns.size == 0 or ns[0] < 0:
        raise ValueError(f"n must be a list of route lengths ≥ 0, got {params['n']!r}")
    fams = families_from_params(params)
    _validate_extra(params)
    rows, summary = [], []
    level = bonferroni_level(0.95, len(fams) * ns.size)
    chunk = 256 if backend != "cupy" else 4096  # chains per chunk (cupy: all trials at once, blocks of steps)
    for f_idx, fam in enumerate(fams):
        q = equal_energy_query(fam.d)
        chunks = chunked_generators(trials, seed + 1000 * f_idx, chunk)
        samples = np.concatenate([
            sample_overlaps(fam, ns, size, rng, backend, q=q)
            for size, rng in _progress(chunks, -(-trials // chunk), fam.name, progress)
        ])
        gamma = fam.spectral_gap
        for c, n in enumerate(ns):
            est = mean_ci(samples[:, c])
            joint = mean_ci(samples[:, c], level=level)
            theory = float(q @ fam.mean_power(int(n)) @ q)
            rows.append({"family": fam.name, "n": int(n), **est.as_row(), "theory": theory,
                         "bound": (1.0 - gamma) ** int(n), "within_joint_ci": joint.contains(theory)})
        summary.append({"family": fam.name, "d": fam.d, "spectral_gap": gamma, "window_eps_0.01": fam.mixing_window(0.01)})
    windows = _window_part(fams, params, seed, backend)
    op_norm = _op_norm_part(params, seed)
    win_ok = all(w["ok"] for w in windows)
    op_ok = all(r["within_ci"] and r["theory"] <= r["bound"] + 1e-12 for r in op_norm)
    inside = sum(r["within_joint_ci"] for r in rows)
    bound_ok = all(abs(r["theory"]) <= r["bound"] + 1e-12 for r in rows)
    worst = max(rows, key=lambda r: abs(r["estimate"] - r["theory"]) / max(r["ci_high"] - r["estimate"], 1e-300))
    return {
        "holds": inside == len(rows) and bound_ok and win_ok and op_ok,
        "rows": rows,
        "families": summary,
        "windows": windows,
        "op_norm": op_norm,
        "headline": headline(
            f"E[qᵀP_n q], {worst['family']} n={worst['n']} (worst row)", worst,
            verdict=(f"{inside}/{len(rows)} rows have qᵀE[M]^n q inside the joint 95% interval "
                        f"(Bonferroni over {len(rows)} rows); |qᵀE[M]^n q| ≤ (1−γ)^n on every row: {bound_ok}. "
                        + "; ".join(f"{s['family']}: γ={s['spectral_gap']:.4g}, W(0.01)={s['window_eps_0.01']:g}" for s in summary)
                        + ". " + _window_verdict(windows, params["eps"])
                        + f" ‖E[P_n]‖_op (d={params['d_op']}, {params['trials_op']} dense products) within its bootstrap "
                        f"interval of ‖E[M]ⁿ‖_op ≤ (1−γ)ⁿ on {sum(r['within_ci'] for r in op_norm)}/{len(op_norm)} rows."),
        ),
    }


def _validate_extra(params: dict) -> None:
    """Fail fast on the window and operator-norm options (before any sampling)."""
    if not 0.0 < float(params["eps"]) < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {params['eps']!r}")
    if not params["L"] or min(params["L"]) < 2:
        raise ValueError(f"L must be a list of context lengths ≥ 2, got {params['L']!r}")
    check_positive_int("window_steps", params["window_steps"], 2 * max(params["L"]))
    if not 2 <= check_positive_int("d_op", params["d_op"], 2) <= 32:
        raise ValueError(f"d_op must lie in [2, 32] (dense products), got {params['d_op']}")
    check_positive_int("trials_op", params["trials_op"], 10)
    if not params["n_op"] or min(params["n_op"]) < 1:
        raise ValueError(f"n_op must be a list of route lengths ≥ 1, got {params['n_op']!r}")


def _window_part(fams: list[StepFamily], params: dict, seed: int, backend: str) -> list[dict]:
    """Measured first crossing of ``ε`` by the in-context correlation, per family and context length ``L``."""
    eps = float(params["eps"])
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    Ls = sorted(set(params["L"]))
    if not Ls or Ls[0] < 2:
        raise ValueError(f"L must be a list of context lengths ≥ 2, got {params['L']!r}")
    steps = check_positive_int("window_steps", params["window_steps"], 2 * Ls[-1])
    level = 1.0 - 0.025 / (len(fams) * len(Ls))  # the verdict needs every window: Bonferroni over all of them
    out = []
    for f_idx, fam in enumerate(fams):
        q = equal_energy_query(fam.d)
        W = fam.mixing_window(eps)
        n_star = _exact_crossing(fam, q, eps, Ls[-1])
        for l_idx, L in enumerate(Ls):
            rng = np.random.default_rng([seed, 7, f_idx, l_idx])
            chains = max(2, steps // L)
            curves, nmax = _context_curves(fam, q, L, chains, rng, backend, W)
            m = curves.mean(axis=0)
            half = stats.t.ppf(level, chains - 1) * curves.std(axis=0, ddof=1) / math.sqrt(chains)
            ns = np.arange(nmax + 1)
            cr = first_crossing(ns, m, m - half, m + half, eps)
            if n_star is not None and n_star <= nmax:
                ok = cr["window_low"] is not None and cr["window_high"] is not None and \
                    cr["window_low"] <= n_star <= cr["window_high"]
            else:  # the exact curve stays above ε for every route that fits: no crossing may be seen
                ok = cr["window"] is None
            grid = np.unique(np.round(np.geomspace(1, nmax, 60)).astype(int))
            out.append({"family": fam.name, "L": L, "eps": eps, **cr, "exact_crossing": n_star, "W_bound": W,
                        "chains": chains, "routes_per_n": int(chains * _pairs_per_chain(fam, L, nmax)), "nmax": nmax,
                        "ok": bool(ok), "curve_n": grid.tolist(), "curve": m[grid].tolist(),
                        "curve_half": half[grid].tolist()})
    return out


def _pairs_per_chain(fam: StepFamily, L: int, nmax: int) -> int:
    return L if isinstance(fam, SO2Family) else len(range(L - 1, -1, -_stride(L, nmax)))


def _stride(L: int, nmax: int) -> int:
    return max(1, min(L, nmax // 4))


def _exact_crossing(fam: StepFamily, q: np.ndarray, eps: float, L: int) -> int | None:
    """``min{n < L : qᵀE[M]ⁿq < ε}`` (exact; ``None`` if the exact curve stays ≥ ε up to ``L − 1``)."""
    if isinstance(fam, SO2Family):
        w = q[0::2] ** 2 + q[1::2] ** 2
        n = np.arange(L)
        curve = np.real(np.power.outer(fam.chi(), n).T @ w)
    else:
        r = 1.0 - fam.spectral_gap  # E[M] = (1 − γ) I for householder and (lazy) Haar
        n = np.arange(L)
        curve = r ** n * (q @ q)
    idx = np.flatnonzero(curve < eps)
    return int(idx[0]) if idx.size else None


def _context_curves(fam: StepFamily, q: np.ndarray, L: int, chains: int, rng, backend: str, W: float):
    """Per-context mean of ``qᵀ P_{i−n→i} q`` over the routes of length ``n`` inside it: ``(chains, nmax+1)``.

    Contexts are simulated in groups (SO(2): ``2¹⁶/L`` per FFT batch; O(d) families: one at a time on
    numpy/numba, keeping NumPy's stream, and ``XP_CHUNK_ELEMENTS/(L·d)`` at once on cupy); returns host NumPy.
    """
    xp, xrng = array_namespace(backend), xp_generator(backend, rng)
    if isinstance(fam, SO2Family):
        nmax = L - 1
        w = xp.asarray(q[0::2] ** 2 + q[1::2] ** 2)
        batch = max(1, (1 << 16) // L)
        curves = []
        for s in range(0, chains, batch):
            b = min(batch, chains - s)
            curves.append(to_numpy(so2_pair_correlation(sample_steps(fam, (b, L), xrng, backend), nmax) @ w))
        return np.concatenate(curves), nmax
    nmax = int(min(L - 1, max(8, math.ceil(3 * W))))
    stride = _stride(L, nmax)
    group = 1 if backend != "cupy" else max(1, XP_CHUNK_ELEMENTS // (L * fam.d))
    curves = []
    for s in range(0, chains, group):
        steps = sample_steps(fam, (min(group, chains - s), L), xrng, backend)
        if fam.kind == "haar":
            sums, counts = haar_window_sums(steps, xrng, fam.d, stride, nmax, float(q @ q))
        elif backend == "numba":
            sums, counts = householder_window_sums_numba(steps[0], q, stride, nmax)
        else:
            sums, counts = householder_window_sums_numpy(steps, q, stride, nmax)
        curves.append(to_numpy(sums).reshape(-1, nmax + 1) / counts)
    return np.concatenate(curves), nmax


def _op_norm_part(params: dict, seed: int) -> list[dict]:
    """``‖E[P_n]‖_op`` from the mean of sampled dense products ``P_n = M_n ⋯ M_1`` at small ``d``."""
    d = check_positive_int("d_op", params["d_op"], 2)
    if d > 32:
        raise ValueError(f"d_op must lie in [2, 32] (dense products), got {d}")
    T = check_positive_int("trials_op", params["trials_op"], 10)
    ns = sorted(set(params["n_op"]))
    if not ns or ns[0] < 1:
        raise ValueError(f"n_op must be a list of route lengths ≥ 1, got {params['n_op']!r}")
    fams = families_from_params({**params, "d": d})
    rows = []
    # ‖Ê − E‖_op is a Lipschitz function of the draws and concentrates: its bootstrap law (‖Ê* − Ê‖) gives
    # the half-width mean + z·sd with z Bonferroni-corrected over all rows (joint 95%).
    z = float(stats.norm.ppf(1.0 - 0.05 / (len(fams) * len(ns))))
    for f_idx, fam in enumerate(fams):
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
            theory = float(np.linalg.norm(fam.mean_power(n), 2))
            lo, hi = max(0.0, est - q95), est + q95
            rows.append({"family": fam.name, "d": d, "n": n, "estimate": est, "ci_low": lo, "ci_high": hi,
                         "theory": theory, "bound": (1.0 - gamma) ** n, "n_samples": T,
                         "within_ci": bool(lo <= theory <= hi)})
    return rows


def _window_verdict(windows: list[dict], eps: float) -> str:
    parts = []
    for name in dict.fromkeys(w["family"] for w in windows):
        ws = [w for w in windows if w["family"] == name]
        meas = ", ".join(f"L={w['L']}: " + (f"{w['window']} [{w['window_low']}, {w['window_high']}]"
                                             if w["window"] is not None else "none") for w in ws)
        n_star = ws[0]["exact_crossing"]
        parts.append(f"{name}: {meas} ({f'exact n*={n_star}' if n_star is not None else 'exact n* > L'}, "
                     f"W={ws[0]['W_bound']:g})")
    ok = sum(w["ok"] for w in windows)
    return (f"Window where the in-context correlation first falls below ε={eps:g}, by context length: "
            + "; ".join(parts) + f" — {ok}/{len(windows)} agree with n* (same window at every L).")


def _progress(it, trials, name, enabled):
    return progress(it, total=-(-trials // 256), desc=f"mixing {name}", enabled=enabled)


def plot(result: dict, outdir: Path) -> list[Path]:
    """Correlation vs route length (theory dashed, measured windows marked); window by context length; ‖E[P_n]‖_op."""
    fig, (ax, ax2, ax3) = new_figure(ncols=3, width=5.6, height=4.8)
    rows = result["rows"]
    p = result["params"]
    colors = {}
    for name in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == name and r["n"] > 0]
        n = np.array([r["n"] for r in rs])
        est, lo, hi, th = (finite([r[k] for r in rs]) for k in ("estimate", "ci_low", "ci_high", "theory"))
        line = ax.errorbar(n, np.abs(est), yerr=[np.abs(est) - np.clip(np.abs(est) - (est - lo), 1e-12, None),
                                                   hi - est], fmt="o", ms=4, capsize=2, label=f"{name}")
        colors[name] = line[0].get_color()
        ax.plot(n, np.clip(np.abs(th), 1e-12, None), "--", color=colors[name], lw=1.2)
    ax.axhline(p["eps"], color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.5)
    ax.set_xlabel("route length n = i − j (steps)")
    ax.set_ylabel("|E[qᵀ P_n q]|  (correlation with the query)")
    ax.set_title(f"C1: correlation decay (grey: ε = {p['eps']:g})", fontsize=10)
    ax.legend(fontsize=8, ncol=2, title="dashed: qᵀE[M]ⁿq", title_fontsize=8)
    wins = result.get("windows", [])
    fams = list(dict.fromkeys(w["family"] for w in wins))
    Ls = sorted(set(w["L"] for w in wins))
    for i, name in enumerate(fams):
        c = colors.get(name, f"C{i}")
        for j, L in enumerate(Ls):
            w = next(x for x in wins if x["family"] == name and x["L"] == L)
            x = i + (j - (len(Ls) - 1) / 2) * 0.25
            if w["window"] is None:
                ax2.annotate("none < L", (x, 1.3), ha="center", fontsize=7, color=c, rotation=90)
                continue
            ax2.errorbar([x], [w["window"]], yerr=[[w["window"] - w["window_low"]], [w["window_high"] - w["window"]]],
                         fmt="os^v"[j % 4], color=c, ms=5, capsize=2, mfc="none" if j else c,
                         label=f"L = {L:,}" if i == 0 or not ax2.get_legend_handles_labels()[1] else None)
        if wins and (n_star := next(x for x in wins if x["family"] == name)["exact_crossing"]) is not None:
            ax2.hlines(n_star, i - 0.4, i + 0.4, color="k", lw=1.2)
    ax2.set_xticks(range(len(fams)), fams, rotation=30, ha="right", fontsize=8)
    ax2.set_yscale("log")
    ax2.set_ylim(0.7, None)
    ax2.set_ylabel("measured window: first n with correlation < ε")
    ax2.set_title("window vs context length (black: exact n* = W(ε) bound)", fontsize=10)
    handles, labels = ax2.get_legend_handles_labels()
    if handles:
        ax2.legend(handles[: len(Ls)], [f"L = {L:,}" for L in Ls], fontsize=8)
    op = result.get("op_norm", [])
    for name in dict.fromkeys(r["family"] for r in op):
        rs = [r for r in op if r["family"] == name]
        n = np.array([r["n"] for r in rs])
        errorbar_rows(ax3, n, rs, fmt="o", ms=4, capsize=2, color=colors.get(name), label=name)
        ax3.plot(n, np.clip([r["bound"] for r in rs], 1e-4, None), "--", color=colors.get(name), lw=1)
    if op:
        ax3.axhline(2 / np.sqrt(op[0]["n_samples"]), color="0.5", ls=":", lw=1, label="noise level 2/√T")
    ax3.set_yscale("log")
    ax3.set_ylim(1e-3, 1.5)
    ax3.set_xlabel("route length n (steps)")
    ax3.set_ylabel("‖E[P_n]‖_op from sampled dense products")
    ax3.set_title(f"operator norm at d = {p.get('d_op', '?')} (dashed: (1 − γ)ⁿ)", fontsize=10)
    ax3.legend(fontsize=7, ncol=2)
    caption(fig, f"d={p['d']}, ω={p['omega']}, σ={p['sigma']}, p={p['p']}, base={p['base']}; {p['trials']} chains per family "
                 f"(left), {p.get('window_steps', 0):,} steps per family and L (middle), {p.get('trials_op', 0)} dense "
                 f"products (right); seed {p['seed']}; bars: 95% CI (middle: interval of the crossing, joint over all windows; right: joint)")
    return [save_figure(fig, outdir, NAME)]


CHECK = register(Check(
    name=NAME,
    claim="C1",
    statement="For i.i.d. steps with gap γ > 0, E[qᵀP_n q] = qᵀE[M]ⁿq, bounded by (1−γ)ⁿ: a finite mixing window.",
    options=family_options("all", 64, multi=True) + (
        Option("n", [0, 1, 2, 5, 10, 20, 50, 100, 200, 500], "route lengths n (comma list)", int_list),
        Option("trials", 4000, "Monte Carlo chains per family", int),
        Option("L", [512, 65536], "context lengths L for the window measurement (comma list)", int_list),
        Option("eps", 0.05, "correlation level ε defining the window W(ε)", float),
        Option("window_steps", 1 << 18, "steps simulated per family and L (contexts = steps / L)", int),
        Option("d_op", 16, "dimension of the dense products for ‖E[P_n]‖_op (≤ 32)", int),
        Option("n_op", [1, 2, 5, 10, 20, 40], "route lengths for ‖E[P_n]‖_op (comma list)", int_list),
        Option("trials_op", 1000, "dense products per family for ‖E[P_n]‖_op", int),
    ),
    run=run,
    plot=plot,
    module="simulations.mixing",
    extra={"order": 0},
))
