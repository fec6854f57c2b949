"""``stylized sweep``: tampered point files are named and run again (never copied into the CSV), Ctrl-C stops
the sweep and its workers within seconds keeping what finished, and a bad ``--scheduler`` exits 2 in one line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from stylized.harness.sweep import point_key, run_sweep
from tests.harness.test_sweep import GRID, _rows, dummy  # noqa: F401 - the fixture

POINT = {"k": "1", "mu": "0.0"}


def _tamper(rec: dict, how: str) -> str:
    res = rec["result"]
    if how == "nan-estimate":
        res["rows"][0]["estimate"] = float("nan")
    elif how == "inf-seconds":
        res["seconds"] = float("inf")
    elif how == "holds-yes":
        res["holds"] = "yes"
    elif how == "rows-not-list":
        res["rows"] = {"k": 1}
    elif how == "estimate-text":
        res["rows"][0]["estimate"] = "0.5"
    elif how == "no-meta":
        del res["meta"]
    elif how == "result-null":
        rec["result"] = None
    elif how == "seed-negative":
        res["params"]["seed"] = -1
    elif how == "truncated":
        return json.dumps(rec)[:40]
    elif how == "not-an-object":
        return "[1, 2, 3]"
    return json.dumps(rec)  # NaN/Infinity written as JSON's non-standard constants, as a tamperer would


TAMPERINGS = ["nan-estimate", "inf-seconds", "holds-yes", "rows-not-list", "estimate-text", "no-meta", "result-null",
              "seed-negative", "truncated", "not-an-object"]


@pytest.mark.parametrize("how", TAMPERINGS)
def test_a_tampered_point_is_named_and_run_again(dummy, tmp_path, how):  # noqa: F811
    ref, out = tmp_path / "ref", tmp_path / "out"
    run_sweep(dummy, GRID, seed=0, out=ref, log=lambda m: None)
    run_sweep(dummy, GRID, seed=0, out=out, log=lambda m: None)
    path = out / "points" / f"{point_key(dummy.name, POINT)}.json"
    path.write_text(_tamper(json.loads(path.read_text()), how))
    said: list[str] = []
    csv = run_sweep(dummy, GRID, seed=0, out=out, log=said.append)
    named = [m for m in said if str(path) in m]
    assert len(named) == 1 and "running it again" in named[0], said
    assert any("5 already done, 1 to run" in m for m in said), said
    assert _rows(out) == _rows(ref)
    text = csv.read_text()
    assert "nan" not in text.lower() and "inf" not in text.lower() and text == (ref / csv.name).read_text()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.parametrize("target", ["group", "parent"])
def test_ctrl_c_stops_the_sweep_and_its_workers_and_keeps_what_finished(dummy, tmp_path, target):  # noqa: F811
    """SIGINT to the process group (a terminal's Ctrl-C) or to the sweep alone: every process is gone within
    seconds, exit 130, the finished points stay, and running again finishes the rest with the same rows."""
    out, ref = tmp_path / "out", tmp_path / "ref"
    code = ("import sys, sweepdummy; from stylized.cli.app import main; "
            f"sys.exit(main(['sweep', 'sweep-dummy', '--grid', 'k=1,2,3', '--grid', 'mu=0.0,0.5', '--workers', '2', "
            f"'--out', {str(out)!r}]))")
    env = {**os.environ, "SWEEPDUMMY_SLEEP": "4"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, text=True)
    try:
        deadline = time.time() + 120
        while not list((out / "points").glob("*.json")) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)  # the next points are running in the workers now
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        t0 = time.time()
        _, err = proc.communicate(timeout=20)
        stopped = time.time() - t0
        while _group_alive(proc.pid) and time.time() - t0 < 20:
            time.sleep(0.05)
        gone = time.time() - t0
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert stopped < 10 and gone < 10, f"sweep exited after {stopped:.1f} s, its workers after {gone:.1f} s"
    assert "Traceback" not in err and "interrupted" in err
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "points").glob("*.json")}
    assert 1 <= len(kept) < 6
    assert not list((out / "points").glob(".*.tmp"))
    run_sweep(dummy, GRID, seed=0, out=ref, log=lambda m: None)
    run_sweep(dummy, GRID, seed=0, out=out, log=lambda m: None)
    assert all((out / "points" / k).stat().st_mtime_ns == v for k, v in kept.items()), "finished points were rerun"
    assert _rows(out) == _rows(ref)


@pytest.fixture()
def not_a_scheduler():
    """A TCP server that answers every connection with text that is not Dask's protocol."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(2)
    srv.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCHEDULERS = ["notanaddress", "", " ", "localhost", "tcp://", "tcp://:8786", "tcp://127.0.0.1:0", "tcp://host:99999",
              "tcp://[::1", "tcp://no-such-host.invalid:8786", "ucx//host:1", "tcp://127.0.0.1:-5", "inproc://nothing",
              "inproc://]ba38.889[", "tls://127.0.0.1:0", "FREE", "GARBAGE"]


@pytest.mark.parametrize("address", SCHEDULERS)
def test_a_bad_scheduler_exits_2_in_one_line(dummy, tmp_path, capsys, address, not_a_scheduler):  # noqa: F811
    pytest.importorskip("distributed")
    from stylized.cli.app import main

    address = {"FREE": f"tcp://127.0.0.1:{_free_port()}", "GARBAGE": not_a_scheduler}.get(address, address)
    t0 = time.time()
    rc = main(["sweep", "sweep-dummy", "--grid", "k=1,2", "--scheduler", address, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--scheduler" in err and len(err.splitlines()) == 1, (rc, err)
    assert time.time() - t0 < 15
    assert not list((tmp_path / "o").glob("points/*.json"))


def test_a_bad_scheduler_is_refused_under_dry_run(dummy, capsys):  # noqa: F811
    from stylized.cli.app import main

    assert main(["sweep", "sweep-dummy", "--grid", "k=1,2", "--scheduler", "notanaddress", "--dry-run"]) == 2
    assert "--scheduler" in capsys.readouterr().err


def test_library_sweep_names_the_scheduler(dummy, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="--scheduler"):
        run_sweep(dummy, GRID, out=tmp_path / "o", scheduler="notanaddress", log=lambda m: None)
    assert Path(tmp_path / "o").exists() is False or not list((tmp_path / "o").glob("points/*.json"))
