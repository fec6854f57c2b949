"""Mutation helpers of the far-mass checks (C3 transfer, C4): wrong models and wrong theories as patches.

Each helper returns a context manager (:func:`unittest.mock.patch`) over a name that a check module looks
up at run time; :class:`stylized.registry.Mutant` calls it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from contextlib import ExitStack, contextmanager
from unittest import mock

from stylized.families import LazyHaar
from stylized.weight_laws import FarLaw

__all__ = ["scaled_far_law", "wrap_model", "frozen_family"]


def scaled_far_law(target: str, scale: float):
    """The far law with every far weight ``e^{λξ}`` multiplied by ``scale`` (its MGF off by that factor)."""
    return mock.patch(target, functools.partial(FarLaw, scale=scale))


def frozen_family(family):
    """A step law that never moves a vector (``P_{j→i} = I``): lazy Haar with ``p = 10⁻¹²``."""
    return LazyHaar(d=family.d, p=1e-12)


@contextmanager
def wrap_model(module: str, names: tuple[str, ...], family: str | None = None, **changes):
    """Patch ``module.name`` (functions taking a :class:`~stylized.farmass.GrowthModel` first) so that the
    simulation runs a changed model: ``changes`` replace fields, ``family="frozen"`` removes transport."""
    mod = importlib.import_module(module)
    with ExitStack() as stack:
        for name in names:
            orig = getattr(mod, name)

            def wrapped(model, *a, _orig=orig, **k):
                new = dataclasses.replace(model, **changes)
                if family == "frozen":
                    new = dataclasses.replace(new, family=frozen_family(model.family))
                return _orig(new, *a, **k)

            stack.enter_context(mock.patch(f"{module}.{name}", wrapped))
        yield
