"""The far-mass checks (C3 transfer, C4) end to end at small parameters: run_check, figures, the CLI with --json, any law."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar
from unittest import mock

import numpy as np
import pytest

from stylized.harness.falsify import run_reduced
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.families import StepLaw, make_family
from stylized.theory.bounds import far_mass_lower_bound

SMALL_GROWTH = {"d": 16, "lam": 5.0, "D": 4, "L": [64, 256, 1024, 4096], "L_sim": 1024, "trials": 6,
                "horizon_lam": [3.0, 5.0], "horizon_trials": 20}


def test_far_mass_bound_small(tmp_results):
    check = get_check("far-mass-bound")
    r = run_check(check, {"K": 4, "M": 5000, "lam": 2.0, "trials": 5, "adversarial": 12}, seed=1, progress=False)
    assert r["holds"] is True
    bound = far_mass_lower_bound(4, 5000, 2.0)
    row, corner, adv = r["rows"][0], r["rows"][1], r["rows"][2:]
    # the bound is a bound (its own column), the corner's value a closed form (equal to the bound: tightness)
    assert row["theory"] is None and row["bound"] == pytest.approx(bound) and "lower bound" in row["bound_kind"]
    assert row["estimate"] >= row["bound"]
    assert corner["theory_kind"] == "closed form" and corner["estimate"] == pytest.approx(corner["theory"], rel=1e-12)
    assert r["headline"]["theory"] is None and r["headline"]["bound"] == pytest.approx(bound)
    gaps = [x["gap"] for x in adv]
    # 11 halvings of δ: the gap (∝ δ for small δ) must shrink by ≥ 100× (ideal ≈ 2048×)
    assert min(gaps) >= 0 and gaps[-1] < 1e-2 * gaps[0]
    paths = check.plot(r, tmp_results / "figures")
    assert all(p.exists() for p in paths)


def test_far_mass_bound_numpy_backend_matches(tmp_results):
    check = get_check("far-mass-bound")
    params = {"K": 3, "M": 3000, "lam": 1.5, "trials": 3, "adversarial": 4}
    a = run_check(check, params, seed=2, backend="numba", progress=False)
    b = run_check(check, params, seed=2, backend="numpy", progress=False)
    assert a["rows"][0]["estimate"] == pytest.approx(b["rows"][0]["estimate"], rel=1e-12)


def test_far_mass_growth_small(tmp_results):
    check = get_check("far-mass-growth")
    r = run_check(check, SMALL_GROWTH, seed=0, progress=False)
    assert r["holds"] is True
    rows = {(x["control"], x["L"]): x for x in r["rows"] if "L" in x}
    none = [rows[("none", L)]["estimate"] for L in SMALL_GROWTH["L"]]
    assert none == sorted(none)  # grows with L
    for L in SMALL_GROWTH["L"]:
        assert rows[("none", L)]["trial_min"] >= rows[("none", L)]["bound"]  # bounds in the bound column
        assert rows[("alibi", L)]["trial_max"] <= rows[("alibi", L)]["bound"]
        assert rows[("none", L)]["theory_kind"] == "closed form" and rows[("forget-gate", L)]["theory_kind"] == "approximation"
        assert rows[("contraction", L)]["theory"] is None and not rows[("contraction", L)]["in_verdict"]
        for c in ("none", "alibi", "log-scaling", "forget-gate"):  # predictions inside the joint intervals
            x = rows[(c, L)]
            assert x["agrees"] and x["ci_joint_low"] <= x["ci_low"] <= x["ci_high"] <= x["ci_joint_high"]
    assert r["violations"]["none"] == 0 and r["violations"]["alibi"] == 0
    assert all(b["ok"] for b in r["bounded"].values() if b["tested"])
    hz = [x for x in r["rows"] if x.get("quantity") == "L_1/2"]
    assert len(hz) == 2 and all(h["agrees"] and h["theory_kind"] == "exact interval" for h in hz)
    assert all(h["theory_ci"][0] < h["theory"] < h["theory_ci"][1] for h in hz)
    given = [x for x in r["rows"] if x.get("quantity") == "L* − L̂(Z_N)"]
    assert len(given) == 2 and all(g["agrees"] and g["theory_ci"][0] < 0 < g["theory_ci"][1] for g in given)
    # given each query's near sum the interval is narrower than the unconditional one
    assert all(g["ci_high"] - g["ci_low"] < h["ci_high"] - h["ci_low"] for g, h in zip(given, hz))
    assert r["headline"]["theory_kind"] == "closed form"
    paths = check.plot(r, tmp_results / "figures")
    assert len(paths) == 3 and all(p.exists() for p in paths)


@pytest.mark.parametrize("name,mutant", [("far-mass-growth", "near-untransported"), ("far-mass-growth", "alibi-removed"),
                                         ("transfer", "far-mgf-3pct"), ("far-mass-bound", "exponent-lambda")])
def test_a_mutant_flips_its_check(name, mutant, check_runs):
    """One theory or model mutant per check, at the reduced sizes (the full table: tests/harness/test_mutants.py)."""
    assert check_runs.reduced(name, seed=1)["holds"] is True
    assert check_runs.reduced(name, seed=1, mutant=mutant)["holds"] is False


def test_transfer_predicts_the_normaliser_not_the_pattern():
    r = run_check(get_check("transfer"), {"L": [256, 4096], "trials": 200}, seed=3, progress=False)
    assert r["holds"] is True
    q = {(x["L"], x["quantity"]): x for x in r["rows"]}
    # the absolute target weight falls with L as predicted; the renormalised one has one L-free prediction
    assert q[(4096, "near_target_absolute")]["theory"] < 0.2 * q[(256, "near_target_absolute")]["theory"]
    assert q[(256, "near_target")]["theory"] == q[(4096, "near_target")]["theory"]
    assert all(x["in_verdict"] == (x["theory"] is not None) for x in r["rows"])
    assert {x["theory_kind"] for x in r["rows"] if x["theory"] is not None} == {"approximation"}  # SO(2) target


@pytest.mark.parametrize("bad,flag", [({"lam": -1.0}, "lam"), ({"L": [4]}, "^--L: every context length must lie in \\(--D, 2\\^24\\]"), ({"control": ["nope"]}, "control"),
                                      ({"beta": 2.5}, "beta"), ({"near": "x"}, "near")])
def test_far_mass_growth_rejects_bad_input(bad, flag):
    with pytest.raises(ValueError, match=flag):
        run_check(get_check("far-mass-growth"), {**SMALL_GROWTH, **bad}, progress=False)


def test_cli_json(tmp_results):
    out = subprocess.run([sys.executable, "-m", "stylized", "check", "far-mass-bound", "--K", "2", "--M", "1000",
                          "--lam", "1", "--trials", "2", "--adversarial", "3", "--json", "--no-progress"],
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    assert r["claim"] == "far-mass-bound" and r["holds"] is True and r["paper_claim"] == "C4"
    for key in ("quantity", "estimate", "ci_low", "ci_high", "n_samples", "theory", "verdict"):
        assert key in r["headline"]
    bad = subprocess.run([sys.executable, "-m", "stylized", "check", "far-mass-bound", "--lam", "-2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "lam" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_json_growth(tmp_results):
    args = ["--d", "16", "--lam", "4", "--D", "4", "--L", "64,512", "--L-sim", "256", "--trials", "3",
            "--horizon-lam", "4", "--horizon-trials", "5", "--json", "--no-progress"]
    out = subprocess.run([sys.executable, "-m", "stylized", "check", "far-mass-growth", *args],
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    assert r["claim"] == "far-mass-growth" and {x["control"] for x in r["rows"]} >= {"none", "alibi", "contraction"}


# --------------------------------------------------------------------------- any law: odd d, cayley, a user's law
@dataclass(frozen=True)
class TwoReflections(StepLaw):
    """A user's law: the product of two random reflections, drawn dense; it declares nothing (not even the
    isotropy it has), so the checks take the generic paths: dense transport, simulated reference chains."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (2, self.d))
        w = g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))
        eye = xp.eye(self.d)
        return (eye - 2 * w[..., 0, :, None] * w[..., 0, None, :]) @ (eye - 2 * w[..., 1, :, None] * w[..., 1, None, :])


