"""Declarative option specs: type, range, finiteness, list length and work caps, checked in one place.

Every command-line option of every command is parsed by a :class:`Spec` (a callable): a check's
``Option(name, default, help, Int(1, 10**7, size=True))``, the ``type=`` of an argparse
argument, or ``Check.parse_params`` for the whole set of a check's options.  A refusal is a
:class:`~stylized.InvalidInput` (a ``ValueError``) whose message is one line naming the allowed range and
the value given, e.g.
``must be an integer in [1, 10^7], got '1.5'``; the CLI prefixes the option's flag and exits 2,
before any work or any file is created.

Sizes: options declared with ``size=True`` multiply into a work estimate (a list counts by its
sum).  A run whose estimate exceeds :data:`WORK_FACTOR` times the estimate at the check's
built-in defaults is refused (:func:`check_work`), so no single value, nor a product of
individually allowed values, can start a run that would not finish.

Example
-------
>>> Int(1, 10**7)("12")
12
>>> Int(1, 10**7)("1.5")
Traceback (most recent call last):
...
stylized.InvalidInput: must be an integer in [1, 10^7], got '1.5'
>>> FloatList(0, None, lo_open=True)("0.1,0.2")
[0.1, 0.2]
>>> Choice("a", "b")("c")
Traceback (most recent call last):
...
stylized.InvalidInput: must be one of a, b, got 'c'
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput
from .wording import interval, shown

__all__ = ["Spec", "LawRange", "Int", "Float", "IntList", "FloatList", "Choice", "Choices", "Bool", "Text", "spec_of",
           "WORK_FACTOR", "MAX_LIST", "check_work", "work_estimate", "arg_type", "arg_int", "arg_real",
           "arg_reals", "OptionParser", "one_line"]

WORK_FACTOR = 1000
"""A run may cost at most this many times the run at the check's built-in defaults."""
MAX_LIST = 64
"""Longest list any list option accepts."""
_INT_LIMIT = 10**15  # integers beyond this are refused by every integer option (no overflow downstream)


@dataclass(frozen=True)
class Spec:
    """One option's kind and allowed values; calling it parses and validates a value.

    ``kind``: ``int``, ``float``, ``int-list``, ``float-list``, ``choice``, ``choices`` (a list of
    choices), ``bool``, ``str`` or ``str-list``.  ``lo``/``hi`` bound numbers (``None``: unbounded; every number
    is finite), ``lo_open``/``hi_open`` make a bound strict; ``choices`` lists allowed strings;
    ``optional`` accepts ``None``/``'none'`` (the option's computed default); ``size`` marks a
    size that enters the work estimate; ``max_len`` bounds a list's length (lists are non-empty).
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False
    size: bool = False
    max_len: int = MAX_LIST
    nominal: float | None = None  # a size option's value in the work estimate when it is None (computed at run time)
    min_len: int = 1  # fewest distinct values a list option accepts

    # -- description -------------------------------------------------------------------
    def range_text(self) -> str:
        if self.kind in ("choice", "choices"):
            return ", ".join(self.choices)
        rng = interval(self.lo, self.hi, self.lo_open, self.hi_open)
        return rng or ("finite" if self.kind.startswith("float") else "")

    def describe(self) -> str:
        """``'an integer in [1, 10^7]'``, ``'a comma list of numbers in (0, ∞)'``, …"""
        rng = self.range_text()
        noun = {"int": "an integer", "float": "a number", "int-list": "a comma list of integers",
                "float-list": "a comma list of numbers", "bool": "true or false", "str": "a non-empty string",
                "str-list": "a comma list of non-empty strings"}
        if self.kind == "choice":
            text = f"one of {rng}"
        elif self.kind == "choices":
            text = f"a comma list of {rng}"
        else:
            text = noun[self.kind]
            if rng == "finite":
                text += " (finite)"
            elif rng:
                text += f" in {rng}"
        if self.kind.endswith("list") or self.kind == "choices":
            text += (f" (1 to {self.max_len} values)" if self.min_len <= 1
                     else f" ({self.min_len} to {self.max_len} values, {self.min_len} distinct)")
        return text + (" or 'none'" if self.optional else "")

    def _fail(self, value: Any) -> InvalidInput:
        return InvalidInput(f"must be {self.describe()}, got {shown(value)}")

    # -- parsing -----------------------------------------------------------------------
    def _number(self, x: Any, whole: Any) -> float | int:
        is_int = self.kind.startswith("int")
        if isinstance(x, bool):
            raise self._fail(whole)
        if isinstance(x, str):
            s = x.strip()
            try:
                v: float | int = int(s)
            except ValueError:
                try:
                    f = float(s)
                except ValueError:
                    raise self._fail(whole) from None
                if is_int and not (math.isfinite(f) and f.is_integer()):
                    raise self._fail(whole) from None
                v = int(f) if is_int else f
        else:
            try:
                import numbers

                if not isinstance(x, numbers.Real):
                    raise TypeError
                if is_int:
                    if isinstance(x, numbers.Integral):
                        v = int(x)
                    elif math.isfinite(float(x)) and float(x).is_integer():
                        v = int(x)
                    else:
                        raise self._fail(whole)
                else:
                    v = float(x)
            except (TypeError, OverflowError):
                raise self._fail(whole) from None
        if is_int:
            if abs(v) > _INT_LIMIT:
                raise self._fail(whole)
        else:
            v = float(v)
            if not math.isfinite(v):
                raise self._fail(whole)
        lo, hi = self.lo, self.hi
        if lo is not None and (v < lo or (self.lo_open and v == lo)):
            raise self._fail(whole)
        if hi is not None and (v > hi or (self.hi_open and v == hi)):
            raise self._fail(whole)
        return v

    def _items(self, value: Any) -> list:
        if isinstance(value, str):
            parts = value.split(",")
            if not value.strip() or any(not p.strip() for p in parts):
                raise self._fail(value)
            items: list = [p.strip() for p in parts]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            items = [value]
        if not 1 <= len(items) <= self.max_len:
            raise self._fail(value)
        return items

    def __call__(self, value: Any) -> Any:
        if isinstance(value, bytes):
            raise self._fail(value)
        if self.optional and (value is None or (isinstance(value, str) and value.strip().lower() == "none")):
            return None
        if value is None:
            raise self._fail(value)
        if self.kind in ("int", "float"):
            return self._number(value, value)
        if self.kind in ("int-list", "float-list"):
            out = [self._number(x, value) for x in self._items(value)]
            if len(set(out)) < self.min_len:
                raise self._fail(value)
            return out
        if self.kind == "choice":
            if not isinstance(value, str) or value.strip() not in self.choices:
                raise self._fail(value)
            return value.strip()
        if self.kind == "choices":
            items = self._items(value)
            if any(not isinstance(x, str) or x.strip() not in self.choices for x in items):
                raise self._fail(value)
            return [x.strip() for x in items]
        if self.kind == "str-list":
            items = self._items(value)
            if any(not isinstance(x, str) or not x.strip() or not x.isprintable() for x in items):
                raise self._fail(value)
            return [x.strip() for x in items]
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in ("1", "true", "yes", "on"):
                return True
            if s in ("0", "false", "no", "off"):
                return False
            raise self._fail(value)
        if self.kind == "str":
            if not isinstance(value, str) or not value.strip() or not value.isprintable():
                raise self._fail(value)
            return value.strip()
        raise ValueError(f"unknown option kind {self.kind!r}")

    def work(self, value: Any) -> float:
        """This option's factor in the work estimate (1 unless ``size``; a list counts by its sum)."""
        if value is None:
            value = self.nominal
        if not self.size or value is None:
            return 1.0
        if isinstance(value, (list, tuple)):
            return float(max(1, sum(abs(v) for v in value)))
        return float(max(1, abs(value)))


