"""The C1 checks ``mixing`` and ``mixing-spectrum``: closed forms, zero-variance rows, d sweeps, mutants, false rejections.

Statistical tests state their levels.  Each check is one joint test at nominal 95%, so a sweep of
``N`` independent runs may reject a correct check a few times: sweeps bound the number of rejections
by the 99.9% quantile of Binomial(N, 0.05) and assert the deterministic parts (zero-variance rows,
Haar's exact crossing n* = 1) at every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from unittest import mock

import numpy as np
import pytest
from scipy import stats

from simulations import mixing, mixing_spectrum
from stylized.engine.sampling import equal_energy_query, sample_overlaps
from stylized.harness.falsify import false_rejections, run_reduced
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.base import StepLaw
from stylized.laws.families import FAMILY_NAMES, make_family

SO2 = ("so2-uniform", "so2-normal", "rope-random")
FAST_D = (3, 10, 11, 12, 24)  # 10, 11, 12, 24: the d where n = 0 failed on a 1-ulp difference
ALL_D = tuple(range(3, 34))
SWEEP = {"n": [0, 1, 2, 5, 10, 20], "trials": 2000, "L": [64, 256], "window_steps": 4096, "n_op": [1, 2],
         "trials_op": 100}
KINDS = {"closed form", "bound", "simulated reference", "fit", "approximation"}


def families_at(d: int) -> list[str]:
    """Every family that accepts dimension ``d`` (SO(2) families need even d)."""
    return [f for f in FAMILY_NAMES if d % 2 == 0 or f not in SO2]


def _sweep(ds) -> list[tuple[int, dict]]:
    out = []
    for d in ds:
        p = {**SWEEP, "family": families_at(d), "d": d, "d_op": d if d <= 32 else d - 2}
        out.append((d, run_check(get_check("mixing"), p, seed=d, progress=False)))
    return out


def _assert_sweep(results: list[tuple[int, dict]]) -> None:
    for d, r in results:
        zero = [row for row in r["rows"] if row["n"] == 0]
        assert len(zero) == len(families_at(d))
        assert all(row["within_joint_ci"] for row in zero), (d, zero)  # rounding tolerance, not exact equality
        assert all(w["ok"] for w in r["windows"] if w["family"] == "haar"), d  # n* = 1, measured exactly
        assert {row["family"] for row in r["rows"]} == set(families_at(d))
    k = sum(not r["holds"] for _, r in results)
    assert k <= stats.binom.ppf(0.999, len(results), 0.05), [(d, r["headline"]["verdict"]) for d, r in results
                                                              if not r["holds"]]


# -- closed forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_theory_overlap_is_dense_matrix_power(name):
    fam = make_family(name, 8, mu=0.4, sigma=0.7, p=0.3, base=100.0)
    q = np.random.default_rng(0).standard_normal(8)
    ns = np.array([0, 1, 3, 17])
    dense = [q @ np.linalg.matrix_power(fam.mean(), int(n)) @ q for n in ns]
    assert np.allclose(mixing.theory_overlap(fam, q, ns), dense, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["so2-uniform", "householder", "lazy-haar"])
def test_theory_overlap_matches_monte_carlo(name):
    """E[qᵀP_n q] from 20,000 chains inside its 99.9% interval at each n (seeded; Bonferroni over 4 n)."""
    fam = make_family(name, 12, p=0.2)
    q = equal_energy_query(12)
    ns = np.array([1, 3, 8, 20])
    x = sample_overlaps(fam, ns, 20000, 5, "numba", q=q)
    z = stats.norm.ppf(1 - 0.0005 / len(ns))
    se = x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
    assert np.all(np.abs(x.mean(axis=0) - mixing.theory_overlap(fam, q, ns)) <= z * se)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_exact_crossing_is_first_n_below_eps_and_below_window(name):
    fam = make_family(name, 16, p=0.1, sigma=0.5)
    q = equal_energy_query(16)
    n = mixing.exact_crossing(fam, q, 0.05, 4096)
    if n is None:  # rope-random: the slow planes keep the equal-energy curve above ε
        assert name == "rope-random" and np.all(mixing.theory_overlap(fam, q, np.arange(4096)) >= 0.05)
        return
    assert mixing.theory_overlap(fam, q, n) < 0.05 <= mixing.theory_overlap(fam, q, n - 1)
    assert n <= fam.mixing_window(0.05)


def test_plane_windows_are_first_crossings():
    fam = make_family("rope-random", 16)
    W = mixing_spectrum.plane_windows(fam, 0.05, 512, 8192)
    chi = np.sinc(fam.omegas / np.pi)
    for b in range(3):
        assert chi[b] ** W[b] < 0.05 <= chi[b] ** (W[b] - 1)


# -- zero-variance rows and d sweeps ----------------------------------------------------------------
@pytest.mark.parametrize("d", [10, 11, 12, 24])
def test_haar_n0_row_holds_at_rounding_tolerance(d):
    """Regression: ``check mixing --family haar --d 10`` failed on qᵀq = 0.9999999999999999 vs samples 1.0."""
    r = run_check(get_check("mixing"), {**SWEEP, "family": "haar", "d": d, "d_op": 8}, seed=0, progress=False)
    row = next(x for x in r["rows"] if x["n"] == 0)
    assert row["ci_low"] == row["ci_high"]  # zero variance
    assert row["within_joint_ci"] and 0 < row["rounding_tol"] < 1e-11
    assert r["holds"]


def test_rounding_tolerance_does_not_hide_a_real_difference():
    r = run_check(get_check("mixing"), {**SWEEP, "family": "haar", "d": 10, "d_op": 8}, seed=0, progress=False)
    row = next(x for x in r["rows"] if x["n"] == 0)
    assert abs(row["theory"] * (1 + 1e-9) - row["estimate"]) > row["rounding_tol"]


def test_mixing_holds_at_odd_and_even_d_fast():
    _assert_sweep(_sweep(FAST_D))


@pytest.mark.slow
def test_mixing_holds_at_every_d_from_3_to_33():
    _assert_sweep(_sweep(ALL_D))


def test_empty_family_list_is_a_value_error():
    with pytest.raises(ValueError, match="--family: must be a comma list of"):
        run_check(get_check("mixing"), {**SWEEP, "family": ""}, seed=0, progress=False)


# -- labels ---------------------------------------------------------------------------------------------
def test_mixing_labels_theory_and_bounds(check_runs):
    r = check_runs.reduced("mixing", seed=0)["result"]
    assert r["headline"]["theory_kind"] == "closed form"
    for row in r["rows"] + r["op_norm"]:
        assert row["theory_kind"] in KINDS and row["bound_kind"].startswith("upper bound")
        assert abs(row["theory"]) <= row["bound"] + 1e-12
    for w in r["windows"]:
        assert w["theory_kind"] == "closed form" and w["bound_kind"] == "upper bound on n*"


def test_mixing_spectrum_labels(check_runs):
    r = check_runs.reduced("mixing-spectrum", seed=0)["result"]
    assert r["headline"]["theory_kind"] == "closed form"
    assert all(row["theory_kind"] == "closed form" for row in r["rows"])


# -- mutants and false rejections ---------------------------------------------------------------------
CHECKS = ("mixing", "mixing-spectrum")
MUTANTS = [(c, m.name) for c in CHECKS for m in get_check(c).mutants]


@pytest.mark.parametrize("check", CHECKS)
def test_enough_mutants_and_fast_reduced_sizes(check):
    c = get_check(check)
    assert len(c.mutants) >= 2 and c.reduced
    r = run_reduced(c, seed=0)  # timed here, not taken from the session cache
    assert r["holds"] and r["seconds"] < 6.0  # ≲ 3 s on an idle machine; slack for shared CPUs


@pytest.mark.parametrize("check,mutant", MUTANTS)
def test_mutant_flips_seed_0(check, mutant, check_runs):
    assert not check_runs.reduced(check, seed=0, mutant=mutant)["holds"]


@pytest.mark.slow
@pytest.mark.parametrize("check,mutant", MUTANTS)
def test_mutant_flips_seeds_0_to_4(check, mutant):
    c = get_check(check)
    m = next(m for m in c.mutants if m.name == mutant)
    assert not any(run_reduced(c, seed=s, mutant=m)["holds"] for s in range(5))


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS)
def test_false_rejections_at_most_3_of_40(check):
    assert false_rejections(get_check(check), range(40))["rejections"] <= 3


def test_householder_gap_mutant_is_scoped():
    """The γ mutant patches the class only inside its context."""
    m = next(m for m in get_check("mixing").mutants if m.name.startswith("householder"))
    with m.patch():
        assert make_family("householder", 16).spectral_gap == pytest.approx(1 / 16)
    assert make_family("householder", 16).spectral_gap == pytest.approx(2 / 16)


def test_frozen_steps_mutant_repeats_the_first_step():
    fam = make_family("so2-uniform", 4)
    x = mixing._frozen_steps(fam, (3, 7), np.random.default_rng(0))
    assert x.shape == (3, 7, 2) and np.all(x == x[:, :1])
    with mock.patch.object(mixing, "sample_steps", mixing._frozen_steps):
        assert mixing.sample_steps is mixing._frozen_steps


# -- any step law: odd d, the estimated path (cayley), a user's law ------------------------------------
@dataclass(frozen=True)
class SignFlips(StepLaw):
    """A user's law with only ``d`` and ``sample``: ``M = diag(±1)``, coordinate ``i`` flipped with
    probability ``p_i`` from 0.1 to 0.3 (orthogonal, not isotropic: ``E[M] = diag(1 − 2p_i)``, no closed form given)."""

    d: int

    def sample(self, xrng, shape, xp=np):
        p = xp.asarray(np.linspace(0.1, 0.3, self.d))
        s = xp.where(xrng.random(tuple(shape) + (self.d,)) < p, -1.0, 1.0)
        return xp.eye(self.d) * s[..., None, :]


O_D = ("householder", "lazy-haar", "haar", "cayley")
TINY = {"n": [0, 1, 2, 5, 10], "trials": 400, "L": [64], "window_steps": 2048, "n_op": [1, 2], "trials_op": 50}


def _run(family, d: int, seed: int = 0, **kw) -> dict:
    p = {**TINY, "family": family, "d": d, "d_op": min(d, 8), **kw}
    return run_check(get_check("mixing"), p, seed=seed, progress=False)


def _assert_labelled(r: dict, estimated: set[str]) -> None:
    """Rows of a law without a closed form carry the estimated kind and both intervals; the others do not."""
    for part in ("rows", "op_norm", "windows"):
        for row in r[part]:
            est = row["family"] in estimated
            assert row["theory_kind"] == ("closed form" if not est else "estimated (Monte Carlo, n = 20000)")
            if part == "windows":
                assert ("crossing_low" in row) == est
                if est and row["crossing_low"] is not None:
                    assert row["crossing_low"] <= row["exact_crossing"] <= (row["crossing_high"] or math.inf)
            else:
                assert ("theory_radius" in row) == est
                if est:
                    assert row["theory_low"] <= row["theory"] <= row["theory_high"]
                    assert row["theory_radius"] >= 0.0 and (row["n"] != 0 or row["theory_radius"] == 0.0)


@pytest.mark.parametrize("d", [3, 5, 13, 33])
def test_mixing_on_every_O_d_law_at_odd_d(d):
    """Seeded; one joint 95% test per run.  Deterministic parts: zero-variance rows, Haar's n* = 1."""
    r = _run(list(O_D), d, seed=d, d_op=min(d, 8) if d <= 32 else 5)
    assert {row["family"] for row in r["rows"]} == set(O_D)
    assert all(row["within_joint_ci"] for row in r["rows"] if row["n"] == 0)
    assert all(w["ok"] for w in r["windows"] if w["family"] == "haar")
    _assert_labelled(r, {"cayley"})
    assert r["holds"], r["headline"]["verdict"]


