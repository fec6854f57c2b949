"""The module names of the flat layout (``stylized.scores``, ``stylized.families``, …) kept importable.

Each old name is the *same module object* as its new home (``stylized.engine.scores``), so imports,
``mock.patch("stylized.scores.f")`` and pickles made with the old names keep working.  Imports nothing
but the standard library; installed by ``stylized/__init__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

_GROUPS = {
    "core": ("_broadcast", "_cache", "backend", "counter_rng", "errors", "estimators", "montecarlo", "options"),
    "laws": ("families", "family_args"),
    "theory": ("bounds", "contraction_theory", "markov_theory", "overlap_laws", "phase_cdf", "score_laws",
               "score_reference", "value_theory", "weight_laws", "growth", "retrieval"),
    "engine": ("attention", "context_sweep", "farmass", "kernels", "lse", "sampling", "score_chains", "scores",
               "transport", "transport_reference", "values"),
    "harness": ("api", "falsify", "plotting", "registry", "report", "results", "sweep", "testing"),
}
#: old module name → new module name
OLD_NAMES: dict[str, str] = {f"stylized.{m}": f"stylized.{g}.{m}" for g, ms in _GROUPS.items() for m in ms}
OLD_NAMES |= {"stylized.cli_table": "stylized.cli.table", "stylized.cli_figures": "stylized.cli.figures",
              "stylized.cli_validate": "stylized.cli.validate"}


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in OLD_NAMES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def __init__(self) -> None:
        self._own_spec: dict[str, importlib.machinery.ModuleSpec] = {}

    def create_module(self, spec):
        module = importlib.import_module(OLD_NAMES[spec.name])
        self._own_spec[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # the import system set the module's __spec__ to the alias spec: give it back its own
        own = self._own_spec.pop(module.__spec__.name, None)
        if own is not None:
            module.__spec__ = own


def install() -> None:
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
