"""Step families: exact means against Monte Carlo, orthogonality, gaps, windows, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.families import (
    FAMILY_NAMES,
    Householder,
    SO2Normal,
    SO2Uniform,
    TokenAngles,
    make_family,
    rope_frequencies,
)

ALL = [
    ("so2-uniform", dict(omega=0.7)),
    ("so2-normal", dict(sigma=0.8)),
    ("rope-random", dict(base=100.0)),
    ("householder", {}),
    ("lazy-haar", dict(p=0.3)),
    ("haar", {}),
]


@pytest.mark.parametrize("name,kw", ALL)
def test_exact_mean_matches_monte_carlo(name, kw):
    """E[M] entrywise inside a 99.99% Student interval of the sample mean of dense draws.

    Seed fixed; the tolerance is each entry's interval half-width (Bonferroni over the d² entries
    would be wider still, so this is the stricter test).
    """
    fam = make_family(name, 6, **kw)
    rng = np.random.default_rng(1)
    n = 20000
    mats = fam.dense(fam.rvs(n, rng), rng)
    mean = mats.mean(axis=0)
    se = mats.std(axis=0, ddof=1) / math.sqrt(n)
    z = 4.5  # ≈ two-sided 1e-5 per entry → family-wise < 5e-4 over 36 entries
    assert np.all(np.abs(mean - fam.mean()) <= z * se + 1e-12), name


@pytest.mark.parametrize("name,kw", ALL)
def test_samples_are_orthogonal(name, kw):
    fam = make_family(name, 8, **kw)
    rng = np.random.default_rng(2)
    mats = fam.dense(fam.rvs(50, rng), rng)
    eye = np.eye(8)
    assert np.allclose(np.einsum("nij,nkj->nik", mats, mats), eye, atol=1e-10)


def test_closed_form_gaps():
    assert SO2Uniform(d=4, omega=1.0).spectral_gap == pytest.approx(1 - math.sin(1.0))
    assert SO2Normal(d=4, sigma=1.0).spectral_gap == pytest.approx(1 - math.exp(-0.5))
    assert Householder(d=16).spectral_gap == pytest.approx(2 / 16)
    assert make_family("lazy-haar", 5, p=0.25).spectral_gap == pytest.approx(0.25)
    assert make_family("haar", 5).spectral_gap == pytest.approx(1.0)
    om = rope_frequencies(8, 10000.0)
    assert make_family("rope-random", 8).spectral_gap == pytest.approx(1 - np.sinc(om[-1] / np.pi))


def test_normal_mean_has_rotation_part():
    fam = SO2Normal(d=2, sigma=0.5, mu=0.3)
    c = math.exp(-0.125)
    assert np.allclose(fam.mean(), c * np.array([[math.cos(0.3), -math.sin(0.3)], [math.sin(0.3), math.cos(0.3)]]))


def test_mean_power_equals_matrix_power():
    fam = SO2Normal(d=6, sigma=(0.3, 0.6, 0.9), mu=(0.1, 0.2, 0.3))
    assert np.allclose(fam.mean_power(7), np.linalg.matrix_power(fam.mean(), 7))


def test_mixing_window_definition():
    fam = Householder(d=16)
    W = fam.mixing_window(0.01)
    g = fam.spectral_gap
    assert (1 - g) ** W <= 0.01 < (1 - g) ** (W - 1)
    assert make_family("haar", 4).mixing_window(0.01) == 1


def test_plane_windows_of_rope_span_scales():
    fam = make_family("rope-random", 64)
    W = fam.plane_windows(0.01)
    assert W[0] < 100 and W[-1] > 1e8 and np.all(np.diff(W) >= 0)


def test_token_family_mean():
    table = np.array([[0.0, 1.0], [0.5, -1.0], [2.0, 0.2]])
    probs = np.array([0.5, 0.3, 0.2])
    fam = TokenAngles(d=4, table=table, probs=probs)
    assert np.allclose(fam.chi(), probs @ np.exp(1j * table))
    x, theta = fam.rvs_tokens(10, 0)
    assert np.allclose(theta, table[x])


def test_reproducible_from_seed_and_generator():
    fam = make_family("householder", 8)
    assert np.array_equal(fam.rvs(5, 3), fam.rvs(5, 3))
    assert np.array_equal(fam.rvs(5, np.random.default_rng(3)), fam.rvs(5, 3))


@pytest.mark.parametrize(
    "call,word",
    [
        (lambda: make_family("so2-uniform", 7), "d must be even"),
        (lambda: make_family("so2-uniform", 8, omega=4.0), "omega"),
        (lambda: make_family("so2-normal", 8, sigma=-1.0), "sigma"),
        (lambda: make_family("lazy-haar", 8, p=0.0), "p must lie in (0, 1]"),
        (lambda: make_family("lazy-haar", 8, p=1.5), "p must lie in (0, 1]"),
        (lambda: make_family("nope", 8), "family must be one of"),
        (lambda: make_family("householder", 0), "d must be"),
        (lambda: make_family("householder", 8).mixing_window(1.5), "eps"),
        (lambda: TokenAngles(d=4, table=np.zeros((3, 2)), probs=np.array([0.5, 0.5, 0.5])), "probs"),
    ],
)
def test_bad_input_names_the_parameter(call, word):
    with pytest.raises(ValueError, match=word.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        call()


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(FAMILY_NAMES), half_d=st.integers(1, 6), eps=st.floats(1e-6, 0.5))
def test_mixing_window_bounds_the_mean_power(name, half_d, eps):
    """For every family, ||E[M]^W||_op ≤ ε at W = W(ε) (the window is sufficient)."""
    fam = make_family(name, 2 * half_d, p=0.4, base=50.0)
    W = fam.mixing_window(eps)
    if math.isinf(W):
        return
    assert np.linalg.norm(fam.mean_power(int(W)), 2) <= eps * (1 + 1e-9)


# -- one contract for every family: closed-form gap, mean powers, overlaps, validation ----------------
CONTRACT = ALL + [("so2-normal", dict(sigma=(0.3, 0.6, 0.9), mu=(0.1, -0.4, 2.0)))]


class TestFamilyContract:
    """Every family: its closed-form γ equals the dense oracle ``1 − ||E[M]||_op``; ``E[M]ⁿ`` and ``qᵀE[M]ⁿq``
    equal dense matrix powers; the window bounds the mean power; bad arguments name their range."""

    @pytest.mark.parametrize("name,kw", CONTRACT)
    def test_closed_form_gap_equals_dense_svd(self, name, kw):
        from stylized.families import StepFamily

        fam = make_family(name, 6, **kw) if name != "so2-normal" else SO2Normal(d=6, **kw)
        dense = StepFamily.spectral_gap.fget(fam)  # the base class: 1 − ||E[M]||_op by SVD
        assert fam.spectral_gap == pytest.approx(dense, abs=1e-12)

    @pytest.mark.parametrize("name,kw", CONTRACT)
    def test_mean_power_and_overlap_equal_dense_powers(self, name, kw):
        fam = make_family(name, 6, **kw) if name != "so2-normal" else SO2Normal(d=6, **kw)
        q = np.random.default_rng(3).standard_normal(6)
        for n in (0, 1, 2, 9):
            dense = np.linalg.matrix_power(fam.mean(), n)
            assert np.allclose(fam.mean_power(n), dense, atol=1e-13)
            assert fam.mean_overlap(q, n) == pytest.approx(q @ dense @ q, rel=1e-12, abs=1e-13)
        assert np.allclose(fam.mean_overlap(q, np.array([0, 1, 2, 9])),
                           [q @ np.linalg.matrix_power(fam.mean(), n) @ q for n in (0, 1, 2, 9)], atol=1e-13)

    @pytest.mark.parametrize("name", ["householder", "lazy-haar", "haar", "so2-uniform", "rope-random"])
    def test_gap_is_closed_form_and_fast_at_large_d(self, name):
        import time

        t0 = time.perf_counter()
        g = make_family(name, 2048, p=0.3).spectral_gap
        assert time.perf_counter() - t0 < 0.5  # no dense SVD (it took 2.4 s for householder)
        expected = {"householder": 2 / 2048, "lazy-haar": 0.3, "haar": 1.0}
        if name in expected:
            assert g == expected[name]

    @pytest.mark.parametrize("d", [2, 3, 4, 7, 33])
    def test_accepts_every_d_it_should(self, d):
        for name in FAMILY_NAMES:
            if d % 2 and name in ("so2-uniform", "so2-normal", "rope-random"):
                with pytest.raises(ValueError, match="d must be even"):
                    make_family(name, d)
            else:
                assert make_family(name, d).d == d


@pytest.mark.parametrize(
    "call,word",
    [
        (lambda: make_family("", 8), "family must be one of"),
        (lambda: make_family(None, 8), "family must be one of"),
        (lambda: make_family("householder", 1), r"d must be an integer ≥ 2"),
        (lambda: make_family("haar", 2.0), r"d must be an integer ≥ 2"),
        (lambda: make_family("householder", True), r"d must be an integer ≥ 2"),
        (lambda: make_family("so2-uniform", 8, omega=0.0), r"omega must lie in \(0, π\]"),
        (lambda: make_family("so2-uniform", 8, omega=[1.0, 2.0]), r"omega must be one number or d/2 = 4"),
        (lambda: make_family("so2-uniform", 8, omega="x"), "omega"),
        (lambda: make_family("so2-normal", 8, sigma=float("nan")), r"sigma must lie in \(0, ∞\)"),
        (lambda: make_family("so2-normal", 8, mu=float("inf")), "mu must lie in finite"),
        (lambda: make_family("lazy-haar", 8, p=None), r"p must be a number in \(0, 1\]"),
        (lambda: make_family("lazy-haar", 8, p=float("nan")), r"p must lie in \(0, 1\]"),
        (lambda: make_family("rope-random", 8, base=1.0), r"base must lie in \(1, ∞\)"),
        (lambda: rope_frequencies(8, base=float("inf")), r"base must lie in \(1, ∞\)"),
        (lambda: TokenAngles(d=4, table=np.zeros((3, 3))), r"table must have shape \(V, d/2\)"),
        (lambda: TokenAngles(d=4, table=np.full((3, 2), np.inf)), "table must lie in finite angles"),
    ],
)
def test_validation_names_argument_and_range(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def test_validation_lives_in_one_place():
    from stylized.families import FAMILY_ARG_RANGES, validate_family_args

    assert validate_family_args("householder", np.int64(5)) == 5
    with pytest.raises(ValueError, match="unknown step-family argument 'gamma'"):
        validate_family_args("householder", 5, gamma=0.1)
    assert set(FAMILY_ARG_RANGES) >= {"d", "omega", "sigma", "mu", "p", "base"}