def test_mixing_on_cayley_is_estimated_and_says_so():
    r = _run("cayley", 8)
    _assert_labelled(r, {"cayley"})
    assert r["headline"]["theory_kind"].startswith("estimated (Monte Carlo")
    assert "No closed-form E[M] for cayley" in r["headline"]["verdict"]
    fam = r["families"][0]
    lo, hi = fam["spectral_gap_interval"]
    assert lo <= fam["spectral_gap"] <= hi and r["holds"]


def test_mixing_on_a_user_law_with_only_sample():
    law = SignFlips(d=5)
    r = _run(law, 5, d_op=5)
    assert {row["family"] for row in r["rows"]} == {"sign-flips"}
    _assert_labelled(r, {"sign-flips"})
    exact = mixing.theory_overlap(make_family("householder", 5), equal_energy_query(5), 3)  # a closed form beside it
    assert exact == pytest.approx(0.6**3)
    q = equal_energy_query(5)
    true = np.mean((1 - 2 * np.linspace(0.1, 0.3, 5)) ** 4)  # qᵀE[M]⁴q for the equal-energy q
    assert abs(mixing.theory_overlap(law, q, 4) - true) <= mixing.theory_radius(law, q, 4)
    assert r["holds"], r["headline"]["verdict"]


def test_run_laws_takes_law_objects_directly():
    law = make_family("cayley", 5)
    p = {**TINY, "eps": 0.05, "d_op": 5}
    r = mixing.run_laws([law, SignFlips(d=5)], [law, SignFlips(d=5)], p, seed=1, backend="numpy", progress=False)
    assert [s["family"] for s in r["families"]] == ["cayley", "sign-flips"] and r["holds"]