@dataclass(frozen=True)
class Shrink(StepLaw):
    """A contraction ``M = 0.9 I``: not orthogonal."""

    d: int
    orthogonal: ClassVar[bool] = False

    def sample(self, xrng, shape, xp=np):
        return xp.broadcast_to(0.9 * xp.eye(self.d), tuple(shape) + (self.d, self.d)).copy()


TINY = {"transfer": {"L": [16, 128], "trials": 40, "D": 4, "target_n": 1, "lam": 3.0},
        "far-mass-growth": {"lam": 3.0, "D": 3, "L": [8, 32, 128], "L_sim": 64, "L_train": 16, "trials": 8,
                            "horizon_lam": [2.0], "horizon_trials": 8}}
ESTIMATED = "estimated (Monte Carlo, n = 20000)"


def _predictions(r: dict) -> list[dict]:
    return [x for x in r["rows"] if x["theory"] is not None and x["in_verdict"]]


@pytest.mark.parametrize("d", [3, 5, 13, 33])
@pytest.mark.parametrize("name", ["householder", "lazy-haar", "haar", "cayley"])
@pytest.mark.parametrize("check", ["transfer", "far-mass-growth"])
def test_every_O_d_law_at_odd_d(check, name, d):
    """Tiny sizes, odd d: every prediction finite and inside its interval; the exact chain operator for the built-in
    isotropic laws ("closed form"), the estimated one for cayley (its kind and its own 95% radius on every row)."""
    law = make_family(name, d)
    r = run_check(get_check(check), {**TINY[check], "family": law, "d": d}, seed=0, progress=False)
    pred = _predictions(r)
    assert pred and all(math.isfinite(x["estimate"]) and math.isfinite(x["theory"]) for x in pred)
    assert all(x["agrees"] for x in pred), [(x.get("quantity"), x.get("L"), x["estimate"], x["theory"]) for x in pred]
    chain_rows = [x for x in pred if x["theory_kind"] not in ("approximation", "exact interval")]
    if name == "cayley":
        assert {x["theory_kind"] for x in chain_rows} == {ESTIMATED}
        assert all(x["theory_radius"] > 0 and "95% radius" in x["theory_note"] for x in chain_rows)
    else:
        assert {x["theory_kind"] for x in chain_rows} == {"closed form"}
        assert not any(x.get("theory_radius") for x in r["rows"])


