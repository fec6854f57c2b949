"""Exit status, canonical vs exploratory results, corrupt files, unwritable folders, safe checkpoint loading."""

from __future__ import annotations

import json

import pytest

from stylized import cli
from stylized.results import load_result, results_dir


def _fake_result(holds: bool) -> dict:
    return {"claim": "mixing", "paper_claim": "C1", "params": {}, "holds": holds, "rows": [], "seconds": 0.0,
            "headline": {}}


@pytest.mark.parametrize("holds,code", [(True, 0), (False, 1)])
def test_check_exit_status_follows_the_verdict(monkeypatch, tmp_results, holds, code, capsys):
    monkeypatch.setattr(cli, "run_check", lambda *a, **k: _fake_result(holds))
    assert cli.main(["check", "mixing", "--no-progress"]) == code


def test_check_all_prints_a_tally_and_exits_1_if_any_fails(monkeypatch, tmp_results, capsys):
    calls = iter(range(100))
    monkeypatch.setattr(cli, "run_check", lambda c, *a, **k: {**_fake_result(next(calls) != 2), "claim": c.name,
                                                               "paper_claim": c.claim})
    monkeypatch.setattr(cli, "write_paper_checks", lambda: tmp_results / "pc.md")
    rc = cli.main(["check", "--all", "--force"])
    out = capsys.readouterr().out.splitlines()
    n = len([line for line in out if ": holds" in line or "DOES NOT HOLD" in line])
    assert rc == 1 and out[-1] == f"{n - 1}/{n} hold"


def test_non_default_save_is_exploratory(tmp_results, capsys):
    rc = cli.main(["check", "far-mass-bound", "--K", "8", "--save", "--no-progress", "--json"])
    assert rc in (0, 1)
    assert not (results_dir() / "far-mass-bound.json").exists()  # the paper's result is untouched
    runs = list((results_dir() / "runs").glob("far-mass-bound-*/far-mass-bound.json"))
    assert len(runs) == 1 and runs[0].with_suffix(".csv").exists()


def test_corrupt_result_is_named_moved_aside_and_recomputed(tmp_results, capsys):
    d = results_dir()
    d.mkdir(parents=True)
    (d / "mixing.json").write_text('{"claim": "mixing", "rows": [')
    assert load_result("mixing") is None
    assert (d / "mixing.json.corrupt").exists() and not (d / "mixing.json").exists()
    assert "mixing.json is corrupt" in capsys.readouterr().err


def test_unwritable_results_dir_is_refused_before_work(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(blocker / "results"))  # cannot be created, even by root
    called = []
    monkeypatch.setattr(cli, "run_check", lambda *a, **k: called.append(1))
    assert cli.main(["check", "--all"]) == 2
    assert "not writable" in capsys.readouterr().err and not called


def test_results_are_strict_json(tmp_results):
    from stylized.results import save_result

    path = save_result({"claim": "x", "holds": True, "rows": [{"estimate": float("nan")}]})
    assert json.loads(path.read_text())["rows"][0]["estimate"] is None
    assert "NaN" not in path.read_text()