def Int(lo: int | None = None, hi: int | None = None, *, optional: bool = False, size: bool = False,
        nominal: int | None = None) -> Spec:
    """An integer in ``[lo, hi]`` (``nominal``: its work-estimate value when ``None``, i.e. computed at run time)."""
    return Spec("int", lo, hi, optional=optional, size=size, nominal=nominal)


def Float(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False,
          optional: bool = False) -> Spec:
    """A finite number in ``[lo, hi]`` (``lo_open``/``hi_open``: strict)."""
    return Spec("float", lo, hi, lo_open, hi_open, optional=optional)


@dataclass(frozen=True)
class LawRange(Spec):
    """A built-in law's parameter (``--omega``, ``--p``, …): any finite number when parsed; the built-in law's own
    range ``strict`` applies only to a run of that law (``law``), never to a user's law that takes the parameter."""

    strict: Spec | None = None
    law: str = ""

    def describe(self) -> str:
        return f"{self.strict.describe() if self.strict else 'a number'} for {self.law} (any finite number otherwise)"


def IntList(lo: int | None = None, hi: int | None = None, *, size: bool = False, max_len: int = MAX_LIST,
            min_len: int = 1) -> Spec:
    """A non-empty comma list of integers in ``[lo, hi]`` (at least ``min_len`` distinct)."""
    return Spec("int-list", lo, hi, size=size, max_len=max_len, min_len=min_len)


def FloatList(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False,
              max_len: int = MAX_LIST) -> Spec:
    """A non-empty comma list of finite numbers in ``[lo, hi]``."""
    return Spec("float-list", lo, hi, lo_open, hi_open, max_len=max_len)


def Choice(*choices: str) -> Spec:
    """One of ``choices``."""
    return Spec("choice", choices=tuple(choices))


def Choices(*choices: str, max_len: int = MAX_LIST) -> Spec:
    """A non-empty comma list of ``choices``."""
    return Spec("choices", choices=tuple(choices), max_len=max_len)


def Bool() -> Spec:
    """``true``/``false`` (also 1/0, yes/no, on/off)."""
    return Spec("bool")


def Text() -> Spec:
    """A non-empty printable string."""
    return Spec("str")


