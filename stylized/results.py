"""Results on disk: one JSON (full result + metadata) and one tidy CSV (rows) per check.

Writes are atomic (temporary file, then ``os.replace``), so an interrupted run never
leaves a half-written result, and ``check --all`` skips results that are up to date
(same parameters, same code) — nothing already computed is lost.

Locations default to ``simulations/results/`` and ``figures/`` beside the package;
``STYLIZED_RESULTS_DIR`` and ``STYLIZED_FIGURES_DIR`` override them (tests use this).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = [
    "results_dir",
    "figures_dir",
    "atomic_write_text",
    "save_result",
    "load_result",
    "code_hash",
    "run_check",
    "is_up_to_date",
    "to_jsonable",
    "rows_csv",
]

_ROOT = Path(__file__).resolve().parent.parent
# Files whose change can move a number: every library module but the plumbing around it.
_NOT_NUMERIC = {"__init__.py", "__main__.py", "cli.py", "report.py", "registry.py", "results.py", "bench.py", "sweep.py",
                "falsify.py"}


def results_dir() -> Path:
    return Path(os.environ.get("STYLIZED_RESULTS_DIR", _ROOT / "simulations" / "results"))


def figures_dir() -> Path:
    return Path(os.environ.get("STYLIZED_FIGURES_DIR", _ROOT / "figures"))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (same-directory temporary file + ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    """SHA-256 (12 hex digits) of the check's module source and the numeric core it runs on."""
    h = hashlib.sha256()
    files = sorted(f for f in (_ROOT / "stylized").glob("*.py") if f.name not in _NOT_NUMERIC)
    if module:
        files.append(_ROOT / Path(*module.split(".")).with_suffix(".py"))
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


def save_result(result: dict, directory: Path | None = None) -> Path:
    """Write ``<claim>.json`` and ``<claim>.csv`` atomically; returns the JSON path."""
    directory = Path(directory or results_dir())
    result = to_jsonable(result)
    path = directory / f"{result['claim']}.json"
    atomic_write_text(directory / f"{result['claim']}.csv", rows_csv(result["rows"]))
    atomic_write_text(path, json.dumps(result, indent=1, sort_keys=False, allow_nan=False) + "\n")
    return path


def load_result(name: str, directory: Path | None = None) -> dict | None:
    """The saved result ``<name>.json``, or None when absent.

    A corrupt file (not JSON, or not a result) is named on stderr and moved aside to
    ``<name>.json.corrupt`` so that the caller recomputes it.
    """
    path = Path(directory or results_dir()) / f"{name}.json"
    if not path.exists():
        return None
    try:
        r = json.loads(path.read_text())
        if not isinstance(r, dict) or "holds" not in r or "rows" not in r:
            raise ValueError("not a check result")
        return r
    except (ValueError, UnicodeDecodeError) as e:
        aside = path.with_name(path.name + ".corrupt")
        os.replace(path, aside)
        print(f"stylized: {path} is corrupt ({str(e).splitlines()[0][:80]}); moved to {aside.name}, recomputing",
              file=sys.stderr)
        return None


def check_writable(directory: Path) -> None:
    """Raise ``ValueError`` (before any work) when results cannot be written to ``directory``."""
    directory = Path(directory)
    probe = directory
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"results directory {directory} is not writable; choose another with STYLIZED_RESULTS_DIR")


def is_canonical(check, params: dict | None, seed: int, backend: str) -> bool:
    """Whether a run is the paper's: the check's built-in defaults, seed 0, its default backend."""
    given = {k: v for k, v in (params or {}).items() if v is not None}
    return (seed == 0 and backend == "numba"
            and to_jsonable(check.parse_params(given)) == to_jsonable(check.parse_params()))


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
    from .backend import check_backend

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
    check_backend(backend)
    if backend not in check.backends:
        raise ValueError(f"backend for check {check.name!r} must be one of {', '.join(check.backends)}; got {backend!r}")
    p = check.parse_params(params)
    t0 = time.perf_counter()
    out = check.run(p, seed=int(seed), backend=backend, progress=progress)
    seconds = time.perf_counter() - t0
    result = {"claim": check.name, "params": {**p, "seed": int(seed), "backend": backend},
              "holds": bool(out.pop("holds")), "rows": out.pop("rows"), "seconds": round(seconds, 3)}
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
