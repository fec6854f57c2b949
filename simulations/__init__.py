"""The experiments: one module per paper check, each registering its :class:`stylized.harness.registry.Check`.

:func:`check_modules` names the modules to import; ``pyproject.toml`` declares it as the
``stylized.checks`` entry point, which is how the library finds them (it never imports
``simulations`` by name).  :mod:`simulations.transformer_checks` holds the C6 and bridge checks,
which read the transformer's committed results and need torch.
"""

from __future__ import annotations

import pkgutil

__all__ = ["check_modules"]


def check_modules() -> tuple[str, ...]:
    """Every top-level module of this package that is not private (``_*``): each registers its checks on import."""
    return tuple(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)
                 if not m.ispkg and not m.name.startswith("_"))
