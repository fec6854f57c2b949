"""The documentation's examples run: ``docs/examples/*.py`` each exit 0 (the tutorial cannot go stale).

Slow: CI runs them in ``make docs`` (the docs build executes every example and fails if one fails), so
``make test`` does not run them twice.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, tmp_path):
    r = subprocess.run([sys.executable, str(path), str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert list(tmp_path.glob("*.png")), "the example draws its figure"
