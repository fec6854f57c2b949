"""``stylized sweep``: per-point seeds (split-independent results), atomic files, resume after ``kill -9``, Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stylized.harness import registry
from stylized.harness.sweep import grid_points, parse_grid, point_key, point_seed, run_sweep

DUMMY = textwrap.dedent('''
    """A tiny check for the sweep tests: deterministic in its seed, optionally slow (env SWEEPDUMMY_SLEEP)."""
    import os, time
    import numpy as np
    from stylized.harness.registry import Check, Option, register

    def run(params, *, seed, backend, progress=True):
        time.sleep(float(os.environ.get("SWEEPDUMMY_SLEEP", "0")))
        x = np.random.default_rng(seed).normal(params["mu"], 1.0, size=params["trials"])
        row = {"k": params["k"], "estimate": float(x.mean()), "ci_low": None, "ci_high": None,
               "theory": params["mu"], "n_samples": params["trials"]}
        return {"holds": True, "rows": [row], "headline": {"verdict": "dummy"}}

    CHECK = register(Check(name="sweep-dummy", claim="C0", statement="dummy", module="sweepdummy", run=run,
                           options=(Option("k", 1, "k", int), Option("mu", 0.0, "mu", float),
                                    Option("trials", 10, "trials", int))))
''')
GRID = {"k": ["1", "2", "3"], "mu": ["0.0", "0.5"]}


@pytest.fixture()
def dummy(tmp_path, monkeypatch):
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "sweepdummy.py").write_text(DUMMY)
    monkeypatch.syspath_prepend(str(mod))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(mod), os.environ.get("PYTHONPATH", "")]))
    registry.load_checks(external=True)  # every real check registered first (their modules register on import)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # the dummy is registered for this test only
    sys.modules.pop("sweepdummy", None)
    import sweepdummy

    yield sweepdummy.CHECK
    sys.modules.pop("sweepdummy", None)


def _rows(out: Path) -> dict:
    return {p.name: (json.loads(p.read_text())["result"]["rows"], json.loads(p.read_text())["result"]["params"]["seed"])
            for p in sorted((out / "points").glob("*.json"))}


def _quiet(msg):
    pass


def test_grid_parsing_and_seeds():
    assert parse_grid(["d=16,32", "n=1,5;2,10"]) == {"d": ["16", "32"], "n": ["1,5", "2,10"]}
    with pytest.raises(ValueError, match="grid"):
        parse_grid(["d16"])
    with pytest.raises(ValueError, match="grid"):
        parse_grid(["d=1", "d=2"])
    pts = grid_points(GRID)
    assert len(pts) == 6 and len({point_key("c", p) for p in pts}) == 6
    # seeds depend on the point and the sweep seed, not on dict order
    assert point_seed(0, "c", {"a": "1", "b": "2"}) == point_seed(0, "c", {"b": "2", "a": "1"})
    assert point_seed(0, "c", {"a": "1"}) != point_seed(1, "c", {"a": "1"})


def test_unknown_option_is_rejected(dummy, tmp_path):
    with pytest.raises(ValueError, match="unknown option"):
        run_sweep(dummy, {"nope": ["1"]}, out=tmp_path / "x", log=_quiet)


def test_split_independence_and_processes(dummy, tmp_path):
    whole = tmp_path / "whole"
    csv = run_sweep(dummy, GRID, seed=3, out=whole, log=_quiet)
    assert len(csv.read_text().splitlines()) == 1 + 6
    # the same grid split in two halves, in another order, and run by two local processes
    pts = grid_points(GRID)
    split = tmp_path / "split"
    run_sweep(dummy, pts[3:][::-1], seed=3, out=split, workers=2, log=_quiet)
    run_sweep(dummy, pts[:3], seed=3, out=split, log=_quiet)
    assert _rows(split) == _rows(whole)
    other = tmp_path / "other"
    run_sweep(dummy, GRID, seed=4, out=other, log=_quiet)
    assert _rows(other) != _rows(whole)


def test_resume_after_kill_9(dummy, tmp_path):
    ref = tmp_path / "ref"
    run_sweep(dummy, GRID, seed=0, out=ref, log=_quiet)
    out = tmp_path / "killed"
    code = ("import sys, sweepdummy; from stylized.harness.sweep import main; "
            f"sys.exit(main(['sweep-dummy', '--grid', 'k=1,2,3', '--grid', 'mu=0.0,0.5', '--out', {str(out)!r}]))")
    env = {**os.environ, "SWEEPDUMMY_SLEEP": "0.7"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        while len(list((out / "points").glob("*.json"))) < 2 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    assert 2 <= len(done) < 6, f"the sweep should have been killed mid-way, found {len(done)} finished points"
    time.sleep(0.05)
    run_sweep(dummy, GRID, seed=0, out=out, log=_quiet)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    assert all(after[k] == v for k, v in done.items()), "finished points were recomputed"
    assert _rows(out) == _rows(ref) and len(after) == 6
    assert not list((out / "points").glob(".*.tmp"))


def test_dask_local_cluster(dummy, tmp_path):
    distributed = pytest.importorskip("distributed")
    ref = tmp_path / "ref"
    run_sweep(dummy, GRID, seed=5, out=ref, log=_quiet)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        out = tmp_path / "dask"
        run_sweep(dummy, GRID, seed=5, out=out, scheduler=cluster.scheduler_address, log=_quiet)
    assert _rows(out) == _rows(ref)
