"""The C1 checks ``mixing`` and ``mixing-spectrum``: closed forms, zero-variance rows, d sweeps, mutants, false rejections.

Statistical tests state their levels.  Each check is one joint test at nominal 95%, so a sweep of
``N`` independent runs may reject a correct check a few times: sweeps bound the number of rejections
by the 99.9% quantile of Binomial(N, 0.05) and assert the deterministic parts (zero-variance rows,
Haar's exact crossing n* = 1) at every run.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from scipy import stats

from simulations import mixing, mixing_spectrum
from stylized.falsify import false_rejections, run_reduced
from stylized.families import FAMILY_NAMES, make_family
from stylized.registry import get_check
from stylized.results import run_check
from stylized.sampling import equal_energy_query, sample_overlaps

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
def test_mixing_labels_theory_and_bounds():
    r = run_reduced(get_check("mixing"), seed=0)["result"]
    assert r["headline"]["theory_kind"] == "closed form"
    for row in r["rows"] + r["op_norm"]:
        assert row["theory_kind"] in KINDS and row["bound_kind"].startswith("upper bound")
        assert abs(row["theory"]) <= row["bound"] + 1e-12
    for w in r["windows"]:
        assert w["theory_kind"] == "closed form" and w["bound_kind"] == "upper bound on n*"


def test_mixing_spectrum_labels():
    r = run_reduced(get_check("mixing-spectrum"), seed=0)["result"]
    assert r["headline"]["theory_kind"] == "closed form"
    assert all(row["theory_kind"] == "closed form" for row in r["rows"])


# -- mutants and false rejections ---------------------------------------------------------------------
CHECKS = ("mixing", "mixing-spectrum")
MUTANTS = [(c, m.name) for c in CHECKS for m in get_check(c).mutants]


@pytest.mark.parametrize("check", CHECKS)
def test_enough_mutants_and_fast_reduced_sizes(check):
    c = get_check(check)
    assert len(c.mutants) >= 2 and c.reduced
    r = run_reduced(c, seed=0)
    assert r["holds"] and r["seconds"] < 6.0  # ≲ 3 s on an idle machine; slack for shared CPUs


@pytest.mark.parametrize("check,mutant", MUTANTS)
def test_mutant_flips_seed_0(check, mutant):
    c = get_check(check)
    assert not run_reduced(c, seed=0, mutant=next(m for m in c.mutants if m.name == mutant))["holds"]


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
