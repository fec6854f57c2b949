"""C3 — concentration and the score gap, measured on far keys transported along real routes.

One context per trial: a query ``q`` (equal energy, ``1/√d``) at position ``i`` and keys equal to ``q``
at the near target (route length ``n_t = --target-n``) and at the ``M_max = max(--M)`` far positions with
route lengths ``far_n … far_n + M_max − 1`` (``far_n = --far-n``, default ``⌈3·W(0.01)⌉`` of each family
and ``d``).  Far keys equal to the query are the hardest case: at ``n = 0`` they score 1, so only the
transport can decorrelate them (uniformly random keys would follow the mixed law at any route length and
test nothing).  Every score ``s_n = qᵀP_n q`` comes from one chain of real steps per context, drawn by the
law (:meth:`stylized.laws.base.StepLaw.score_chains`: Householder reflections, SO(2) rotations, or full Haar
matrices for (lazy) Haar steps, ``O(N·d)`` per context, no exact-law shortcut; any other law its own steps),
so ``M_max = 65,536`` costs one chain of ``far_n + M_max`` steps.  Every orthogonal law works, in any ``d ≥ 2``
for O(d) laws (odd included); a contraction (``orthogonal = False``) is refused before any work.  Rows (column
``kind``):

* ``tail``: ``P(s ≥ t)`` over the ``--tail-band`` far keys nearest the query (default ``⌈8·W(0.01)⌉``,
  eight windows: where an unmixed route shows first), per-context fractions averaged over contexts
  (Student-t interval over contexts: the keys of one context are correlated).  ``theory``: the tail of the
  mixed law, asked of the step law (:meth:`~stylized.laws.base.StepLaw.far_score_law`; closed form for an
  orthogonal law without planes: Haar coordinate ``(1+s)/2 ~ Beta((d−1)/2, (d−1)/2)``; for SO(2) planes: uniform
  phases ``Σ_b a_b cos U_b``, ``a_b = 2/d``, by the exact Fourier series of
  :class:`stylized.theory.score_laws.UniformPhaseSum`; the claim's law for every law, a user's too, never the law's
  own Monte Carlo limit); at route lengths ``≥ 3W(0.01)`` the route's own law is within
  ~``0.01³`` of it.  ``bound``: Lévy ``exp(−d t²/2)`` or Hoeffding ``exp(−t²/(2Σ_b a_b²))``, upper bounds
  (none for an estimated law; ``bound_name`` says which).  Rows with fewer than 10 expected exceedances (or
  non-exceedances) per context are reported with ``in_verdict = false``.
* ``tail-all``: the same tail over all ``M_max`` far keys of a context (same theory, bound and rule).  The
  band asks whether the nearest mixed keys already follow the law; these rows, with ``M_max/band`` times
  the keys (and a per-context fraction averaged over many correlation lengths), are what resolve the law's
  scale to about a percent.
* ``near``: ``E[qᵀP_n q]`` for ``n ∈ --n-near`` (``--trials-near`` chains) against ``qᵀE[M]ⁿq`` (closed form, or
  estimated from the law's Monte Carlo ``E[M]`` with its 95% radius ``theory_radius``,
  :meth:`~stylized.laws.base.StepLaw.mean_overlap_radius`, for a law without one).
* ``suppression``: per-token far weight ``E[e^{λ s_far}]/e^{λ c_near}``, ``c_near = qᵀE[M]^{n_t}q``, over all
  ``M_max`` far keys of a context (t-interval over contexts); ``theory``: the closed-form moment generating
  function ``₀F₁(; d/2; λ²/4)`` (Haar) or ``Π_b I₀(λ a_b)`` (uniform phases) *(derived)*, with an interval
  ``theory_ci`` where ``c_near`` or the law is estimated.  ``far_to_near`` (top level): ``M ×`` that ratio.
* ``gap``: the score gap ``λ(s_near − max_far s)`` over the ``M`` nearest far keys of a context.  The far
  scores of one context are correlated, so ``E[max]`` has no closed form; ``bound`` is the lower bound
  ``λ(c_near − min_β (ln M + ln E e^{βs})/β)`` on ``E[gap]``, valid for any dependence (Jensen), and no theory
  (estimated theories enter at the conservative end of their intervals: ``c_near − r`` and a 95% Hoeffding
  upper bound on ``E e^{βs}``).

``--backend numba`` runs the counter-stream kernels; ``numpy`` and ``cupy`` the namespace twins (host or
device arrays, a Generator's draws).

The premise (:func:`stylized.theory.premises.measure_premises`) is measured per (family, d) (``premises``); a law
whose premise fails (a gap that is 0: coordinate reflections, lattice angles) does not hold, with the reason.

Verdict (joint 95%, Bonferroni over every in-verdict row): each theory value lies in its row's interval
(an estimated theory: its interval meets the row's), no tail's interval lies above its bound, no gap's
interval lies below its bound.  Past the window it holds;
with ``--far-n`` below the window the tails and gaps disagree with the law and it must not.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from stylized.core.estimators import bonferroni_level, mean_ci
from stylized.core.montecarlo import check_positive_int
from stylized.core.montecarlo import progress as montecarlo_progress
from stylized.core.options import Float, FloatList, Int, IntList
from stylized.engine.sampling import equal_energy_query
from stylized.engine.score_chains import score_chains
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, patched, register, scaled
from stylized.laws.families import StepLaw
from stylized.theory import score_laws as laws
from stylized.theory.premises import measure_premises
from stylized.theory.score_laws import far_score_law, max_mgf_bound

from ._common import (
    default_route_length,
    family_options,
    joint_passes,
    law_at,
    law_option,
    law_setting,
    limits,
)
from ._mutants import ScaledLaw, scaled_law

NAME = "score-gap"
CHUNK = 16  # contexts per kernel call (memory CHUNK·(far_n + M_max) floats)
MIN_COUNT = 10  # expected exceedances (and non-exceedances) per context for a tail row to be in the verdict


def far_chains(family, N: int, size: int, seed, q: np.ndarray, backend: str) -> np.ndarray:
    """``(size, N)`` scores ``qᵀP_n q`` along real routes (the model; a mutant replaces it)."""
    return score_chains(family, N, size, seed, q, q, backend)


def near_theory(family, q: np.ndarray, n: int) -> float:
    """``E[qᵀP_n q] = qᵀE[M]ⁿq`` (closed form, or from the law's estimated ``E[M]``: :attr:`~StepLaw.theory_kind`)."""
    return float(q @ family.mean_power(n) @ q)


def _law_at(params: dict, entry, d: int) -> StepLaw:
    """The step law of one ``family`` entry in dimension ``d``: a law object (moved to ``d`` if it has another
    dimension), else built from its name and the options."""
    return law_at(entry, d, params)


def _kind(*kinds: str) -> str:
    """``"closed form"`` when every theory behind a row is, else the estimated ones joined."""
    est = list(dict.fromkeys(k for k in kinds if k != "closed form"))
    return "; ".join(est) if est else "closed form"


def _far_n(params: dict, fam) -> int:
    """The route length of the nearest far key: ``--far-n``, else ``⌈3·W(0.01)⌉`` of ``fam`` (at most 10^5;
    :func:`default_route_length`)."""
    return default_route_length(params, fam, "far_n", f"{law_setting(fam, params)}, d={fam.d}")


def _plan(params: dict) -> list[tuple]:
    """``(f_idx, d_idx, law, q, far_n)`` for every family and ``d``, each refused (one line naming the option)
    before any work (``Check.validate``): the far route length (:func:`_far_n`), the near target below it
    (``--target-n < far_n``)."""
    names, nt, plan = params["family"], params["target_n"], []
    for f_idx, entry in enumerate([names] if isinstance(names, (str, StepLaw)) else list(names)):
        for d_idx, d in enumerate(sorted(set(params["d"]))):
            fam = _law_at(params, entry, d)
            if not fam.orthogonal:
                raise ValueError(f"--family: family {fam.name}: this check needs orthogonal steps (orthogonal=True): a "
                                 "contraction carries far scores to 0, with no post-mixing law to compare with")
            far_n = _far_n(params, fam)
            if nt >= far_n:
                src = "--far-n" if params["far_n"] is not None else "the default --far-n ⌈3·W(0.01)⌉"
                raise ValueError(f"--target-n: must be < {src} = {far_n} for {fam.name}, d={d} (the near target lies "
                                 f"nearer the query than every far key), got target_n={nt}")
            plan.append((f_idx, d_idx, fam, equal_energy_query(d), far_n))
    return plan


def _context_stats(fam, params, far_n, nt, ts, Ms, band, lam, c_near, seed, backend, q):
    """Per-context statistics of ``trials`` contexts, chunk by chunk: tail fractions, mean weight, gaps."""
    T = params["trials"]
    N = far_n + Ms[-1]
    frac, frac_all = np.empty((T, len(ts))), np.empty((T, len(ts)))
    weight, gaps = np.empty(T), np.empty((T, len(Ms)))
    for c, s0 in enumerate(range(0, T, CHUNK)):
        m = min(CHUNK, T - s0)
        s = far_chains(fam, N, m, np.random.SeedSequence([*seed, c]), q, backend)
        far = s[:, far_n:]
        thresholds = np.asarray(ts)
        frac[s0 : s0 + m] = (far[:, :band, None] >= thresholds).mean(axis=1)
        frac_all[s0 : s0 + m] = (far[:, :, None] >= thresholds).mean(axis=1)
        weight[s0 : s0 + m] = np.mean(np.exp(lam * (far - c_near)), axis=1)
        pmax = np.maximum.accumulate(far, axis=1)[:, np.array(Ms) - 1]
        gaps[s0 : s0 + m] = lam * (s[:, nt, None] - pmax)
    return frac, frac_all, weight, gaps


def _family_rows(fam, law, q, far_n, params, ts, Ms, ns, lam, nt, t_near, seed, backend):
    """Tail, near, suppression and gap rows of one (family, d), and its far-to-near ratios."""
    d = fam.d
    c_near = near_theory(fam, q, nt)
    r_near = float(fam.mean_overlap_radius(q, nt))  # 0 for a closed-form E[M]
    W = fam.mixing_window(0.01)
    band = min(Ms[-1], params["tail_band"] or (int(math.ceil(8 * W)) if math.isfinite(W) else Ms[-1]))
    base = {"family": fam.name, "d": d, "law": law.name, "far_n": far_n, "W": W}
    frac, frac_all, weight, gaps = _context_stats(fam, params, far_n, nt, ts, Ms, band, lam, c_near, seed, backend, q)
    bnd = law.tail_bound(np.array(ts))  # Lévy or Hoeffding (a_b = |q_b||k_b|, k = q); None for an estimated law
    rows = []
    for i, t in enumerate(ts):
        p = float(law.sf(t))
        ci = law.sf_interval(t)
        b = None if bnd is None else float(bnd[i])
        rows.append({"kind": "tail", **base, "t": t, "n": None, "M": band, **mean_ci(frac[:, i]).as_row(),
                     "theory": p, "theory_kind": law.theory_kind, **_ci_field(ci), "bound": b,
                     "bound_kind": None if b is None else "upper bound on P(s ≥ t)", "bound_name": law.tail_bound_name,
                     "expected_per_context": band * p, "in_verdict": bool(min(p, 1 - p) * band >= MIN_COUNT),
                     "_x": frac[:, i], "_ci": (p, p) if ci[0] == ci[1] else ci})
        rows.append({**rows[-1], "kind": "tail-all", "M": Ms[-1], **mean_ci(frac_all[:, i]).as_row(),
                     "expected_per_context": Ms[-1] * p, "in_verdict": bool(min(p, 1 - p) * Ms[-1] >= MIN_COUNT),
                     "_x": frac_all[:, i]})
    near = far_chains(fam, ns[-1] + 1, t_near, np.random.SeedSequence([*seed, 99]), q, backend)
    for n in ns:
        th, r = near_theory(fam, q, n), float(fam.mean_overlap_radius(q, n))
        rows.append({"kind": "near", **base, "t": None, "n": n, "M": None, **mean_ci(near[:, n]).as_row(),
                     "theory": th, "theory_kind": fam.theory_kind, **({"theory_radius": r} if r else {}),
                     "bound": None, "in_verdict": True, "_x": near[:, n], "_ci": (th - r, th + r) if r else (th, th)})
    ratio = law.mgf(lam) * math.exp(-lam * c_near)
    m_lo, m_hi = law.mgf_interval(lam)
    ci = (ratio, ratio) if (m_lo == m_hi and not r_near) else \
        (m_lo * math.exp(-lam * (c_near + r_near)), m_hi * math.exp(-lam * (c_near - r_near)))
    rows.append({"kind": "suppression", **base, "t": None, "n": nt, "M": Ms[-1], **mean_ci(weight).as_row(),
                 "theory": ratio, "theory_kind": _kind(law.theory_kind, fam.theory_kind), **_ci_field(ci),
                 "bound": None, "in_verdict": True, "_x": weight, "_ci": ci})
    exact = law.theory_kind == "closed form" and not r_near
    for j, M in enumerate(Ms):  # an estimated theory enters at its conservative end: c_near − r, E e^{βs} at its 95% top
        b = lam * ((c_near - r_near) - max_mgf_bound(M, law.log_mgf_upper))
        rows.append({"kind": "gap", **base, "t": None, "n": nt, "M": M, **mean_ci(gaps[:, j]).as_row(),
                     "theory": None, "bound": b, "bound_kind": "lower bound on E[gap] (any dependence)" + (
                         "" if exact else "; estimated theories at the conservative end of their 95% intervals"),
                     "positive_share": float(np.mean(gaps[:, j] > 0)), "in_verdict": True, "_x": gaps[:, j]})
    return rows, {"family": fam.name, "d": d, "law": law.name, **{f"M={M}": M * ratio for M in Ms}}


def _ci_field(ci: tuple) -> dict:
    """``{"theory_ci": [lo, hi]}`` for an estimated theory's own 95% interval, nothing for a point."""
    return {} if ci[0] == ci[1] else {"theory_ci": [float(ci[0]), float(ci[1])]}


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    ds, ts, Ms, ns = (sorted(set(params[k])) for k in ("d", "t", "M", "n_near"))
    lam = float(params["lam"])
    if not (lam > 0 and math.isfinite(lam)):
        raise ValueError(f"lam (λ) must be a finite number > 0, got {lam!r}")
    # (t in [0, 1), M ≥ 1, n_near ≥ 1: the options' ranges, applied by parse_params)
    check_positive_int("trials", params["trials"], 4)
    t_near = check_positive_int("trials_near", params["trials_near"], 10)
    nt = check_positive_int("target_n", params["target_n"], 0)
    if params["tail_band"] is not None:
        check_positive_int("tail_band", params["tail_band"], 1)
    # every law, route length and post-mixing law first: a refusal comes before any work
    plan = [(f_idx, d_idx, fam, q, far_n, far_score_law(fam, q, q)) for f_idx, d_idx, fam, q, far_n in _plan(params)]
    rows, far_to_near = [], []
    for f_idx, d_idx, fam, q, far_n, law in montecarlo_progress(plan, total=len(plan), desc="score-gap (family, d)",
                                                                enabled=progress):
        r, f2n = _family_rows(fam, law, q, far_n, params, ts, Ms, ns, lam, nt, t_near, [seed, f_idx, d_idx], backend)
        rows += r
        far_to_near.append(f2n)
    n_tests = sum(r["in_verdict"] for r in rows)
    level = bonferroni_level(0.95, n_tests)
    for r in rows:
        j = mean_ci(r.pop("_x"), level=level)
        r["joint_ci"] = [j.ci_low, j.ci_high]
        lo, hi = r.pop("_ci", (r["theory"], r["theory"]))
        r["within_joint_ci"] = None if r["theory"] is None else joint_passes(j, lo, hi)
        if r["kind"] in ("tail", "tail-all"):
            r["bound_holds"] = None if r["bound"] is None else bool(j.ci_low <= r["bound"])
        elif r["kind"] == "gap":
            r["bound_holds"] = bool(j.ci_high >= r["bound"])
        r["passes"] = r["within_joint_ci"] is not False and r.get("bound_holds", True) is not False
    failed = [r for r in rows if r["in_verdict"] and not r["passes"]]
    premises = {(fam.name, fam.d): measure_premises(fam) for _, _, fam, *_ in plan}
    refused = [f"{name} d={d}: {p.note('C3')}" for (name, d), p in premises.items() if p.holds is False]
    holds = not failed and not refused  # a failed premise refuses the claim by itself
    head = _headline(rows, ds, Ms, lam, nt, n_tests, failed)
    if refused:
        head["verdict"] += " " + "; ".join(refused) + "."
    return {"holds": holds, "rows": rows, "headline": head, "lam": lam, "far_to_near": far_to_near,
            "premises": [p.as_dict() for p in premises.values()], "premise_refusals": refused,
            "tests": n_tests, "failed": [{k: r[k] for k in ("kind", "family", "d", "t", "n", "M")} for r in failed]}


def _headline(rows, ds, Ms, lam, nt, n_tests, failed) -> dict:
    sup = [r for r in rows if r["kind"] == "suppression"]
    h = next((r for r in sup if r["d"] == 64), sup[-1])
    gaps = {(r["family"], r["d"], r["M"]): r for r in rows if r["kind"] == "gap"}
    g_txt = "; ".join(f"{f} d={d}: {r['estimate']:.3g} (bound ≥ {r['bound']:.3g})"
                      for (f, d, M), r in gaps.items() if M == Ms[-1] and d in (ds[0], ds[-1]))
    near = [r for r in rows if r["kind"] == "near" and r["n"] == nt] or [r for r in rows if r["kind"] == "near"]
    near_txt = "; ".join(f"{r['family']} d={r['d']} n={r['n']}: {r['estimate']:.4f} (theory {r['theory']:.4f})"
                         for r in near if r["d"] in (ds[0], ds[-1]))
    sup_txt = "; ".join(f"{r['family']} d={r['d']}: {r['estimate']:.3g} ({_word(r)} {r['theory']:.3g})"
                        for r in sup if r["d"] in (ds[0], ds[-1]))
    verdict = (f"{n_tests - len(failed)}/{n_tests} in-verdict rows pass (joint 95%: theory inside the interval, tails "
               f"not above their Lévy/Hoeffding bound, gaps not below their lower bound). Transported far keys k = q "
               f"(route ≥ far_n). Per-token far weight E[e^(λs_far)]/e^(λc_near), λ={lam:g}: {sup_txt}. Score gap "
               f"λ(s_near − max_far s) over M={Ms[-1]:,} far keys: {g_txt}. Near E[qᵀP_n q]: {near_txt}.")
    return {"quantity": f"per-token far weight E[e^(λ s_far)]/e^(λ c_near), {h['family']} d={h['d']}, target n={nt}",
            "estimate": h["estimate"], "ci_low": h["ci_low"], "ci_high": h["ci_high"], "n_samples": h["n_samples"],
            "theory": h["theory"], "theory_kind": h["theory_kind"], "verdict": verdict}


def _word(row: dict) -> str:
    return "closed form" if row["theory_kind"] == "closed form" else "estimated"


def _estimate_vs_d(ax, rows: list[dict], key: str, label, ref: str = "theory", **kw) -> None:
    """One colour per value of ``key``: estimates with their 95% intervals vs ``d``, ``ref`` (theory or bound) dashed."""
    for i, g in enumerate(dict.fromkeys(r[key] for r in rows)):
        rs = [r for r in rows if r[key] == g]
        sp.theory_vs_measurement(ax, [r["d"] for r in rs], *([r[k] for r in rs] for k in ("estimate", "ci_low", "ci_high")),
                                 theory=[r[ref] for r in rs], color=f"C{i}", label=label(g, rs), **kw)


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """(a) score gap vs d per M with its lower bound; (b) far tail vs the exact law, noise floor shaded;
    (c) the tail against its Lévy/Hoeffding bound; (d) per-token far weight vs the closed form."""
    p = result["params"]
    rows = result["rows"]
    fig, ax = sp.mosaic([["gap", "tail"], ["slack", "sup"]], height=6.0)
    fam0 = rows[0]["family"]
    a = ax["gap"]
    _estimate_vs_d(a, [r for r in rows if r["kind"] == "gap" and r["family"] == fam0], "M",
                   lambda M, rs: f"M = {M:,}", ref="bound")
    a.axhline(0, color="0.4", lw=0.8)
    a.set_ylim(top=1.45 * max(r["ci_high"] for r in rows if r["kind"] == "gap" and r["family"] == fam0))
    a.plot([], [], "k--", lw=1.1, label="lower bound")
    a.set_ylabel(r"score gap $\lambda(s_{near} - \mathrm{max}_{far}\, s)$")
    a.set_title(rf"C3: score gap, {fam0}, $\lambda = {p['lam']:g}$")
    a.legend(ncol=2, loc="upper left", title="far keys")
    tails = [r for r in rows if r["kind"] == "tail"]
    t_mid = sorted({r["t"] for r in tails})[len({r["t"] for r in tails}) // 2]
    tails = [r for r in tails if r["t"] == t_mid]
    fams = list(dict.fromkeys(r["family"] for r in tails))
    floor = max(3.0 / (r["n_samples"] * r["M"]) for r in tails)  # rule of three: no exceedance in n·M draws
    a = ax["tail"]
    _estimate_vs_d(a, tails, "family", lambda f, rs: f"{f} ({rs[0]['law']} law)", floor=floor)
    a.set_yscale("log")
    a.set_ylim(floor / 20, 1.5)
    sp.noise_floor(a, floor, label=r"unresolved: $< 3/(nM)$ (▽: CI upper end)")
    a.plot([], [], "k--", lw=1.1, label="exact law")
    a.set_ylabel(rf"$P(s_{{far}} \geq {t_mid:g})$")
    a.set_title(rf"far tail at $t = {t_mid:g}$")
    a.legend(loc="lower left")
    a = ax["slack"]
    for i, f in enumerate(fams):
        rs = [r for r in tails if r["family"] == f]
        if any(r["bound"] is None for r in rs):  # an estimated law: no concentration bound
            continue
        b = np.array([r["bound"] for r in rs])
        sp.theory_vs_measurement(a, [r["d"] for r in rs], *(np.array([r[k] for r in rs]) / b for k in ("estimate", "ci_low", "ci_high")),
                                 color=f"C{i}", label=f"{f} ({rs[0]['bound_name']} bound)", floor=floor / b.min())
    a.axhline(1.0, color="k", ls="--", lw=1.1, label="bound (must stay ≤ 1)")
    a.set_yscale("log")
    a.set_ylabel(rf"$P(s_{{far}} \geq {t_mid:g})$ / Lévy–Hoeffding bound")
    a.set_title("the tail stays below its bound")
    a.legend(loc="lower left")
    a = ax["sup"]
    _estimate_vs_d(a, [r for r in rows if r["kind"] == "suppression"], "family", lambda f, rs: f"{f} ({rs[0]['law']} law)")
    a.plot([], [], "k--", lw=1.1, label="closed form")
    a.set_yscale("log")
    a.set_ylabel(r"$\mathbb{E}[e^{\lambda s_{far}}] / e^{\lambda c_{near}}$")
    a.set_title("per-token far weight")
    a.legend(loc="upper right")
    for a in ax.values():
        a.set_xscale("log", base=2)
        a.set_xlabel("dimension d")
    sp.caption(fig, f"families {', '.join(p['family'])}; λ={p['lam']:g}; target at route n={p['target_n']}; far keys k = q "
                    f"transported along real routes of length ≥ far_n (default ⌈3·W(0.01)⌉); {p['trials']:,} contexts of "
                    f"{max(p['M']):,} far keys per (family, d), {p['trials_near']:,} near chains; seed {p['seed']}. "
                    "Bars: 95% CI; dashed: theory (bound in the top left, exact law in the top right).")
    return [sp.save(fig, Path(outdir) / NAME)]


# ---------------------------------------------------------------------------------------
# mutants: each must make the check fail at its reduced sizes
# ---------------------------------------------------------------------------------------
def _no_transport(family, N, size, seed, q, backend):
    return np.full((size, N), float(q @ q))


def _static_steps(family, N, size, seed, q, backend):
    """RoPE-like: one step drawn per context and repeated, ``P_n = Mⁿ`` (never decorrelates)."""
    rng = np.random.default_rng(seed)
    if family.planes and family.step_ndim == 1:  # plane angles: e^{iθ_b}, powers e^{inθ_b}
        z = np.exp(1j * family.rvs(size, rng))[:, None, :]
        zn = np.cumprod(np.broadcast_to(z, (size, N - 1, z.shape[2])), axis=1).real
        return np.concatenate([np.ones((size, 1)), zn @ (q[0::2] ** 2 + q[1::2] ** 2)], axis=1)
    mats = family.dense(family.rvs(size, rng), rng)  # any other law: its dense step, applied N − 1 times
    u, out = np.broadcast_to(q, (size, q.size)).copy(), np.empty((size, N))
    for i in range(N):
        out[:, i] = u @ q
        u = np.einsum("tji,tj->ti", mats, u)
    return out


def _mean_off(factor: float):
    """``theory_mean`` of a law without a closed form, ``factor`` times its estimate (a wrong ``E[M]``)."""
    def theory_mean(self):
        return factor * StepLaw.theory_mean(self)
    return theory_mean


def _patch(name: str, new):
    return patched(__name__, name, new)


def _near_times(factor: float):
    """:attr:`Theory.perturb` of ``near_theory``: ``qᵀE[M]ⁿq`` times ``factor`` at ``n ≥ 1`` (``n = 0``: ``qᵀq``)."""
    orig = near_theory
    return _patch("near_theory", lambda f, q, n: orig(f, q, n) * (factor if n > 0 else 1.0))()


CAYLEY = {"family": ["cayley"], "d": [16], "M": [64, 1024], "trials": 32, "trials_near": 4000}
"""Sizes of the cayley mutants (the unmutated check holds there too: tests/simulations/test_score_checks.py)."""

MUTANTS = (
    Mutant("no-transport", "far keys not transported (P = I): every far score is qᵀq = 1", _patch("far_chains", _no_transport)),
    Mutant("static-steps", "one step per context repeated (RoPE-like P_n = Mⁿ): routes never decorrelate",
           _patch("far_chains", _static_steps)),
    Mutant("far-n-below-window", "far keys start at route length 4, below the window W(0.01)", params={"far_n": 4}),
    Mutant("mgf-3pct", "theory: the moment generating function E[e^(λs)] 3% too high",
           _patch("far_score_law", lambda f, q, k: ScaledLaw(laws.far_score_law(f, q, k), mgf_factor=1.03))),
    Mutant("law-d-plus-2", "theory: Haar law of dimension d+2 (SO(2): amplitudes 5% low)",
           _patch("far_score_law", lambda f, q, k: ScaledLaw(laws.far_score_law(f, q, k), d_shift=2))),
    Mutant("near-one-step-more", "theory: near target compared with qᵀE[M]^(n+1)q",
           _patch("near_theory", lambda f, q, n: float(q @ f.mean_power(n + 1) @ q))),
    Mutant("cayley-mean-3pct", "cayley (no closed-form E[M]): the estimated theory mean E[M] 3% too large",
           patched("stylized.laws.cayley", "Cayley.theory_mean", _mean_off(1.03)), params=CAYLEY),
    Mutant("coord-reflection-even-n", "model: coordinate reflections M = I − 2e_k e_kᵀ (γ = 2/d, degree-2 harmonic gap "
           "0), far keys from an even route length", params={"family": ["coord-reflection"], "d": [16], "far_n": 200}),
    Mutant("coord-reflection-odd-n", "model: coordinate reflections, far keys from an odd route length",
           params={"family": ["coord-reflection"], "d": [16], "far_n": 201}),
    Mutant("lattice-angle-even-n", "model: SO(2) angles ±π/2 (E e^{2iθ} = −1), far keys from an even route length",
           params={"family": ["lattice-angle"], "d": [16], "far_n": 6}),
    Mutant("lattice-angle-odd-n", "model: SO(2) angles ±π/2, far keys from an odd route length",
           params={"family": ["lattice-angle"], "d": [16], "far_n": 7}),
)

CHECK = register(limits(Check(
    name=NAME,
    claim="C3",
    statement="Far keys equal to the query, transported along real routes past the window, follow the exact post-mixing "
              "law (Haar-coordinate / uniform-phase tails, below the Lévy / Hoeffding bounds) and carry the closed-form "
              "per-token weight E[e^(λs)]/e^(λc_near); near routes keep E[qᵀP_n q] = qᵀE[M]ⁿq (for so2-uniform "
              "ω = 1 that is 0.84 at n = 1, for householder 1 − 2/d), and the measured score gap λ(s_near − max_far s) "
              "stays above its MGF lower bound.",
    options=(law_option(["householder", "so2-uniform"], multi=True, allow_all=False),
             Option("d", [16, 32, 64, 128, 256], "dimensions d (comma list)", IntList(2, 4096, size=True)))
    + family_options()[2:] + (
        Option("t", [0.1, 0.2, 0.3], "tail thresholds t (comma list)", FloatList(0, 1, hi_open=True)),
        Option("trials", 48, "contexts per (family, d), each with max(M) far keys", Int(4, 10**6, size=True)),
        Option("far_n", None, "route length of the nearest far key (default ⌈3·W(0.01)⌉ per family and d)", Int(1, 10**6, optional=True, size=True, nominal=500)),
        Option("tail_band", None, "far keys nearest the query used for the tail rows (default ⌈8·W(0.01)⌉)", Int(1, 10**7, optional=True, size=True)),
        Option("n_near", [1, 2, 4, 8], "near route lengths n ≥ 1 (comma list)", IntList(1, 10**5, size=True)),
        Option("trials_near", 4000, "near-route chains per (family, d)", Int(10, 10**7, size=True)),
        Option("lam", 8.0, "logit scale λ > 0", Float(0, 100, lo_open=True)),
        Option("target_n", 1, "route length of the near target", Int(0, 10**5, size=True)),
        Option("M", [64, 512, 4096, 65536], "far counts M (comma list)", IntList(1, 10**8, size=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.score_gap",
    validate=_plan,
    extra={"order": 1, "needs": ("orthogonal",)},
    mutants=MUTANTS,
    reduced={"d": [16, 64], "trials": 64, "M": [64, 1024, 16384], "trials_near": 1000},
    theories=(
        Theory("P(s ≥ t)", "the post-mixing law's tail (Haar coordinate / uniform phases) in scale, P(s ≥ t/factor); its "
               "MGF and bound kept", lambda f: scaled_law(__name__, s_factor=f)),
        Theory("exp(−d t²/2), exp(−t²/(2Σa_b²))", "the Lévy / Hoeffding tail bound in scale, B(t/factor)",
               lambda f: scaled_law(__name__, bound_factor=f), sides=(-1,)),
        Theory("E[e^{λs}]", "₀F₁(; d/2; λ²/4) / Π_b I₀(λa_b) times factor: the per-token weight's theory and, through "
               "ln E e^{βs}, the gap bound", lambda f: scaled_law(__name__, mgf_factor=f)),
        Theory("qᵀE[M]ⁿq", "the near E[qᵀP_n q] at n ≥ 1, and c_near = qᵀE[M]^{n_t}q in the weight and the gap bound; "
               "n = 0 is qᵀq", _near_times),
        Theory("min_β (ln M + ln E e^{βs})/β", "the bound on E[max_far s] behind the gap's lower bound "
               "λ(c_near − ·) (c_near kept)", scaled(__name__, "max_mgf_bound"), sides=(-1,)),
    ),
)))
