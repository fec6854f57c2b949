"""The C4 checks end to end at small parameters: run_check, figures, and the CLI with --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stylized.bounds import far_mass_lower_bound
from stylized.registry import get_check
from stylized.results import run_check

SMALL_GROWTH = {"d": 16, "lam": 5.0, "D": 4, "L": [64, 256, 1024, 4096], "L_sim": 1024, "trials": 6,
                "horizon_lam": [3.0, 5.0], "horizon_trials": 20}


def test_far_mass_bound_small(tmp_results):
    check = get_check("far-mass-bound")
    r = run_check(check, {"K": 4, "M": 5000, "lam": 2.0, "trials": 5, "adversarial": 12}, seed=1, progress=False)
    assert r["holds"] is True
    row = r["rows"][0]
    assert row["theory"] == pytest.approx(far_mass_lower_bound(4, 5000, 2.0))
    assert row["estimate"] >= row["theory"]
    assert row["equality"] == pytest.approx(row["theory"], rel=1e-12)
    gaps = [x["gap"] for x in r["rows"][1:]]
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
    rows = {(x["control"], x["L"]): x for x in r["rows"] if x.get("quantity") != "L_1/2"}
    none = [rows[("none", L)]["estimate"] for L in SMALL_GROWTH["L"]]
    assert none == sorted(none)  # grows with L
    assert all(rows[("none", L)]["trial_min"] >= rows[("none", L)]["theory"] for L in SMALL_GROWTH["L"])
    assert all(rows[("alibi", L)]["trial_max"] <= rows[("alibi", L)]["theory"] for L in SMALL_GROWTH["L"])
    assert r["violations"]["none"] == 0 and r["violations"]["alibi"] == 0
    assert len([x for x in r["rows"] if x.get("quantity") == "L_1/2"]) == 2
    paths = check.plot(r, tmp_results / "figures")
    assert len(paths) == 3 and all(p.exists() for p in paths)


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
