"""The documentation site builds with warnings as errors (``make docs``), and its generated pages cover the registry.

The build itself is ``slow`` (it runs every example in ``docs/examples/`` and every docstring example, about
1-2 minutes): ``make test`` leaves it to ``make docs``, which CI runs after the tests; ``make test-all`` runs it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _gen_claims():
    spec = importlib.util.spec_from_file_location("gen_claims", DOCS / "gen_claims.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_claim_pages_cover_every_check(tmp_path):
    from stylized.harness.registry import load_checks

    paths = _gen_claims().generate(tmp_path)
    text = "\n".join(p.read_text() for p in paths if p.suffix == ".rst")
    checks = load_checks(external=True)
    for name, check in checks.items():
        assert f".. _check-{name}:" in text, name
        assert (tmp_path / "claims" / f"{check.claim}.rst").exists()
        for m in check.mutants:
            assert f"``{m.name}``" in text, (name, m.name)
    for line in text.splitlines():  # every figure a page shows is a committed file
        if line.startswith(".. figure:: "):
            target = line.split(":: ", 1)[1]
            assert (tmp_path / "claims" / target).resolve().exists(), target
    import simulations

    for m in simulations.check_modules():
        assert (tmp_path / "api" / f"{m}.rst").exists(), m


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "myst_parser", "furo"):
        pytest.importorskip(module, reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    for page in ("index.html", "api/stylized.html", "api/stylized.theory.html", "api/stylized.laws.base.html",
                 "_generated/claims/index.html", "_generated/claims/C1.html", "_generated/api/simulations.html",
                 "tutorials/check_your_own_lemma.html", "tutorials/sweep_local_and_dask.html",
                 "tutorials/regenerate_a_figure.html"):
        assert (out / page).exists(), page
    assert "far_mass_bound_sweep.png" in (out / "tutorials" / "sweep_local_and_dask.html").read_text()