@pytest.mark.parametrize("check", ["transfer", "far-mass-growth"])
def test_a_users_law(check):
    """A law defined here (only ``d`` and ``sample``): dense transport and simulated reference chains."""
    r = run_check(get_check(check), {**TINY[check], "family": TwoReflections(d=5), "d": 5}, seed=0, progress=False)
    pred = _predictions(r)
    assert pred and all(x["agrees"] for x in pred)
    assert {x["theory_kind"] for x in pred if x["theory_kind"] not in ("approximation", "exact interval")} == {"simulated reference"}
    assert "two-reflections, d=5" in r["headline"]["verdict"]


@pytest.mark.parametrize("check,work", [("transfer", "near_and_far"), ("far-mass-growth", "growth_trials")])
def test_a_contraction_is_refused_before_any_work(check, work):
    with mock.patch(f"{get_check(check).module}.{work}", side_effect=AssertionError("ran")):
        with pytest.raises(ValueError, match=r"family shrink: this check needs orthogonal steps \(orthogonal=True\)"):
            run_check(get_check(check), {**TINY[check], "family": Shrink(d=4), "d": 4}, progress=False)


@pytest.mark.parametrize("check", ["transfer", "far-mass-growth"])
def test_the_estimated_path_holds_at_its_mutant_sizes(check):
    """The unmutated check on cayley at the sizes of its "estimated E[M] off 3%" mutant (which flips it:
    tests/harness/test_mutants.py): the estimated theory agrees, within its own radius, where a 3% error does not."""
    c = get_check(check)
    m = next(x for x in c.mutants if x.name == "estimated-mean-3pct")
    r = run_reduced(c, seed=0, params=m.params)
    assert r["holds"] is True
    assert {x["theory_kind"] for x in _predictions(r["result"]) if x["theory_kind"] not in ("approximation", "exact interval")} == {ESTIMATED}
