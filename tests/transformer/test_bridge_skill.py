"""The bridge's skill against its null forecasts: exact on constructed curves, honest about which null it beats."""

from __future__ import annotations

import math

import pytest

from simulations.transformer.bridge_skill import skill_table

MULT = [1, 2, 4, 8]


def _row(variant, measured, predicted):
    return {"variant": variant, "multiples": MULT, "measured": measured, "predicted": predicted}


def test_a_perfect_forecast_has_skill_one_and_the_flat_null_skill_zero():
    rope = [1.0, 2.0, 4.0, 8.0]
    other = [1.0, 1.5, 2.0, 2.5]
    t = skill_table([_row("rope", rope, rope), _row("x", other, other)], n_boot=200)
    assert t["pooled"]["flat"]["skill"] == pytest.approx(1.0) and t["positive_skill"]
    flat = skill_table([_row("rope", rope, [1.0] * 4), _row("x", other, [1.0] * 4)], n_boot=200)
    assert flat["pooled"]["flat"]["skill"] == pytest.approx(0.0) and not flat["positive_skill"]


def test_per_variant_skill_is_one_minus_the_error_ratio_and_rope_is_left_out_of_like_rope():
    rope = [1.0, 2.0, 4.0, 8.0]
    meas, pred = [1.0, 2.0, 2.0, 2.0], [1.0, 2.0, 2.0, 4.0]
    t = skill_table([_row("rope", rope, rope), _row("x", meas, pred)], n_boot=200)
    x = next(v for v in t["variants"] if v["variant"] == "x")
    e = math.log(2) / 3  # one of three multiples off by a factor 2
    assert x["error"] == pytest.approx(e) and x["error_flat"] == pytest.approx(math.log(2))
    assert x["skill_flat"] == pytest.approx(1 - e / math.log(2))
    assert x["error_like-rope"] == pytest.approx((0 + math.log(2) + math.log(4)) / 3)
    assert t["pooled"]["like-rope"]["n_variants"] == 1 and t["pooled"]["flat"]["n_variants"] == 2


def test_bad_rows_are_refused():
    with pytest.raises(ValueError, match="positive"):
        skill_table([_row("x", [1.0, 0.0, 1.0, 1.0], [1.0] * 4)])
    with pytest.raises(ValueError, match="no forecast rows"):
        skill_table([])


def test_without_a_rope_row_only_the_flat_null_is_judged():
    other = [1.0, 1.5, 2.0, 2.5]
    t = skill_table([_row("x", other, other), _row("y", other, other)], n_boot=100)
    assert list(t["pooled"]) == ["flat"] and t["positive_skill"]
