"""The staleness hash covers the code a check's numbers come from: every ``simulations`` module it imports,
transitively (module level and inside functions), read with :mod:`ast`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stylized.harness import results
from stylized.harness.code_graph import imports_of, transitive_imports
from stylized.harness.registry import get_check

ROOT = Path(results.__file__).resolve().parents[2]


@pytest.fixture
def tree_copy(tmp_path, monkeypatch):
    """A copy of the library and the experiments (sources only); the hash reads it instead of the checkout."""
    skip = shutil.ignore_patterns("__pycache__", "results", "*.pyc")
    for pkg in ("stylized", "simulations"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=skip)
    monkeypatch.setattr(results, "_ROOT", tmp_path)
    return tmp_path


def _saved(check) -> dict:
    return {"params": {**results.to_jsonable(check.parse_params()), "seed": 0, "backend": "numba"},
            "meta": {"code_hash": results.code_hash(check.module)}}


@pytest.mark.parametrize("check_name,helper", [
    ("value-incoherence", "value/_common.py"),      # a shared experiment module
    ("far-retrieval", "_far_retrieval_theory.py"),  # a private theory helper
    ("mixing", "_common.py"),                       # the common experiment plumbing
    ("mixing", "_mixing_mutants.py"),               # a mutants helper
    ("far-mass-growth", "_far_mass_growth_plot.py"),  # a plot helper
])
def test_editing_a_helper_makes_the_check_stale(tree_copy, check_name, helper):
    check = get_check(check_name)
    saved = _saved(check)
    assert results.is_up_to_date(check, saved)
    path = tree_copy / "simulations" / helper
    path.write_text(path.read_text() + "\n# edited\n")
    assert not results.is_up_to_date(check, saved), f"editing {helper} left {check_name} up to date"


def test_editing_an_unrelated_experiment_leaves_the_check_up_to_date(tree_copy):
    check = get_check("value-incoherence")
    saved = _saved(check)
    path = tree_copy / "simulations" / "mixing.py"
    path.write_text(path.read_text() + "\n# edited\n")
    assert results.is_up_to_date(check, saved)


def test_imports_inside_functions_and_relative_imports_are_followed(tmp_path):
    sim = tmp_path / "simulations"
    sim.mkdir()
    (sim / "__init__.py").write_text("")
    (sim / "check.py").write_text("import numpy\n\ndef run():\n    from simulations import _lazy\n    return _lazy\n")
    (sim / "_lazy.py").write_text("from . import _deep\nfrom ._other import thing\n")
    (sim / "_deep.py").write_text("try:\n    import simulations._cond as c\nexcept ImportError:\n    c = None\n")
    (sim / "_other.py").write_text("thing = 1\n")
    (sim / "_cond.py").write_text("")
    (sim / "_unused.py").write_text("")
    assert imports_of(sim / "check.py", tmp_path) == [("simulations._lazy", False)]
    assert ("simulations._cond", True) in imports_of(sim / "_deep.py", tmp_path)
    assert transitive_imports("simulations.check", tmp_path) == [
        "simulations._cond", "simulations._deep", "simulations._lazy", "simulations._other"]


def test_a_cycle_of_helpers_terminates(tmp_path):
    sim = tmp_path / "simulations"
    sim.mkdir()
    (sim / "a.py").write_text("def f():\n    from simulations import b\n")
    (sim / "b.py").write_text("from simulations import a\n")
    assert transitive_imports("simulations.a", tmp_path) == ["simulations.b"]


def test_import_graph_reports_cycles_through_imports_inside_functions(capsys):
    """``scripts/import_graph.py`` reads imports with the same parser and lists the cycles that close only
    through imports inside functions (reported, not yet an error)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main([])
    out = capsys.readouterr().out
    assert "import cycles inside stylized counting imports inside functions" in out
    path = ROOT / "simulations" / "value" / "incoherence.py"
    assert mod.imports_of(path) == imports_of(path, ROOT)
