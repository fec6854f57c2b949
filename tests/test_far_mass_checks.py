"""The C4 checks end to end at small parameters: run_check, figures, and the CLI with --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stylized.bounds import far_mass_lower_bound
from stylized.falsify import run_reduced
from stylized.registry import get_check
from stylized.results import run_check

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
    rows = {(x["control"], x["L"]): x for x in r["rows"] if x.get("quantity") != "L_1/2"}
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
    assert len(hz) == 2 and all(h["agrees"] and h["theory_kind"] == "approximation" for h in hz)
    assert r["headline"]["theory_kind"] == "closed form"
    paths = check.plot(r, tmp_results / "figures")
    assert len(paths) == 3 and all(p.exists() for p in paths)


@pytest.mark.parametrize("name,mutant", [("far-mass-growth", "near-untransported"), ("far-mass-growth", "alibi-removed"),
                                         ("transfer", "far-mgf-3pct"), ("far-mass-bound", "exponent-lambda")])
def test_a_mutant_flips_its_check(name, mutant):
    """One theory or model mutant per check, at the reduced sizes (the full table: tests/test_mutants.py)."""
    check = get_check(name)
    m = next(x for x in check.mutants if x.name == mutant)
    assert run_reduced(check, seed=1)["holds"] is True
    assert run_reduced(check, seed=1, mutant=m)["holds"] is False


def test_transfer_predicts_the_normaliser_not_the_pattern():
    r = run_check(get_check("transfer"), {"L": [256, 4096], "trials": 200}, seed=3, progress=False)
    assert r["holds"] is True
    q = {(x["L"], x["quantity"]): x for x in r["rows"]}
    # the absolute target weight falls with L as predicted; the renormalised one has one L-free prediction
    assert q[(4096, "near_target_absolute")]["theory"] < 0.2 * q[(256, "near_target_absolute")]["theory"]
    assert q[(256, "near_target")]["theory"] == q[(4096, "near_target")]["theory"]
    assert all(x["in_verdict"] == (x["theory"] is not None) for x in r["rows"])
    assert {x["theory_kind"] for x in r["rows"] if x["theory"] is not None} == {"approximation"}  # SO(2) target


@pytest.mark.parametrize("bad,flag", [({"lam": -1.0}, "lam"), ({"L": [4]}, "L must"), ({"control": ["nope"]}, "control"),
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
