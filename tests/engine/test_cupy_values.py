"""C5 value checks on the CuPy path, run here with NumPy standing in for CuPy (``cupy_standin``).

The CuPy path is the same array-namespace code as the NumPy path with a device Generator seeded
from the caller's; so it is tested three ways: every check completes with the same verdict, its
samples agree with the NumPy backend's in distribution (different streams), and on identical
draws it gives the NumPy path's numbers.  ``needs_gpu`` tests repeat this on real CuPy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simulations.value.incoherence  # noqa: F401  (registers the checks)
from stylized.core.backend import cupy_available, xp_generator
from stylized.core.step_ops import gram_schmidt, orthogonal_dense
from stylized.engine.values import (
    chunk_size,
    draw_route_steps,
    far_energy_samples,
    snr_samples,
)
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.families import SO2Normal, TokenAngles, make_family
from stylized.theory.value_theory import quadratic_form
from tests._shared import needs_gpu, samples_agree

# small parameters at which the numpy backend holds (checked in the test itself)
SMALL = {
    "value-incoherence": dict(family="so2-uniform", d=8, M=[1, 4, 16, 64], D=4, trials=400),
    "value-scaling": dict(family="so2-uniform", d=8, M=[16, 64, 256], D=4, trials=300),
    "value-snr": dict(family="so2-uniform", d=8, omega=0.5, L=[16, 128, 1024, 4096], K=2, lam=5.0, trials=40),
    "value-noncommutative": dict(d=8, M=[4, 16, 64], D=4, trials=100),
    "value-independent-stream": dict(d=8, M=[4, 16, 64], D=4, trials=200),
}


def _fam(name: str, d: int = 8):
    if name == "so2-normal":
        return SO2Normal(d=d, sigma=0.7, mu=0.4)
    if name == "token":
        table = np.random.default_rng(0).uniform(-1.0, 1.0, (5, d // 2))
        return TokenAngles(d=d, table=table, probs=np.array([0.1, 0.2, 0.3, 0.15, 0.25]))
    return make_family(name, d, **({"base": 100.0} if name == "rope-random" else {}))


def _assert_same_law(a: dict, b: dict, keys) -> None:
    for k in keys:
        assert samples_agree(a[k], b[k]), k


# ---------------------------------------------------------------------------------------
# the five checks end to end
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SMALL))
def test_check_runs_on_the_cupy_path(name, cupy_standin):
    check = get_check(name)
    assert "cupy" in check.backends
    ref = run_check(check, SMALL[name], seed=0, backend="numpy", progress=False)
    got = run_check(check, SMALL[name], seed=0, backend="cupy", progress=False)
    assert ref["holds"] and got["holds"]
    assert got["params"]["backend"] == "cupy"
    json.dumps(got)  # host values only
    assert [(r.get("variant"), r.get("M"), r.get("L")) for r in got["rows"]] == \
           [(r.get("variant"), r.get("M"), r.get("L")) for r in ref["rows"]]
    assert all(isinstance(r["estimate"], float) and r["n_samples"] == ref["rows"][i]["n_samples"]
               for i, r in enumerate(got["rows"]))


def test_cupy_without_a_gpu_is_a_clear_error():
    if cupy_available():
        pytest.skip("a GPU is available")
    with pytest.raises(ValueError, match="GPU"):
        run_check(get_check("value-incoherence"), SMALL["value-incoherence"], seed=0, backend="cupy", progress=False)


# ---------------------------------------------------------------------------------------
# in distribution: the device stream against NumPy's
# ---------------------------------------------------------------------------------------
LAW_CASES = [
    ("so2-uniform", "equal", 0.0, 0.3, False),
    ("so2-normal", "softmax", 0.0, 0.0, False),
    ("rope-random", "softmax", 1.0, 0.0, False),
    ("householder", "softmax", 0.0, 0.2, False),
    ("lazy-haar", "equal", 0.0, 0.0, False),
    ("haar", "equal", 0.0, 0.3, False),
    ("haar", "softmax", 1.0, 0.0, True),
    ("cayley", "softmax", 0.0, 0.2, False),
]


@pytest.mark.parametrize("name,weights,key_align,noise,dense", LAW_CASES)
def test_far_energy_agrees_in_law_with_numpy(name, weights, key_align, noise, dense, cupy_standin):
    fam = _fam(name)
    kw = dict(weights=weights, lam=3.0, key_align=key_align, noise=noise, independent=True, dense_haar=dense)
    n = 300 if dense or name in ("householder", "cayley") else 1500
    a = far_energy_samples(fam, 12, 3, n, np.random.default_rng(1), backend="cupy", **kw)
    b = far_energy_samples(fam, 12, 3, n, np.random.default_rng(2), backend="numpy", **kw)
    assert all(isinstance(v, np.ndarray) and v.shape == (n,) for v in a.values())
    assert not np.array_equal(a["qkv"], b["qkv"])  # really another stream
    _assert_same_law(a, b, ("qk", "qkv", "qkv-indep", "plugin"))


@pytest.mark.parametrize("name", ["so2-uniform", "householder", "lazy-haar"])
def test_snr_agrees_in_law_with_numpy(name, cupy_standin):
    fam = _fam(name)
    q = np.full(8, 1 / np.sqrt(8))
    b = np.where(np.arange(8) % 4 < 2, 1.0, -1.0) / np.sqrt(8)
    kw = dict(lam=4.0, key_align=0.3, noise=0.2, q=q, t=q, b=b)
    a = snr_samples(fam, 40, 3, 600, np.random.default_rng(1), backend="cupy", **kw)
    c = snr_samples(fam, 40, 3, 600, np.random.default_rng(2), backend="numpy", **kw)
    _assert_same_law(a, c, ("rho", "signal_qk", "signal_qkv", "interf_qk", "interf_qkv", "overlap"))


# ---------------------------------------------------------------------------------------
# identical draws: the cupy path is the numpy path with another Generator
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,weights,key_align,dense", [
    ("so2-uniform", "softmax", 0.5, False), ("so2-normal", "equal", 0.0, False), ("token", "softmax", 1.0, False),
    ("householder", "softmax", 0.5, False), ("lazy-haar", "equal", 0.0, False), ("haar", "equal", 0.0, False),
    ("haar", "softmax", 1.0, True), ("lazy-haar", "softmax", 0.0, True), ("cayley", "softmax", 0.5, False)])
def test_cupy_path_equals_numpy_path_on_identical_draws(name, weights, key_align, dense, cupy_standin):
    # The cupy path runs on xp_generator("cupy", rng); handing that same Generator to the numpy path must give the
    # same numbers (dense Haar steps: Gram–Schmidt on a real device, LAPACK QR here: equal to rounding).
    fam = _fam(name)
    kw = dict(weights=weights, lam=3.0, key_align=key_align, noise=0.2, independent=True, dense_haar=dense)
    a = far_energy_samples(fam, 9, 3, 40, np.random.default_rng(3), backend="cupy", **kw)
    b = far_energy_samples(fam, 9, 3, 40, xp_generator("cupy", np.random.default_rng(3)), backend="numpy", **kw)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("name", ["rope-random", "householder", "lazy-haar"])
def test_snr_cupy_path_equals_numpy_path_on_identical_draws(name, cupy_standin):
    fam = _fam(name)
    q, b = np.eye(8)[0], np.eye(8)[3]
    kw = dict(lam=4.0, key_align=0.3, noise=0.2, q=q, t=q, b=b)
    a = snr_samples(fam, 25, 3, 6, np.random.default_rng(4), backend="cupy", **kw)
    c = snr_samples(fam, 25, 3, 6, xp_generator("cupy", np.random.default_rng(4)), backend="numpy", **kw)
    for k in a:
        np.testing.assert_allclose(a[k], c[k], rtol=1e-9, atol=1e-12, err_msg=k)


@settings(deadline=None, max_examples=25)
@given(d=st.integers(2, 12), seed=st.integers(0, 2**32 - 1))
def test_gram_schmidt_is_mezzadris_q(d, seed):
    """Identical Gaussians: CGS2 equals Q·sign(diag R) of LAPACK's QR, and it is orthogonal."""
    g = np.random.default_rng(seed).standard_normal((20, d, d))
    q, r = np.linalg.qr(g)
    ref = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    got = gram_schmidt(g)
    np.testing.assert_allclose(got @ np.swapaxes(got, -1, -2), np.broadcast_to(np.eye(d), g.shape), atol=1e-12)
    np.testing.assert_allclose(got, ref, atol=1e-9)
    assert np.array_equal(orthogonal_dense(np.random.default_rng(seed), (20,), d), ref)


