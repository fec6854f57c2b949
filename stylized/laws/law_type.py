"""The nominal type of a step law, in a module with no imports.

The engine and the theory check and annotate the laws they are given with :class:`StepLawType`, so they
never import the law machinery (:mod:`.base`, whose methods reach the engine and the theory inside functions);
the import graph stays free of cycles.
"""

from __future__ import annotations

__all__ = ["StepLawType"]


class StepLawType:
    """The root of :class:`stylized.laws.base.StepLaw`, its one direct subclass: ``isinstance(x, StepLawType)``
    is ``isinstance(x, StepLaw)``.  Subclass :class:`~stylized.laws.base.StepLaw`, never this."""

    __slots__ = ()
