"""The built-in C2 counterexamples (coord-reflection, lattice-angle): exact moments, and every C2/C3 check refuses them."""

from __future__ import annotations

import numpy as np
import pytest

from stylized.harness.falsify import run_reduced
from stylized.harness.registry import get_check
from stylized.laws.registry import make_family
from stylized.theory.premise_estimates import restricted_second_moment


@pytest.mark.parametrize("name", ["coord-reflection", "lattice-angle"])
def test_exact_mean_and_second_moment_against_draws(name):
    law = make_family(name, 6)
    m = law.dense(law.rvs(40_000, 0))
    assert np.allclose(m.transpose(0, 2, 1) @ m, np.eye(6))
    assert np.abs(m.mean(0) - law.mean()).max() < 0.02
    T = np.einsum("nij,nkl->ikjl", m, m).reshape(36, 36) / len(m)
    assert np.abs(T - law.second_moment_operator()).max() < 0.03
    ev = np.linalg.eigvals(restricted_second_moment(law.second_moment_operator(), 6))
    assert np.isclose(np.abs(ev).max(), 1.0)  # a degree-2 direction never mixes


def test_transport_matches_the_dense_product():
    law = make_family("coord-reflection", 5)
    draws = law.rvs(7, 1)
    x = np.arange(1.0, 6.0)
    y = x.copy()
    for k in draws:
        y = law.apply(np.asarray(k), y)
    P = np.eye(5)
    for M in law.dense(draws):
        P = M @ P
    assert np.allclose(P @ x, y)


def test_lattice_angle_harmonics():
    law = make_family("lattice-angle", 4)
    chi = law.chi_harmonic(np.arange(1, 5))
    assert np.allclose(chi[:, 0], [0, -1, 0, 1]) and law.spectral_gap == 1.0


@pytest.mark.parametrize("name", ["haar-law", "score-gap"])
def test_counterexample_mutants_flip(name, check_runs):
    check = get_check(name)
    for m in (m for m in check.mutants if m.name.startswith(("coord-reflection", "lattice-angle"))):
        r = check_runs.reduced(name, seed=0, mutant=m.name)
        assert not r["holds"] and "premise fails" in r["result"]["headline"]["verdict"], m.name


def test_haar_law_refuses_at_even_and_odd_n_by_its_tests_alone():
    """Not only the premise: the KS test against the claim's law refuses each counterexample at both parities."""
    check = get_check("haar-law")
    for fam, ns in (("coord-reflection", (106, 107)), ("lattice-angle", (6, 7))):
        for n in ns:
            r = run_reduced(check, seed=3, params={"family": [fam], "n": n, "trials": 20000})["result"]
            part = r["families"][0]
            assert not r["holds"] and not part["tests_hold"] and part["premise_holds"] is False, (fam, n)


def test_c2_counterexamples_check_holds_and_its_mutant_flips(check_runs):
    mutants = get_check("c2-counterexamples").mutants
    assert check_runs.reduced("c2-counterexamples", seed=0)["holds"] and mutants
    assert not any(check_runs.reduced("c2-counterexamples", seed=0, mutant=m.name)["holds"] for m in mutants)


def test_c2_counterexamples_runs_at_odd_d_on_the_reflection_law():
    from simulations import c2_counterexamples as c2

    r = c2.run({**c2.CHECK.defaults(), "d": 7, "trials": 5000}, seed=0, backend="numpy", progress=False)
    assert {x["family"] for x in r["rows"]} == {"coord-reflection"}  # lattice-angle needs SO(2) planes (even d)
    assert {x["parity"] for x in r["rows"]} == {"even", "odd"} and r["holds"]
