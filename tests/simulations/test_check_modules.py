"""The discovery rule of :func:`simulations.check_modules`: a module without a leading underscore is a check (it
registers one), a helper carries the underscore (it registers none), in ``simulations/`` and its check packages."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import simulations
from stylized.harness.registry import load_checks

SIMULATIONS = Path(simulations.__file__).parent


def test_every_check_module_registers_a_check_and_only_they_do():
    names = set(simulations.check_modules())
    registered = {c.module for c in load_checks(external=True).values() if c.module.startswith("simulations.")}
    assert registered <= names, f"checks registered outside check_modules(): {registered - names}"
    unregistered = names - registered  # a check needing torch is left out where torch is missing
    assert not unregistered or importlib.util.find_spec("torch") is None, f"modules that register no check: {unregistered}"


def test_helpers_carry_the_underscore():
    folders = [SIMULATIONS, *(SIMULATIONS / pkg for pkg in simulations.CHECK_PACKAGES)]
    helpers = [p for folder in folders for p in folder.glob("_*.py") if p.name != "__init__.py"]
    assert helpers, "no helper modules found"
    registering = [str(p.relative_to(SIMULATIONS)) for p in helpers if _calls_register(p)]
    assert not registering, f"private modules that register a check (drop the underscore): {registering}"


def _calls_register(path: Path) -> bool:
    """Whether the module's source calls ``register(…)`` (or ``registry.register(…)``) anywhere."""
    calls = (n.func for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call))
    return any(getattr(f, "id", getattr(f, "attr", None)) == "register" for f in calls)
