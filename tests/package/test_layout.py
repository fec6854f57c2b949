"""The package layout shows the layers (core ← laws ← theory ← engine ← harness ← cli); every module has one
address (the flat layout's names, ``stylized.scores`` …, are gone)."""

import importlib
from pathlib import Path

import pytest

import stylized

PKG = Path(stylized.__file__).resolve().parent
LAYERS = ("core", "laws", "theory", "engine", "harness", "cli")


def test_the_top_level_holds_only_the_layers():
    files = sorted(p.name for p in PKG.iterdir() if p.suffix == ".py")
    dirs = sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    # besides the layers: the public property-test tools (Hypothesis strategies and the pytest plugin), above every layer
    assert files == ["__init__.py", "__main__.py", "pytest_plugin.py", "strategies.py"]
    assert dirs == sorted(LAYERS)


@pytest.mark.parametrize("old", ["stylized.bounds", "stylized.families", "stylized.cli_table"])
def test_a_module_has_one_address(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert not hasattr(stylized, old.split(".")[1])


def _import_graph():
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", PKG.parent / "scripts" / "import_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _package(root: Path, b_imports_a: str) -> Path:
    """A tiny checkout: ``stylized.core.a`` imports ``b`` inside a function; ``b`` imports ``a`` as given."""
    core = root / "stylized" / "core"
    core.mkdir(parents=True)
    for f in (root / "stylized" / "__init__.py", core / "__init__.py"):
        f.write_text("")
    (core / "a.py").write_text("def f():\n    from . import b\n")
    (core / "b.py").write_text(b_imports_a)
    return root


@pytest.mark.parametrize("b_imports_a,listed,fails", [
    ("import math\n", 0, False),                       # no cycle
    ("def g():\n    from . import a\n", 1, True),      # both directions inside functions
    ("from . import a\n", 1, True),                    # one direction at module level
])
def test_the_import_graph_fails_on_a_cycle_through_imports_inside_functions(tmp_path, capsys, b_imports_a, listed,
                                                                            fails):
    """``scripts/import_graph.py``: a cycle that closes only through an import inside a function is an error
    (exit 1), listed with the import that closes it."""
    graph, root = _import_graph(), str(_package(tmp_path, b_imports_a))
    assert graph.main(["--root", root]) == (1 if fails else 0)
    out = capsys.readouterr().out
    assert f"import cycles inside stylized counting imports inside functions (groups of modules that reach each other; " \
           f"an error): {listed}" in out
    assert ("stylized.core.a -> stylized.core.b (in a function)" in out) == fails


def test_the_import_graph_fails_on_a_module_level_cycle(tmp_path, capsys):
    root = _package(tmp_path, "from . import a\n")
    (root / "stylized" / "core" / "a.py").write_text("from . import b\n")
    assert _import_graph().main(["--root", str(root)]) == 1
    assert "module-level import cycles inside stylized: 1" in capsys.readouterr().out


def test_tests_mirror_the_code():
    """``tests/`` has one folder per library layer and per transformer sub-package, and no test at its top."""
    tests = Path(__file__).resolve().parents[1]
    root = tests.parent
    assert not sorted(p.name for p in tests.glob("test_*.py"))
    for layer in LAYERS:
        assert list((tests / layer).glob("test_*.py")), f"tests/{layer}/ mirrors stylized/{layer}/"
    subs = sorted(p.parent.name for p in (root / "simulations" / "transformer").glob("*/__init__.py"))
    assert subs == sorted(p.name for p in (tests / "transformer").iterdir()
                          if p.is_dir() and p.name != "__pycache__"), subs
    for sub in subs:
        assert list((tests / "transformer" / sub).glob("test_*.py")), f"tests/transformer/{sub}/"
