"""Results on disk: one JSON (full result + metadata) and one tidy CSV (rows) per check.

Writes are atomic (temporary file, then ``os.replace``), so an interrupted run never
leaves a half-written result, and ``check --all`` skips results that are up to date
(same parameters, same code) — nothing already computed is lost.

Where things go (:func:`output_root`, :func:`results_dir`, :func:`figures_dir`): under the
directory given with ``--out`` (:func:`use_output_root`) when there is one; else, in a source
checkout, its ``simulations/results/`` and ``figures/``; else (an installed package) ``results/``
and ``figures/`` in the current directory — never inside site-packages.  ``STYLIZED_RESULTS_DIR``
and ``STYLIZED_FIGURES_DIR`` override the two folders (tests use this).
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..core.errors import InvalidInput
from .code_graph import module_path, transitive_imports
from .result_schema import parse_json, result_problem

__all__ = [
    "output_root",
    "write_pair",
    "use_output_root",
    "in_source_checkout",
    "results_dir",
    "figures_dir",
    "Stopwatch",
    "numba_cache_is_warm",
    "atomic_write",
    "atomic_write_text",
    "check_writable",
    "validate_run",
    "save_result",
    "load_result",
    "code_hash",
    "run_check",
    "is_up_to_date",
    "to_jsonable",
    "rows_csv",
]

_ROOT = Path(__file__).resolve().parents[2]
# Files whose change can move a number: every library module but the plumbing around it.
_NOT_NUMERIC = {"__main__.py", "core/_cache.py", "core/errors.py", "core/options.py", "laws/registry.py",
                *(f"harness/{m}.py" for m in ("api", "code_graph", "falsify", "plotting", "registry", "report",
                                              "result_schema", "results", "sweep"))}


def _numeric(f: Path) -> bool:
    """Whether ``f`` (under ``stylized/``) can change a check's numbers: not the command line, the harness's
    bookkeeping, nor a package ``__init__``."""
    rel = f.relative_to(_ROOT / "stylized").as_posix()
    return f.name != "__init__.py" and not rel.startswith("cli/") and rel not in _NOT_NUMERIC


_OUT: Path | None = None  # set by ``--out`` (use_output_root)


def in_source_checkout() -> bool:
    """Whether the package runs from a source checkout (``pyproject.toml`` and ``simulations/`` beside it)."""
    return (_ROOT / "pyproject.toml").is_file() and (_ROOT / "simulations").is_dir()


def output_root() -> Path:
    """Where ``paper_checks.md`` goes: the ``--out`` directory, else the checkout's root, else the current directory."""
    out = _explicit_out()
    if out is not None:
        return out
    return _ROOT if in_source_checkout() else Path.cwd()


@contextmanager
def use_output_root(directory: str | os.PathLike | None) -> Iterator[Path | None]:
    """Within the block, results, figures and ``paper_checks.md`` go under ``directory`` (``None``: no change).

    The choice is also exported as ``STYLIZED_OUT`` so that worker processes see it.
    """
    global _OUT
    if directory is None:
        yield None
        return
    saved, saved_env = _OUT, os.environ.get("STYLIZED_OUT")
    _OUT = Path(directory).resolve()
    os.environ["STYLIZED_OUT"] = str(_OUT)
    try:
        yield _OUT
    finally:
        _OUT = saved
        if saved_env is None:
            os.environ.pop("STYLIZED_OUT", None)
        else:
            os.environ["STYLIZED_OUT"] = saved_env


def _explicit_out() -> Path | None:
    if _OUT is not None:
        return _OUT
    env = os.environ.get("STYLIZED_OUT")
    return Path(env) if env else None


def results_dir() -> Path:
    """Result files: ``<out>/results``, else ``$STYLIZED_RESULTS_DIR``, else the checkout's ``simulations/results``,
    else ``./results``."""
    out = _explicit_out()
    if out is not None:
        return out / "results"
    if "STYLIZED_RESULTS_DIR" in os.environ:
        return Path(os.environ["STYLIZED_RESULTS_DIR"])
    return _ROOT / "simulations" / "results" if in_source_checkout() else Path.cwd() / "results"


