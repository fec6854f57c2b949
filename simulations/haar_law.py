"""C2 — decorrelation towards Haar: after a route much longer than the window, ``s = qᵀP_n k`` has the post-mixing law.

Each score is transported along a real route of ``n`` steps (``--n``, default ``⌈3·W(0.01)⌉`` of each
family): Householder reflections, SO(2) rotations, or full Haar matrices (Householder QR of a Gaussian
matrix, applied without being stored) for ``haar`` / ``lazy-haar`` — no exact-law shortcut
(:func:`stylized.engine.score_chains.score_chains`).  ``q`` is the equal-energy unit query and ``k = q`` (a
far copy of the target key: ``s = 1`` at ``n = 0``, so only the transport can move it).

The laws, asked of each step law (:meth:`stylized.laws.base.StepLaw.far_score_law`, by its declared
capabilities; :mod:`stylized.theory.score_laws`):

* isotropic orthogonal laws (householder, lazy-haar, haar, cayley, any ``d ≥ 2``, odd included):
  ``(1 + s)/2 ~ Beta((d−1)/2, (d−1)/2)`` *(derived)*; a law with an atom ``P_n = I`` (lazy Haar: no Haar
  step yet, weight ``(1 − p)^n``, :meth:`~stylized.laws.base.StepLaw.unmixed_probability`) is a mixture with
  an atom ``s = qᵀk``, tested apart by a binomial test;
* SO(2) planes whose angles equidistribute: uniform phases, ``s = Σ_b a_b cos U_b`` (``a_b = |q_b||k_b|``),
  whose CDF is the exact Fourier series of a compactly supported law with characteristic function
  ``Π_b J₀(a_b t)`` (:class:`~stylized.theory.score_laws.UniformPhaseSum`, truncation error ≤ 1e-10);
* every other orthogonal law (a user's law, declared isotropic or not): the claim's law, the Haar coordinate
  (:func:`stylized.theory.score_laws.far_score_law`), never the law's own Monte Carlo limit.  A law whose walk
  does not reach it (coordinate reflections, lattice angles: :mod:`stylized.laws.counterexamples`) does not hold,
  at every route length, with the reason: its premise, measured per law (:func:`stylized.theory.premises.measure_premises`:
  ``γ₁``, the harmonic gaps of degrees 2 and 4, the SO(2) phase gaps), is printed in the verdict, and a failed
  premise (a gap that is 0) refuses the claim by itself.  For a law whose own limit is an estimated reference
  (:func:`~stylized.theory.score_laws.self_consistency_law`), a two-sample KS test against it is reported as
  ``self_consistency_ks_pvalue``: a stationarity test, never the verdict.

Per family: a KS test of the scores against the law (one-sample, exact CDF), a z-test of the second moment
``E[s²]`` against the law's (``|q|²|k|²/d`` for the Haar coordinate, ``Σ_b a_b²/2`` for uniform phases: the test of the
law's scale, which a 1% error or ``Beta(d/2, d/2)`` for ``Beta((d−1)/2, (d−1)/2)`` moves by 1.5–2%), and rows ``P(s ≥ t)`` (Wilson intervals; the trials are independent) against the
law's tail (``theory``; an estimated one with its own 95% interval ``theory_ci``, the comparison widened by
it) with the concentration bound (``bound``: Lévy ``exp(−d t²/2)`` or Hoeffding ``exp(−t²/(2Σa_b²))``; none
for an estimated law).  Rows with fewer than 10 expected exceedances (or non-exceedances) are reported with
``in_verdict = false``.  The default route length comes from the law's ``γ``, estimated (and labelled in
``W_kind``) for a law without a closed-form ``E[M]``.  A law that is not orthogonal (a contraction carries
``s`` to 0: no post-mixing law) is refused before any work.

``--backend numba`` runs the counter-stream kernels; ``numpy`` and ``cupy`` the namespace twins.

Verdict at a joint 95% level (Bonferroni over every test of every family): each KS, second-moment (and binomial) p-value
is ≥ 0.05/m, each in-verdict tail's interval holds its theory (meets the theory's own interval, when
estimated), no tail's interval lies above its bound.
Below the window (small ``--n``) it must fail.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

from stylized.core.estimators import proportion_ci
from stylized.core.montecarlo import check_positive_int
from stylized.core.options import FloatList, Int
from stylized.engine.sampling import equal_energy_query
from stylized.engine.score_chains import score_chains
from stylized.harness import plotting as sp
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.laws.families import StepLaw
from stylized.theory import score_laws as laws
from stylized.theory.premises import measure_premises
from stylized.theory.score_laws import HaarCoordinate, far_score_law, self_consistency_law

from ._common import (
    default_route_length,
    family_from_params,
    family_options,
    joint_passes,
    law_option,
    law_setting,
    limits,
)
from ._mutants import scaled_law

NAME = "haar-law"
CHUNK = 4096  # trials per kernel call
MIN_COUNT = 10


def transport(family, n: int, size: int, seed, q: np.ndarray, k: np.ndarray, backend: str) -> np.ndarray:
    """``size`` scores ``qᵀP_n k``, each along its own real route of ``n`` steps (the model; a mutant replaces it)."""
    out = np.empty(size)
    for c, s0 in enumerate(range(0, size, CHUNK)):
        m = min(CHUNK, size - s0)
        out[s0 : s0 + m] = score_chains(family, n + 1, m, np.random.SeedSequence([*seed, c]), q, k, backend)[:, n]
    return out


def _route_length(params: dict, fam) -> int:
    """The route length of ``fam``: ``--n``, else ``⌈3·W(0.01)⌉`` with ``W`` the slower of the first-moment window and
    the measured premise window (:meth:`~stylized.theory.premises.Premises.window`: the degree-2 gap sets how fast
    ``E[s²]`` reaches ``1/d``); refused, naming ``--n``, when the law never mixes or that default exceeds 10^5 steps
    (:func:`default_route_length`).  ``--n 0`` is refused: n = 0 transports nothing, a constant score, no law."""
    n = default_route_length(params, fam, "n", law_setting(fam, params))
    if params["n"] is not None:
        return n
    w = 3 * measure_premises(fam).window(0.01)
    if w > 10**5:
        raise ValueError(f"--n: the default ⌈3·W(0.01)⌉ = {w:.3g} from the measured premise gaps of "
                         f"{law_setting(fam, params)} exceeds 10^5 (it mixes too slowly); give --n")
    return max(n, int(w))


def _entries(params: dict) -> list:
    entries = params["family"]
    return [entries] if isinstance(entries, (str, StepLaw)) else list(entries)


def _validate(params: dict) -> None:
    """``Check.validate``: every law's route length (``--n``, or its default ``⌈3·W(0.01)⌉``, at most 10^5), refused
    before any work (``--dry-run`` too)."""
    for entry in _entries(params):
        _route_length(params, _law_of(params, entry))


def _law_of(params: dict, entry) -> StepLaw:
    """The step law of one ``family`` entry: a law object as given, else built from its name and the options."""
    return entry if isinstance(entry, StepLaw) else family_from_params(params, entry)


def _family_part(fam, law, n, params, seed, backend, ts):
    """Scores, tests and tail rows of one family against its post-mixing ``law``."""
    d = fam.d
    q = equal_energy_query(d)
    k = q
    s = transport(fam, n, params["trials"], seed, q, k, backend)
    qk = float(q @ k)
    unmixed = fam.unmixed_probability(n)  # lazy Haar: no Haar step yet, s = qᵀk
    u = 0.0 if unmixed is None else unmixed
    atom = np.abs(s - qk) <= 1e-9 if u > 0 else np.zeros(s.size, bool)
    ks = law.ks_test(s[~atom]) if (~atom).sum() else None
    m2, m2_theory, p_m2 = _second_moment(s, law, u, qk)
    own = self_consistency_law(fam, q, k)  # stationarity only: never the verdict
    p_self = float(stats.ks_2samp(s, own.sample).pvalue) if own is not None else None
    prem = measure_premises(fam)
    p_atom = float(stats.binomtest(int(atom.sum()), s.size, u).pvalue) if u > 0 else None
    above = qk >= np.asarray(ts)
    theory = (1 - u) * np.asarray(law.sf(ts)) + u * above
    tb = law.tail_bound(np.asarray(ts))
    bound = [None] * len(ts) if tb is None else (1 - u) * tb + u * above
    rows = []
    for i, (t, th, b) in enumerate(zip(ts, theory, bound)):
        hits = int(np.count_nonzero(s >= t))
        lo, hi = law.sf_interval(t)  # an estimated law's own 95% interval (a point for a closed form)
        th_ci = (float(th), float(th)) if lo == hi else ((1 - u) * lo + u * above[i], (1 - u) * hi + u * above[i])
        rows.append({"family": fam.name, "d": d, "n": n, "t": t, **proportion_ci(hits, s.size).as_row(),
                     "theory": float(th), "theory_kind": law.theory_kind,
                     **({} if th_ci[0] == th_ci[1] else {"theory_ci": [float(th_ci[0]), float(th_ci[1])]}),
                     "bound": None if b is None else float(b),
                     "bound_kind": "upper bound on P(s ≥ t)" if b is not None else None, "law": law.name,
                     "in_verdict": bool(min(th, 1 - th) * s.size >= MIN_COUNT), "_hits": hits, "_theory_ci": th_ci})
    part = {"family": fam.name, "d": d, "n": n, "W": fam.mixing_window(0.01), "W_premise": prem.window(0.01), "W_kind": fam.theory_kind,
            "law": law.name, "law_kind": law.theory_kind,
            "ks_stat": None if ks is None else float(ks.statistic), "ks_pvalue": None if ks is None else float(ks.pvalue),
            "unmixed_probability": unmixed,
            "unmixed_share": float(atom.mean()) if u > 0 else None, "unmixed_binom_pvalue": p_atom,
            "m2": m2, "m2_theory": m2_theory, "m2_pvalue": p_m2, "self_consistency_ks_pvalue": p_self,
            "self_consistency_n": None if own is None else own.n, "premise_holds": prem.holds,
            "premise": prem.note("C2"), "premises": prem.as_dict()}
    return s, u, qk, rows, part


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    entries = _entries(params)
    check_positive_int("trials", params["trials"], 20)
    ts = sorted(set(params["t"]))
    if not ts or ts[0] < 0 or ts[-1] >= 1:
        raise ValueError(f"t must be a list of thresholds in [0, 1), got {params['t']!r}")
    plan = []  # every law, route length and post-mixing law first: a refusal comes before any work
    for entry in entries:
        fam = _law_of(params, entry)
        if not fam.orthogonal:
            raise ValueError(f"family {fam.name}: this check needs orthogonal steps (orthogonal=True): a contraction "
                             "carries far scores to 0, with no post-mixing law to compare with")
        q = equal_energy_query(fam.d)
        plan.append((fam, _route_length(params, fam), far_score_law(fam, q, q)))
    rows, parts, samples = [], [], {}
    for f_idx, (fam, n, law) in enumerate(plan):
        s, u, qk, fr, part = _family_part(fam, law, n, params, [seed, f_idx], backend, ts)
        rows += fr
        parts.append(part)
        samples[fam.name] = (s, law, u, qk)
    m = sum(p["ks_pvalue"] is not None for p in parts) + sum(p["unmixed_binom_pvalue"] is not None for p in parts) \
        + sum(r["in_verdict"] for r in rows) + len(parts)
    alpha = 0.05 / max(1, m)
    for r in rows:
        j = proportion_ci(r.pop("_hits"), r["n_samples"], level=1 - alpha)
        r["joint_ci"] = [j.ci_low, j.ci_high]
        r["within_joint_ci"] = joint_passes(j, *r.pop("_theory_ci"))
        r["bound_holds"] = None if r["bound"] is None else bool(j.ci_low <= r["bound"])
    for p in parts:
        p["ks_ok"] = p["ks_pvalue"] is None or p["ks_pvalue"] >= alpha
        p["binom_ok"] = p["unmixed_binom_pvalue"] is None or p["unmixed_binom_pvalue"] >= alpha
        p["m2_ok"] = p["m2_pvalue"] >= alpha
        p["tests_hold"] = p["ks_ok"] and p["binom_ok"] and p["m2_ok"] and all(
            r["within_joint_ci"] and r["bound_holds"] is not False
            for r in rows if r["family"] == p["family"] and r["in_verdict"])
        p["holds"] = p["tests_hold"] and p["premise_holds"] is not False  # a failed premise refuses C2 by itself
    holds = all(p["holds"] for p in parts)
    plots = {name: _plot_data(*samples[name], ts) for name in samples}
    h = next((r for r in rows if r["in_verdict"]), rows[0])
    txt = "; ".join(f"{p['family']} n={p['n']} (W(0.01)={p['W']:g}): KS vs {_law_word(p)} {p['law']} law "
                    f"p={p['ks_pvalue']:.3g}"
                    + f", E[s²] {p['m2']:.4g} vs {p['m2_theory']:.4g} (p={p['m2_pvalue']:.3g})"
                    + (f", unmixed share {p['unmixed_share']:.4g} vs (1−p)^n={p['unmixed_probability']:.4g}"
                       if p["unmixed_share"] is not None else "")
                    + (f", self-consistency (own reference at n={p['self_consistency_n']}, not the verdict) "
                       f"p={p['self_consistency_ks_pvalue']:.3g}" if p["self_consistency_ks_pvalue"] is not None else "")
                    + (f" — {p['premise']}" if p["premise"] else "") + ("" if p["holds"] else " — FAILS")
                    for p in parts)
    short = [p["family"] for p in parts if not p["holds"] and p["n"] < 3 * p["W"] and p["premise_holds"] is not False]
    h_word = "exact" if h["theory_kind"] == "closed form" else "estimated"
    h_bound = "" if h["bound"] is None else f" (bound {h['bound']:.3g})"
    verdict = (f"d={params['d']}, {params['trials']:,} transported scores per family; joint 95% over {m} tests "
               f"(each at level {alpha:.2g}). {txt}. P(s≥{h['t']:g}) {h['family']} = {h['estimate']:.4g} vs {h_word} "
               f"{h['theory']:.4g}{h_bound}. "
               + ("Matches the post-mixing laws." if holds else "Does NOT match the post-mixing law"
                  + (f" ({', '.join(short)}: route below or near the window, not mixed yet)." if short else ".")))
    return {"holds": holds, "rows": rows, "families": parts, "alpha": alpha, "plots": plots,
            "headline": {**headline(f"P(s ≥ {h['t']:g}), s = qᵀP_n k, {h['family']} d={h['d']} n={h['n']}", h, verdict),
                         "theory_kind": h["theory_kind"]}}


def _second_moment(s: np.ndarray, law, u: float, qk: float) -> tuple[float, float, float]:
    """``E[s²]`` measured, the law's (``(1 − u)·E_law[s²] + u·(qᵀk)²``; both laws have mean 0, so ``E_law[s²]`` is
    their ``variance``), and the two-sided p-value of the z-test (CLT, sample SD of ``s²``)."""
    s2 = s * s
    theory = (1 - u) * float(law.variance) + u * qk * qk
    se = float(s2.std(ddof=1)) / math.sqrt(s.size)
    z = (float(s2.mean()) - theory) / se if se > 0 else (0.0 if s2.mean() == theory else math.inf)
    return float(s2.mean()), theory, float(2 * stats.norm.sf(abs(z)))


def _law_word(part: dict) -> str:
    return "exact" if part["law_kind"] == "closed form" else "estimated"


def _plot_data(s, law, u, qk, ts) -> dict:
    lim = min(1.0, max(np.abs(s).max(), 4.0 * math.sqrt(law.variance)) * 1.05)
    edges = np.linspace(-lim, lim, 81)
    centers = 0.5 * (edges[1:] + edges[:-1])
    density = (1 - u) * np.asarray(law.pdf(centers)) if law.has_density else None
    grid = np.linspace(0.0, max(ts[-1], float(np.quantile(s, 0.9999))), 80)
    law_tail = (1 - u) * np.asarray(law.sf(grid)) + u * (qk >= grid)
    bound = law.tail_bound(grid)
    return {"edges": edges.tolist(), "counts": np.histogram(s, edges)[0].tolist(),
            "law_density": None if density is None else density.tolist(),
            "t": grid.tolist(), "empirical": [float(np.mean(s >= g)) for g in grid], "law": law_tail.tolist(),
            "bound": None if bound is None else np.asarray(bound).tolist()}


@sp.themed
def plot(result: dict, outdir: Path) -> list[Path]:
    """Left: histograms of far scores over the exact laws' densities (log y).  Right: tails with the bounds."""
    p = result["params"]
    fig, (ax1, ax2) = sp.figure(1, 2, height=3.4)
    lows = []
    for i, (name, pl) in enumerate(result["plots"].items()):
        e, c = np.array(pl["edges"]), np.array(pl["counts"], float)
        w = np.diff(e)
        ax1.stairs(c / c.sum() / w, e, color=f"C{i}", lw=1.2, label=name)
        if pl["law_density"] is not None:
            ax1.plot(0.5 * (e[1:] + e[:-1]), pl["law_density"], "--", color=f"C{i}", lw=1.0)
        lows.append(0.5 / c.sum() / w.mean())
        ax2.step(pl["t"], np.clip(pl["empirical"], 1e-12, None), where="post", color=f"C{i}", lw=0.9, alpha=0.6)
        ax2.plot(pl["t"], np.clip(pl["law"], 1e-12, None), "--", color=f"C{i}", lw=1.0)
        if pl["bound"] is not None:
            ax2.plot(pl["t"], pl["bound"], ":", color=f"C{i}", lw=1.0)
        rs = [r for r in result["rows"] if r["family"] == name]
        sp.theory_vs_measurement(ax2, [r["t"] for r in rs], *([r[k] for r in rs] for k in ("estimate", "ci_low", "ci_high")),
                                 color=f"C{i}", label=name, floor=3.0 / p["trials"])
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=min(lows))
    ax1.set_xlabel(r"far score $s = q^\top P_n k$ (unit $q = k$)")
    ax1.set_ylabel("density")
    ax1.set_title("C2: far-score laws (dashed: the claim's exact density)")
    ax2.set_yscale("log")
    ax2.set_ylim(max(0.2 / p["trials"], 1e-9), 1.5)
    sp.noise_floor(ax2, 3.0 / p["trials"], label=r"unresolved: $< 3/n$ (▽: CI upper end)")
    ax2.plot([], [], "k--", lw=1.0, label="claim's law (Haar coordinate / uniform phase, exact)")
    ax2.plot([], [], "k:", lw=1.0, label="bound")
    ax2.plot([], [], "k-", lw=0.9, alpha=0.6, label="empirical tail")
    ax2.set_xlabel(r"threshold $t$")
    ax2.set_ylabel(r"$P(s \geq t)$")
    ax2.set_title("tails: measured vs the claim's law and bound")
    fig.legend(*ax2.get_legend_handles_labels(), loc="outside upper center", ncol=4)
    fam_txt = ", ".join(f"{f['family']} n={f['n']} (W={f['W']:g})" for f in result["families"])
    sp.caption(fig, f"d={p['d']}; {fam_txt}; {p['trials']:,} trials per family, seed {p['seed']}; real transport, k = q; bars: 95% CI")
    return [sp.save(fig, Path(outdir) / NAME)]


