"""The experiments: one module per paper check, each registering its :class:`stylized.harness.registry.Check`.

:func:`check_modules` names the modules to import; ``pyproject.toml`` declares it as the
``stylized.checks`` entry point, which is how the library finds them (it never imports
``simulations`` by name).  A module is a check when its name has no leading underscore; helpers carry one.
The checks of a claim with shared code live in a sub-package of :data:`CHECK_PACKAGES` (C5: :mod:`simulations.value`)
under the same rule.  Of the transformer package only :mod:`simulations.transformer.c6.checks` holds checks (C6,
the bridge, retrieval: they read the transformer's committed results and need torch); it is named on its own.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

__all__ = ["CHECK_PACKAGES", "check_modules"]

CHECK_PACKAGES = ("value",)
"""Sub-packages whose public modules are all checks (not ``transformer``: its one check module is named on its own)."""


def check_modules() -> tuple[str, ...]:
    """Every module of this package and of its :data:`CHECK_PACKAGES` that is not private (``_*``): each
    registers its checks on import."""
    here = Path(__file__).parent
    places = [(__name__, here), *((f"{__name__}.{pkg}", here / pkg) for pkg in CHECK_PACKAGES)]
    return tuple(f"{prefix}.{m.name}" for prefix, path in places for m in pkgutil.iter_modules([str(path)])
                 if not m.ispkg and not m.name.startswith("_")) + (
        f"{__name__}.transformer.c6.checks",)  # C6, the bridge, retrieval: they read the transformer's results
