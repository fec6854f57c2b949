"""``stylized sweep``: a parameter grid of any registered check, on local processes or a Dask cluster.

``stylized sweep mixing --grid "d=16,32,64" --grid "omega=0.5,1.0" --workers 2 --out sweeps/mixing``

* **Per-point seeds.**  Point ``x`` (a dict of option values) runs with
  ``SeedSequence(seed, spawn_key=h(x))``, ``h`` a stable SHA-256 hash of the check name and
  the sorted point parameters: a point's result never depends on how the grid was split,
  which other points ran, in which order, or on which machine.
* **One atomic file per point**, ``<out>/points/<key>.json`` (``key`` from the same hash),
  written by :func:`stylized.harness.results.atomic_write_text` as each point finishes.
* **Resume.**  A point whose file exists (same check, parameters, seed and backend) is
  skipped, so a sweep killed with ``kill -9`` picks up where it stopped.  A point file that is not a
  valid result (corrupt, wrong types, a non-finite number) is named and run again, never copied on.
* **Ctrl-C** cancels the pending points and ends the workers at once; the finished points stay.
* **A scheduler address** is checked (its form, then a connection within ``CONNECT_TIMEOUT`` s)
  before any file or work: a bad one is one line naming ``--scheduler`` (exit 2).
* **Tidy CSV** ``<out>/<check>.csv`` at the end: every row of every point, prefixed by the
  point's parameters, ``point``, ``seed`` and ``holds``.

Local runs use :class:`concurrent.futures.ProcessPoolExecutor` (spawned processes, Numba
threads split among them); ``--scheduler ADDRESS`` sends the points to a Dask
``distributed`` scheduler instead (optional extra ``dask``).  Workers return results and
the calling process writes the files, so workers need no shared filesystem.

Example
-------
>>> parse_grid(["d=16,32", "omega=0.5"])
{'d': ['16', '32'], 'omega': ['0.5']}
>>> [sorted(p.items()) for p in grid_points({"d": ["16", "32"], "omega": ["0.5"]})]
[[('d', '16'), ('omega', '0.5')], [('d', '32'), ('omega', '0.5')]]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..core.backend import BACKENDS
from ..core.errors import InvalidInput
from ..core.options import Choice, Int, arg_type
from .registry import Check, get_check
from .result_schema import parse_json, result_problem
from .results import atomic_write_text, rows_csv, run_check, to_jsonable

__all__ = ["parse_grid", "grid_points", "validate_sweep", "check_scheduler", "point_key", "point_seed", "run_point",
           "run_sweep", "add_parser", "main"]


def parse_grid(specs: list[str]) -> dict[str, list[str]]:
    """``["d=16,32", "omega=0.5,1"]`` → ``{"d": ["16", "32"], "omega": ["0.5", "1"]}`` (values parsed later by the check).

    A value containing commas itself (a list-valued option) is written with ``;`` between
    grid values: ``--grid "n=1,5,20;1,10"`` sweeps two lists.
    """
    grid: dict[str, list[str]] = {}
    for spec in specs or []:
        name, sep, values = str(spec).partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ValueError(f"--grid: must look like NAME=v1,v2,…; got {spec!r}")
        vals = [v.strip() for v in (values.split(";") if ";" in values else values.split(",")) if v.strip()]
        if not vals:
            raise ValueError(f"--grid: {name!r} has no values; got {spec!r}")
        if name in grid:
            raise ValueError(f"--grid: {name!r} is given twice")
        grid[name] = vals
    return grid


def grid_points(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    """The Cartesian product of the grid, in a fixed order (names sorted, values as given)."""
    names = sorted(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def _digest(check_name: str, point: dict) -> bytes:
    blob = json.dumps({"check": check_name, "params": {k: str(v) for k, v in point.items()}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).digest()


def point_key(check_name: str, point: dict) -> str:
    """File-name key of a point: 16 hex digits of SHA-256 of the check name and the sorted parameters."""
    return _digest(check_name, point).hex()[:16]


def point_seed(seed: int, check_name: str, point: dict) -> int:
    """Seed of a point: ``SeedSequence(seed, spawn_key=h(point))`` reduced to one 32-bit integer."""
    h = _digest(check_name, point)
    key = tuple(int.from_bytes(h[i:i + 4], "little") for i in range(0, 16, 4))
    return int(np.random.SeedSequence(seed, spawn_key=key).generate_state(1)[0])


def run_point(check: Check | str, point: dict, seed: int, backend: str) -> dict:
    """Run one grid point (in a worker): the check's JSON result with the point's derived seed."""
    check = get_check(check) if isinstance(check, str) else check
    return run_check(check, dict(point), seed=point_seed(seed, check.name, point), backend=backend, progress=False)


def _record(check: Check, point: dict, seed: int, backend: str, result: dict | None = None) -> dict:
    return {"check": check.name, "point": {k: str(v) for k, v in point.items()}, "sweep_seed": int(seed),
            "backend": backend, "result": result}


def _point_problem(rec, want: dict) -> str | None:
    """Why the point file ``rec`` (parsed) is not a finished run of the point ``want``, or ``None``."""
    if not isinstance(rec, dict):
        return "not a sweep point"
    if any(rec.get(k) != want[k] for k in ("check", "point", "sweep_seed", "backend")):
        return "another point, seed or backend"
    return result_problem(rec.get("result"), want["check"])


def _done(path: Path, want: dict, log=None) -> bool:
    """Whether ``path`` holds a valid finished run of the point ``want``.  A file that is there but not valid
    (corrupt, wrong types, a non-finite number: see :func:`~stylized.harness.result_schema.result_problem`) is
    named in one line through ``log`` and run again (the new run replaces it)."""
    if not path.exists():
        return False
    try:
        why = _point_problem(parse_json(path.read_text()), want)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        why = (str(e).splitlines() or [type(e).__name__])[0]
    if why is not None and log is not None and not why.startswith("another point"):
        log(f"  {path} is not a valid finished point ({why[:100]}); running it again")
    return why is None


def _die_with_parent(parent: int) -> None:
    """Make this worker die with the sweep process: a SIGKILL when its parent exits (Linux
    ``prctl(PR_SET_PDEATHSIG)``), and an immediate exit if the parent is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def _worker_ref(check: Check) -> Check | str:
    """``check`` itself when it pickles, else its name (a registered check holds lambdas, e.g. mutant
    patches, that do not pickle; a worker looks it up in its own registry)."""
    import pickle

    try:
        pickle.dumps(check)
        return check
    except (pickle.PicklingError, AttributeError, TypeError):
        return check.name


