"""The CuPy path of the score-side checks (C1–C3), run here with NumPy standing in for CuPy.

Three kinds of test:

* each converted check runs end to end with ``backend="cupy"``, returns host values and holds where the
  numpy backend holds (same small parameters, seed 0);
* the cupy path's samples agree *in distribution* with the numpy backend's (different random streams):
  ``|mean_a − mean_b| ≤ 4·sqrt(se_a² + se_b²)``, standard errors from the samples or, for check rows, from
  their 95% intervals (``se = (ci_high − ci_low)/(2·1.96)``); 4 standard errors of the difference is a
  per-comparison false-alarm rate of 6e-5 — fixed seeds, no tolerance tuned to pass;
* the namespace-generic functions equal their references on identical inputs.

``needs_gpu`` runs one check and the deterministic kernels on real CuPy (skipped without a GPU).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stylized.core.backend import array_namespace, numpy_standin_for_cupy, xp_generator
from stylized.engine.context_sweep import so2_context_inputs, so2_context_numba, so2_context_numpy
from stylized.engine.sampling import equal_energy_query, haar_coordinates, sample_steps
from stylized.engine.scores import (
    _running_max,
    far_scores,
    haar_window_sums,
    householder_window_sums_numba,
    householder_window_sums_numpy,
    so2_pair_correlation,
    uniform_phase_scores,
)
from stylized.engine.transport_reference import route_product
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.families import SO2Normal, make_family, uniform_sphere
from tests._shared import SCORE_SMALL, means_agree, needs_gpu

SMALL = {**SCORE_SMALL, "mixing": {**SCORE_SMALL["mixing"], "family": "householder,so2-uniform,lazy-haar,haar"}}
Z95 = 1.959964


def _row_se(row: dict) -> float:
    return (row["ci_high"] - row["ci_low"]) / (2 * Z95)


@pytest.fixture(scope="module")
def both_runs():
    """Each converted check at SMALL, seed 0: (numpy backend result, cupy path result under the stand-in)."""
    out = {}
    for name, params in SMALL.items():
        check = get_check(name)
        ref = run_check(check, params, seed=0, backend="numpy", progress=False)
        with numpy_standin_for_cupy():
            dev = run_check(check, params, seed=0, backend="cupy", progress=False)
        out[name] = ref, dev
    return out


# ---------------------------------------------------------------------------------------
# whole checks
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SMALL))
def test_check_runs_on_the_cupy_path_and_holds(name, both_runs):
    ref, dev = both_runs[name]
    assert "cupy" in get_check(name).backends
    assert dev["params"]["backend"] == "cupy"
    json.dumps(dev)  # host values only: plain floats, lists and dicts
    assert all(isinstance(r["estimate"], (int, float, type(None))) for r in dev["rows"])
    assert ref["holds"], ref["headline"]["verdict"]
    assert dev["holds"], dev["headline"]["verdict"]


@pytest.mark.parametrize("name", ["mixing", "haar-law", "score-gap", "transfer"])
def test_check_rows_agree_in_law_with_numpy(name, both_runs):
    """Every row's estimate (a mean or a proportion) from the two paths within 4 SEs of their difference."""
    ref, dev = both_runs[name]
    assert len(ref["rows"]) == len(dev["rows"])
    for a, b in zip(ref["rows"], dev["rows"]):
        assert a.keys() == b.keys()
        assert all(a[k] == b[k] for k in ("family", "kind", "d", "n", "t", "M", "L", "quantity", "theory") if k in a)
        assert means_agree(a["estimate"], _row_se(a), b["estimate"], _row_se(b)), (a, b)


def test_mixing_windows_agree_in_law(both_runs):
    # in-context correlation curves: per-context means, Student-t half widths at 95% over the contexts
    ref, dev = both_runs["mixing"]
    for a, b in zip(ref["windows"], dev["windows"]):
        assert (a["family"], a["L"], a["exact_crossing"]) == (b["family"], b["L"], b["exact_crossing"]) and b["ok"]
        ta, tb = stats.t.ppf(0.975, a["chains"] - 1), stats.t.ppf(0.975, b["chains"] - 1)
        assert np.all(means_agree(a["curve"], np.array(a["curve_half"]) / ta,
                                    b["curve"], np.array(b["curve_half"]) / tb)), (a["family"], a["L"])