# -- the in-context curves: every law's override agrees with the generic walk ----------------------------
def _dense_law(d: int) -> StepLaw:
    @dataclass(frozen=True)
    class Dense(StepLaw):
        d: int

    return Dense(d=d)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_householder_context_overlaps_match_the_generic_walk_on_dense_steps(backend):
    fam = make_family("householder", 7)
    w = fam.sample(np.random.default_rng(0), (2, 40))
    q = equal_energy_query(7)
    fast = fam.context_overlaps(w, q, 12, stride=3, backend=backend)
    dense = np.stack([fam.dense(x) for x in w])
    slow = _dense_law(7).context_overlaps(dense, q, 12, stride=3)
    assert fast.shape == (2, 13) and np.allclose(fast, slow, rtol=0, atol=1e-12)


def test_so2_context_overlaps_all_pairs_match_the_generic_walk():
    fam = make_family("so2-normal", 6, sigma=0.4)
    theta = fam.sample(np.random.default_rng(1), (3, 50))
    q = equal_energy_query(6)
    nmax, stride, _ = fam.context_plan(50, fam.mixing_window(0.05))
    assert (nmax, stride) == (49, 1)
    fft = fam.context_overlaps(theta, q, nmax, stride=stride)
    walk = _dense_law(6).context_overlaps(np.stack([fam.dense(x) for x in theta]), q, nmax, stride=1)
    assert np.allclose(fft, walk, atol=1e-9)  # double-precision FFT
    assert np.allclose(fam.context_overlaps(theta, q, 10, stride=4),
                       _dense_law(6).context_overlaps(np.stack([fam.dense(x) for x in theta]), q, 10, stride=4))


