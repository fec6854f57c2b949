"""Argument checks and broadcasting for the closed forms of :mod:`stylized.theory`, the way SciPy's ufuncs broadcast.

:func:`check` is the one check of a numeric argument (a number or an array of them) that every public closed
form and helper uses: it refuses complex values (unless the argument is complex), bools, strings, ``None``,
NaN, infinities (``-inf`` only where allowed, e.g. masked logits), non-integers where an integer is required,
integers beyond ``2^53`` and values outside the domain, with a ``ValueError`` naming the argument and its
allowed range (for a value that is not a number at all, an :class:`ArgumentTypeError`: a ``TypeError`` that is
also a ``ValueError``); 0-d arrays and NumPy scalars count as the Python scalars they hold.

>>> check("d", np.int64(8), 2, integer=True, scalar=True)
8
>>> check("lam", 1 + 1j, 0, scalar=True)
Traceback (most recent call last):
...
ValueError: lam must be a real number in [0, ∞), got the complex value (1+1j)

:func:`broadcasting` wraps a function written for scalars: scalar arguments go straight through (so the
numbers the checks produce are the scalar formula's, bit for bit); array arguments are broadcast against
each other (NumPy rules) and the scalar formula is evaluated at every element, so an array call equals the
scalar loop exactly.  Invalid elements raise the scalar formula's ``ValueError`` naming the argument, and
shapes that do not broadcast together a ``ValueError`` naming the arguments.

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
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .wording import fmt_num, interval, shown

__all__ = ["broadcasting", "check", "check_shapes", "check_callable", "check_choice", "check_instance",
           "ArgumentTypeError", "INT_MAX"]

INT_MAX = 2**53
"""Largest integer magnitude an integer argument takes (every integer up to it is exact in float64)."""


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (``None``, a string, a bool, an object where a number is expected): a
    ``TypeError`` and, like every other refusal of :func:`check`, a ``ValueError``."""


def _what(lo, hi, lo_open: bool, hi_open: bool, integer: bool, complex_ok: bool, neg_inf: bool, abs_max,
          scalar: bool, ndim, size) -> str:
    """``'a real number in [0, ∞)'``, ``'a 1-D array of 8 real numbers (finite)'``, …"""
    noun = "integer" if integer else "complex number" if complex_ok else "real number"
    if complex_ok:
        rng = "finite" if abs_max is None else f"with |z| ≤ {fmt_num(abs_max)}"
    else:
        rng = interval(lo, hi, lo_open, hi_open) or "finite"
    cond = f" ({rng})" if rng in ("finite",) or rng.startswith("with") else f" in {rng}"
    if neg_inf:
        cond += " or -inf"
    if scalar:
        return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}{cond}"
    if ndim is None:
        return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}{cond} or an array of them"
    dims = " or ".join(f"{k}-D" for k in (ndim if isinstance(ndim, tuple) else (ndim,)))
    count = f"{size} " if size is not None else ""
    return f"a {dims} array of {count}{noun}s{cond}"


