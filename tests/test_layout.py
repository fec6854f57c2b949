"""The package layout shows the layers (core ← laws ← theory ← engine ← harness ← cli), and the flat
layout's public module names still import, as the very same module objects."""

import importlib
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import stylized
from stylized._aliases import OLD_NAMES

PKG = Path(stylized.__file__).resolve().parent
LAYERS = ("core", "laws", "theory", "engine", "harness", "cli")


def test_the_top_level_holds_only_the_layers():
    files = sorted(p.name for p in PKG.iterdir() if p.suffix == ".py")
    dirs = sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    # besides the layers: the public property-test tools (Hypothesis strategies and the pytest plugin), above every layer
    assert files == ["__init__.py", "__main__.py", "_aliases.py", "pytest_plugin.py", "strategies.py"]
    assert dirs == sorted(LAYERS)


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_an_old_module_name_is_the_new_module(old):
    assert importlib.import_module(old) is importlib.import_module(OLD_NAMES[old])
    assert importlib.import_module(old).__spec__.name == OLD_NAMES[old]  # its own spec, not the alias's


def test_patching_an_old_name_patches_the_new_module():
    from stylized.theory import bounds

    with mock.patch("stylized.bounds.mixing_window", return_value=-1.0):
        assert bounds.mixing_window(0.5, 0.01) == -1.0
    assert bounds.mixing_window(0.5, 0.01) > 0


def test_a_fresh_interpreter_imports_old_names_first():
    code = ("import stylized.families as f, stylized.laws.families as g, stylized.theory as th; "
            "assert f is g and th.levy_tail(0.5, 16) > 0; print('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
