"""Step families: argument validation and the window property over random dimensions.

The per-family checklist (mean, gap, window, reproducibility, one-step law, transport against the dense
oracle) is the step-law contract, item by item, in ``tests/laws/test_law_contract.py``; each family's own laws are in
``tests/laws/test_family_contract.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stylized.laws.families import (
    FAMILY_NAMES,
    TokenAngles,
    make_family,
    rope_frequencies,
)


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
    from stylized.laws.families import FAMILY_ARG_RANGES, validate_family_args

    assert validate_family_args("householder", np.int64(5)) == 5
    with pytest.raises(ValueError, match="unknown step-family argument 'gamma'"):
        validate_family_args("householder", 5, gamma=0.1)
    assert set(FAMILY_ARG_RANGES) >= {"d", "omega", "sigma", "mu", "p", "base"}