def figures_dir() -> Path:
    """Figures: ``<out>/figures``, else ``$STYLIZED_FIGURES_DIR``, else the checkout's ``figures``, else ``./figures``."""
    out = _explicit_out()
    if out is not None:
        return out / "figures"
    if "STYLIZED_FIGURES_DIR" in os.environ:
        return Path(os.environ["STYLIZED_FIGURES_DIR"])
    return output_root() / "figures"


class Stopwatch:
    """Wall-clock seconds since creation (``time.perf_counter``): the package's one timer.

    >>> sw = Stopwatch()
    >>> sw.seconds >= 0
    True
    """

    def __init__(self) -> None:
        self._t0 = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._t0


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Make ``path`` atomically: ``write(tmp)`` fills a same-directory temporary file ``.<name>.*.tmp`` (a
    writer that picks the format from the suffix must be told it), then ``os.replace``.  On any failure (a
    full disk, an interrupt) the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as f:
            f.write(text)

    atomic_write(path, write)


def to_jsonable(x):
    """NumPy scalars/arrays → Python; non-finite floats → ``None`` (JSON has no NaN)."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def code_hash(module: str) -> str:
    """SHA-256 (12 hex digits) of the code a check's numbers come from: the numeric core (every layer of
    ``stylized/``), the check's module, and every ``simulations`` module that module imports, transitively
    (module level and inside functions: :func:`~stylized.harness.code_graph.transitive_imports`)."""
    h = hashlib.sha256()
    files = sorted(f for f in (_ROOT / "stylized").rglob("*.py") if _numeric(f))  # every layer
    if module:
        files.append(_ROOT / Path(*module.split(".")).with_suffix(".py"))
        if files[-1].is_file():
            files += [p for m in transitive_imports(module, _ROOT) if (p := module_path(m, _ROOT)) is not None]
    for f in files:
        if f.exists():
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def rows_csv(rows: list[dict]) -> str:
    """Tidy CSV text of ``rows``: the union of their scalar keys, in first-seen order."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys and not isinstance(r[k], (list, dict))]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in keys})
    return buf.getvalue()


def write_pair(json_path: Path, result: dict, csv_text: str) -> tuple[Path, Path]:
    """Write ``result`` (JSON) and ``csv_text`` beside it (same stem, ``.csv``) as a pair.

    Both texts are serialised and written to temporary files first (a serialisation error or a full
    disk leaves the old pair untouched); then the CSV and, last, the JSON replace the old files.  The
    JSON is the commit point: :func:`load_result` rewrites a CSV that does not match its JSON's rows
    (a crash between the two replaces), so a reader never sees a mismatched pair.
    """
    json_path = Path(json_path)
    directory = json_path.parent
    texts = {json_path.with_suffix(".csv"): csv_text,
             json_path: json.dumps(to_jsonable(result), indent=1, sort_keys=False, allow_nan=False) + "\n"}
    directory.mkdir(parents=True, exist_ok=True)
    tmps: dict[Path, str] = {}
    try:
        for target, text in texts.items():
            fd, tmps[target] = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", newline="") as f:
                f.write(text)
        for target in texts:  # CSV first, JSON last
            os.replace(tmps[target], target)
            del tmps[target]
    finally:
        for tmp in tmps.values():
            if os.path.exists(tmp):
                os.unlink(tmp)
    return json_path, json_path.with_suffix(".csv")


def save_result(result: dict, directory: Path | None = None) -> Path:
    """Write ``<claim>.json`` and ``<claim>.csv`` as a pair (:func:`write_pair`); returns the JSON path."""
    result = to_jsonable(result)
    path = Path(directory or results_dir()) / f"{result['claim']}.json"
    return write_pair(path, result, rows_csv(result["rows"]))[0]


