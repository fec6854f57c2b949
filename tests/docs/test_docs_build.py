"""The documentation site builds with warnings as errors (``make docs``), and its generated pages cover the registry.

The build itself is ``slow`` (it runs every example in ``docs/examples/`` and every docstring example, about
1-2 minutes): ``make test`` leaves it to ``make docs``, which CI runs after the tests; ``make test-all`` runs it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _gen_claims():
    spec = importlib.util.spec_from_file_location("gen_claims", DOCS / "gen_claims.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: what a page must not show: Furo draws a red "ERROR: Adding a table of contents …" box with CSS over any
#: ``.. contents::`` (so neither ``-W`` nor the page's text sees it), docutils' system messages (an error box in
#: the page), error and warning admonitions, "ERROR:"/"WARNING:" text, unresolved references (``problematic``).
BOX_PATTERNS = {
    "Furo's table-of-contents error box": re.compile(r'class="[^"]*\bcontents\b(?![^"]*this-will-duplicate)[^"]*"'),
    "system message": re.compile(r"system-message"),
    "error or warning admonition": re.compile(r'class="admonition (?:error|warning)'),
    "ERROR:/WARNING: text": re.compile(r"\b(?:ERROR|WARNING):"),
    "unresolved reference": re.compile(r'class="problematic"'),
}


def error_boxes(html: str) -> list[str]:
    """The kinds of error or warning box ``html`` shows (what only a browser without JavaScript sees is left out)."""
    html = re.sub(r"<noscript>.*?</noscript>", "", html, flags=re.S)  # search.html: "activate JavaScript"
    return [what for what, pattern in BOX_PATTERNS.items() if pattern.search(html)]


def test_error_box_detector_sees_each_kind():
    assert error_boxes('<nav class="contents local" id="contents">') == ["Furo's table-of-contents error box"]
    assert error_boxes('<aside class="topic contents this-will-duplicate-information-and-it-is-still-useful-here">') == []
    assert error_boxes('<div class="system-message"><p class="system-message-title">') == ["system message"]
    assert error_boxes('<div class="admonition warning">') == ["error or warning admonition"]
    assert error_boxes("<p>WARNING: something</p>") == ["ERROR:/WARNING: text"]
    assert error_boxes('<noscript><div class="admonition error">activate JavaScript</div></noscript>') == []
    assert error_boxes('<p class="sidebar-brand-text">the contents of the table</p>') == []


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
    assert ".. contents::" not in text  # Furo draws a red error box over it
    for page in (p for p in paths if p.suffix == ".rst"):  # every figure a page shows is a committed file
        for line in page.read_text().splitlines():
            if line.startswith(".. figure:: "):
                target = line.split(":: ", 1)[1]
                assert (page.parent / target).resolve().exists(), (page.name, target)
    gallery = (tmp_path / "gallery.rst").read_text()  # every committed figure, once
    for fig in (ROOT / "figures").glob("[!.]*.png"):
        assert gallery.count(f"``figures/{fig.name}``") == 1, fig.name
    import simulations

    for m in simulations.check_modules():
        assert (tmp_path / "api" / f"{m}.rst").exists(), m


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "myst_parser", "furo", "sphinx-mathjax-offline"):
        pytest.importorskip(module, reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    for page in ("index.html", "api/stylized.html", "api/stylized.theory.html", "api/stylized.laws.base.html",
                 "_generated/claims/index.html", "_generated/claims/C1.html", "_generated/api/simulations.html",
                 "tutorials/check_your_own_lemma.html", "tutorials/sweep_local_and_dask.html",
                 "tutorials/regenerate_a_figure.html", "guide/model.html", "guide/reading_a_verdict.html",
                 "guide/c6_study.html", "changelog.html"):
        assert (out / page).exists(), page
    assert "far_mass_bound_sweep.png" in (out / "tutorials" / "sweep_local_and_dask.html").read_text()
    pages = sorted(out.rglob("*.html"))
    boxes = {str(p.relative_to(out)): found for p in pages if (found := error_boxes(p.read_text(errors="replace")))}
    assert not boxes, f"{len(boxes)} of {len(pages)} pages show an error or warning box: {boxes}"
    # an option stays two hyphens: docutils' smart dashes rendered "--list" as "–list"
    dashed = {str(p.relative_to(out)): m.group(0) for p in pages
              if (m := re.search(r"[\s(>]\u2013[a-z][a-z-]+", p.read_text(errors="replace")))}
    assert not dashed, f"options rendered with an en dash: {dashed}"
    # formulas render offline: MathJax from _static, never from the network
    assert (out / "_static" / "mathjax" / "tex-svg.js").exists()
    remote = [str(p.relative_to(out)) for p in pages if re.search(r'<script[^>]+src="https?://', p.read_text())]
    assert not remote, f"pages loading a script from the network: {remote}"
    # the own-law tutorial shows its printed output and its figure, drawn by this build
    lemma = (out / "tutorials" / "check_your_own_lemma.html").read_text()
    assert "my_cayley_mixing.png" in lemma and "contract" in lemma and "holds=True" in lemma
