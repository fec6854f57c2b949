"""Acceptance: ``pip install .`` into a fresh virtual environment, then ``stylized check haar-law --out ./o``
writes only under ``./o`` — nothing in the current directory besides it, nothing in site-packages.

Slow (a virtual environment and an install, from pip's cache when it has the wheels): ``pytest -m slow
tests/package/test_install.py``.  Byte-code caches (``__pycache__``: Python's ``.pyc`` and Numba's compiled kernels)
are caches, not outputs, and are left out of the comparison.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_pip_install_then_check_with_out_writes_only_under_out(tmp_path):
    venv = Path(os.environ.get("STYLIZED_TEST_VENV", tmp_path / "v"))
    if not (venv / "bin" / "stylized").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
        p = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], capture_output=True, text=True,
                           timeout=1800)
        if p.returncode != 0:
            pytest.skip(f"pip install failed (no network and no cached wheels?): {p.stderr[-500:]}")
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import stylized, pathlib; "
                                "print(pathlib.Path(stylized.__file__).parent.parent)"],
                               capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip())
    assert site != ROOT, "the test needs a non-editable install"
    before = _files(site)
    work = tmp_path / "x"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STYLIZED_") and k != "NUMBA_CACHE_DIR"}
    p = subprocess.run([str(venv / "bin" / "stylized"), "check", "haar-law", "--out", "./o", "--quiet"], cwd=work,
                       capture_output=True, text=True, timeout=1800, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().startswith("C2 haar-law: HOLDS") and len(p.stdout.strip().splitlines()) == 1
    assert {f.split("/")[0] for f in _files(work)} == {"o"}
    assert {"o/results/haar-law.json", "o/results/haar-law.csv"} <= _files(work)
    assert _files(site) == before, sorted(_files(site) ^ before)[:10]
    # the checkout-only command: installed as an entry point, but its package (benchmarks/) is not installed
    p = subprocess.run([str(venv / "bin" / "stylized"), "bench", "--repeat", "1"], cwd=work, capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert len(p.stderr.strip().splitlines()) == 1 and "bench: needs" in p.stderr
