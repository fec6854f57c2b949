"""``stylized.run``: the Python face of ``stylized check`` (same options, same defaults, same numbers)."""

from __future__ import annotations

import json

import pytest

import stylized
from stylized.cli.app import main
from stylized.harness.registry import get_check

SMALL = {"family": "householder", "d": [16], "M": [64, 1024], "trials": 16, "trials_near": 200}


@pytest.fixture(scope="module")
def small_result():
    return stylized.run("score-gap", **SMALL)


def test_result_contract(small_result):
    r = small_result
    assert isinstance(r, stylized.Result) and r.name == "score-gap" and r.claim == "C3"
    assert isinstance(r.holds, bool)
    assert r.rows and {"estimate", "ci_low", "ci_high", "theory", "n_samples"} <= set(r.rows[0])
    assert {"quantity", "estimate", "verdict"} <= set(r.headline)
    assert r.params["d"] == [16] and r.params["seed"] == 0 and r.params["backend"] == "numba"
    assert "holds=" in repr(r)


def test_python_and_cli_defaults_agree():
    check = get_check("score-gap")
    assert stylized.defaults("score-gap") == check.defaults()
    assert "score-gap" in stylized.check_names()


def test_python_and_cli_give_the_same_numbers(small_result, capsys):
    args = ["check", "score-gap", "--family", "householder", "--d", "16", "--M", "64,1024", "--trials", "16",
            "--trials-near", "200", "--json", "--no-progress"]
    assert main(args) in (0, 1)
    cli = json.loads(capsys.readouterr().out)
    assert cli["rows"] == small_result.rows and cli["holds"] == small_result.holds
    assert json.loads(small_result.to_json())["rows"] == small_result.rows


def test_plot_returns_a_figure_and_writes_only_when_asked(small_result, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    monkeypatch.chdir(tmp_path)
    fig = small_result.plot()
    assert isinstance(fig, Figure) and list(tmp_path.iterdir()) == []
    out = tmp_path / "gap.png"
    small_result.plot(out)
    assert out.stat().st_size > 10_000


def test_save_goes_under_the_given_folder(small_result, tmp_path):
    path = small_result.save(tmp_path / "o")
    assert path == tmp_path / "o" / "results" / "score-gap.json" and path.exists()
    assert (tmp_path / "o" / "results" / "score-gap.csv").exists()


@pytest.mark.parametrize("kwargs,word", [
    ({"trials_near": -1}, "trials_near:"),
    ({"d": "a"}, "d:"),
    ({"family": "warp"}, "family:"),
    ({"dd": 3}, "dd"),
    ({"backend": "tpu"}, "backend"),
    ({"seed": -1}, "seed"),
])
def test_bad_options_raise_valueerror_naming_the_option(kwargs, word):
    with pytest.raises(ValueError, match=word):
        stylized.run("score-gap", **kwargs)


def test_unknown_check_names_the_choices():
    with pytest.raises(ValueError, match="name must be one of .*score-gap"):
        stylized.run("no-such-check")