def test_mixing_spectrum_curves_agree_in_law(both_runs):
    # per-plane correlation curves; half widths are joint over B planes (t at 1 − 0.025/B)
    ref, dev = both_runs["mixing-spectrum"]
    B, chains = len(ref["rows"]), ref["params"]["chains"]
    t = stats.t.ppf(1 - 0.025 / B, chains - 1)
    for key in ("mean", "half"):
        assert np.shape(ref["curves"][key]) == np.shape(dev["curves"][key])
    se_a, se_b = np.array(ref["curves"]["half"]) / t, np.array(dev["curves"]["half"]) / t
    assert np.all(means_agree(ref["curves"]["mean"], se_a, dev["curves"]["mean"], se_b))


# ---------------------------------------------------------------------------------------
# samplers: the cupy path against the numpy backend, in distribution
# ---------------------------------------------------------------------------------------
def _mean_se(x: np.ndarray):
    return x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(len(x))


@pytest.mark.parametrize("name,n", [("householder", 6), ("so2-normal", 3), ("lazy-haar", 4), ("rope-random", 9)])
def test_far_scores_cupy_path_in_law(name, n, cupy_standin):
    # qᵀP_n k with k ≠ q: mean and second moment from both paths; k is a fixed unit vector.  SO(2) angles have
    # a drift μ = 0.5 (an asymmetric law, so the sign of the sin·cross term shows in the mean)
    fam = SO2Normal(d=8, sigma=0.7, mu=0.5) if name == "so2-normal" else make_family(name, 8, p=0.3)
    rng = np.random.default_rng(0)
    q, k = uniform_sphere(rng, (2,), 8)
    a = far_scores(fam, n, 6000, 1, "numpy", q, k)
    b = far_scores(fam, n, 6000, 2, "cupy", q, k)
    assert isinstance(b, np.ndarray) and b.shape == (6000,)
    for f in (lambda x: x, np.square):
        (ma, sa), (mb, sb) = _mean_se(f(a)), _mean_se(f(b))
        assert means_agree(ma, sa, mb, sb), (name, ma, mb)
    assert np.all(far_scores(fam, 0, 3, 0, "cupy", q, k) == q @ k)


def test_uniform_phase_and_haar_coordinates_cupy_path_in_law(cupy_standin):
    a = np.array([0.5, 0.3, 0.2, 0.1])
    x, y = uniform_phase_scores(a, 20000, 0, "numpy"), uniform_phase_scores(a, 20000, 1, "cupy")
    for f in (lambda v: v, np.square, lambda v: v >= 0.3):
        (ma, sa), (mb, sb) = _mean_se(f(x).astype(float)), _mean_se(f(y).astype(float))
        assert means_agree(ma, sa, mb, sb)
    # Beta through standard_gamma (a Generator without beta) against NumPy's beta
    class NoBeta:
        def __init__(self, seed):
            self.g = np.random.default_rng(seed)

        def standard_gamma(self, shape, size):
            return self.g.standard_gamma(shape, size=size)

    u, v = haar_coordinates(np.random.default_rng(3), (20000,), 6), haar_coordinates(NoBeta(4), (20000,), 6)
    for f in (lambda w: w, np.square):
        (ma, sa), (mb, sb) = _mean_se(f(u)), _mean_se(f(v))
        assert means_agree(ma, sa, mb, sb)


@pytest.mark.parametrize("name", ["householder", "lazy-haar", "so2-uniform"])
def test_sample_steps_cupy_path_in_law(name, cupy_standin):
    fam = make_family(name, 6, p=0.4)
    a = sample_steps(fam, (4000, 3), np.random.default_rng(0), "numpy")
    b = sample_steps(fam, (4000, 3), xp_generator("cupy", np.random.default_rng(1)), "cupy")
    assert a.shape == b.shape and a.dtype == b.dtype
    fa, fb = a.reshape(-1, *a.shape[2:]).astype(float), b.reshape(-1, *b.shape[2:]).astype(float)
    for f in (lambda w: w, np.square):
        (ma, sa), (mb, sb) = _mean_se(f(fa)), _mean_se(f(fb))
        assert np.all(means_agree(ma, sa, mb, sb)), name