# ---------------------------------------------------------------------------------------
# mutants
# ---------------------------------------------------------------------------------------
def _wrong_law(d_shift: int = 0, amp: float = 1.0, so2_as_haar: bool = False):
    """The right law with its parameters off: a Haar-coordinate law's dimension (``d``), uniform phases'
    amplitudes (``a``) or the uniform phases replaced by a Haar-coordinate law; an estimated law is kept."""
    def law(family, q, k):
        right = laws.far_score_law(family, q, k)
        if hasattr(right, "d"):
            return replace(right, d=right.d + d_shift)
        if hasattr(right, "a"):
            if so2_as_haar:
                return HaarCoordinate(family.d, float(np.linalg.norm(q) * np.linalg.norm(k)))
            return replace(right, a=tuple(np.asarray(right.a) * amp))
        return right
    return law


def _patch(name: str, new):
    return patched(__name__, name, new)


CAYLEY = {"family": ["cayley"], "trials": 20000}
"""Sizes of the cayley mutants (the unmutated check holds there too: tests/simulations/test_score_checks.py)."""

MUTANTS = (
    Mutant("no-transport", "scores not transported (P = I): s = qᵀk = 1",
           _patch("transport", lambda fam, n, size, seed, q, k, backend: np.full(size, float(q @ k)))),
    Mutant("short-routes", "routes of n = 4 steps, below the windows W(0.01) of householder and so2-uniform",
           params={"n": 4}),
    Mutant("beta-d-minus-2", "theory: Haar-coordinate law of dimension d − 2", _patch("far_score_law", _wrong_law(-2))),
    Mutant("beta-d-plus-2", "theory: Haar-coordinate law of dimension d + 2", _patch("far_score_law", _wrong_law(2))),
    Mutant("so2-amplitude-4pct", "theory: uniform-phase amplitudes a_b 4% too large",
           _patch("far_score_law", _wrong_law(amp=1.04))),
    Mutant("so2-as-haar", "theory: the Haar-coordinate law for SO(2) blocks (same variance, wrong shape)",
           _patch("far_score_law", _wrong_law(so2_as_haar=True))),
    Mutant("beta-d-over-2", "theory: Beta(d/2, d/2) for Beta((d−1)/2, (d−1)/2) (the Haar coordinate of dimension d + 1)",
           _patch("far_score_law", _wrong_law(1))),
    Mutant("scale-1pct", "theory: the post-mixing law 1% too wide in scale (F(x/1.01))",
           lambda: scaled_law(__name__, s_factor=1.01)),
    Mutant("coord-reflection-even-n", "model: coordinate reflections M = I − 2e_k e_kᵀ (γ = 2/d, degree-2 harmonic "
           "gap 0), even route length", params={"family": ["coord-reflection"], "n": 400}),
    Mutant("coord-reflection-odd-n", "model: coordinate reflections, odd route length",
           params={"family": ["coord-reflection"], "n": 401}),
    Mutant("lattice-angle-even-n", "model: SO(2) angles ±π/2 (E e^{2iθ} = −1), even route length",
           params={"family": ["lattice-angle"], "n": 6}),
    Mutant("lattice-angle-odd-n", "model: SO(2) angles ±π/2, odd route length",
           params={"family": ["lattice-angle"], "n": 7}),
    Mutant("cayley-beta-d-plus-2", "cayley (estimated γ and window): theory the Haar-coordinate law of dimension d + 2",
           _patch("far_score_law", _wrong_law(2)), params=CAYLEY),
)

