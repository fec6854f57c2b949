"""Stylized attention: stable softmax, far mass, scores, the |s| ≤ λ bound, bad input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stylized.engine.attention import StylizedAttention, alibi_bias, far_mass, scores, softmax
from stylized.engine.transport_reference import route_product
from stylized.laws.families import FAMILY_NAMES, StepLaw, make_family, uniform_sphere


@dataclass(frozen=True)
class TwoReflections(StepLaw):
    """A user's law: the product of two random reflections, drawn dense (it declares nothing)."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (2, self.d))
        w = g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))
        eye = xp.eye(self.d)
        return (eye - 2 * w[..., 0, :, None] * w[..., 0, None, :]) @ (eye - 2 * w[..., 1, :, None] * w[..., 1, None, :])


def test_softmax_stable_at_huge_logits():
    x = np.array([1e4, -1e4, 0.0, 1e4 - 1.0])
    a = softmax(x)
    assert np.all(np.isfinite(a)) and a.sum() == pytest.approx(1.0)
    assert a[0] / a[3] == pytest.approx(np.e)
    assert np.allclose(softmax(np.array([-1e4, -1e4])), [0.5, 0.5])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_softmax_rejects_nan_and_inf(bad):
    with pytest.raises(ValueError, match="logits"):
        softmax(np.array([0.0, bad]))


@settings(max_examples=50, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 40), elements=st.floats(-50, 50)), D=st.integers(0, 45))
def test_far_mass_equals_sum_of_far_weights(x, D):
    assert far_mass(x, D) == pytest.approx(softmax(x)[D:].sum(), abs=1e-12)


@pytest.mark.parametrize("name,d", [(n, 6) for n in FAMILY_NAMES]
                         + [(n, d) for n in ("householder", "lazy-haar", "haar", "cayley", "user") for d in (3, 5, 13)])
def test_scores_bounded_by_lambda_and_match_dense(name, d):
    fam = TwoReflections(d) if name == "user" else make_family(name, d, p=0.5)
    rng = np.random.default_rng(3)
    L, lam = 15, 2.5
    steps = fam.rvs(L, rng)
    q = uniform_sphere(rng, (), d)
    k = uniform_sphere(rng, (L,), d)
    s = scores(fam, steps, q, k, lam, rng)
    assert np.all(np.abs(s) <= lam + 1e-12)
    if fam.pathwise:  # a Haar-step flag is applied in law, not through the dense draws
        mats = fam.dense(steps)
        want = [lam * q @ route_product(mats, j, L - 1) @ k[j] for j in range(L)]
        assert np.allclose(s, want)


def test_alibi_bias_and_bad_slope():
    assert np.allclose(alibi_bias(np.arange(4), 0.5), [0, -0.5, -1.0, -1.5])
    with pytest.raises(ValueError, match="slope"):
        alibi_bias(1, -1.0)


@pytest.mark.parametrize("lam", [-1.0, float("nan"), float("inf")])
def test_negative_or_nonfinite_lambda_rejected(lam):
    with pytest.raises(ValueError, match="λ"):
        StylizedAttention(make_family("haar", 4), lam=lam, D=2)


@pytest.mark.parametrize("law", [make_family("householder", 8), make_family("cayley", 5), TwoReflections(7)],
                         ids=["householder", "cayley", "user"])
def test_sample_far_mass_consistent(law):
    att = StylizedAttention(law, lam=3.0, D=4, alibi_m=0.1)
    out = att.sample(50, random_state=0)
    assert out.far_mass == pytest.approx(far_mass(out.logits[::-1], 4))
    assert out.weights.sum() == pytest.approx(1.0)
    assert out.output_qk.shape == out.output_qkv.shape == (law.d,)