def _init_worker(threads: int, parent: int | None = None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle: it stops the workers
    if parent is not None:
        _die_with_parent(parent)
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


MAX_POINTS = 10_000
"""Most grid points one sweep accepts."""
CONNECT_TIMEOUT = 10
"""Seconds a sweep waits for a Dask scheduler to answer."""


def validate_sweep(check: Check | str, grid: dict[str, list[str]] | list[dict]) -> tuple[Check, list[dict]]:
    """The check and the grid's points, every point's options validated (``ValueError`` naming the
    option and its range) before any work or file."""
    check = get_check(check) if isinstance(check, str) else check
    points = grid_points(grid) if isinstance(grid, dict) else [dict(p) for p in grid]
    if not 1 <= len(points) <= MAX_POINTS:
        raise ValueError(f"--grid: must give 1 to {MAX_POINTS} points, got {len(points)}")
    unknown = {k for p in points for k in p} - {o.name for o in check.options}
    if unknown:
        raise ValueError(f"--grid: unknown option(s) for check {check.name!r}: {', '.join(sorted(unknown))}")
    for p in points:  # fail fast on a bad value, before any work
        check.parse_params(p)
    return check, points


def run_sweep(check: Check | str, grid: dict[str, list[str]] | list[dict], *, seed: int = 0, backend: str = "numba",
              workers: int = 1, scheduler: str | None = None, out: Path | str | None = None,
              log=None) -> Path:
    """Run every grid point not yet on disk, then write the tidy CSV; returns the CSV path.

    ``grid`` is a dict ``{name: [values]}`` or an explicit list of points.  ``workers = 1``
    without a scheduler runs in this process; ``workers > 1`` uses that many spawned
    processes; ``scheduler`` is a Dask ``distributed`` address (``tcp://host:8786``).
    """
    check, points = validate_sweep(check, grid)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer ≥ 1, got {workers!r}")
    client = None if scheduler is None else _connect(check_scheduler(scheduler))  # before any file or work
    out = Path(out or Path("sweeps") / check.name)
    pdir = out / "points"
    pdir.mkdir(parents=True, exist_ok=True)
    log = log or (lambda msg: print(msg, file=sys.stderr))
    todo = [p for p in points
            if not _done(pdir / f"{point_key(check.name, p)}.json", _record(check, p, seed, backend), log)]
    log(f"sweep {check.name}: {len(points)} points, {len(points) - len(todo)} already done, {len(todo)} to run")

    def save(p: dict, result: dict) -> None:
        atomic_write_text(pdir / f"{point_key(check.name, p)}.json",
                          json.dumps(to_jsonable(_record(check, p, seed, backend, result))) + "\n")
        log(f"  done {json.dumps(p, sort_keys=True)} in {result['seconds']:.2f} s")

    t0 = time.perf_counter()
    if client is not None:
        from distributed import as_completed

        with client:
            futs = {client.submit(run_point, check, p, seed, backend, pure=False): i for i, p in enumerate(todo)}
            try:
                for fut in as_completed(futs):
                    save(todo[futs[fut]], fut.result())
            except KeyboardInterrupt:
                client.cancel(list(futs))
                _interrupted(log, pdir, len(points))
                raise
    elif todo and workers > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        threads = max(1, (os.cpu_count() or 1) // workers)
        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                                   initargs=(threads, os.getpid()))
        try:
            ref = _worker_ref(check)
            futs = {pool.submit(run_point, ref, p, seed, backend): i for i, p in enumerate(todo)}
            for fut in as_completed(futs):
                save(todo[futs[fut]], fut.result())
        except BaseException as e:  # Ctrl-C, a failed point: stop every worker now, keep what finished
            _stop_pool(pool)
            if isinstance(e, KeyboardInterrupt):
                _interrupted(log, pdir, len(points))
            raise
        pool.shutdown(wait=True)
    else:
        try:
            for p in todo:
                save(p, run_point(check, p, seed, backend))
        except KeyboardInterrupt:
            _interrupted(log, pdir, len(points))
            raise
    path = write_csv(check.name, points, pdir, out / f"{check.name}.csv")
    log(f"sweep {check.name}: wrote {path} ({time.perf_counter() - t0:.1f} s)")
    return path


def _connect(scheduler: str):
    """A Dask ``Client`` of ``scheduler``, or :class:`~stylized.InvalidInput` naming ``--scheduler`` when it
    does not answer as one within :data:`CONNECT_TIMEOUT` seconds."""
    from distributed import Client

    try:
        return Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s")
    except Exception as e:  # noqa: BLE001 - refused, timed out, or something that is not a scheduler answered
        raise InvalidInput(f"--scheduler: {str(scheduler)[:80]!r} did not answer as a Dask scheduler within "
                           f"{CONNECT_TIMEOUT} s ({type(e).__name__}); nothing was run") from None


def _stop_pool(pool) -> None:
    """Cancel the pending points and end the worker processes now (SIGTERM, then SIGKILL after 5 s)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(1)


def _interrupted(log, pdir: Path, total: int) -> None:
    done = len(list(pdir.glob("*.json")))
    log(f"sweep interrupted: the points that finished are kept in {pdir} (about {done} of {total}); "
        "run the same command again to resume")


def check_scheduler(address: str, timeout: float = CONNECT_TIMEOUT, probe: bool = True) -> str:
    """``address`` if it is a Dask scheduler address (``tcp://host:port``, ``host:port``, ``tls://…``,
    ``inproc://…``) and, for TCP with ``probe``, something listens there (tried for ``timeout`` seconds);
    else a ``ValueError`` naming ``--scheduler`` (one line, before any work)."""
    import socket

    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError as e:
        raise ValueError(f"--scheduler: needs dask.distributed (pip install -e '.[dask]'): {e}") from None
    shown = repr(str(address)[:80])
    try:
        scheme, loc = parse_address(str(address))
        if scheme == "inproc":  # a scheduler inside this very process (LocalCluster(processes=False)), or nothing
            from distributed.comm.inproc import global_manager

            if global_manager.get_listener_for(loc) is None:
                raise ValueError("no scheduler of this process listens there (inproc:// lives in one process)")
            return address
        if scheme not in ("tcp", "tls"):
            return address
        host, port = parse_host_port(loc)
    except (ValueError, TypeError) as e:
        raise ValueError(f"--scheduler: must be a Dask scheduler address such as tcp://HOST:8786; got {shown} "
                         f"({e})") from None
    if not host or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"--scheduler: must be {scheme}://HOST:PORT with a host and a port in 1…65535; got {shown}")
    if not probe:
        return address
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except (OSError, UnicodeError) as e:
        raise ValueError(f"--scheduler: cannot reach {shown} within {timeout:g} s "
                         f"({getattr(e, 'strerror', None) or type(e).__name__})") from None
    return address


def write_csv(check_name: str, points: list[dict], pdir: Path, path: Path) -> Path:
    """Tidy CSV of every row of every point (point parameters first), in grid order."""
    rows: list[dict] = []
    for p in points:
        point_file = pdir / f"{point_key(check_name, p)}.json"
        try:
            rec = parse_json(point_file.read_text())
            why = (result_problem(rec.get("result"), check_name) if isinstance(rec, dict)
                   and isinstance(rec.get("point"), dict) else "not a sweep point")
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            why = (str(e).splitlines() or [type(e).__name__])[0]
        if why is not None:  # never copied into the CSV
            raise ValueError(f"{point_file} is not a valid finished point ({why[:100]}); run the sweep again")
        res = rec["result"]
        head = {**rec["point"], "point": point_key(check_name, p), "seed": res["params"]["seed"], "holds": res["holds"]}
        rows += [{**head, **{k: v for k, v in r.items() if k not in head}} for r in res["rows"]]
    atomic_write_text(path, rows_csv(rows))
    return path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sweep`` to the CLI's subparsers (sets ``func``)."""
    ps = subparsers.add_parser("sweep", help="run a parameter grid of a check (local processes or Dask)",
                               description="Run a parameter grid of any registered check; resumable, one file per point.")
    ps.add_argument("check", metavar="CHECK", help="check name (see stylized check --list)")
    ps.add_argument("--grid", action="append", default=[], metavar="NAME=v1,v2",
                    help="option values to sweep (repeatable; ';' separates list-valued values)")
    ps.add_argument("--workers", type=arg_type(Int(1, 256)), default=1, help="local processes (default 1: in this process)")
    ps.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask distributed scheduler address")
    ps.add_argument("--out", default=None, metavar="DIR", help="output folder (default sweeps/CHECK)")
    ps.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0, help="sweep seed; each point's seed is derived from it (default 0)")
    ps.add_argument("--backend", default="numba", type=arg_type(Choice(*BACKENDS)),
                    help=f"array backend: {', '.join(BACKENDS)} (default numba)")
    ps.add_argument("--dry-run", action="store_true", help="validate the check, grid and options; print the points; run nothing")
    ps.set_defaults(func=_cmd_sweep)
    return ps


def _cmd_sweep(args) -> int:
    if args.seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {args.seed}")
    grid = parse_grid(args.grid)
    if not grid:
        raise ValueError("--grid: give at least one --grid NAME=v1,v2")
    if args.dry_run:
        check, points = validate_sweep(args.check, grid)
        print(json.dumps({"check": check.name, "points": len(points), "seed": args.seed, "backend": args.backend}))
        return 0
    print(run_sweep(args.check, grid, seed=args.seed, backend=args.backend, workers=args.workers,
                    scheduler=args.scheduler, out=args.out))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m stylized.harness.sweep CHECK --grid …`` (the same as ``stylized sweep``)."""
    from ..core.options import OptionParser  # one-line usage errors (exit 2)

    parser = OptionParser(prog="stylized")
    add_parser(parser.add_subparsers(dest="command", parser_class=OptionParser))
    args = parser.parse_args(["sweep", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except ValueError as e:
        print(f"stylized: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
