"""C6's seed-level verdict: Welch on per-seed means equals scipy's, a known shift is decided, a null is not,
every seed given is used, and ALiBi flat is decided from its seeds' t interval."""

from __future__ import annotations

import numpy as np
from scipy import stats

from simulations.transformer.c6.verdicts import decide, flat_interval, paper_verdicts, seed_means, welch


def _diffs(mean: float, seeds: int = 3, windows: int = 32, seed_sd: float = 0.05, sd: float = 0.2,
           seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return mean + rng.normal(0, seed_sd, (seeds, 1)) + sd * rng.standard_normal((seeds, windows))


def test_welch_equals_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.2, 0.1, 3), rng.normal(0.0, 0.3, 5)
    w, ref = welch(a, b), stats.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert np.isclose(w["p"], ref.pvalue) and np.isclose(w["df"], ref.df)
    assert np.isclose(w["ci_low"], ci.low) and np.isclose(w["ci_high"], ci.high)
    A, B = rng.normal(size=(6, 3)), rng.normal(size=(6, 4))  # replicates along the leading axis
    assert np.allclose(welch(A, B)["p"], stats.ttest_ind(A, B, axis=1, equal_var=False).pvalue)


def test_one_seed_arm_is_undecided():
    w = welch(np.array([0.5]), np.array([0.1, 0.2, 0.3]))
    assert np.isnan(w["p"]) and decide(w["delta"], w["p"]) == "undecided"
    assert all(np.isnan(x) for x in flat_interval(np.array([0.1])))


def test_a_known_shift_is_decided_both_ways_and_a_null_is_not():
    d = {"rope": _diffs(1.0, seed=1), "random-qk": _diffs(0.5, seed=2), "random-qkv": _diffs(0.5, seed=3),
         "learned-qk": _diffs(1.5, seeds=5, seed=4), "learned-qkv": _diffs(1.5, seeds=5, seed=5)}
    res = paper_verdicts(d, 128)
    rows = {r["row"].split(" (")[0]: r for r in res["rows"]}
    assert rows["rope > random-qk"]["verdict"] == "agrees" and rows["rope > random-qk"]["p"] < 0.05
    assert rows["rope > learned-qk"]["verdict"] == "contradicts"
    assert rows["random-qk > random-qkv"]["verdict"] == "undecided"
    assert rows["learned-qk > learned-qkv"]["seeds_a"] == 5 and rows["rope > learned-qkv"]["seeds_b"] == 5
    assert rows["alibi flat"]["verdict"] == "not run" and res["holds"] is False
    r = rows["rope > random-qk"]
    assert r["ci_low"] < r["delta_log"] < r["ci_high"]
    assert np.isclose(r["delta_log"], seed_means(d["rope"]).mean() - seed_means(d["random-qk"]).mean())


def test_null_rows_decided_at_about_the_level():
    """Many null rows (same law): the decided fraction is near or below 0.05."""
    decided = 0
    for k in range(400):
        d = {"rope": _diffs(0.3, seed=2 * k + 10), "random-qk": _diffs(0.3, seed=2 * k + 11)}
        decided += paper_verdicts(d, 128)["rows"][0]["verdict"] != "undecided"
    assert decided / 400 < 0.08


def test_alibi_flat_uses_every_seed():
    rows = paper_verdicts({"alibi": _diffs(0.05, seed=7)}, 128)["rows"]
    assert rows[-1]["seeds_a"] == 3 and rows[-1]["verdict"] == "agrees"
    assert 1 / 1.25 <= rows[-1]["ci_low"] <= rows[-1]["ratio_a"] <= rows[-1]["ci_high"] <= 1.25
    assert paper_verdicts({"alibi": _diffs(np.log(2.0), seed=8)}, 128)["rows"][-1]["verdict"] == "contradicts"
    one = paper_verdicts({"alibi": _diffs(0.0, seeds=1, seed=9)}, 128)["rows"][-1]
    assert one["verdict"] == "undecided"  # one seed: no seed-level interval