def test_chunks_are_larger_on_the_cupy_path():
    fam = make_family("so2-uniform", 64)
    assert chunk_size(fam, 1040) == 31 and chunk_size(fam, 1040, backend="numpy") == 31
    assert chunk_size(fam, 1040, backend="cupy") == 63
    assert chunk_size(fam, 20, backend="cupy") == 3276 and chunk_size(fam, 20) == 256
    assert chunk_size(make_family("haar", 16), 272, dense=True, backend="cupy") == 60


# ---------------------------------------------------------------------------------------
# real CuPy
# ---------------------------------------------------------------------------------------
@needs_gpu
def test_cupy_check_on_gpu():
    # all four step families, all three weight modes, on the device; results are host values
    r = run_check(get_check("value-noncommutative"), SMALL["value-noncommutative"], seed=0, backend="cupy",
                  progress=False)
    assert r["holds"] and r["params"]["backend"] == "cupy"
    json.dumps(r)
    assert all(isinstance(row["estimate"], float) for row in r["rows"])


@needs_gpu
def test_cupy_engine_identical_inputs_on_gpu():
    # same inputs on host and device: the namespace-generic engine agrees to float64 rounding
    import cupy

    rng = np.random.default_rng(0)
    a, w, z = rng.random((4, 9)), rng.random(3), rng.uniform(-1, 1, 3) * np.exp(1j * rng.uniform(-3, 3, 3))
    np.testing.assert_allclose(cupy.asnumpy(quadratic_form(cupy.asarray(a), w, z)), quadratic_form(a, w, z), rtol=1e-12)
    g = rng.standard_normal((30, 8, 8))
    np.testing.assert_allclose(cupy.asnumpy(gram_schmidt(cupy.asarray(g))), gram_schmidt(g), atol=1e-12)
    for name in ("so2-uniform", "householder", "haar"):
        fam = make_family(name, 8)
        steps = draw_route_steps(fam, 5, 7, np.random.default_rng(1))
        q, keys, wt = rng.standard_normal(8), rng.standard_normal((5, 7, 8)), rng.random((5, 7))
        dev = [cupy.asarray(x) for x in (steps, q, keys, wt)]
        np.testing.assert_allclose(cupy.asnumpy(fam.route_scores(dev[0], dev[1], dev[2])),
                                   fam.route_scores(steps, q, keys), atol=1e-12)
        np.testing.assert_allclose(cupy.asnumpy(fam.route_sum(dev[0], dev[3], dev[2])),
                                   fam.route_sum(steps, wt, keys), atol=1e-12)
