"""Monte Carlo plumbing: progress bars and the strict integer check of trial counts.

Chunked seeding (:func:`stylized.core.counter_rng.chunked_generators`) lives in the RNG module.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import numpy as np
from tqdm.auto import tqdm

__all__ = ["progress", "check_positive_int"]


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    """Validate an integer option ``value ≥ minimum``; the error names the option."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def progress(iterable: Iterable, *, total: int | None = None, desc: str = "", enabled: bool = True):
    """A tqdm progress bar on stderr (hidden when disabled or when stderr is not a terminal)."""
    return tqdm(iterable, total=total, desc=desc, disable=(not enabled) or not sys.stderr.isatty(),
                file=sys.stderr, leave=False, mininterval=0.5)
