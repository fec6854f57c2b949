"""Exit status, canonical vs exploratory results, corrupt files, unwritable folders, safe checkpoint loading."""

from __future__ import annotations

import json

import pytest

from stylized.cli import app as cli
from stylized.harness.results import load_result, results_dir


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
    n = len([line for line in out if (": holds" in line or "DOES NOT HOLD" in line) and "not counted" not in line])
    assert rc == 1 and out[-1].split(" · ")[0] == f"{n - 1}/{n} stylized checks hold"


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
    from stylized.harness.results import save_result

    path = save_result({"claim": "x", "holds": True, "rows": [{"estimate": float("nan")}]})
    assert json.loads(path.read_text())["rows"][0]["estimate"] is None
    assert "NaN" not in path.read_text()


def test_json_and_csv_are_written_as_a_pair(tmp_results, monkeypatch):
    """A failure while writing leaves the old pair; a crash between the two replaces is repaired on load."""
    import os

    from stylized.harness import results
    from stylized.harness.results import rows_csv, save_result

    meta = {"params": {"seed": 0, "backend": "numba"}, "seconds": 0.0, "meta": {"code_hash": "0" * 12}}
    old = {"claim": "x", "holds": True, "rows": [{"estimate": 1.0}], **meta}
    path = save_result(old)
    before = (path.read_text(), path.with_suffix(".csv").read_text())
    with pytest.raises((TypeError, ValueError)):  # unserialisable: nothing replaced, no temporary left behind
        save_result({"claim": "x", "holds": True, "rows": [{"estimate": 2.0}], "bad": {1, 2}})
    assert (path.read_text(), path.with_suffix(".csv").read_text()) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.csv", "x.json"]

    real_replace, calls = os.replace, []

    def crash_on_json(src, dst):  # the CSV lands, then the process "dies" before the JSON
        calls.append(dst)
        if str(dst).endswith(".json"):
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(results.os, "replace", crash_on_json)
    with pytest.raises(KeyboardInterrupt):
        save_result({"claim": "x", "holds": True, "rows": [{"estimate": 3.0}], **meta})
    monkeypatch.setattr(results.os, "replace", real_replace)
    assert path.read_text() == before[0] and path.with_suffix(".csv").read_text() != before[1]
    r = load_result("x")  # the JSON is the commit point: the CSV is rewritten from it
    assert path.with_suffix(".csv").read_text() == rows_csv(r["rows"]) == before[1]
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.csv", "x.json"]


def test_figures_names_a_truncated_result(tmp_results, monkeypatch, capsys):
    import dataclasses

    from stylized.harness.registry import load_checks

    real = load_checks()
    fake = {k: dataclasses.replace(c, plot=lambda r, d: []) for k, c in real.items()}
    monkeypatch.setattr(cli, "load_checks", lambda *a, **k: fake)
    monkeypatch.setattr(cli, "run_check", lambda c, *a, **k: {**_fake_result(True), "claim": c.name})
    d = results_dir()
    d.mkdir(parents=True)
    (d / "mixing.json").write_text('{"claim": "mixing", "rows": [{"estimate": 0.')
    assert cli.main(["figures", "mixing"]) == 0
    err = capsys.readouterr().err
    assert str(d / "mixing.json") in err and "corrupt" in err and (d / "mixing.json.corrupt").exists()


def _children(pid: int) -> set[int]:
    from pathlib import Path

    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="prctl death signal is Linux-only")
def test_sweep_workers_die_with_their_parent(tmp_path):
    """kill -9 of ``sweep --workers 2`` leaves no orphan worker."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = ("from stylized.harness.sweep import run_sweep\n"
            f"run_sweep('far-mass-bound', {{'K': ['1', '2'], 'M': ['10000000000']}}, workers=2, out={str(tmp_path / 'sw')!r})\n")
    env = {**os.environ, "STYLIZED_RESULTS_DIR": str(tmp_path / "r"), "NUMBA_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        workers: set[int] = set()
        while time.time() < deadline and len(workers) < 2:
            workers = {c for c in _children(parent.pid) if "resource_tracker" not in
                       open(f"/proc/{c}/cmdline", "rb").read().decode(errors="replace")}
            time.sleep(0.2)
        assert len(workers) >= 2, "the sweep did not start its workers"
        time.sleep(6)  # past the workers' initializer (imports, prctl)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.time() + 15
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        left = [w for w in workers if _alive(w)]
        for w in left:
            os.kill(w, signal.SIGKILL)
        assert not left, f"orphan workers {left}"
    finally:
        if parent.poll() is None:
            parent.kill()