_GENERIC: dict[str, Spec] = {"int": Int(), "float": Float(), "int_list": IntList(), "float_list": FloatList(),
                             "str": Text(), "bool": Bool(), "str_list": Spec("str-list")}


def spec_of(parse: Callable[[Any], Any], default: Any = None) -> Spec | Callable[[Any], Any]:
    """The :class:`Spec` behind an option's ``parse``: itself, or a generic one for ``int``,
    ``float``, ``str``, ``int_list``, ``float_list`` (finite, integer-valued where asked,
    non-empty lists); any other callable is returned unchanged."""
    if isinstance(parse, Spec):
        return parse
    name = getattr(parse, "__name__", "")
    spec = _GENERIC.get(name)
    if spec is None:
        return parse
    if default is None and spec.kind != "str":
        return Spec(spec.kind, optional=True)
    return spec


def work_estimate(specs: dict[str, Any], params: dict) -> float:
    """Product over the ``size`` options of their values (lists by their sum)."""
    w = 1.0
    for name, spec in specs.items():
        if isinstance(spec, Spec):
            w *= spec.work(params.get(name))
    return w


def check_work(specs: dict[str, Any], params: dict, defaults: dict, flags: dict[str, str]) -> None:
    """Refuse (:class:`~stylized.InvalidInput` naming the size options) a run estimated at more than
    :data:`WORK_FACTOR` times the run at ``defaults``."""
    sized = [n for n, s in specs.items() if isinstance(s, Spec) and s.size]
    if not sized:
        return
    # a None default (computed at run time) counts as 1 on both sides
    base = work_estimate(specs, {k: v for k, v in defaults.items()})
    w = work_estimate(specs, params)
    cap = WORK_FACTOR * base
    if w > cap:
        names = ", ".join(flags[n] for n in sized)
        raise InvalidInput(f"{names}: the work estimate {' × '.join(n for n in sized)} = {w:.3g} exceeds the cap "
                         f"{cap:.3g} ({WORK_FACTOR}× the default run); reduce them")


def arg_type(spec: Spec, keep_text: bool = False) -> Callable[[str], Any]:
    """An argparse ``type=`` from ``spec``: argparse reports ``argument --flag: must be …, got …``.

    ``keep_text``: validate, but hand the (stripped) string on, for code that parses it itself.
    """

    def parse(s: str) -> Any:
        try:
            value = spec(s)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return s.strip() if keep_text else value

    parse.__name__ = spec.kind
    parse.spec = spec  # type: ignore[attr-defined]
    return parse


def choices_of(seq: Sequence[str]) -> tuple[str, ...]:
    """A tuple of choice strings (helper for declarations)."""
    return tuple(str(s) for s in seq)


# -- argument checks for the Python API (ValueError naming the argument, TypeError for a wrong type) --------


def arg_int(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an ``int`` in ``[lo, hi]``: ``TypeError`` if it is not a number (bools, strings,
    ``None`` included), ``ValueError`` naming ``name`` and the range otherwise (an integer-valued float
    such as ``16.0``, a 0-d array or a NumPy integer is accepted); :func:`stylized.core._broadcast.check`.

    >>> arg_int("d", 8, 1)
    8
    """
    from ._broadcast import check

    return check(name, value, lo, hi, integer=True, scalar=True)


def arg_real(name: str, value: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
             hi_open: bool = False) -> float:
    """``value`` as a finite ``float`` in ``[lo, hi]`` (``lo_open``/``hi_open``: strict);
    :func:`stylized.core._broadcast.check`.

    >>> arg_real("lam", 2, 0)
    2.0
    """
    from ._broadcast import check

    return check(name, value, lo, hi, lo_open=lo_open, hi_open=hi_open, scalar=True)


def arg_reals(name: str, value: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
              hi_open: bool = False, allow_neg_inf: bool = False):
    """``value`` as a float64 array of finite numbers in ``[lo, hi]`` (``allow_neg_inf``: ``-inf`` allowed,
    e.g. masked logits); ``TypeError`` if it is not numeric, ``ValueError`` naming ``name`` otherwise
    (complex values included); :func:`stylized.core._broadcast.check`."""
    from ._broadcast import check

    return check(name, value, lo, hi, lo_open=lo_open, hi_open=hi_open, neg_inf=allow_neg_inf)


def one_line(msg: str) -> str:
    """The first line of ``msg`` (split at ``\\n`` only), non-printable characters escaped: one line, always."""
    first = str(msg).split("\n")[0]
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in first)


class OptionParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (exit 2), without the usage block."""

    def error(self, message: str):
        # "argument --opt: must be …" → "--opt: must be …", one line, under the program's name
        message = one_line(message.removeprefix("argument "))
        flag, _, rest = message.partition(": ")
        action = self._option_string_actions.get(flag.split("/")[0])
        spec = getattr(action, "spec", None) or getattr(getattr(action, "type", None), "spec", None)
        if rest.startswith("expected one argument") and spec is not None:  # a value such as -1e+16 or -inf
            message = f"{flag}: must be {spec.describe()}, got a value starting with '-' (write {flag}=VALUE)"
        self.exit(2, f"stylized: error: {message}\n")
