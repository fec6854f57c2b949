"""Validation of step-family arguments, in one place: every family constructor calls
:func:`validate_family_args`, which raises a ``ValueError`` naming the argument and its allowed
range (:data:`FAMILY_ARG_RANGES`).

Example
-------
>>> validate_family_args("householder", 8)
8
>>> validate_family_args("lazy-haar", 8, p=1.5)
Traceback (most recent call last):
...
ValueError: p must lie in (0, 1], got 1.5
"""

from __future__ import annotations

import numpy as np

__all__ = ["FAMILY_ARG_RANGES", "validate_family_args", "MAX_DIM"]

MAX_DIM = 1 << 16
"""Largest dimension ``d`` a step family accepts (a ``d × d`` product is 32 GiB at ``d = 65536``)."""

FAMILY_ARG_RANGES: dict[str, str] = {
    "d": "an integer ≥ 2 (at most 65536; even for SO(2) families)",
    "omega": "(0, π] for every plane",
    "sigma": "(0, ∞), finite, for every plane",
    "mu": "finite reals",
    "p": "(0, 1]",
    "base": "(1, ∞), finite",
    "table": "finite angles of shape (V, d/2)",
    "probs": "a probability vector of length V",
}
"""Allowed range of every step-family argument (what :func:`validate_family_args` enforces)."""


def _planes(name: str, value, d: int) -> np.ndarray:
    """``value`` as one float per plane (``d/2`` of them), or a ValueError naming ``name``."""
    try:
        if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
            raise TypeError
        return np.broadcast_to(np.asarray(value, dtype=float), (d // 2,))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be one number or d/2 = {d // 2} numbers in {FAMILY_ARG_RANGES[name]}, "
                         f"got {value!r}") from None


def _scalar(name: str, value) -> float:
    try:
        if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in {FAMILY_ARG_RANGES[name]}, got {value!r}") from None


def validate_family_args(family: str, d, *, planes: bool = False, **args) -> int:
    """Check the arguments of step family ``family``: the one place where they are validated.

    Every family's constructor and :func:`make_family` call this.  ``args`` may hold any of
    ``omega``, ``sigma``, ``mu``, ``p``, ``base``, ``table``, ``probs`` (ranges in
    :data:`FAMILY_ARG_RANGES`).  ``planes``: the law declares SO(2) planes (its ``planes`` attribute), so ``d``
    must be even; the name ``family`` is only a label.  Returns ``d`` as an ``int``.

    Raises
    ------
    ValueError
        naming the first argument out of range and its allowed range.
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 2 <= d <= MAX_DIM:
        raise ValueError(f"d must be {FAMILY_ARG_RANGES['d']}, got {d!r}")
    d = int(d)
    if planes and d % 2:
        raise ValueError(f"d must be even for SO(2) blocks (d = 2, 4, 6, …), got {d}")
    for name, value in args.items():
        if name == "omega":
            om = _planes(name, value, d)
            ok = np.all((om > 0) & (om <= np.pi))
        elif name == "sigma":
            sg = _planes(name, value, d)
            ok = np.all((sg > 0) & np.isfinite(sg))
        elif name == "mu":
            ok = np.all(np.isfinite(_planes(name, value, d)))
        elif name == "p":
            ok = 0.0 < _scalar(name, value) <= 1.0
        elif name == "base":
            b = _scalar(name, value)
            ok = b > 1.0 and np.isfinite(b)
        elif name == "table":
            t = np.asarray(value, dtype=float)
            if t.ndim != 2 or t.shape[1] != d // 2:
                raise ValueError(f"table must have shape (V, d/2) = (V, {d // 2}), got {t.shape}")
            ok = np.all(np.isfinite(t))
        elif name == "probs":
            if value is None:
                continue
            pr = np.asarray(value, dtype=float)
            V = np.asarray(args.get("table")).shape[0]
            ok = pr.shape == (V,) and np.all(pr >= 0) and np.isclose(pr.sum(), 1.0)
            if not ok:
                raise ValueError("probs must be a probability vector of length V (non-negative, summing to 1)")
        else:
            raise ValueError(f"unknown step-family argument {name!r}; known: {', '.join(FAMILY_ARG_RANGES)}")
        if not ok:
            raise ValueError(f"{name} must lie in {FAMILY_ARG_RANGES[name]}, got {value!r}")
    return d
