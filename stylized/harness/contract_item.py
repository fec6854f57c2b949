"""One item of the step-law contract: :class:`LawCheck` (what an item returns), the :func:`contract_item` decorator
that turns ``fn(law, seed, samples) → (ok, detail)`` into a ``check_law_<item>`` function, and the contract's levels.

:mod:`stylized.harness.testing` lists the items in order and runs them (:func:`~stylized.harness.testing.check_law`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from scipy import stats

from ..laws.base import StepLaw

__all__ = ["LawCheck", "contract_item", "z_level", "CONTRACT_LEVEL", "SAMPLES"]

CONTRACT_LEVEL = 1e-3
"""Family level of each statistical item of the contract."""

SAMPLES = 20000
"""Draws behind the ``mean`` item (the isotropy item takes a fifth of them per side)."""


@dataclass(frozen=True)
class LawCheck:
    """One item of the contract: its name, whether it passed, and what was measured."""

    name: str
    passed: bool
    detail: str


def z_level(level: float, m: int = 1) -> float:
    """The two-sided normal quantile of ``level`` Bonferroni-split over ``m`` sub-tests."""
    return float(stats.norm.isf(level / (2 * m)))


def contract_item(name: str) -> Callable[[Callable], Callable[..., LawCheck]]:
    """``fn(law, seed, samples) → (ok, detail)`` as item ``name``: a ``check_law_*(law, *, seed, samples)`` function
    returning a :class:`LawCheck` (its ``item_name`` is ``name``); an item whose law code raises fails, naming the
    exception."""
    def wrap(fn):
        def item(law: StepLaw, *, seed: int = 0, samples: int = SAMPLES) -> LawCheck:
            try:
                with warnings.catch_warnings():  # a law's draws that are complex or NaN are this item's finding
                    warnings.simplefilter("ignore")
                    ok, detail = fn(law, seed, samples)
            except (Exception, SystemExit) as e:
                text = str(e).strip().splitlines()[0] if str(e).strip() else ""
                return LawCheck(name, False, f"raised {type(e).__name__}: {text}")
            return LawCheck(name, bool(ok), detail)

        item.__name__ = item.__qualname__ = fn.__name__
        item.__doc__ = fn.__doc__
        item.item_name = name
        return item

    return wrap
