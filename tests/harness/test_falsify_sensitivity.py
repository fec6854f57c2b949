"""``stylized falsify --sensitivity``: the smallest relative theory error that flips a verdict is found and bracketed.

A synthetic check measures a known value with a known tolerance, so the true threshold is known exactly:
its verdict flips once the theory is off by more than ``tol`` relative to the measured value.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from stylized.core.options import Float
from stylized.harness.falsify import sensitivity
from stylized.harness.registry import Check, Option, Theory, scaled

MEASURED = 2.0


def theory(n):
    """The synthetic theory: 2 at every ``n`` (a list in, an array out)."""
    return np.full(len(n), MEASURED)


def _run(params, *, seed, backend, progress):
    th = theory([1, 2, 3])
    ok = bool(np.all(np.abs(MEASURED - th) <= params["tol"] * MEASURED))
    return {"holds": ok, "rows": [], "headline": {}}


def _check(tol_default: float = 0.05) -> Check:
    return Check(name="synthetic-power", claim="C0", statement="measured 2 vs theory 2", module=__name__,
                 options=(Option("tol", tol_default, "relative tolerance", Float(0, 1, lo_open=True)),),
                 run=_run, backends=("numpy", "numba"), reduced={"tol": 0.02},
                 theories=(Theory("theory", "the constant 2", scaled(__name__, "theory")),))


@pytest.mark.parametrize("sizes, tol", [("reduced", 0.02), ("default", 0.05)])
def test_bracket_contains_the_true_threshold(sizes, tol):
    r = sensitivity(_check(), sizes=sizes, seeds=(0,), backend="numpy")
    assert [x["sign"] for x in r["rows"]] == [-1, 1]
    for x in r["rows"]:
        assert x["unmutated_holds"]
        # the verdict flips when |2 − 2(1 ± e)| > tol·2, i.e. e > tol: the bracket holds it
        assert x["holds_at"] <= tol < x["flips_at"]
        assert x["flips_at"] / max(x["holds_at"], 1e-9) < 2.2  # refined below the grid's ~3× spacing


def test_no_flip_within_the_grid_is_reported_as_none():
    r = sensitivity(_check(), sizes="reduced", seeds=(0,), backend="numpy", grid=(0.001, 0.01))
    assert all(x["flips_at"] is None and x["holds_at"] == 0.01 for x in r["rows"])


def test_perturbation_is_undone_after_the_run():
    with _check().theories[0].perturb(1.5):
        assert np.allclose(sys.modules[__name__].theory([1]), 3.0)
    assert np.allclose(theory([1]), MEASURED)


def test_a_one_sided_bound_is_searched_only_on_the_side_that_can_flip_it():
    base = _check()
    bound = Theory("theory as a lower bound", "", base.theories[0].perturb, sides=(+1,))
    r = sensitivity(Check(**{**base.__dict__, "theories": (bound,)}), sizes="reduced", seeds=(0,), backend="numpy")
    lower, upper = r["rows"]
    assert lower["by_construction"] and lower["flips_at"] is None and lower["holds_at"] is None
    assert not upper.get("by_construction") and upper["holds_at"] <= 0.02 < upper["flips_at"]
    assert upper["bound"]  # the searched side of a bound is its slack, not held to the power goal
    assert not sensitivity(base, sizes="reduced", seeds=(0,), backend="numpy")["rows"][0]["bound"]


def test_every_registered_check_declares_the_theories_it_names():
    from stylized.harness.registry import load_checks

    missing = [c.name for c in load_checks().values() if not c.theories]
    assert missing == []


def _run_fails_at_seed_0(params, *, seed, backend, progress):
    th = theory([1, 2, 3])
    ok = seed != 0 and bool(np.all(np.abs(MEASURED - th) <= params["tol"] * MEASURED))
    return {"holds": ok, "rows": [], "headline": {}}


def test_a_false_rejection_at_the_single_seed_falls_back_to_the_next_holding_seed():
    base = _check()
    c = Check(**{**base.__dict__, "run": _run_fails_at_seed_0})
    r = sensitivity(c, sizes="default", seeds=(0,), backend="numpy")
    for x in r["rows"]:
        assert x["unmutated_holds"] and x["seeds"] == [1] and x["holds_at"] <= 0.05 < x["flips_at"]
    none = sensitivity(c, sizes="default", seeds=(0,), backend="numpy", fallback=0)
    assert all(not x["unmutated_holds"] and x["flips_at"] is None for x in none["rows"])
    several = sensitivity(c, sizes="reduced", seeds=(0, 1), backend="numpy")  # several seeds: no fallback
    assert all(not x["unmutated_holds"] for x in several["rows"])