def _repair_csv(path: Path, result: dict) -> None:
    """Rewrite ``<name>.csv`` from the JSON's rows when it is missing or does not match them."""
    csv_path = path.with_suffix(".csv")
    want = rows_csv(result["rows"])
    try:
        if not csv_path.exists() or csv_path.read_text() != want:
            atomic_write_text(csv_path, want)
            print(f"stylized: {csv_path} did not match {path.name}; rewritten from it", file=sys.stderr)
    except OSError:  # a read-only results folder: readers use the JSON
        pass


def load_result(name: str, directory: Path | None = None) -> dict | None:
    """The saved result ``<name>.json``, or None when absent or not valid.

    A result that fails :func:`~stylized.harness.result_schema.result_problem` (not JSON, not a result,
    wrong types, a non-finite number, a verdict that is not a boolean) is named in one line on stderr and
    moved aside to ``<name>.json.corrupt`` (left in place in a read-only folder) so that the caller
    recomputes it: a saved result is a cache of a deterministic run, never copied on when bad.
    """
    path = Path(directory or results_dir()) / f"{name}.json"
    if not path.exists():
        return None
    try:
        r = parse_json(path.read_text())
        why = result_problem(r, name)
    except (ValueError, UnicodeDecodeError, RecursionError, OSError) as e:  # OSError: a folder in its place
        why = (str(e).splitlines() or [type(e).__name__])[0]
    if why is not None:
        aside = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, aside)
            fate = f"moved to {aside.name}"
        except OSError:
            fate = "left in place"
        print(f"stylized: {path} is corrupt ({why[:100]}); {fate}, recomputing", file=sys.stderr)
        return None
    _repair_csv(path, r)
    return r


def probe_writable(directory: str | os.PathLike, tries: int = 50) -> None:
    """Create the folders ``directory`` lacks, create and remove a probe file in it, then remove the folders it
    created; raises the ``OSError`` that stops it (nothing is left behind either way).  Concurrent runs
    (``--workers``, sweeps) probe the same folders: a folder that another probe made or removed between our
    check and our file is tried again (``tries`` times, after a short random pause that grows with the
    attempt, so that probes racing on one new folder fall out of step) rather than reported."""
    import random

    d = Path(directory)
    for attempt in range(tries):
        try:
            _probe_once(d)
            return
        except (FileNotFoundError, FileExistsError, NotADirectoryError) as e:
            if attempt == tries - 1 or (isinstance(e, NotADirectoryError) and attempt >= 2):  # a file stays a file
                raise
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))