def check(name: str, value: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
          hi_open: bool = False, integer: bool = False, complex_ok: bool = False, neg_inf: bool = False,
          abs_max: float | None = None, scalar: bool = False, ndim: int | tuple[int, ...] | None = None,
          size: int | None = None, nonempty: bool = False):
    """The numeric argument ``name``: a number (``scalar``) or an array of numbers, all finite and in
    ``[lo, hi]`` (``lo_open``/``hi_open``: strict), integers if ``integer``.

    Returns a Python ``int``/``float``/``complex`` for ``scalar``, else a float64 array (int64 for
    ``integer``, complex128 for ``complex_ok``).  ``complex_ok``: complex values allowed (``abs_max`` bounds
    ``|z|``; ``lo``/``hi`` unused); ``neg_inf``: ``-inf`` allowed (masked logits, underflowed logs);
    ``ndim`` (an int or a tuple of them) and ``size`` (the length of a 1-D array) fix the shape; ``nonempty``
    refuses an empty array.  A 0-d array or a NumPy scalar counts as the Python scalar it holds.

    Raises :class:`ArgumentTypeError` (a ``TypeError`` and a ``ValueError``) for a value that is not a number
    (``None``, a string, a bool, an object, a ragged sequence) and ``ValueError`` otherwise (complex, NaN, ±inf,
    a non-integer, an integer beyond :data:`INT_MAX`, a value out of range, a wrong shape), the message naming
    ``name`` and the allowed values.
    """
    def refuse(got: str, exc: type = ValueError) -> Exception:
        what = _what(lo, hi, lo_open, hi_open, integer, complex_ok, neg_inf, abs_max, scalar, ndim, size)
        return exc(f"{name} must be {what}, got {got}")

    if type(value) is float or type(value) is int:  # the common call: a Python number (bool is not int here)
        v = _scalar(value, refuse, integer, complex_ok, neg_inf)
        _scalar_in_range(v, refuse, lo, hi, lo_open, hi_open, complex_ok, abs_max)
        if scalar:
            return v
        value = v
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise refuse(f"{type(value).__name__} {shown(value)}", ArgumentTypeError)
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()  # a 0-d array or a NumPy scalar: the Python scalar it holds
    if not isinstance(value, (numbers.Number, np.ndarray, Sequence)) and not hasattr(value, "__array__"):
        raise refuse(f"{type(value).__name__} {shown(value)}", ArgumentTypeError)
    if isinstance(value, numbers.Number):
        v = _scalar(value, refuse, integer, complex_ok, neg_inf)
        _scalar_in_range(v, refuse, lo, hi, lo_open, hi_open, complex_ok, abs_max)
        if scalar:
            return v
        if ndim is not None and 0 not in (ndim if isinstance(ndim, tuple) else (ndim,)):
            raise refuse(f"a scalar {shown(value)}")
        return np.asarray(v, dtype=np.int64 if integer else complex if complex_ok else float)
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):
        raise refuse(f"a ragged or non-numeric sequence {shown(value)}", ArgumentTypeError) from None
    if scalar:
        raise refuse(f"an array of shape {a.shape}")
    if a.dtype.kind == "O":
        a = _object_array(a, refuse, integer, complex_ok)
    if a.dtype.kind == "b":
        raise refuse(f"an array of bools {shown(value)}", ArgumentTypeError)
    if a.dtype.kind not in "iufc":
        raise refuse(f"an array of dtype {a.dtype} {shown(value)}", ArgumentTypeError)
    if a.dtype.kind == "c" and not complex_ok:
        raise refuse(f"complex values {shown(value)}")
    if ndim is not None and a.ndim not in (ndim if isinstance(ndim, tuple) else (ndim,)):
        raise refuse(f"an array of shape {a.shape}")
    if size is not None and a.size != size:
        raise refuse(f"an array of shape {a.shape}")
    if nonempty and a.size == 0:
        raise refuse("an empty array")
    if integer:
        if a.dtype.kind == "u" and a.size and int(a.max()) > INT_MAX:
            raise refuse(f"{int(a.max())!r} (integers beyond 2^53 are not supported)")
        if a.dtype.kind in "fc":
            f = a.real if a.dtype.kind == "c" else a
            bad = ~np.isfinite(f) | (f != np.round(f))
            if np.any(bad):
                raise refuse(repr(float(f[bad].ravel()[0])))
            if np.any(np.abs(f) > INT_MAX):
                raise refuse(f"{float(f[np.abs(f) > INT_MAX].ravel()[0])!r} (integers beyond 2^53 are not supported)")
        elif a.size and int(np.max(np.abs(a.astype(np.int64)))) > INT_MAX:
            raise refuse(f"{int(a.ravel()[np.argmax(np.abs(a.astype(np.int64)))])!r} (integers beyond 2^53 are not "
                         "supported)")
        a = a.astype(np.int64)
    else:
        with np.errstate(over="ignore"):
            a = a.astype(complex if complex_ok else float)
        bad = np.isnan(a) | (np.isinf(a) & ~(neg_inf & (np.real(a) < 0) & (np.imag(a) == 0)))
        if np.any(bad):
            raise refuse(repr(a[bad].ravel()[0].item()))
    _in_range(a, refuse, lo, hi, lo_open, hi_open, complex_ok, abs_max)
    return a


def _scalar(x, refuse, integer: bool, complex_ok: bool, neg_inf: bool):
    """A Python number ``x`` as an ``int`` (``integer``), ``complex`` (``complex_ok``) or ``float``."""
    if isinstance(x, bool):
        raise refuse(f"bool {x!r}", ArgumentTypeError)
    if not isinstance(x, numbers.Real):
        if not isinstance(x, numbers.Complex):
            raise refuse(f"{type(x).__name__} {shown(x)}", ArgumentTypeError)
        if not complex_ok:
            raise refuse(f"the complex value {shown(x)[1:-1]}")
        z = complex(x)
        if not (math.isfinite(z.real) and math.isfinite(z.imag)):
            raise refuse(repr(z))
        return z
    if integer:
        if isinstance(x, numbers.Integral):
            v = int(x)
        else:
            f = float(x)
            if not (math.isfinite(f) and f.is_integer()):
                raise refuse(repr(x))
            v = int(f)
        if abs(v) > INT_MAX:
            raise refuse(f"{shown(v)[1:-1]} (integers beyond 2^53 are not supported)")
        return v
    try:
        v = float(x)
    except OverflowError:
        raise refuse(f"{shown(x)[1:-1]} (beyond the float64 range)") from None
    if math.isnan(v) or (math.isinf(v) and not (neg_inf and v < 0)):
        raise refuse(repr(v))
    return complex(v) if complex_ok else v


