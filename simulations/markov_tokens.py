"""C1 for text-like tokens — Markov token chains: ``E[qᵀP_n q]`` is the twisted-operator closed form, not ``E[M]ⁿ``.

Steps ``M_t = f(x_t)`` rotate SO(2) plane ``b`` by ``table[x_t, b]`` while the tokens ``x_t`` follow a
stationary Markov chain (the ``markov-tokens`` law, :mod:`stylized.laws.markov_tokens`): a sticky chain
``T = (1 − s) I + s·1πᵀ`` over ``V = --vocab`` tokens with a Zipf law ``π_v ∝ (v + 1)^{−zipf}``, one law
per ``s ∈ --switch``.  Plane ``b`` draws its token angles from ``ω_b·U(−1, 1)`` (seeded by
``--table-seed``) with half-widths geometric from ``ω_0 = --omega-max`` to ``ω_{B−1} = --omega-min``, so
the same law holds wide planes (``|χ_b|`` small) and narrow ones (``|χ_b|`` near 1).

* ``rows``: ``E[qᵀP_n q]`` (equal-energy unit query) over ``--trials`` independent stationary chains at each
  route length ``n ∈ --n``, Student-t interval, against the exact
  ``Σ_b (q_{2b}² + q_{2b+1}²) Re π D_b (T D_b)^{n−1} 1`` (``theory``, :mod:`stylized.theory.markov_theory`).  Each
  row also carries the i.i.d. shortcut ``Σ_b … Re χ_bⁿ`` (``iid_theory``) and whether the joint interval
  excludes it (``iid_rejected``).  Zero-variance rows (``n = 0``) are compared at the rounding tolerance.
* ``windows``: per law and plane, the Markov rate ``ρ_b = ρ(T D_b)`` and window ``⌈ln ε / ln ρ_b⌉`` beside
  the i.i.d. ``|χ_b|`` and ``⌈ln ε / ln |χ_b|⌉``, and the exact sustained crossings
  ``n*_b = min{n : |c_b(m)| < ε for all m ∈ [n, horizon]}`` of both curves (``ε = --eps``).  Theory only:
  it shows where the two windows differ (wide planes: the Markov window is longer, a repeated token keeps
  its phase; narrow planes: shorter, repeated angles add coherently).

Verdict: joint 95% (Bonferroni over all rows), ``holds`` iff every row's exact value lies in its joint
interval.  The direction of the chain is not testable here: the time-reversed chain ``T*`` gives the same
law of every angle sum (commuting planes), hence the same ``E[qᵀP_n q]`` at every ``n``; the mutants
include the distinguishable convention error ``Tᵀ`` in place of ``T`` instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.core.backend import array_namespace, to_numpy, xp_generator
from stylized.core.counter_rng import chunked_generators
from stylized.core.estimators import bonferroni_level, mean_ci, rounding_tolerance
from stylized.core.montecarlo import check_positive_int
from stylized.core.options import Float, FloatList, Int, IntList
from stylized.engine.sampling import equal_energy_query
from stylized.harness.registry import Check, Mutant, Option, Theory, headline, patched, register
from stylized.laws.base import StepLaw
from stylized.laws.markov_tokens import MarkovTokens, markov_tokens, zipf_law
from stylized.theory import markov_theory as mth

from ._common import limits

NAME = "markov-tokens"
ALPHA = 0.05
THEORY_KIND = "closed form (twisted transfer operator π D_b (T D_b)^{n−1} 1)"
HORIZON_CAP = 1 << 20
"""Largest route length the sustained crossing looks at (beyond it a window is reported as ``None``)."""


# -- the laws ---------------------------------------------------------------------------------------
def plane_half_widths(d: int, omega_max: float, omega_min: float) -> np.ndarray:
    """``ω_b = ω_max (ω_min/ω_max)^{b/(B−1)}``, ``b = 0 … B−1`` (``B = d/2``; ``ω_max`` alone when ``B = 1``)."""
    B = d // 2
    if B == 1:
        return np.array([float(omega_max)])
    return float(omega_max) * (float(omega_min) / float(omega_max)) ** (np.arange(B) / (B - 1))


def laws_from_params(params: dict) -> list[MarkovTokens]:
    """One ``markov-tokens`` law per ``switch`` value, sharing the table (``V × d/2``)."""
    d, V = int(params["d"]), int(params["vocab"])
    if d % 2:
        raise ValueError(f"--d: d must be even for SO(2) blocks (d = 2, 4, 6, …), got {d}")
    if not 0.0 < params["omega_min"] <= params["omega_max"] <= np.pi:
        raise ValueError(f"--omega-min: must be ≤ --omega-max (0 < omega_min ≤ omega_max ≤ π), got "
                         f"omega_min={params['omega_min']!r}, omega_max={params['omega_max']!r}")
    u = np.random.default_rng(int(params["table_seed"])).uniform(-1.0, 1.0, (V, d // 2))
    table = u * plane_half_widths(d, params["omega_max"], params["omega_min"])
    pi = zipf_law(V, float(params["zipf"]))
    laws = []
    for s in switches(params):
        try:
            laws.append(markov_tokens(d, table=table, transition=mth.sticky_transition(pi, float(s))))
        except ValueError as e:  # a switch so small that T rounds to I (reducible), …: bad input, named
            raise ValueError(f"--switch: the token chain at s = {s!r} (--vocab {V}, --zipf {params['zipf']!r}) is "
                             f"refused: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return laws


def switches(params: dict) -> list[float]:
    """The distinct ``--switch`` values, sorted (one law each)."""
    return sorted(set(float(s) for s in params["switch"]))


def _validate(params: dict) -> None:
    """Build the laws before any work (a bad ``--d``/``--omega-*`` pair is refused by ``--dry-run`` too)."""
    laws_from_params(params)


def require_markov(law: StepLaw) -> MarkovTokens:
    """``law`` if it is a Markov token law (a ``transition``, a ``table``, commuting planes), else one ValueError."""
    if not (getattr(type(law), "planes", False) and hasattr(law, "transition") and hasattr(law, "route_characteristic")):
        raise ValueError(f"family {law.name}: this check needs Markov token steps (commuting SO(2) planes with a "
                         "transition matrix and route_characteristic, e.g. markov-tokens)")
    return law


# -- theory pieces (module-level so that the mutants can replace them) ---------------------------------
def theory_overlap(law: MarkovTokens, q: np.ndarray, ns) -> np.ndarray:
    """Exact ``E[qᵀP_n q]`` for the Markov chain (the twisted transfer operator)."""
    return np.atleast_1d(law.mean_overlap(q, np.asarray(ns)))


def iid_overlap(law: MarkovTokens, q: np.ndarray, ns) -> np.ndarray:
    """The i.i.d. shortcut ``Σ_b w_b Re χ_bⁿ`` (reported beside every row)."""
    return np.atleast_1d(law.iid_overlap(q, np.asarray(ns)))


# -- model piece -----------------------------------------------------------------------------------
def simulate(law: MarkovTokens, ns, size: int, xrng, xp, q: np.ndarray):
    """``(size, len(ns))`` draws of ``qᵀP_n q`` along independent stationary chains (:meth:`MarkovTokens.walk_scores`)."""
    return law.walk_scores(ns, size, xrng, xp, q=q)


# -- the measurement -------------------------------------------------------------------------------
def window_rows(law: MarkovTokens, eps: float, label=None) -> list[dict]:
    """Per-plane Markov vs i.i.d. rates, windows and exact sustained crossings (theory only)."""
    rho, chi = law.twisted_radius(), np.abs(law.chi())
    w_m, w_i = law.plane_windows(eps), law.iid_plane_windows(eps)
    finite = np.concatenate([w_m[np.isfinite(w_m)], w_i[np.isfinite(w_i)], [1.0]])
    horizon = int(min(HORIZON_CAP, 4 * finite.max() + 16))
    ns = np.arange(horizon + 1)
    c_m = np.abs(mth.route_characteristic_grid(law.transition, law.table, horizon, law.stationary))
    c_i = np.abs(mth.iid_characteristic(law.stationary, law.table, ns))
    out = []
    for b in range(law.n_planes):
        nm, ni = mth.sustained_crossing(c_m[:, b], eps), mth.sustained_crossing(c_i[:, b], eps)
        out.append({"switch": label, "plane": b, "max_abs_angle": float(np.max(np.abs(law.table[:, b]))),
                    "rho": float(rho[b]), "abs_chi": float(chi[b]), "W_markov": float(w_m[b]), "W_iid": float(w_i[b]),
                    "crossing_markov": nm, "crossing_iid": ni, "eps": eps, "horizon": horizon,
                    "ratio": (None if nm is None or ni in (None, 0) else nm / ni),
                    "theory_kind": THEORY_KIND})
    return out


def measure(laws: list[MarkovTokens], params: dict, *, seed: int, backend: str, labels: list | None = None) -> dict:
    """The rows and windows for ``laws`` (any Markov token laws, built from the options or given).

    ``labels`` name the laws in the ``switch`` column (default: the law's index); only ``trials``, ``n`` and
    ``eps`` are read from ``params``.
    """
    laws = [require_markov(law) for law in laws]
    labels = list(range(len(laws))) if labels is None else list(labels)
    trials = check_positive_int("trials", params["trials"], 2)
    ns = np.asarray(sorted(set(int(n) for n in params["n"])), dtype=np.int64)
    if ns.size == 0 or ns[0] < 0:
        raise ValueError(f"n must be a list of route lengths ≥ 0, got {params['n']!r}")
    eps = float(params["eps"])
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    xp = array_namespace(backend)
    level = bonferroni_level(1.0 - ALPHA, len(laws) * ns.size)
    rows, windows, curves = [], [], []
    for li, law in enumerate(laws):
        q = equal_energy_query(law.d)
        samples = np.concatenate([to_numpy(simulate(law, ns, size, xp_generator(backend, rng), xp, q))
                                  for size, rng in chunked_generators(trials, seed + 1000 * li, 1024)])
        theory, iid = theory_overlap(law, q, ns), iid_overlap(law, q, ns)
        for c, n in enumerate(ns):
            est, joint = mean_ci(samples[:, c]), mean_ci(samples[:, c], level=level)
            tol = rounding_tolerance(theory[c], law.d + trials)
            rows.append({"switch": labels[li], "law": law.name, "d": law.d, "vocab": law.vocab, "n": int(n),
                         **est.as_row(), "theory": float(theory[c]), "theory_kind": THEORY_KIND,
                         "iid_theory": float(iid[c]), "joint_low": joint.ci_low, "joint_high": joint.ci_high,
                         "joint_level": level, "rounding_tol": tol, "within_joint_ci": joint.contains(float(theory[c]), tol),
                         "iid_rejected": not joint.contains(float(iid[c]), tol)})
        windows += window_rows(law, eps, labels[li])
        grid = np.arange(int(ns[-1]) + 1)
        curves.append({"switch": labels[li], "n": grid.tolist(), "markov": theory_overlap(law, q, grid).tolist(),
                       "iid": iid_overlap(law, q, grid).tolist()})
    return {"rows": rows, "windows": windows, "curves": curves}


def run(params: dict, *, seed: int, backend: str, progress: bool = True) -> dict:
    return verdict(measure(laws_from_params(params), params, seed=seed, backend=backend, labels=switches(params)),
                   params)


def verdict(m: dict, params: dict) -> dict:
    """``holds`` iff every row's exact value lies in its joint interval; the windows summarised."""
    rows, windows = m["rows"], m["windows"]
    inside = sum(r["within_joint_ci"] for r in rows)
    rejected = sum(r["iid_rejected"] for r in rows)
    worst = max(rows, key=lambda r: abs(r["estimate"] - r["theory"])
                / max(r["joint_high"] - r["estimate"], r["rounding_tol"], 1e-300))
    longer = [w for w in windows if w["W_markov"] > w["W_iid"]]
    shorter = [w for w in windows if w["W_markov"] < w["W_iid"]]

    def fmt(ws):
        return ", ".join(f"s={w['switch']:g} b={w['plane']}: {w['W_markov']:g} vs {w['W_iid']:g}" for w in ws[:4]) or "none"

    return {
        **m,
        "holds": inside == len(rows),
        "headline": headline(
            f"E[qᵀP_n q], Markov tokens s={worst['switch']} n={worst['n']} (worst row)", worst,
            verdict=(f"{inside}/{len(rows)} rows have the exact twisted-operator value π D_b (T D_b)^(n−1) 1 inside "
                     f"the joint interval (joint 95%, Bonferroni over {len(rows)} rows); the i.i.d. shortcut χ_bⁿ lies "
                     f"outside it on {rejected}/{len(rows)} rows. Per-plane windows ⌈ln ε/ln ρ_b⌉ (Markov) vs "
                     f"⌈ln ε/ln |χ_b|⌉ (i.i.d.), ε={params['eps']:g}: Markov longer on {len(longer)} planes "
                     f"({fmt(longer)}), shorter on {len(shorter)} ({fmt(shorter)})."),
            theory_kind=THEORY_KIND,
        ),
    }


def plot(result: dict, outdir: Path) -> list[Path]:
    from ._markov_tokens_plot import plot_markov_tokens

    return plot_markov_tokens(result, outdir, NAME)


# -- mutants ---------------------------------------------------------------------------------------
def _iid_shortcut(law, q, ns):
    """Theory mutant: ``Σ_b w_b Re χ_bⁿ``, as if the steps were i.i.d. (``E[P_n] = E[M]ⁿ``)."""
    return iid_overlap(law, q, ns)


def _mean_3pct(law, q, ns):
    """Theory mutant: every step's mean 3% low, ``0.97ⁿ ×`` the exact value."""
    return 0.97 ** np.asarray(ns, dtype=float) * law.mean_overlap(q, np.asarray(ns))


def _transposed(law, q, ns):
    """Theory mutant: ``Tᵀ`` in place of ``T`` in the twisted operator (not a chain unless ``T`` is doubly stochastic)."""
    c = mth.route_characteristic(law.transition.T, law.table, np.asarray(ns), law.stationary)
    return mth.overlap_from_characteristic(q, c)


def _one_token_more(law, q, ns):
    """Theory mutant: ``π D_b (T D_b)ⁿ 1``, one angle-carrying token too many."""
    return np.atleast_1d(law.mean_overlap(q, np.asarray(ns) + 1))


def _no_transport(law, ns, size, xrng, xp, q):
    """Model mutant: ``P_n = I``, every sample is ``qᵀq``."""
    return xp.full((size, len(ns)), float(q @ q))


def _frozen_steps(law, ns, size, xrng, xp, q):
    """Model mutant: one token per chain, repeated (``x_t = x_1``, ``A_{n,b} = n·table[x_1, b]``)."""
    x = law.sample_tokens(xrng, (size, 1), xp)[:, 0]
    theta = xp.asarray(law.table)[x]
    w = xp.asarray(q[0::2] ** 2 + q[1::2] ** 2)
    return xp.stack([xp.cos(int(n) * theta) @ w for n in ns], axis=1)


def _iid_tokens(law, ns, size, xrng, xp, q):
    """Model mutant: i.i.d. tokens from ``π`` (the chain's memory dropped)."""
    iid = MarkovTokens(d=law.d, table=law.table, transition=np.tile(law.stationary, (law.vocab, 1)))
    return iid.walk_scores(ns, size, xrng, xp, q=q)


def _patch(name: str, new):
    return patched(__name__, name, new)


MUTANTS = (
    Mutant("i.i.d. shortcut χ_bⁿ", "theory: E[P_n] = E[M]ⁿ, i.e. Σ_b w_b Re χ_bⁿ, ignoring the chain's memory",
           _patch("theory_overlap", _iid_shortcut)),
    Mutant("mean off 3%", "theory: 0.97ⁿ × the exact twisted-operator value", _patch("theory_overlap", _mean_3pct)),
    Mutant("Tᵀ in the operator", "theory: π D_b (Tᵀ D_b)^(n−1) 1 (transposed convention; π is Zipf, not uniform)",
           _patch("theory_overlap", _transposed)),
    Mutant("one token too many", "theory: π D_b (T D_b)^n 1 (n + 1 angle-carrying tokens)",
           _patch("theory_overlap", _one_token_more)),
    Mutant("no transport", "model: P_n = I, every sample is qᵀq", _patch("simulate", _no_transport)),
    Mutant("frozen steps", "model: x_t = x_1 along each chain (M_t = M_1)", _patch("simulate", _frozen_steps)),
    Mutant("i.i.d. tokens", "model: tokens drawn i.i.d. from π instead of the Markov chain", _patch("simulate", _iid_tokens)),
)

REDUCED = {"d": 8, "switch": [0.1], "n": [0, 1, 2, 3, 5, 10, 20, 50], "trials": 2000}


def _overlap_times(factor: float):
    """:attr:`Theory.perturb` of the twisted-operator value: ``E[qᵀP_n q]`` times ``factor`` at every ``n ≥ 1``
    (``n = 0`` is ``qᵀq`` by definition)."""
    orig = theory_overlap

    def times(law, q, ns):
        return orig(law, q, ns) * np.where(np.atleast_1d(np.asarray(ns)) > 0, factor, 1.0)

    return _patch("theory_overlap", times)()


THEORIES = (
    Theory("Σ_b w_b Re π D_b (T D_b)^{n−1} 1", "the exact E[qᵀP_n q] of the Markov-driven walk at n ≥ 1 (the windows "
           "⌈ln ε/ln ρ(T D_b)⌉ are theory only, not in the verdict)", _overlap_times),
)

CHECK = register(limits(Check(
    name=NAME,
    claim="C1",
    statement=("Measured for SO(2) steps driven by a stationary Markov token chain (sticky T = (1−s)I + s·1πᵀ, Zipf π): "
               "E[qᵀP_n q] over independent chains matches the exact twisted-transfer-operator value "
               "Σ_b w_b Re π D_b (T D_b)^(n−1) 1 at every n (joint 95%), and not the i.i.d. shortcut χ_bⁿ; the per-plane "
               "windows ⌈ln ε/ln ρ(T D_b)⌉ differ from the i.i.d. ⌈ln ε/ln|χ_b|⌉ (longer on wide planes, shorter on narrow ones)."),
    options=(
        Option("d", 16, "dimension d (even: d/2 SO(2) planes)", Int(2, 512, size=True)),
        Option("vocab", 8, "vocabulary size V of the token chain", Int(2, 256, size=True)),
        Option("switch", [0.1, 0.5], "switch probabilities s of the sticky chain T = (1−s)I + s·1πᵀ (comma list)",
               FloatList(0, 1, lo_open=True)),
        Option("zipf", 1.0, "Zipf exponent of the stationary law π_v ∝ (v+1)^(−zipf)", Float(0, 10)),
        Option("omega_max", float(np.pi), "angle half-width ω_0 of the widest plane", Float(0, np.pi, lo_open=True)),
        Option("omega_min", 0.1, "angle half-width ω_{B−1} of the narrowest plane", Float(0, np.pi, lo_open=True)),
        Option("table_seed", 0, "seed of the token angle table", Int(0, 2**31 - 1)),
        Option("n", [0, 1, 2, 3, 5, 10, 20, 50, 100, 200], "route lengths n (comma list)", IntList(0, 10**5, size=True)),
        Option("trials", 4000, "independent chains per law", Int(2, 10**7, size=True)),
        Option("eps", 0.05, "correlation level ε of the windows", Float(0, 1, lo_open=True, hi_open=True)),
    ),
    run=run,
    plot=plot,
    module="simulations.markov_tokens",
    extra={"order": 5},
    mutants=MUTANTS,
    reduced=REDUCED,
    theories=THEORIES,
    validate=_validate,
)))
