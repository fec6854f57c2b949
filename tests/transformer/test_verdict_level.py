"""The C6 verdict's level under the null: the null arms share the law of one variant's losses, the counts add
up, and a real difference between the arms is detected (the measurement can tell a null from a shift)."""

from __future__ import annotations

import numpy as np

from simulations.transformer.verdict_level import false_decisions, null_arms


def _losses(rng, seeds=3, windows=32, seed_sd=0.05, resid_sd=0.3):
    return 1.5 + rng.normal(0, resid_sd, windows) + rng.normal(0, seed_sd, (seeds, 1)) + rng.normal(0, 0.1, (seeds, windows))


def test_null_arms_share_the_window_effects():
    rng = np.random.default_rng(0)
    D = _losses(rng)
    A, B = null_arms(D, rng)
    assert A.shape == B.shape == D.shape and not np.array_equal(A, B)
    assert abs(A.mean() - D.mean()) < 0.3 and abs(B.mean() - D.mean()) < 0.3
    assert np.corrcoef(A.mean(axis=0), D.mean(axis=0))[0, 1] > 0.8  # paired windows


def test_counts_add_up_and_intervals_cover_the_rates():
    res = false_decisions(_losses(np.random.default_rng(1)), reps=40, seed=3, n_boot=500)
    assert res["agrees"] + res["contradicts"] + res["undecided"] == 40
    for k in ("decided", "contradicts"):
        lo, hi = res[f"{k}_ci"]
        assert lo <= res[f"{k}_rate"] <= hi


def test_a_real_difference_is_decided(monkeypatch):
    """Mutant of the null: arm A shifted up by 0.5 (a true A > B): nearly every replicate agrees."""
    import simulations.transformer.verdict_level as vl

    real = vl.null_arms
    monkeypatch.setattr(vl, "null_arms", lambda D, rng: (lambda a, b: (a + 0.5, b))(*real(D, rng)))
    res = vl.false_decisions(_losses(np.random.default_rng(2)), reps=30, seed=0, n_boot=500)
    assert res["agrees"] >= 28
