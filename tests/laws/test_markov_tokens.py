"""The ``markov-tokens`` law (SO(2) steps of a stationary Markov token chain), its exact theory and its check."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stylized.engine.sampling import equal_energy_query
from stylized.harness.falsify import run_reduced
from stylized.laws.markov_tokens import MarkovTokens, markov_tokens
from stylized.laws.registry import law_names, make_family
from stylized.theory import markov_theory as mth


def _law(V: int = 4, d: int = 6, seed: int = 3) -> MarkovTokens:
    """A non-reversible chain (random Dirichlet rows) with wide angles."""
    rng = np.random.default_rng(seed)
    return MarkovTokens(d=d, table=rng.uniform(-3.0, 3.0, (V, d // 2)), transition=rng.dirichlet(np.ones(V), size=V))


# -- the theory --------------------------------------------------------------------------------------
def test_twisted_operator_matches_brute_force_over_all_paths():
    law = _law(V=3, d=4)
    T, tab, pi = law.transition, law.table, law.stationary
    for n in range(1, 6):
        exact = np.zeros(tab.shape[1], complex)
        for path in itertools.product(range(3), repeat=n):
            p = pi[path[0]] * np.prod([T[a, b] for a, b in zip(path, path[1:])])
            exact += p * np.exp(1j * tab[list(path)].sum(axis=0))
        np.testing.assert_allclose(law.route_characteristic(n), exact, atol=1e-13)
    np.testing.assert_array_equal(law.route_characteristic(0), np.ones(2))


def test_theory_matches_monte_carlo_of_sampled_chains():
    law = _law()
    ns = np.array([1, 2, 3, 7, 15])
    ang = law.sample(np.random.default_rng(0), (40_000, ns[-1]))  # chains along the last axis
    A = np.cumsum(ang, axis=1)[:, ns - 1]  # (trials, len(ns), B)
    z = np.exp(1j * A)
    se = np.sqrt(z.real.var(0) + z.imag.var(0)) / np.sqrt(len(z))
    assert np.all(np.abs(z.mean(0) - law.route_characteristic(ns)) < 5 * se + 1e-12)
    # the i.i.d. shortcut is far off on this chain
    assert np.max(np.abs(z.mean(0) - law.chi() ** ns[:, None]) / (se + 1e-12)) > 20


def test_walk_scores_carry_the_chain_across_blocks():
    law, q = _law(), equal_energy_query(6)
    ns = [0, 1, 5, 13, 40]
    for block in (1, 7, None):
        x = law.walk_scores(ns, 20_000, np.random.default_rng(1), np, q=q, block=block)
        m, se = x.mean(0), x.std(0) / np.sqrt(len(x))
        assert np.all(np.abs(m - law.mean_overlap(q, ns)) <= 5 * se + 1e-12), block


def test_iid_limit_reduces_to_chi_power():
    pi = mth.stationary_law(mth.sticky_transition(np.array([0.5, 0.3, 0.2]), 0.4))
    law = markov_tokens(6, switch=1.0, vocab=5, omega=2.0)
    ns = np.arange(30)
    np.testing.assert_allclose(law.route_characteristic(ns), law.chi() ** ns[:, None], atol=1e-13)
    np.testing.assert_allclose(law.twisted_radius(), np.abs(law.chi()), atol=1e-12)
    assert law.spectral_gap == pytest.approx(1 - np.max(np.abs(law.chi())), abs=1e-12)
    np.testing.assert_array_equal(law.plane_windows(0.05), law.iid_plane_windows(0.05))
    q = np.random.default_rng(0).standard_normal(6)
    np.testing.assert_allclose(law.mean_overlap(q, ns), law.iid_overlap(q, ns), atol=1e-12)
    np.testing.assert_allclose(pi, [0.5, 0.3, 0.2])


def test_direction_is_not_identifiable_but_the_transpose_is_wrong():
    law = _law()
    ns = np.arange(40)
    rev = law.time_reversed()
    assert not np.allclose(rev.transition, law.transition)  # a non-reversible chain
    np.testing.assert_allclose(rev.stationary, law.stationary, atol=1e-12)
    np.testing.assert_allclose(rev.route_characteristic(ns), law.route_characteristic(ns), atol=1e-12)
    wrong = mth.route_characteristic(law.transition.T, law.table, ns, law.stationary)
    assert np.max(np.abs(wrong - law.route_characteristic(ns))) > 1e-2


def test_rate_window_mean_power_and_one_step_mean():
    law, q = _law(), np.random.default_rng(2).standard_normal(6)
    c = np.abs(law.route_characteristic(np.array([200, 400])))
    np.testing.assert_allclose((c[1] / c[0]) ** (1 / 200), law.twisted_radius(), rtol=1e-4)
    assert law.spectral_gap == pytest.approx(1 - law.twisted_radius().max())
    assert law.mixing_window(0.05) == np.max(law.plane_windows(0.05))
    for n in (0, 1, 4, 9):
        assert q @ law.mean_power(n) @ q == pytest.approx(law.mean_overlap(q, n), abs=1e-12)
    np.testing.assert_allclose(law.mean_power(1), law.mean(), atol=1e-13)  # one step: the stationary E[M]
    assert law.theory_kind == "closed form" and law.mean_radius == 0.0


def test_sticky_chain_windows_differ_from_iid_both_ways():
    om = np.pi * (0.1 / np.pi) ** (np.arange(4) / 3)
    law = markov_tokens(8, table=om * np.random.default_rng(0).uniform(-1, 1, (8, 4)),
                        transition=mth.sticky_transition(np.full(8, 1 / 8), 0.1))
    wm, wi = law.plane_windows(0.05), law.iid_plane_windows(0.05)
    assert wm[0] > 2 * wi[0]  # wide plane: a repeated token keeps its phase
    assert wm[-1] < wi[-1] / 2  # narrow plane: repeated angles add coherently


def test_sample_is_a_stationary_chain_with_transition_T():
    law = _law(V=3)
    x, ang = law.rvs_tokens(200_000, random_state=5)
    np.testing.assert_array_equal(ang, law.table[x])
    np.testing.assert_allclose(np.bincount(x, minlength=3) / x.size, law.stationary, atol=0.01)
    counts = np.zeros((3, 3))
    np.add.at(counts, (x[:-1], x[1:]), 1)
    np.testing.assert_allclose(counts / counts.sum(1, keepdims=True), law.transition, atol=0.01)
    assert law.sample(np.random.default_rng(0), (2, 3, 5)).shape == (2, 3, 5, 3)


# -- construction and validation ---------------------------------------------------------------------
def test_registered_by_name_with_defaults():
    assert "markov-tokens" in law_names()
    law = make_family("markov-tokens", 8)
    assert law.name == "markov-tokens" and law.vocab == 8 and law.planes and law.step_ndim == 1
    assert not law.iid and law.table.shape == (8, 4) and np.all(np.abs(law.table) <= 1.0)  # omega defaults to 1
    assert make_family("markov-tokens", 8, switch=0.3, vocab=5, table_seed=2).vocab == 5
    assert make_family("householder", 4).iid and make_family("so2-uniform", 4).iid  # the base declares i.i.d. steps
    np.testing.assert_array_equal(make_family("markov-tokens", 8).table, make_family("markov-tokens", 8).table)


@pytest.mark.parametrize("kwargs,word", [
    (dict(d=7), "d"), (dict(d=8, vocab=0), "vocab"), (dict(d=8, switch=0.0), "switch"),
    (dict(d=8, switch=1.5), "switch"), (dict(d=8, zipf=-1.0), "zipf"), (dict(d=8, omega=4.0), "omega"),
    (dict(d=8, table_seed=-1), "table_seed"), (dict(d=8, table=np.zeros((3, 3))), "table"),
    (dict(d=8, table=np.full((3, 4), np.nan)), "table"),
    (dict(d=8, transition=np.ones((3, 3))), "transition"), (dict(d=8, transition=-np.eye(3)), "transition"),
    (dict(d=8, transition=np.ones((2, 3)) / 3), "transition"), (dict(d=8, transition=np.eye(4)), "transition"),
    (dict(d=8, table=np.zeros((3, 4)), transition=np.full((4, 4), 0.25)), "transition"),
])
def test_validation_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=rf"^{word}\b"):
        markov_tokens(**kwargs)


def test_direct_construction_needs_table_and_transition():
    with pytest.raises(ValueError, match="table and transition"):
        MarkovTokens(d=4)
    with pytest.raises(ValueError, match="^d "):
        MarkovTokens(d=5, table=np.zeros((2, 2)), transition=np.full((2, 2), 0.5))


# -- the check ---------------------------------------------------------------------------------------
import simulations.markov_tokens as mk  # noqa: E402  (directly: not through every other check module)

CHECK = mk.CHECK


def test_check_holds_at_reduced_sizes_and_rejects_the_iid_shortcut(check_runs):
    r = check_runs.reduced(CHECK.name, seed=0)["result"]
    assert r["holds"] and all(row["within_joint_ci"] for row in r["rows"])
    assert sum(row["iid_rejected"] for row in r["rows"]) >= 3
    assert {"W_markov", "W_iid", "rho", "abs_chi", "crossing_markov", "crossing_iid"} <= set(r["windows"][0])
    assert any(w["W_markov"] > w["W_iid"] for w in r["windows"]) and any(w["W_markov"] < w["W_iid"] for w in r["windows"])


@pytest.mark.parametrize("mutant", CHECK.mutants, ids=[m.name for m in CHECK.mutants])
def test_mutants_flip(mutant, check_runs):
    assert not check_runs.reduced(CHECK.name, seed=0, mutant=mutant.name)["holds"]


def test_reversed_chain_is_not_a_mutant():
    """Running every chain backwards (``T*``) gives the same law of ``P_n``: the check must still hold."""
    from unittest import mock

    real = mk.simulate
    with mock.patch.object(mk, "simulate", lambda law, *a: real(law.time_reversed(), *a)):
        assert run_reduced(CHECK, seed=0)["holds"]


def test_measure_takes_any_markov_law_and_refuses_others():
    params = {**CHECK.defaults(), "trials": 1000, "n": [0, 1, 2, 6, 20]}
    m = mk.verdict(mk.measure([_law()], params, seed=1, backend="numpy"), params)
    assert m["holds"] and m["rows"][0]["switch"] == 0
    for other in (make_family("so2-uniform", 6), make_family("cayley", 5)):
        with pytest.raises(ValueError, match=rf"^family {other.name}: this check needs Markov token steps"):
            mk.measure([other], params, seed=1, backend="numpy")


def test_options_are_validated_before_any_work():
    from stylized import InvalidInput

    with pytest.raises(InvalidInput, match="d must be even"):
        CHECK.parse_params({"d": 7})
    with pytest.raises(InvalidInput, match="omega_min"):
        CHECK.parse_params({"omega_min": 2.0, "omega_max": 1.0})


def test_plot_writes_the_figure(tmp_path, check_runs):
    r = check_runs.reduced(CHECK.name, seed=0)["result"]
    (path,) = CHECK.plot(r, tmp_path)
    assert path.exists() and path.stat().st_size > 10_000


def test_grid_and_sustained_crossing():
    law = _law(V=5, d=8)
    ns = np.arange(700)
    grid = mth.route_characteristic_grid(law.transition, law.table, 699, law.stationary, block=64)
    np.testing.assert_allclose(grid, np.stack([law.route_characteristic(int(n)) for n in ns]), atol=1e-13)
    np.testing.assert_allclose(law.route_characteristic(ns), grid, atol=1e-13)  # the dense path
    assert mth.sustained_crossing([1.0, 0.01, 0.2, 0.01, 0.0], 0.05) == 3
    assert mth.sustained_crossing([0.01], 0.05) == 0 and mth.sustained_crossing([1.0, 0.5], 0.05) is None
