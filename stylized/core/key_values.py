"""``--law-param key=value`` (repeatable): a step law's own parameters from the command line, parsed into a dict.

A value is read as JSON (``0.5``, ``3``, ``[1, 2]``, ``true``, ``"text"``), else kept as the string given; a
number must be finite.  Keys are Python identifiers, each given once; ``d`` is not one (``--d`` sets it).

>>> KeyValues()(["switch=0.5", "table=[[0, 1]]", "name=cayley"])
{'switch': 0.5, 'table': [[0, 1]], 'name': 'cayley'}
>>> KeyValues()("beta=nan")
Traceback (most recent call last):
...
stylized.InvalidInput: must be key=value with a finite number, got 'beta=nan'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput
from .options import Spec

__all__ = ["KeyValues", "MAX_PARAMS"]

MAX_PARAMS = 64
"""Most ``key=value`` pairs one option takes."""


def _finite(x: Any) -> bool:
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, list):
        return all(_finite(v) for v in x)
    if isinstance(x, dict):
        return all(_finite(v) for v in x.values())
    return True


@dataclass(frozen=True)
class KeyValues(Spec):
    """Repeatable ``key=value`` pairs → ``{key: value}`` (the command line gives a list of strings; Python may also
    give a dict).  ``repeatable``: the command line collects every occurrence of the flag."""

    kind: str = "str"
    optional: bool = True
    repeatable: bool = True

    def describe(self) -> str:
        return ("key=value, repeatable (a law's own parameter: the value as JSON, else a string; the key an "
                "identifier other than d)")

    def _pair(self, key: Any, value: Any, shown: Any) -> tuple[str, Any]:
        if not isinstance(key, str) or not key.isidentifier() or key == "d":
            why = "d is set by --d, not --law-param" if key == "d" else "the key must be an identifier"
            raise InvalidInput(f"must be key=value ({why}), got {str(shown)[:80]!r}")
        if not _finite(value):
            raise InvalidInput(f"must be key=value with a finite number, got {str(shown)[:80]!r}")
        return key, value

    def _text(self, item: Any) -> tuple[str, Any]:
        if not isinstance(item, str) or "=" not in item or not item.isprintable():
            raise InvalidInput(f"must be key=value, got {str(item)[:80]!r}")
        key, _, raw = item.partition("=")
        raw = raw.strip()
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if raw.lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):  # refused as not finite
            value = float(raw)
        return self._pair(key.strip(), value, item)

    def __call__(self, value: Any) -> dict | None:
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            return None
        if isinstance(value, dict):
            pairs = [self._pair(k, v, f"{k}={v}") for k, v in value.items()]
        elif isinstance(value, str):
            pairs = [self._text(value)]
        elif isinstance(value, (list, tuple)):
            pairs = [self._text(x) for x in value]
        else:
            raise InvalidInput(f"must be key=value pairs (a dict from Python), got {type(value).__name__}")
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise InvalidInput(f"must give each key once, got {next(k for k in keys if keys.count(k) > 1)!r} twice")
        if len(pairs) > MAX_PARAMS:
            raise InvalidInput(f"must be at most {MAX_PARAMS} key=value pairs, got {len(pairs)}")
        return dict(pairs)