def _probe_once(d: Path) -> None:
    made: list[Path] = []
    try:
        missing, p = [], d.absolute()
        while not p.is_dir():  # OSError for a name too long
            if p.exists() or p.is_symlink():
                raise NotADirectoryError(errno.ENOTDIR, f"{p} is a file, not a folder")
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
        for m in reversed(missing):
            try:
                m.mkdir()
            except FileExistsError:  # made meanwhile by a concurrent run: theirs, not ours to remove
                if not m.is_dir():
                    raise
                continue
            made.append(m)
        fd, probe = tempfile.mkstemp(dir=d, prefix=".stylized-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    finally:
        for m in reversed(made):
            try:
                m.rmdir()
            except OSError:  # not empty (a concurrent run's files), or gone
                pass


def check_writable(directory: str | os.PathLike, option: str = "--out") -> None:
    """Prove, before any work, that files can be made in ``directory`` (:func:`probe_writable`).

    Raises :class:`~stylized.InvalidInput` naming ``option`` when it cannot (a regular file on the way, a
    read-only or virtual file system such as ``/proc``, a name too long, no permission).
    """
    try:
        probe_writable(directory)
    except OSError as e:
        why = e.strerror or type(e).__name__
        shown = str(directory) if len(str(directory)) <= 120 else str(directory)[:117] + "…"
        raise InvalidInput(f"{option}: {shown} is not writable ({why}); choose another folder with --out") from None


def validate_run(check, params: dict | None = None, *, seed: int = 0, backend: str = "numba") -> dict:
    """Everything a run refuses, checked before any work: the seed, the backend (named, supported by the check,
    available here) and the options with every limit between them (``check.parse_params``).  Returns the
    parsed options; :class:`~stylized.InvalidInput` naming the first bad one otherwise."""
    from ..core.backend import check_backend

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInput(f"seed must be an integer ≥ 0, got {seed!r}")
    try:
        check_backend(backend)
    except ValueError as e:
        raise InvalidInput(str(e)) from None
    if backend not in check.backends:
        raise InvalidInput(f"backend for check {check.name!r} must be one of {', '.join(check.backends)}; "
                           f"got {backend!r}")
    return check.parse_params(params)


def is_canonical(check, params: dict | None, seed: int, backend: str) -> bool:
    """Whether a run is the paper's: the check's built-in defaults, seed 0, its default backend."""
    given = {k: v for k, v in (params or {}).items() if v is not None}
    return (seed == 0 and backend == "numba"
            and to_jsonable(check.parse_params(given)) == to_jsonable(check.parse_params()))


def numba_cache_is_warm() -> bool:
    """Whether the library's Numba kernels were compiled and cached by an earlier run of this code.

    Looks for Numba's index files (``*.nbi``) beside the package or under ``$NUMBA_CACHE_DIR`` that are
    newer than their module's source.
    """
    base = os.environ.get("NUMBA_CACHE_DIR")
    for pkg in sorted(p for p in (_ROOT / "stylized").iterdir() if (p / "__init__.py").is_file()):
        dirs = sorted(Path(base).glob(f"{pkg.name}_*")) if base else [pkg / "__pycache__"]
        for d in dirs:
            for nbi in d.glob("*.nbi") if d.is_dir() else ():
                src = pkg / (nbi.name.split(".")[0] + ".py")
                if src.exists() and nbi.stat().st_mtime >= src.stat().st_mtime:
                    return True
    return False


def _versions() -> dict:
    import numba
    import scipy

    return {"python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__,
            "numba": numba.__version__, "platform": platform.platform()}


def run_check(check, params: dict | None = None, *, seed: int = 0, backend: str = "numba", progress: bool = True) -> dict:
    """Run ``check`` with ``params`` (defaults filled in) and return its JSON-contract result.

    The result holds ``claim``, ``params`` (including ``seed`` and ``backend``), ``holds``,
    ``rows``, ``seconds``, the check's extra keys, and ``meta`` (versions, time, code hash).
    """
    p = validate_run(check, params, seed=seed, backend=backend)
    if progress and backend == "numba" and not check.external and not numba_cache_is_warm():
        print("compiling numba kernels (first run only)…", file=sys.stderr, flush=True)
    clock = Stopwatch()
    out = check.run(p, seed=int(seed), backend=backend, progress=progress)
    seconds = clock.seconds
    holds = out.pop("holds")  # None: a reported measurement, not a claim (no verdict to hold or fail)
    result = {"claim": check.name, "params": {**p, "seed": int(seed), "backend": backend},
              "holds": None if holds is None else bool(holds), "rows": out.pop("rows"), "seconds": round(seconds, 3)}
    result.update(out)
    result["paper_claim"] = check.claim
    result["meta"] = {"code_hash": code_hash(check.module), "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      **_versions()}
    return to_jsonable(result)


def is_up_to_date(check, result: dict | None, seed: int = 0) -> bool:
    """Whether a saved result was made by the current code with the check's default parameters."""
    if not result:
        return False
    want = to_jsonable(check.parse_params())
    got = {k: v for k, v in result.get("params", {}).items() if k not in ("seed", "backend")}
    return (got == want and result["params"].get("seed") == seed
            and result.get("meta", {}).get("code_hash") == code_hash(check.module))
