"""Far-mass controls as objects (:mod:`stylized.laws.controls`): the engine and the theory ask a control, never
its name, so a user's control runs through both; the registry order is the draw order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stylized.engine.farmass import CONTROLS, growth_trials
from stylized.laws.controls import GROWTH_CONTROLS, Alibi, GrowthControl, growth_control, register_control
from stylized.laws.families import make_family
from stylized.theory.growth import GrowthModel, control_factor, control_lambda, predict_growth

MODEL = GrowthModel(make_family("householder", 8), lam=3.0, D=4, m=0.25, L_train=64, gate=2.0)
LS = np.array([16, 64, 400])


def test_registry_order_is_the_engine_controls_and_names_are_checked():
    assert CONTROLS == tuple(GROWTH_CONTROLS) == ("none", "alibi", "log-scaling", "forget-gate", "contraction")
    assert [c for c in GROWTH_CONTROLS if GROWTH_CONTROLS[c].predicted] == ["none", "alibi", "log-scaling",
                                                                            "forget-gate"]
    with pytest.raises(ValueError, match="control must be one of none, alibi"):
        growth_control("fox")
    with pytest.raises(TypeError):
        register_control("alibi")


def test_theory_hooks_are_the_controls_own():
    assert control_factor(MODEL, "none") is None and control_factor(MODEL, "alibi") == math.exp(-0.25)
    assert 0 < control_factor(MODEL, "forget-gate") < 1
    assert control_lambda(MODEL, "log-scaling", 4096) == pytest.approx(3.0 * 2.0)
    assert control_lambda(MODEL, "alibi", 4096) == 3.0
    np.testing.assert_allclose(growth_control("log-scaling").logit_scales(MODEL, LS), np.log(LS) / math.log(64))


class HalfAlibi(Alibi):
    """A user's control: ALiBi at half the model's slope."""

    name = "half-alibi"

    def weight_factor(self, model):
        return math.exp(-model.m / 2)

    def literal_logits(self, route):
        return route.s - route.model.m / 2 * route.n, None

    def near_logits_xp(self, model, s_near, xrng, xp):
        return s_near - model.m / 2 * xp.arange(s_near.shape[1], dtype=xp.float64), None

    def chunk_logits(self, model, base, offsets, xrng, state, xp):
        return base - model.m / 2 * offsets, state


@pytest.fixture
def half_alibi():
    ctl = register_control(HalfAlibi())
    yield ctl
    del GROWTH_CONTROLS[ctl.name]


def test_a_users_control_runs_through_engine_and_theory(half_alibi):
    """Simulated and predicted far mass of the user's control sit between ALiBi's and no control's, and the
    prediction is the same closed form ALiBi gets with the slope halved."""
    controls = ("none", "alibi", "half-alibi")
    trials = growth_trials(MODEL, LS, 400, 64, np.random.default_rng(0), "numpy", controls)
    mean = {c: np.mean([t["rho"][c] for t in trials], axis=0) for c in controls}
    assert np.all(mean["alibi"][1:] < mean["half-alibi"][1:]) and np.all(mean["half-alibi"][1:] < mean["none"][1:])
    pred = predict_growth(MODEL, LS, list(controls))
    halved = predict_growth(GrowthModel(MODEL.family, MODEL.lam, MODEL.D, m=MODEL.m / 2), LS, ["alibi"])
    np.testing.assert_array_equal(pred["half-alibi"][0], halved["alibi"][0])
    assert pred["half-alibi"][1] == pred["alibi"][1]
    from stylized.engine.farmass import _growth_trials_xp  # the array-namespace path (CuPy's), here on NumPy

    xp_trials = _growth_trials_xp(MODEL, LS, 8, np.random.default_rng(0), "numpy", controls)
    assert all(np.all(np.isfinite(t["rho"]["half-alibi"])) for t in xp_trials)


def test_the_base_class_is_no_control():
    base = GrowthControl()
    s = np.arange(5.0)
    assert base.weight_factor(MODEL) is None and base.lam_at(MODEL, 10) == MODEL.lam
    assert base.chunk_logits(MODEL, s, s, None, 1.5, np)[0] is s