CHECK = register(limits(Check(
    name=NAME,
    claim="C2",
    statement="Past the mixing window, s = qᵀP_n k for k = q, transported along real routes, follows the exact "
              "Haar-coordinate law (isotropic O(d) laws: householder, haar, cayley) or the exact uniform-phase law "
              "Σ_b a_b cos U_b (SO(2) blocks): KS, second-moment and tail tests against the closed-form CDFs, for every "
              "orthogonal law (a user's too: the claim's law, never the law's own limit); the premise (harmonic gaps of "
              "degrees 2 and 4, SO(2) phase gaps) measured per law, and a failed premise refuses the claim.",
    options=(law_option(["householder", "so2-uniform", "haar"], multi=True, allow_all=False),
             Option("d", 64, "dimension d (even for SO(2) families)", Int(2, 4096, size=True)))
    + family_options()[2:] + (
        Option("n", None, "route length n (default ⌈3·W(0.01)⌉ of each family)", Int(1, 10**6, optional=True, size=True, nominal=500)),
        Option("trials", 200000, "transported scores per family (200,000: a 1% scale error or Beta(d/2, d/2) flips E[s²]'s test)", Int(20, 10**7, size=True)),
        Option("t", [0.1, 0.2, 0.3, 0.4], "tail thresholds t (comma list)", FloatList(0, 1, hi_open=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.haar_law",
    validate=_validate,
    extra={"order": 0, "needs": ("orthogonal",)},
    mutants=MUTANTS,
    reduced={"d": 16, "trials": 40000, "t": [0.2, 0.4, 0.6, 0.7]},
    theories=(
        Theory("F_s", "the post-mixing law of s = qᵀP_n k (Haar coordinate (1+s)/2 ~ Beta((d−1)/2, (d−1)/2), uniform phases "
               "Σ_b a_b cos U_b) in scale: its CDF F(x/factor) in the KS test and its tail P(s ≥ t/factor); the bound and "
               "the unmixed atom kept", lambda f: scaled_law(__name__, s_factor=f)),
        Theory("exp(−d t²/2), exp(−t²/(2Σa_b²))", "the Lévy / Hoeffding tail bound in scale, B(t/factor)",
               lambda f: scaled_law(__name__, bound_factor=f), sides=(-1,)),
    ),
)))
