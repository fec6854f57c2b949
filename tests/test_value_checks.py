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
    assert all(row["theory"] is None and row["excess_zero_joint"] for row in qkv)


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
    (["--weights", "uniform"], "weights must be"),
    (["--key-align", "1.5"], "key_align must lie"),
    (["--M", "0,4"], "M must be"),
    (["--noise", "-1"], "noise"),
    (["--family", "so2-uniform", "--d", "7"], "d must be even"),
])
def test_bad_parameters_exit_2(args, word, capsys):
    assert main(["check", "value-incoherence", "--trials", "4", "--M", "2", *args]
                if "--M" not in args else ["check", "value-incoherence", "--trials", "4", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err


def test_save_and_figures(tmp_results):
    for name, extra in [("value-incoherence", ["--M", "1,4", "--d", "8", "--trials", "50"]),
                        ("value-noncommutative", ["--M", "2,8", "--d", "4", "--trials", "30", "--family",
                                                  "so2-uniform,haar"])]:
        assert main(["check", name, *extra, "--save", "--json", "--no-progress"]) == 0
        assert main(["figures", name]) == 0
        assert (tmp_results / "figures" / f"{name}.png").stat().st_size > 10_000