def test_so2_context_inputs_cupy_path_in_law(cupy_standin):
    # per-plane dot_b and cross_b: E = 0, E[dot_b²] = |q_b|²/d; the planted target is exact
    fam = make_family("rope-random", 8)
    q = uniform_sphere(np.random.default_rng(0), (), 8)
    th_a, dot_a, cr_a = so2_context_inputs(fam, 500, 8, np.random.default_rng(1), q, target_n=2)
    xp = array_namespace("cupy")
    th_b, dot_b, cr_b = so2_context_inputs(fam, 500, 8, xp_generator("cupy", np.random.default_rng(2)), q, 2, xp)
    assert th_a.shape == th_b.shape == dot_b.shape == cr_b.shape == (8, 500, 4)
    np.testing.assert_allclose(dot_b[:, 497], np.broadcast_to(q[0::2] ** 2 + q[1::2] ** 2, (8, 4)))
    assert np.all(cr_b[:, 497] == 0)
    for x, y in ((th_a, th_b), (dot_a, dot_b), (cr_a, cr_b), (dot_a**2, dot_b**2)):
        (ma, sa), (mb, sb) = _mean_se(x.reshape(-1, 4)), _mean_se(y.reshape(-1, 4))
        assert np.all(means_agree(ma, sa, mb, sb))


def _generic_near_and_far(fam, L, D, lam, target_n, trials, rng):
    """The reference sweep: one context at a time through the generic O(L·d) transport of
    :func:`stylized.engine.attention.scores` (dense-free, independent of the array-namespace sweep)."""
    from scipy.special import logsumexp

    from stylized.engine.attention import scores

    q = equal_energy_query(fam.d)
    near, far = np.empty((trials, D)), np.empty(trials)
    for t in range(trials):
        keys = uniform_sphere(rng, (L,), fam.d)
        keys[L - 1 - target_n] = q
        sc = scores(fam, fam.rvs(L, rng), q, keys, lam, rng)[::-1]  # by route length n
        near[t], far[t] = sc[:D], logsumexp(sc[D:])
    return near, far


@pytest.mark.parametrize("name", ["householder", "lazy-haar"])
def test_transport_context_xp_in_law(name, cupy_standin):
    """O(d) sweep on the cupy path (transfer.near_and_far) vs the generic transport, one context at a time:
    near logits per route length and the far log-sum-exp."""
    from simulations.transfer import near_and_far

    fam = make_family(name, 8, p=0.3)
    a = _generic_near_and_far(fam, 40, 6, 2.0, 2, 600, np.random.default_rng(0))
    b = near_and_far(fam, 40, 6, 2.0, 2, 600, np.random.default_rng(1), "cupy")
    for x, y in zip(a, b):
        (ma, sa), (mb, sb) = _mean_se(x), _mean_se(y)
        assert np.all(means_agree(ma, sa, mb, sb)), name
    # the planted target: λ E[qᵀP_2 q] = λ (1−γ)²
    m, se = _mean_se(b[0][:, 2])
    assert abs(m - 2.0 * (1 - fam.spectral_gap) ** 2) <= 4 * se


def test_transfer_so2_cupy_path_in_law(cupy_standin):
    from simulations.transfer import near_and_far

    fam = make_family("so2-normal", 8, sigma=0.5)
    a = near_and_far(fam, 300, 8, 3.0, 1, 400, np.random.default_rng(0), "numba")  # the Numba sweep
    b = near_and_far(fam, 300, 8, 3.0, 1, 400, np.random.default_rng(1), "cupy")
    for x, y in zip(a, b):
        (ma, sa), (mb, sb) = _mean_se(x), _mean_se(y)
        assert np.all(means_agree(ma, sa, mb, sb))


def test_haar_window_sums_batched_in_law(cupy_standin):
    # lazy Haar inside a context: E[qᵀP_n q] = (1 − p)^n, batched over contexts on the cupy path
    from simulations.mixing import _context_curves

    fam = make_family("lazy-haar", 8, p=0.3)
    q = equal_energy_query(8)
    a, na = _context_curves(fam, q, 64, 300, np.random.default_rng(0), "numpy", fam.mixing_window(0.05))
    b, nb = _context_curves(fam, q, 64, 300, np.random.default_rng(1), "cupy", fam.mixing_window(0.05))
    assert na == nb and a.shape == b.shape == (300, na + 1)
    (ma, sa), (mb, sb) = _mean_se(a), _mean_se(b)
    assert np.all(means_agree(ma, sa, mb, sb))
    assert np.all(means_agree(mb, sb, 0.7 ** np.arange(nb + 1), 0.0))


# ---------------------------------------------------------------------------------------
# namespace-generic functions on identical inputs
# ---------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=20)
@given(C=st.integers(1, 3), L=st.integers(2, 40), d=st.integers(2, 6), stride=st.integers(1, 9),
       nmax=st.integers(0, 45), seed=st.integers(0, 2**16))
