"""The C6 verdict's level and power under the null: the null arms share the law of one variant's losses, the
counts add up, a null is rarely decided, a real shift is, and the seeds-needed search behaves."""

from __future__ import annotations

import numpy as np

from simulations.transformer.c6.verdict_level import (
    false_decisions,
    flat_seeds_needed,
    null_arms,
    power_curve,
    seeds_needed,
    verdict_counts,
)


def _losses(rng, seeds=3, windows=32, seed_sd=0.05, resid_sd=0.3):
    return 1.5 + rng.normal(0, resid_sd, windows) + rng.normal(0, seed_sd, (seeds, 1)) + rng.normal(0, 0.1, (seeds, windows))


def test_null_arms_share_the_window_effects():
    rng = np.random.default_rng(0)
    D = _losses(rng)
    A, B = null_arms(D, rng)
    assert A.shape == B.shape == D.shape and not np.array_equal(A, B)
    assert abs(A.mean() - D.mean()) < 0.3 and abs(B.mean() - D.mean()) < 0.3
    assert np.corrcoef(A.mean(axis=0), D.mean(axis=0))[0, 1] > 0.8  # paired windows


def test_null_arms_take_any_seeds_and_replicates():
    A, B = null_arms(_losses(np.random.default_rng(1)), np.random.default_rng(2), 5, 3, reps=7)
    assert A.shape == (7, 5, 32) and B.shape == (7, 3, 32)


def test_counts_add_up_and_intervals_cover_the_rates():
    res = false_decisions(_losses(np.random.default_rng(1)), reps=200, seed=3)
    assert res["agrees"] + res["contradicts"] + res["undecided"] == 200
    for k in ("decided", "contradicts", "agrees"):
        lo, hi = res[f"{k}_ci"]
        assert lo <= res[f"{k}_rate"] <= hi


def test_a_null_is_rarely_decided():
    """Same law in both arms: the decided rate's interval reaches down to the nominal 0.05 (small reps, fast)."""
    res = false_decisions(_losses(np.random.default_rng(4)), reps=2000, seed=5)
    assert res["decided_ci"][0] <= 0.05 and res["decided_rate"] < 0.08
    assert res["contradicts_ci"][0] <= 0.025


def test_a_real_difference_is_decided():
    """Arm A shifted up by 0.5 (a true A > B, seed sd 0.05): nearly every replicate agrees, none contradicts."""
    res = false_decisions(_losses(np.random.default_rng(2)), reps=300, seed=0, delta=0.5)
    assert res["agrees"] >= 290 and res["contradicts"] == 0


def test_power_grows_with_the_shift_and_the_seeds():
    laws = {"a": _losses(np.random.default_rng(6)), "b": _losses(np.random.default_rng(7), seed_sd=0.1)}
    p3 = power_curve(laws, reps=400, n=3, deltas=(0.0, 0.05, 0.2))
    p5 = power_curve(laws, reps=400, n=5, deltas=(0.0, 0.05, 0.2))
    a3 = [x["agrees_rate"] for x in p3.values()]
    assert a3[0] < 0.06 < a3[1] < a3[2]
    assert p5["0.05"]["agrees_rate"] > p3["0.05"]["agrees_rate"]


def test_verdict_counts_sees_the_direction():
    rng = np.random.default_rng(8)
    A, B = rng.normal(0, 0.01, (50, 4, 8)), rng.normal(0, 0.01, (50, 4, 8))
    assert verdict_counts(A - 1.0, B)["contradicts"] == 50 and verdict_counts(A + 1.0, B)["agrees"] == 50


def test_seeds_needed_is_small_for_a_clear_effect_and_large_for_a_faint_one():
    assert seeds_needed(1.0, 0.1, 0.1, reps=500)["n"] <= 3
    faint = seeds_needed(0.05, 0.1, 0.1, reps=500)["n"]
    assert faint is not None and faint > 10
    assert seeds_needed(-0.3, 0.1, 0.1, reps=500)["n"] <= seeds_needed(-0.3, 0.3, 0.3, reps=500)["n"]
    assert seeds_needed(0.0, 0.1, 0.1, reps=200, n_max=10)["n"] is None  # no effect: never powered
    assert flat_seeds_needed(0.0, 0.02, reps=500)["n"] <= 3  # far inside the band: flat at once
