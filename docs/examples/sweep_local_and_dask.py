"""A sweep locally and on Dask: one grid of the far-mass bound (C4), three ways, the same numbers.

Run: ``python docs/examples/sweep_local_and_dask.py OUT_DIR`` (the docs build and the test suite run it).

1. ``stylized sweep`` on two local processes, then again (it resumes: nothing left to run);
2. the same grid from Python on a ``dask.distributed.LocalCluster`` (results equal to the local ones:
   each point's seed depends only on the point);
3. a ``dask scheduler`` and a ``dask worker`` started from the command line on localhost, and
   ``stylized sweep --scheduler ADDRESS`` adding points to the local sweep's folder;

then a figure of the swept bound, ``OUT_DIR/far_mass_bound_sweep.png``.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

GRID = '--grid "lam=1,2,3,4" --grid "K=16,64" --grid "M=100000" --grid "trials=8"'


def sh(command: str, **kw) -> subprocess.CompletedProcess:
    """Run a shell-style command line with this interpreter's ``stylized`` / ``dask`` (``python -m …``)."""
    argv = shlex.split(command)
    if argv[0] in ("stylized", "dask"):
        argv = [sys.executable, "-m", argv[0], *argv[1:]]
    print("$", command, flush=True)
    return subprocess.run(argv, check=True, text=True, **kw)


def sweep_locally(out: Path) -> Path:
    # Eight points (4 values of lam x 2 of K; M and trials fixed by one-value grids) on two processes.
    sh(f"stylized sweep far-mass-bound {GRID} --workers 2 --out {out}/local")
    return out / "local" / "far-mass-bound.csv"


def sweep_on_local_cluster(out: Path) -> Path:
    from dask.distributed import LocalCluster

    from stylized.harness.sweep import parse_grid, run_sweep

    grid = parse_grid(["lam=1,2,3,4", "K=16,64", "M=100000", "trials=8"])  # the --grid values, as strings
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        return run_sweep("far-mass-bound", grid, scheduler=cluster.scheduler_address, out=out / "dask")


def sweep_on_dask_cli(out: Path) -> Path:
    # A scheduler and a worker process (two worker processes, one thread each) on localhost.  Port 0 and a
    # scheduler file let the system pick a free port; with a fixed port the address is tcp://127.0.0.1:8786.
    file = out / "scheduler.json"
    quiet = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "warning"}  # Dask's INFO lines off
    scheduler = subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(file)], env=quiet)
    worker = None
    try:
        while not file.exists():
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written whole, but give the scheduler a moment to listen
        address = json.loads(file.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nworkers", "2",
                                   "--nthreads", "1", "--no-dashboard"], env=quiet)
        # Two more values of lam into the local sweep's folder: its eight points are on disk and skipped (a killed
        # sweep resumes the same way); the four new ones run on the Dask workers.
        run = sh(f'stylized sweep far-mass-bound --grid "lam=1,2,3,4,5,6" --grid "K=16,64" --grid "M=100000" '
                 f'--grid "trials=8" --scheduler {address} --out {out}/local', stderr=subprocess.PIPE)
        print(run.stderr, file=sys.stderr)
        assert "12 points, 8 already done, 4 to run" in run.stderr, run.stderr
    finally:
        for p in (worker, scheduler):
            if p is not None:
                p.terminate()
                p.wait(timeout=30)
    return out / "local" / "far-mass-bound.csv"


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot(path: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in read_rows(path) if r["variant"] == "min over trials"]  # one row per point: min ρ_D and bound
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for K in sorted({r["K"] for r in rows}, key=int):
        pts = sorted((float(r["lam"]), float(r["estimate"]), float(r["bound"])) for r in rows if r["K"] == K)
        lam, est, bound = zip(*pts)
        ax.plot(lam, bound, "-", label=f"bound M/(M + K e^(2λ)), K = {K}")
        ax.plot(lam, est, "o", label=f"min ρ_D measured, K = {K}")
    ax.set_xlabel("logit bound λ")
    ax.set_ylabel("far mass ρ_D")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def main(out: Path) -> int:
    for stale in ("local", "dask", "scheduler.json"):  # a fresh start: a previous run's points would be skipped as done
        (shutil.rmtree if (out / stale).is_dir() else Path.unlink)(out / stale) if (out / stale).exists() else None
    out.mkdir(parents=True, exist_ok=True)
    local = sweep_locally(out)
    dask_csv = sweep_on_local_cluster(out)
    key = ("K", "lam", "variant", "estimate", "theory", "bound")  # everything but timings
    same = [tuple(r[k] for k in key) for r in read_rows(local)] == [tuple(r[k] for k in key) for r in read_rows(dask_csv)]
    print("local and LocalCluster results identical:", same)
    merged = sweep_on_dask_cli(out)
    print("points after the Dask run:", len({r["point"] for r in read_rows(merged)}))
    plot(merged, out / "far_mass_bound_sweep.png")
    print("figure:", out / "far_mass_bound_sweep.png")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "sweep_out")))