def test_householder_window_sums_batched_equal_per_context_and_numba(C, L, d, stride, nmax, seed):
    rng = np.random.default_rng(seed)
    w, q = uniform_sphere(rng, (C, L), d), uniform_sphere(rng, (), d)
    sums, counts = householder_window_sums_numpy(w, q, stride, nmax)
    assert sums.shape == (C, nmax + 1)
    for c in range(C):
        one, cnt = householder_window_sums_numpy(w[c], q, stride, nmax)
        assert np.array_equal(sums[c], one) and np.array_equal(cnt, counts)
        ref, ref_cnt = householder_window_sums_numba(w[c], q, stride, nmax)
        np.testing.assert_allclose(one, ref, atol=1e-12)
        np.testing.assert_array_equal(cnt, ref_cnt)


def test_householder_window_sums_dense_reference():
    rng = np.random.default_rng(4)
    d = 5
    q = uniform_sphere(rng, (), d)
    w = uniform_sphere(rng, (2, 40), d)
    sums, counts = householder_window_sums_numpy(w, q, 3, 9)
    mats = make_family("householder", d).dense(w[1])
    want = sum(q @ route_product(mats, i - 4, i) @ q for i in range(39, 3, -3))
    assert sums[1, 4] == pytest.approx(want) and counts[4] == len(range(39, 3, -3))


@settings(deadline=None, max_examples=30)
@given(shape=st.tuples(st.integers(1, 4), st.integers(1, 70)), seed=st.integers(0, 2**16))
def test_running_max_equals_maximum_accumulate(shape, seed):
    x = np.random.default_rng(seed).integers(-1, 100, shape)
    assert np.array_equal(_running_max(x), np.maximum.accumulate(x, axis=-1))


def test_haar_window_sums_batched_equal_sequential_contexts():
    # one block of query positions per context: the batched draw is the per-context draws in order
    fam = make_family("lazy-haar", 8, p=0.3)
    mask = fam.rvs(3 * 50, np.random.default_rng(0)).reshape(3, 50)
    sums, counts = haar_window_sums(mask, np.random.default_rng(1), 8, 4, 12, 0.9)
    g = np.random.default_rng(1)
    for c in range(3):
        one, cnt = haar_window_sums(mask[c], g, 8, 4, 12, 0.9)
        assert np.array_equal(sums[c], one) and np.array_equal(cnt, counts)


@pytest.mark.parametrize("L,D", [(11, 4), (8, 8), (300, 16)])  # L = D: no far set, far LSE −∞
def test_so2_context_numpy_equals_kernel(L, D):
    fam = make_family("so2-normal", 6, sigma=3.0)
    rng = np.random.default_rng(1)
    q = uniform_sphere(rng, (), 6)
    theta, dot, cross = so2_context_inputs(fam, L, 3, rng, q, target_n=min(2, L - 1))
    near, far = so2_context_numba(theta, dot, cross, 2.5, D)
    near0, far0 = so2_context_numpy(theta, dot, cross, 2.5, D)
    np.testing.assert_allclose(near0, near, atol=1e-12)
    np.testing.assert_allclose(far0, far, atol=1e-9)


# ---------------------------------------------------------------------------------------
# real CuPy (GPU only)
# ---------------------------------------------------------------------------------------
@needs_gpu
def test_gpu_transfer_check_and_identical_inputs():
    import cupy

    r = run_check(get_check("transfer"), SMALL["transfer"], seed=0, backend="cupy", progress=False)
    json.dumps(r)
    assert r["holds"], r["headline"]["verdict"]
    # identical inputs on host and device: the namespace-generic sweep and the FFT correlation
    fam = make_family("rope-random", 16)
    rng = np.random.default_rng(0)
    q = equal_energy_query(16)
    theta, dot, cross = so2_context_inputs(fam, 2048, 3, rng, q, target_n=3)
    host = so2_context_numpy(theta, dot, cross, 4.0, 16)
    dev = so2_context_numpy(cupy.asarray(theta), cupy.asarray(dot), cupy.asarray(cross), 4.0, 16)
    for h, g in zip(host, dev):
        np.testing.assert_allclose(cupy.asnumpy(g), h, atol=1e-9)
    np.testing.assert_allclose(cupy.asnumpy(so2_pair_correlation(cupy.asarray(theta))), so2_pair_correlation(theta),
                               atol=1e-9)  # double-precision FFTs on both sides (4e-4 apart in single precision)