def _object_array(a: np.ndarray, refuse, integer: bool, complex_ok: bool) -> np.ndarray:
    """An object array of Python numbers (e.g. ints beyond int64) as a numeric array, each element checked."""
    out = []
    for x in a.ravel():
        if isinstance(x, (np.ndarray, np.generic)) and np.ndim(x) == 0:
            x = x.item()
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Number):
            raise refuse(f"an element {type(x).__name__} {shown(x)}", ArgumentTypeError)
        out.append(_scalar(x, refuse, integer, complex_ok, True))
    return np.array(out, dtype=np.int64 if integer else complex if complex_ok else float).reshape(a.shape)


def _scalar_in_range(v, refuse, lo, hi, lo_open: bool, hi_open: bool, complex_ok: bool, abs_max) -> None:
    """:func:`_in_range` for one Python number (no NumPy: the common call is a scalar)."""
    if complex_ok:
        if abs_max is not None and abs(v) > abs_max:
            raise refuse(repr(v))
        return
    if not math.isfinite(v):
        return
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise refuse(repr(v))
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise refuse(repr(v))


def _in_range(a: np.ndarray, refuse, lo, hi, lo_open: bool, hi_open: bool, complex_ok: bool, abs_max) -> None:
    if complex_ok:
        if abs_max is not None and np.any(np.abs(a) > abs_max):
            raise refuse(repr(a[np.abs(a) > abs_max].ravel()[0].item()) if a.ndim else repr(a.item()))
        return
    fin = np.isfinite(a)
    ok = np.ones(a.shape, dtype=bool)
    if lo is not None:
        ok &= ~fin | ((a > lo) if lo_open else (a >= lo))
    if hi is not None:
        ok &= ~fin | ((a < hi) if hi_open else (a <= hi))
    if not np.all(ok):
        raise refuse(repr((a[~ok].ravel()[0] if a.ndim else a).item()))


def check_shapes(**arrays) -> tuple[int, ...]:
    """The broadcast shape of the named arrays, or a ``ValueError`` naming them when they do not broadcast together."""
    shapes = {n: np.shape(a) for n, a in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{n} {sh}" for n, sh in shapes.items())
        raise ValueError(f"{', '.join(shapes)}: shapes do not broadcast together ({listed})") from None


def check_instance(name: str, value: Any, cls: type | tuple[type, ...], what: str | None = None, *,
                   optional: bool = False):
    """``value`` if it is an instance of ``cls`` (or ``None`` when ``optional``), else an :class:`ArgumentTypeError`
    naming ``name``."""
    if (optional and value is None) or isinstance(value, cls):
        return value
    if what is None:
        names = [c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,))]
        what = "a " + " or a ".join(names)
    raise ArgumentTypeError(f"{name} must be {what}{' or None' if optional else ''}, got "
                            f"{type(value).__name__} {shown(value)}")


def check_callable(name: str, value: Any, *, optional: bool = False):
    """``value`` if it is callable (or ``None`` when ``optional``), else an :class:`ArgumentTypeError` naming ``name``."""
    if (optional and value is None) or callable(value):
        return value
    raise ArgumentTypeError(f"{name} must be a callable{' or None' if optional else ''}, got "
                            f"{type(value).__name__} {shown(value)}")


def check_choice(name: str, value: Any, choices) -> str:
    """``value`` if it is one of the strings ``choices``, else a ``ValueError`` (an :class:`ArgumentTypeError` for a
    non-string) naming ``name`` and the choices."""
    if isinstance(value, str) and value in choices:
        return value
    exc = ValueError if isinstance(value, str) else ArgumentTypeError
    raise exc(f"{name} must be one of {', '.join(choices)}, got {type(value).__name__} {shown(value)}")


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
            if all(_ndim(n, v) == 0 for n, v in zip(names, vals)):
                return f(*bound.args, **bound.kwargs)
            given = [np.asarray(v) for v in vals]
            try:
                arrays = np.broadcast_arrays(*given)
            except ValueError:
                shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(names, given))
                raise ValueError(f"{', '.join(names)}: shapes do not broadcast together ({shapes})") from None
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


def _ndim(name: str, v: Any) -> int:
    """``np.ndim(v)``, an :class:`ArgumentTypeError` naming ``name`` for a ragged sequence."""
    try:
        return np.ndim(v)
    except (ValueError, TypeError):
        raise ArgumentTypeError(f"{name} must be a number or an array of numbers, got a ragged sequence "
                                f"{shown(v)}") from None
