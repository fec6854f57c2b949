"""Broadcasting for the scalar closed forms of :mod:`stylized.theory`, the way SciPy's ufuncs broadcast.

:func:`broadcasting` wraps a function written for scalars: scalar arguments go straight through (so the
numbers the checks produce are the scalar formula's, bit for bit); array arguments are broadcast against
each other (NumPy rules) and the scalar formula is evaluated at every element, so an array call equals the
scalar loop exactly.  Invalid elements raise the scalar formula's ``ValueError`` naming the argument.

>>> @broadcasting("x", "y")
... def add(x: float, y: float) -> float:
...     return x + y
>>> add(1.0, 2.0)
3.0
>>> add([1.0, 2.0], [[10.0], [20.0]]).tolist()
[[11.0, 12.0], [21.0, 22.0]]
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

__all__ = ["broadcasting"]


def broadcasting(*names: str) -> Callable:
    """Decorator: broadcast the arguments ``names`` of a scalar function over arrays.

    Returns a float array of the broadcast shape (a tuple of them when the scalar function returns a
    tuple); with only scalar arguments the function's own scalar result is returned unchanged.
    """

    def deco(f: Callable) -> Callable:
        sig = inspect.signature(f)
        missing = [n for n in names if n not in sig.parameters]
        if missing:
            raise TypeError(f"{f.__name__} has no argument(s) {missing}")

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            vals = [bound.arguments[n] for n in names]
            if all(np.ndim(v) == 0 for v in vals):
                return f(*bound.args, **bound.kwargs)
            arrays = np.broadcast_arrays(*(np.asarray(v) for v in vals))
            shape = arrays[0].shape
            outs: list[np.ndarray] | None = None
            for idx in np.ndindex(shape):
                for n, a in zip(names, arrays):
                    v = a[idx]
                    bound.arguments[n] = v.item() if hasattr(v, "item") else v
                r = f(*bound.args, **bound.kwargs)
                parts = r if isinstance(r, tuple) else (r,)
                if outs is None:
                    outs = [np.empty(shape) for _ in parts]
                for o, p in zip(outs, parts):
                    o[idx] = p
            if outs is None:  # empty broadcast shape: the result's arity from a probe is unknowable
                return np.empty(shape)
            return tuple(outs) if len(outs) > 1 else outs[0]

        wrapper.broadcasts = names  # type: ignore[attr-defined]
        return wrapper

    return deco
