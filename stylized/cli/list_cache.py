"""``stylized check --list``: the listing (:func:`print_listing`), and a cache of it keyed by every source it depends on.

Building the listing imports every check module (SciPy, Numba: about a second).  Its text is kept in
``<user cache>/check-list.json`` (:func:`stylized.core._cache.user_cache_dir`) with a key made of the version, the
Python executable, the ``stylized.checks`` and ``stylized.laws`` entry points, the modification time of every folder
on ``sys.path`` (installing or removing a package changes one: an optional part appears or goes) and the path, size
and modification time of every ``.py`` file of stylized and of the packages the entry points name.  Any change
rebuilds the listing; ``STYLIZED_NO_CACHE=1`` bypasses the file.  A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys

__all__ = ["print_listing", "listing_key", "read_listing", "save_listing"]

_GROUPS = ("stylized.checks", "stylized.laws")


def _file() -> str:
    from ..core._cache import user_cache_dir

    return os.path.join(user_cache_dir(), "check-list.json")


def _tree(root: str, h) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())


def listing_key() -> str | None:
    """The key of the listing as the installed code would print it now (``None``: cannot tell, do not cache)."""
    import importlib.util
    from importlib.metadata import entry_points

    from .. import __version__

    try:
        h = hashlib.sha256(f"{__version__}\n{sys.executable}\n{sys.version}\n".encode())
        roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # stylized/
        for group in _GROUPS:
            for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
                h.update(f"{group}:{ep.name}={ep.value}\n".encode())
                spec = importlib.util.find_spec(ep.value.split(":")[0].split(".")[0])  # a top-level name: not imported
                if spec is None:
                    return None
                roots.update(spec.submodule_search_locations or [os.path.dirname(spec.origin or "")])
        for path in sys.path:
            if path and os.path.isdir(path):
                h.update(f"{path}:{os.stat(path).st_mtime_ns}\n".encode())
        for root in sorted(roots):
            _tree(root, h)
        return h.hexdigest()
    except (OSError, ValueError, ImportError):
        return None


def read_listing() -> str | None:
    """The cached listing if its key is the current one, else ``None``."""
    if os.environ.get("STYLIZED_NO_CACHE"):
        return None
    try:
        with open(_file(), encoding="utf-8") as f:
            cached = json.load(f)
        key = listing_key()
        if key is not None and isinstance(cached, dict) and cached.get("key") == key and isinstance(cached.get("text"), str):
            return cached["text"]
    except (OSError, ValueError):
        pass
    return None


def save_listing(text: str) -> None:
    """Keep ``text`` under the current key (atomically; a failure to write is ignored: it is a cache)."""
    if os.environ.get("STYLIZED_NO_CACHE") or (key := listing_key()) is None:
        return
    path = _file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": key, "text": text}, f)
        os.replace(tmp, path)
    except OSError:
        pass


def _print_laws() -> None:
    """The registered step laws (``--family`` takes any of them, or ``package.module:Factory``)."""
    from ..laws.registry import law_names, resolve_law

    print("step laws (--family NAME, or package.module:Factory; installed packages add laws under the "
          "'stylized.laws' entry-point group):")
    for name in law_names():
        try:
            doc = (resolve_law(name).__doc__ or "").strip().splitlines()[0]
        except (ValueError, IndexError):
            doc = ""
        print(f"    {name:<14} {doc}")


def print_listing(checks: dict) -> None:
    """Every check with its options and defaults, then the step laws; kept for the next ``check --list``."""
    with contextlib.redirect_stdout(text := io.StringIO()):
        for c in checks.values():
            print(f"{c.name}  [{c.claim}]  {c.statement}")
            for o in c.options:
                print(f"    {o.flag:<14} {str(o.default):<24} {o.help}; {o.allowed() or 'any'}")
            print(f"    {'--seed':<14} {'0':<24} random seed")
            print(f"    {'--seeds':<14} {'1':<24} seeds SEED … SEED+N−1, one verdict over them (its level stated)")
            print(f"    {'--backend':<14} {'numba':<24} {', '.join(c.backends)}")
        _print_laws()
    sys.stdout.write(text.getvalue())
    save_listing(text.getvalue())
