"""The CLI: JSON contract, --list, --help, one-line errors with exit status 2, check --all, figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stylized.cli import main

CONTRACT = {"claim", "params", "holds", "rows", "seconds"}
ROW_KEYS = {"estimate", "ci_low", "ci_high", "theory", "n_samples"}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stylized", *args], capture_output=True, text=True, timeout=600)


def test_mixing_json_contract_householder_d16():
    """The issue's acceptance example: estimates sit within their intervals of (1 − 2/16)^n."""
    p = run_cli("check", "mixing", "--family", "householder", "--d", "16", "--n", "1,5,20", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert CONTRACT <= set(out)
    assert [r["n"] for r in out["rows"][:3]] == [1, 5, 20]
    for r in out["rows"][:3]:
        assert ROW_KEYS <= set(r)
        assert r["ci_low"] <= (1 - 2 / 16) ** r["n"] <= r["ci_high"]
        assert r["theory"] == pytest.approx((1 - 2 / 16) ** r["n"])


@pytest.mark.parametrize(
    "args,word",
    [
        (("check", "mixing", "--family", "so2-uniform", "--d", "7"), "d must be even"),
        (("check", "mixing", "--family", "lazy-haar", "--p", "1.5"), "p must lie in (0, 1]"),
        (("check", "mixing", "--family", "warp"), "family must be one of"),
        (("check", "mixing", "--backend", "tpu"), "backend must be one of"),
        (("check", "mixing", "--n", "a,b"), "--n"),
        (("check", "nonexistent"), "invalid choice"),
    ],
)
def test_bad_parameter_exits_2_with_one_line(args, word, capsys):
    code = main(list(args)) if args[1] != "nonexistent" else None
    if code is None:
        with pytest.raises(SystemExit) as e:
            main(list(args))
        code = e.value.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and word in err and "Traceback" not in err


def test_list_and_help(capsys):
    assert main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    assert "mixing" in out and "--family" in out
    with pytest.raises(SystemExit) as e:
        main(["check", "mixing", "--help"])
    assert e.value.code == 0


def test_python_m_and_console_script_agree():
    p = run_cli("--version")
    assert p.returncode == 0 and "stylized" in p.stdout


def test_save_and_figure_from_saved_result(tmp_results):
    """A non-default --save is exploratory: it goes under results/runs/, never over the paper's result."""
    assert main(["check", "mixing", "--family", "haar,householder", "--d", "8", "--n", "0,1,4", "--trials", "200",
                 "--save", "--json", "--no-progress"]) == 0
    assert not (tmp_results / "results" / "mixing.json").exists()
    (run,) = (tmp_results / "results" / "runs").glob("mixing-*")
    assert (run / "mixing.csv").read_text().startswith("family,n,estimate")
    from stylized.registry import get_check
    from stylized.results import load_result

    (png,) = get_check("mixing").plot(load_result("mixing", run), tmp_results / "figures")
    assert png.stat().st_size > 10_000
