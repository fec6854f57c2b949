"""The bridge's skill against its null forecasts: exact on constructed curves, honest about which null it beats."""

from __future__ import annotations

import math

import pytest

from simulations.transformer.bridge.skill import skill_table

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


def test_without_a_rope_row_the_like_rope_null_is_not_judged():
    other, second = [1.0, 1.5, 2.0, 2.5], [1.0, 1.2, 1.4, 1.6]
    t = skill_table([_row("x", other, other), _row("y", second, second)], n_boot=100)
    assert list(t["pooled"]) == ["flat", "others-median"] and t["positive_skill"]


def test_the_same_information_null_is_the_median_of_the_other_variants():
    curves = {"a": [1.0, 2.0, 2.0, 2.0], "b": [1.0, 4.0, 4.0, 4.0], "c": [1.0, 8.0, 8.0, 8.0]}
    t = skill_table([_row(v, c, c) for v, c in curves.items()], n_boot=100)
    a = next(v for v in t["variants"] if v["variant"] == "a")
    assert a["error_others-median"] == pytest.approx(math.log(6.0 / 2.0))  # median of 4 and 8 is 6
    # a forecast that is the others' median itself has no skill against that null (the mutant the null catches)
    med = skill_table([_row("a", curves["a"], [1.0, 6.0, 6.0, 6.0]), _row("b", curves["b"], [1.0, 5.0, 5.0, 5.0]),
                       _row("c", curves["c"], [1.0, 3.0, 3.0, 3.0])], n_boot=200)
    assert med["pooled"]["others-median"]["skill"] == pytest.approx(0.0) and not med["positive_skill"]
