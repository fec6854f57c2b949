"""Far mass (C4) on the cupy path: the array-namespace code run with NumPy standing in for CuPy.

Deterministic pieces (counter-based streams, the running log-sum-exp, the batched contraction walk, the
first crossing) are compared with the numba/NumPy results on identical inputs; the Monte Carlo batches
(:func:`growth_trials`, :func:`horizon_trials`) draw from a different stream, so they are compared
with the numpy backend in distribution.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import special

from stylized.engine import farmass as fm
from stylized.engine import lse, score_chains
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.families import make_family
from stylized.theory.bounds import far_mass_lower_bound
from stylized.theory.growth import GrowthModel
from tests._shared import needs_gpu, samples_agree

SMALL_BOUND = {"K": 4, "M": 20_000, "lam": 2.0, "trials": 5, "adversarial": 10}
SMALL_GROWTH = {"d": 16, "lam": 5.0, "D": 4, "L": [64, 256, 1024, 4096], "L_sim": 1024, "trials": 6,
                "horizon_lam": [3.0, 5.0], "horizon_trials": 20}


# --------------------------------------------------------------------------- identical inputs
def test_counter_uniforms_batched_equal_one_stream_at_a_time():
    keys = np.array([0, 7, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    got = lse.counter_uniforms(keys, 10**9, 1000)
    assert got.shape == (4, 1000)
    for k, row in zip(keys, got):
        assert np.array_equal(row, lse.counter_uniforms(int(k), 10**9, 1000))


@pytest.mark.parametrize("lo,hi", [(-4.0, 4.0), (-2.0, -2.0), (-300.0, 500.0)])
def test_stream_lse_xp_matches_numba(cupy_standin, lo, hi):
    """The streamed LSE on the cupy path reduces the very same counter-based logits as the Numba kernel."""
    for M in (1, 5000, 70_001):
        a = lse.stream_lse(11, M, lo, hi, backend="numba", block=4096)
        b = lse.stream_lse(11, M, lo, hi, backend="cupy", block=4096)
        ref = special.logsumexp(lo + (hi - lo) * lse.counter_uniforms(11, 0, M))
        assert b == pytest.approx(a, rel=1e-12, abs=1e-12)
        assert b == pytest.approx(ref, rel=1e-12, abs=1e-12)


def test_stream_lse_many_does_not_depend_on_grouping(cupy_standin, monkeypatch):
    keys = np.arange(1, 6, dtype=np.uint64)
    ranges = np.array([[-1.0, 1.0], [-3.0, 2.0], [0.5, 0.5], [-8.0, 8.0], [-2.0, 0.0]])
    whole = lse._stream_lse_many(keys, 30_000, ranges, "cupy", block=4096)
    monkeypatch.setattr(fm, "_XP_ELEMS", 1)  # one stream per group
    alone = lse._stream_lse_many(keys, 30_000, ranges, "cupy", block=4096)
    assert np.array_equal(whole, alone)


def test_streamed_far_masses_match_numba_and_the_corner(cupy_standin):
    K, M, lam = 16, 200_000, 3.0
    keys = np.arange(20, dtype=np.uint64).reshape(-1, 2)
    a = lse.streamed_far_masses(K, M, lam, keys, backend="numba")
    b = lse.streamed_far_masses(K, M, lam, keys, backend="cupy")
    np.testing.assert_allclose(b, a, rtol=1e-12)
    bound = far_mass_lower_bound(K, M, lam)
    assert lse.extreme_far_mass(K, M, lam, backend="cupy") == pytest.approx(bound, rel=lse.lse_rounding_tol(M))
    adv = lse.adversarial_search(K, M, lam, np.arange(16, dtype=np.uint64), backend="cupy")
    assert [r["delta"] for r in adv] == [2.0**-k for k in range(8)]
    assert all(r["gap"] >= 0 for r in adv)
    with pytest.raises(ValueError, match="far logit range"):
        lse.streamed_far_masses(K, M, lam, keys, far=(-4.0, 0.0), backend="cupy")


def test_lse_fold_matches_scipy_across_blocks():
    x = np.random.default_rng(0).normal(0, 40, (3, 10_000))
    m, s = np.full(3, -np.inf), np.zeros(3)
    for start in range(0, x.shape[1], 999):
        m, s = lse._fold_lse(m, s, x[:, start:start + 999], np)
    np.testing.assert_allclose(m + np.log(s), special.logsumexp(x, axis=1), rtol=1e-13)
    np.testing.assert_allclose(lse._lse_xp(x, np), special.logsumexp(x, axis=1), rtol=1e-13)
    # equal logits: exact (sums of ones)
    assert lse._lse_xp(np.full((1, 4096), -2.0), np)[0] == -2.0 + math.log(4096)


def test_first_crossing_matches_cumulative_lse():
    """Block by block, the first L with LSE(x[:L−D]) ≥ target equals the literal logaddexp.accumulate search."""
    rng = np.random.default_rng(1)
    D, x = 4, 3.0 * rng.uniform(-1, 1, (6, 700))
    target = np.array([2.0, 4.0, 5.5, 6.0, 6.5, 50.0])
    m, s, cross = np.full(6, -np.inf), np.zeros(6), np.full(6, np.nan)
    for start in range(0, 700, 64):
        blk = x[:, start:start + 64]
        cross = fm._first_crossing_xp(m, s, blk, target, D + start, cross, np)
        m, s = lse._fold_lse(m, s, blk, np)
    for t in range(6):
        hit = np.nonzero(np.logaddexp.accumulate(x[t]) >= target[t])[0]
        assert (hit.size == 0 and np.isnan(cross[t])) or cross[t] == D + hit[0] + 1


def test_contraction_walk_batched_equals_one_query_at_a_time():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((40, 3, 8))
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    q = np.full(8, 1 / math.sqrt(8))
    U = score_chains.contraction_queries_numpy(w, q, 0.5)
    for t in range(3):
        np.testing.assert_allclose(U[:, t], score_chains.contraction_queries_numba(np.ascontiguousarray(w[:, t]), q, 0.5),
                                   rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- the checks end to end
def test_far_mass_bound_cupy_path(cupy_standin):
    check = get_check("far-mass-bound")
    a = run_check(check, SMALL_BOUND, seed=0, backend="cupy", progress=False)
    b = run_check(check, SMALL_BOUND, seed=0, backend="numpy", progress=False)
    assert a["holds"] is True and b["holds"] is True
    json.dumps(a)  # host values only
    # same counter-based logits on both paths: equal to rounding, row by row
    for ra, rb in zip(a["rows"], b["rows"]):
        assert ra["estimate"] == pytest.approx(rb["estimate"], rel=1e-12)
    np.testing.assert_allclose(a["random_rho"], b["random_rho"], rtol=1e-12)


def test_far_mass_growth_cupy_path(cupy_standin):
    check = get_check("far-mass-growth")
    r = run_check(check, SMALL_GROWTH, seed=0, backend="cupy", progress=False)
    assert r["holds"] is True
    assert run_check(check, SMALL_GROWTH, seed=0, backend="numpy", progress=False)["holds"] is True
    json.dumps(r)
    rows = {(x["control"], x["L"]): x for x in r["rows"] if "L" in x}
    assert all(type(x["estimate"]) is float for x in rows.values())
    assert r["violations"]["none"] == 0 and r["violations"]["alibi"] == 0
    assert len([x for x in r["rows"] if x.get("quantity") == "L_1/2"]) == 2


@pytest.mark.parametrize("family,near", [("householder", "all"), ("so2-uniform", "target"), ("lazy-haar", "all")])
def test_growth_cupy_agrees_with_numpy_in_law(cupy_standin, family, near):
    """ρ_D per control at every L, and the crossing L*: the cupy batch (exact far law everywhere) vs the
    numpy backend (literal routes up to L_sim = 256, exact law beyond), 300 queries each (checked once by hand: enough
    to flag λ +10%, the gate mean +12%, L_train −22%, β +40% or the ALiBi slope +50% on the cupy side)."""
    model = GrowthModel(make_family(family, 8), lam=3.0, D=4, near=near, m=0.1, L_train=64)
    Ls = np.array([16, 128, 1024])
    a = fm.growth_trials(model, Ls, 256, 300, np.random.default_rng(10), "cupy")
    b = fm.growth_trials(model, Ls, 256, 300, np.random.default_rng(11), "numpy")
    assert len(a) == 300 and set(a[0]["rho"]) == set(fm.CONTROLS)
    for c in fm.CONTROLS:
        for k in range(Ls.size):
            assert samples_agree([t["rho"][c][k] for t in a], [t["rho"][c][k] for t in b]), (c, int(Ls[k]))
    for c in ("none", "contraction"):
        assert samples_agree([t["lse_near"][c] for t in a], [t["lse_near"][c] for t in b]), c
    ca, cb = np.array([t["cross"] for t in a]), np.array([t["cross"] for t in b])
    assert np.isfinite(ca).all() and np.isfinite(cb).all()
    assert samples_agree(ca, cb)


def test_horizon_cupy_agrees_with_numpy_in_law(cupy_standin):
    model = GrowthModel(make_family("householder", 16), lam=4.0, D=4)
    a = np.array(fm.horizon_trials(model, 150, np.random.default_rng(20), "cupy"))
    b = np.array(fm.horizon_trials(model, 150, np.random.default_rng(21), "numpy"))
    assert samples_agree(a[:, 0], b[:, 0])  # Z_N
    assert samples_agree(a[:, 1], b[:, 1])  # L*


@needs_gpu
def test_far_mass_checks_on_real_cupy():
    import cupy  # noqa: F401

    r = run_check(get_check("far-mass-bound"), SMALL_BOUND, seed=0, backend="cupy", progress=False)
    b = run_check(get_check("far-mass-bound"), SMALL_BOUND, seed=0, backend="numpy", progress=False)
    assert r["holds"] is True
    np.testing.assert_allclose(r["random_rho"], b["random_rho"], rtol=1e-12)
    g = run_check(get_check("far-mass-growth"), SMALL_GROWTH, seed=0, backend="cupy", progress=False)
    assert g["holds"] is True
    json.dumps(g)