def test_haar_context_overlaps_follow_the_exact_law():
    """Haar steps (p = 1): route 0 is qᵀq, every longer route a fresh Haar coordinate: mean 0, variance 1/d."""
    fam = make_family("haar", 9)
    rng = np.random.default_rng(2)
    c = fam.context_overlaps(fam.sample(rng, (400, 64)), equal_energy_query(9), 8, stride=8, xrng=rng)
    assert np.allclose(c[:, 0], 1.0)
    x = c[:, 1:8]  # n = 1 … 7: each the mean of 8 queries' independent Haar coordinates (variance 1/(9·8))
    z = x.mean() / np.sqrt(1 / (9 * 8) / x.size)
    assert abs(z) < stats.norm.ppf(1 - 0.0005)  # 99.9%
    with pytest.raises(ValueError, match="pass xrng"):
        fam.context_overlaps(fam.sample(rng, (1, 8)), equal_energy_query(9), 4)


def test_context_overlaps_refuse_a_route_longer_than_the_context():
    for fam in (make_family("householder", 4), make_family("so2-uniform", 4), make_family("cayley", 4)):
        steps = fam.sample(np.random.default_rng(0), (1, 6))
        with pytest.raises(ValueError, match="nmax must lie in"):
            fam.context_overlaps(steps, equal_energy_query(4), 6, xrng=np.random.default_rng(0))


