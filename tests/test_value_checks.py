"""The C5 value checks through run_check (small parameters) and the CLI (--json, errors, figures)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from simulations.value_incoherence import fit_exponent
from stylized.cli import main
from stylized.registry import get_check
from stylized.results import run_check

ROW_KEYS = {"estimate", "ci_low", "ci_high", "theory", "n_samples"}


def _run(name: str, **params) -> dict:
    return run_check(get_check(name), params, seed=0, backend="numpy", progress=False)


def test_incoherence_haar_rows_and_theory():
    r = _run("value-incoherence", family="haar", d=8, M=[1, 4, 16], D=2, trials=400)
    assert r["holds"] and r["paper_claim"] == "C5"
    assert {(row["variant"], row["M"]) for row in r["rows"]} == {(v, m) for v in ("qk", "qkv") for m in (1, 4, 16)}
    for row in r["rows"]:
        assert ROW_KEYS <= set(row)
        assert row["theory"] == pytest.approx(1.0 if row["variant"] == "qk" else 1 / row["M"])
    assert set(r["headline"]) >= {"quantity", "estimate", "ci_low", "ci_high", "n_samples", "theory", "verdict"}


def test_incoherence_softmax_uniform_keys_follows_plugin():
    r = _run("value-incoherence", family="so2-uniform", d=8, M=[4, 32], D=4, weights="softmax", lam=3.0,
             trials=300)
    assert r["holds"]
    qkv = [row for row in r["rows"] if row["variant"] == "qkv"]
    assert all(row["theory"] is None and row["excess_test"]["passed"] and row["in_verdict"] for row in qkv)
    qk = [row for row in r["rows"] if row["variant"] == "qk"]
    assert all(row["theory"] == 1.0 and row["theory_kind"] == "closed form" for row in qk)  # ᾱ sums to 1


def test_incoherence_detects_coherent_addition():
    """ω tiny: χ ≈ 1, QKV does not beat QK, so the check must say it does not hold."""
    r = _run("value-incoherence", family="so2-uniform", d=8, omega=1e-4, M=[1, 8], D=2, trials=200)
    assert not r["holds"]


def test_scaling_exponents():
    """Haar: exactly 1/M.  Seed fixed; tolerance 3 standard errors of the fitted slope (from its 95% interval)."""
    r = _run("value-scaling", family="haar", d=8, M=[8, 32, 128], D=2, trials=300)
    f = r["fits"]
    se = (f["qkv"]["ci_high"] - f["qkv"]["ci_low"]) / (2 * 1.96)
    assert f["qkv"]["theory_exponent"] == pytest.approx(-1.0)
    assert abs(f["qkv"]["exponent"] + 1.0) <= 3 * se and f["qkv"]["ci_high"] < -0.5
    assert f["qk"]["exponent"] == pytest.approx(0.0, abs=1e-12)


def test_fit_exponent_recovers_a_power_law():
    M = np.array([10.0, 100.0, 1000.0])
    est = 3.0 * M**-0.8
    slope, lo, hi, th = fit_exponent(M, est, est * 0.99, est * 1.01, theory=2.0 * M**-0.8)
    assert slope == pytest.approx(-0.8) and lo < -0.8 < hi and th == pytest.approx(-0.8)


def test_snr_horizon_longer_with_qkv():
    r = _run("value-snr", family="so2-uniform", d=8, omega=0.5, L=[16, 128, 1024, 4096], K=2, lam=5.0, trials=40)
    assert r["holds"]
    hq, hk = r["horizons"]["qkv"], r["horizons"]["qk"]
    assert hk is not None and (hq is None or hq > hk)
    near = [row for row in r["rows"] if row["variant"] == "near-transport"]
    assert [row["n"] for row in near] == [0, 1] and near[0]["estimate"] == pytest.approx(0.0, abs=1e-12)


def test_noncommutative_small():
    r = _run("value-noncommutative", family=["householder", "haar"], d=6, M=[4, 32], D=2, lam=3.0, trials=150)
    assert r["holds"]
    shared = [row for row in r["rows"] if row["mode"] == "softmax-shared-keys" and row["M"] == 32]
    assert all(row["excess_ci_low"] > 0 for row in shared)  # weights that select aligned routes: coherent excess


def test_independent_stream_small():
    r = _run("value-independent-stream", family="so2-uniform", d=8, M=[8, 128], D=2, lam=3.0, trials=300)
    assert r["holds"]
    assert {row["variant"] for row in r["rows"]} == {"qk", "qkv", "qkv-indep"}


def test_cli_json_contract():
    p = subprocess.run([sys.executable, "-m", "stylized", "check", "value-incoherence", "--family", "householder",
                        "--d", "8", "--M", "2,32", "--D", "2", "--trials", "1000", "--json", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["claim"] == "value-incoherence" and out["holds"] is True
    assert [(r["variant"], r["M"]) for r in out["rows"]] == [("qk", 2), ("qkv", 2), ("qk", 32), ("qkv", 32)]


@pytest.mark.parametrize("args,word", [
    (["--weights", "uniform"], "--weights: must be one of equal, softmax"),
    (["--key-align", "1.5"], "--key-align: must be a number in [0, 1]"),
    (["--M", "0,4"], "--M: must be a comma list of integers in [1,"),
    (["--noise", "-1"], "noise"),
    (["--family", "so2-uniform", "--d", "7"], "d must be even"),
])
def test_bad_parameters_exit_2(args, word, capsys):
    assert main(["check", "value-incoherence", "--trials", "4", "--M", "2", *args]
                if "--M" not in args else ["check", "value-incoherence", "--trials", "4", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err


def test_save_and_figures(tmp_results):
    for name, extra in [("value-incoherence", ["--M", "1,64", "--d", "8", "--trials", "50"]),
                        ("value-noncommutative", ["--M", "4,64", "--d", "4", "--trials", "30", "--family",
                                                  "so2-uniform,haar"])]:
        assert main(["check", name, *extra, "--save", "--json", "--no-progress"]) == 0
        assert main(["figures", name]) == 0
        assert (tmp_results / "figures" / f"{name}.png").stat().st_size > 10_000


# ---------------------------------------------------------------------------------------
# the verdicts: every statement's half is tested, labels are honest
# ---------------------------------------------------------------------------------------
def test_judge_joint_levels():
    """Two-sided and one-sided tests at one Bonferroni level; rows without spread are exact and not counted in m."""
    from simulations.value_common import judge

    row = {"estimate": 1.0, "ci_high": 1.1, "n_samples": 10_000}  # se = 0.1/1.96
    exact = {"estimate": 2.0, "ci_high": 2.0, "n_samples": 5}
    assert judge([(row, "estimate", "equals", 1.09)]) == (1, 1) and judge([(row, "estimate", "equals", 1.11)]) == (0, 1)
    assert judge([(dict(row), "estimate", "equals", 1.11), (dict(row), "estimate", "equals", 1.0),
                  (dict(row), "estimate", "equals", 1.0)]) == (3, 3)  # m = 3: half-width 2.39 se
    assert judge([(row, "estimate", "above", 0.9)]) == (1, 1) and judge([(row, "estimate", "below", 1.05)]) == (0, 1)
    assert judge([(exact, "estimate", "equals", 2.0), (dict(row), "estimate", "equals", 1.11)]) == (1, 2)  # m = 1
    assert judge([(exact, "estimate", "equals", 2.001)]) == (0, 1)
    assert row["in_verdict"] and row["estimate_below_test"]["kind"] == "below" and "estimate_above_test" in row
    with pytest.raises(ValueError, match="kind"):
        judge([(row, "estimate", "near", 1.0)])


@pytest.mark.parametrize("name", ["value-incoherence", "value-scaling", "value-snr", "value-noncommutative",
                                  "value-independent-stream"])
def test_labels_are_honest(name):
    """Every row says whether it is in the verdict; every theory value has its kind; bounds are not theory values."""
    check = get_check(name)
    r = run_check(check, check.reduced, seed=0, backend="numpy", progress=False)
    kinds = {"closed form", "bound", "simulated reference", "fit", "approximation"}
    for row in r["rows"]:
        assert isinstance(row["in_verdict"], bool)
        if row.get("theory") is not None:
            assert row["theory_kind"] in kinds
        for k, v in row.items():
            if k.endswith("_theory") and v is not None:
                assert row[f"{k}_kind"] in kinds
            if k.endswith("_bound"):
                assert "bound" not in row.get("theory_kind", "") and row[f"{k}_kind"]
            if k.endswith("_floor") or k == "floor":
                assert row[f"{k}_kind"].startswith("closed form (M → ∞")
    assert r["headline"].get("theory") is None or r["headline"]["theory_kind"] in kinds


def test_independent_stream_equal_weights_runs_against_the_exact_formula():
    """Regression: ``--weights equal`` used to crash with KeyError 'plugin'.  Both transports equal the exact
    value and the paired contrast is exactly 0 in mean."""
    r = _run("value-independent-stream", family="so2-uniform", d=8, M=[4, 32], D=4, weights="equal", trials=300)
    assert r["holds"]
    for row in r["rows"]:
        assert row["theory"] is not None and row["estimate_test"]["passed"]
    assert all(row["contrast_theory"] == 0.0 and row["contrast_test"]["passed"]
               for row in r["rows"] if row["variant"] == "qkv")
    assert r["headline"]["theory"] == 0.0


def test_independent_stream_contrast_is_in_the_verdict():
    """Keys = b̂: the one-sided contrast at the largest M is a verdict test; substituting the same stream fails it."""
    from unittest import mock

    from simulations.value_independent_stream import same_stream

    params = dict(family="so2-uniform", d=8, M=[16, 128], D=4, trials=200)
    r = _run("value-independent-stream", **params)
    big = next(row for row in r["rows"] if row["variant"] == "qkv" and row["M"] == 128)
    assert r["holds"] and big["contrast_above_test"] == {"kind": "above", "value": 0.0, "passed": True}
    assert big["contrast_floor_kind"] == "closed form (M → ∞ limit)" and big["in_verdict"]
    with mock.patch("simulations.value_common.far_energy_samples", same_stream):
        bad = _run("value-independent-stream", **params)
    big = next(row for row in bad["rows"] if row["variant"] == "qkv" and row["M"] == 128)
    assert not bad["holds"] and not big["contrast_above_test"]["passed"]


def test_independent_stream_haar_contrast_is_exact():
    """Haar steps, keys = b̂: the same-transport energy and the contrast have exact finite-M values."""
    from stylized.value_theory import haar_tilt_energy

    r = _run("value-independent-stream", family="haar", d=6, M=[4, 32], D=2, lam=3.0, trials=300)
    assert r["holds"]
    for row in (x for x in r["rows"] if x["variant"] == "qkv"):
        total, diag = haar_tilt_energy(6, 3.0, row["M"])
        assert row["theory"] == pytest.approx(total) and row["contrast_theory"] == pytest.approx(total - diag)
        assert row["contrast_test"]["passed"] and row["estimate_test"]["passed"]


def test_noncommutative_floor_is_in_the_verdict():
    """Haar, keys = b̂: every M is tested against the exact tilted energy (which tends to the Bessel floor);
    dropping the coherent term turns the verdict."""
    from unittest import mock

    from simulations.value_noncommutative import _floor_removed
    from stylized.value_theory import haar_tilt_energy, haar_tilt_floor

    params = dict(family=["haar"], d=6, M=[4, 32], D=2, lam=3.0, trials=200)
    r = _run("value-noncommutative", **params)
    assert r["holds"]
    haar = [row for row in r["rows"] if row["mode"] == "softmax-shared-keys"]
    assert all(row["estimate_test"]["passed"] and row["floor"] == pytest.approx(haar_tilt_floor(6, 3.0)) for row in haar)
    assert [row["theory"] for row in haar] == pytest.approx([haar_tilt_energy(6, 3.0, M)[0] for M in (4, 32)])
    with mock.patch("simulations.value_noncommutative.haar_tilt_energy", _floor_removed):
        assert not _run("value-noncommutative", **params)["holds"]


def test_scaling_detects_the_sqrt_law():
    from unittest import mock

    from simulations.value_incoherence import sqrt_law_theory

    params = dict(family="haar", d=8, M=[8, 32, 128], D=2, trials=300)
    assert _run("value-scaling", **params)["holds"]
    with mock.patch("simulations.value_common.qkv_interference_theory", sqrt_law_theory):
        r = _run("value-scaling", **params)
    assert not r["holds"] and r["fits"]["qkv"]["theory_exponent"] == pytest.approx(-0.5)
