"""Reading the transformer commands' saved JSON (results, measurements, settings-keyed caches): never trusted.

:func:`read_json` returns the JSON object of a file or raises :class:`~stylized.InvalidInput` with one line naming
the option and the file and what is wrong (unreadable, not UTF-8, not JSON, ``NaN``/``Infinity`` literals, not an
object, an entry missing): a command refuses it with exit 2.  :func:`read_cache` is for a cache that can be
recomputed: it returns ``None`` and prints one line naming the file instead.

The settings-keyed caches (evaluation, far-context, passkey: ``{"key": {settings…, "weights": digest}, …}``) are
written by :func:`write_cache` (atomically) and read by :func:`read_cache` with their ``key`` (another key: a silent
miss); :func:`saved_key` is the key a cache holds (which weights it was computed from).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from stylized.core.errors import InvalidInput

__all__ = ["json_problem", "read_json", "read_cache", "write_cache", "saved_key"]


def _constant(name: str):
    raise ValueError(f"the non-finite number {name}")


def _shown(path: str | os.PathLike) -> str:
    s = "".join(c if c.isprintable() else "?" for c in str(path))
    return s if len(s) <= 160 else s[:80] + "…" + s[-79:]


def json_problem(path: str | os.PathLike, need: Sequence[str] = ()) -> tuple[dict | None, str | None]:
    """(the JSON object in ``path``, ``None``) or (``None``, why it cannot be used)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as e:
        return None, f"cannot be read: {e.strerror or type(e).__name__}"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        obj = json.loads(text, parse_constant=_constant)
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as e:
        first = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        return None, f"not JSON: {first}"
    if not isinstance(obj, dict):
        return None, f"a JSON {type(obj).__name__}, not an object"
    gone = [k for k in need if k not in obj]
    if gone:
        return None, f"no {', '.join(repr(k) for k in gone)} entr{'y' if len(gone) == 1 else 'ies'}"
    return obj, None


def read_json(path: str | os.PathLike, label: str, need: Sequence[str] = (),
              check: Callable[[dict], str | None] | None = None) -> dict:
    """The JSON object saved at ``path``, with the entries ``need`` (and ``check(obj) is None``); otherwise
    :class:`~stylized.InvalidInput` ``"<label>: <path> is unusable (<why>); …"``."""
    obj, why = json_problem(path, need)
    if why is None and check is not None:
        why = check(obj)
    if why is not None:
        raise InvalidInput(f"{label}: {_shown(path)} is unusable ({why}); restore it from git or rerun the command "
                           "that writes it")
    return obj


def read_cache(path: str | os.PathLike, tag: str, need: Sequence[str] = (),
               check: Callable[[dict], str | None] | None = None, *, key: dict | None = None) -> dict | None:
    """The cache at ``path`` or ``None`` (missing; stale: its ``"key"`` differs from ``key``, silently; unusable: one
    line naming it on stderr; the caller recomputes)."""
    if not Path(path).exists():
        return None
    obj, why = json_problem(path, need)
    if why is None and key is not None:
        if not isinstance(obj.get("key"), dict):
            why = "no 'key' object"
        elif obj["key"] != key:
            return None  # stale: other weights or settings
    if why is None and check is not None:
        why = check(obj)
    if why is not None:
        print(f"[{tag}] {_shown(path)}: unusable cache ({why}); recomputing", file=sys.stderr, flush=True)
        return None
    return obj


def write_cache(path: str | os.PathLike, key: dict, **payload) -> None:
    """Write the cache ``{"key": key, **payload}`` to ``path`` atomically (one line of JSON)."""
    from stylized.harness.results import atomic_write_text

    atomic_write_text(Path(path), json.dumps({"key": key, **payload}))


def saved_key(path: str | os.PathLike) -> dict | None:
    """The ``"key"`` object of the cache at ``path`` (``None``: missing, unreadable or keyless)."""
    obj, _ = json_problem(path)
    key = obj.get("key") if obj is not None else None
    return key if isinstance(key, dict) else None