# -- the estimated-path mutants -------------------------------------------------------------------------
@pytest.mark.parametrize("factor", [0.97, 1.03])
def test_estimated_mean_mutant_moves_only_the_estimated_theory(factor):
    cay, hh = make_family("cayley", 6), make_family("householder", 6)
    q = equal_energy_query(6)
    before = (mixing.theory_overlap(cay, q, 3), mixing.theory_overlap(hh, q, 3))
    with mixing._estimated_mean_scaled(factor):
        assert mixing.theory_overlap(cay, q, 3) == pytest.approx(factor**3 * before[0], rel=1e-12)
        assert mixing.theory_overlap(hh, q, 3) == before[1]
    assert mixing.theory_overlap(cay, q, 3) == before[0]


def test_estimated_mutants_run_on_cayley_where_the_unmutated_check_holds():
    """The two mutants flip it in test_mutant_flips_seed_0 (and tests/harness/test_mutants.py) at the same sizes."""
    c = get_check("mixing")
    ms = [m for m in c.mutants if m.name.startswith("estimated")]
    assert len(ms) == 2 and all(m.params["family"] == ["cayley"] for m in ms)
    r = run_reduced(c, seed=0, params=ms[0].params)
    assert r["holds"] and not make_family("cayley", c.reduced["d"]).has_exact_mean


@pytest.mark.parametrize("law", [make_family("cayley", 5), SignFlips(d=5)], ids=["cayley", "user"])
def test_mixing_windows_on_the_cupy_path_batch_contexts(cupy_standin, law):
    """The cupy path (NumPy standing in) measures several contexts per call of the generic walk."""
    nmax, stride, batch = law.context_plan(64, law.mixing_window(0.05), "cupy")
    assert batch > 1 and stride >= 1
    r = run_check(get_check("mixing"), {**TINY, "family": law, "d": 5, "d_op": 5}, seed=0, backend="cupy",
                  progress=False)
    assert r["holds"] and all(w["ok"] for w in r["windows"])


def test_dependent_steps_are_refused_before_any_work():
    """markov-tokens declares iid = False: E[P_n] ≠ E[M]ⁿ, so the check refuses it in one line (dry run too)."""
    c = get_check("mixing")
    with pytest.raises(ValueError, match=r"family markov-tokens: this check needs i\.i\.d\. steps \(iid=True\)"):
        c.parse_params({"family": "markov-tokens", "d": 8})
    law = make_family("markov-tokens", 8)
    with mock.patch.object(mixing, "sample_overlaps", side_effect=AssertionError("sampled")):
        with pytest.raises(ValueError, match="iid=True"):
            mixing.run_laws([law], [law], {**TINY, "eps": 0.05, "d_op": 8}, seed=0, backend="numpy")


def test_plot_draws_estimated_laws_and_windows_without_an_upper_end(tmp_path):
    r = _run(["cayley", "householder"], 7, L=[64, 256], d_op=7)
    assert any(w["window"] is not None and w["window_high"] is None for w in r["windows"])  # the case that crashed
    (png,) = mixing.plot(r, tmp_path)
    assert png.exists() and png.stat().st_size > 0


def test_mixing_spectrum_interval_keeps_a_tiny_spread():
    """Planes whose correlation stays ≈ 1 (tiny ω) still get a positive interval: the one-pass Σc² − (Σc)²/k lost
    every digit there and gave 0, so two runs differing by 1e-10 disagreed 'in law'."""
    from stylized.harness.registry import get_check
    from stylized.harness.results import run_check

    r = run_check(get_check("mixing-spectrum"), {"d": 16, "L_eval": 4096, "L_train": 128, "chains": 8}, seed=0,
                  backend="numpy", progress=False)
    half = np.asarray(r["curves"]["half"], float)
    assert np.all(half[1:] > 0)
