"""How a refusal writes numbers, intervals and the value it was given, one line each.

The option layer (:mod:`.options`) and the argument checks of the closed forms (:mod:`._broadcast`) word
their messages alike through these three functions.

>>> fmt_num(10**7), interval(0, None, lo_open=True), shown("1.5")
('10^7', '(0, ∞)', "'1.5'")
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["fmt_num", "interval", "shown"]


def fmt_num(x: float | int | None) -> str:
    """``10000000`` → ``'10^7'``, ``0.5`` → ``'0.5'``, ``None`` → ``'∞'``."""
    if x is None:
        return "∞"
    if abs(x) >= 1000 and float(x).is_integer() and abs(x) == 10 ** round(math.log10(abs(x))):
        return ("-" if x < 0 else "") + f"10^{round(math.log10(abs(x)))}"
    if isinstance(x, int) and x >= 2**16 and x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1}"
    if isinstance(x, float) and math.isclose(x, math.pi):
        return "π"
    return f"{x:g}" if isinstance(x, float) else str(x)


def interval(lo: float | None, hi: float | None, lo_open: bool = False, hi_open: bool = False) -> str:
    """``'[1, 10^7]'``, ``'(0, ∞)'``, ``'(-∞, 1]'`` (``None``: unbounded); ``''`` when both bounds are ``None``."""
    if lo is None and hi is None:
        return ""
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    return f"{left}{'-∞' if lo is None else fmt_num(lo)}, {fmt_num(hi)}{right}"


def shown(value: Any) -> str:
    """The value as the user gave it, one line, at most 40 characters."""
    s = value if isinstance(value, str) else repr(value)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8").replace("\n", "\\n")
    return repr(s[:40] + ("…" if len(s) > 40 else ""))
