"""Where the package keeps caches (Numba's compiled kernels, internal-error tracebacks): the user's cache
folder, ``$XDG_CACHE_HOME/stylized`` (an absolute ``XDG_CACHE_HOME``), else ``~/.cache/stylized``; never the
installed package's folder.  Imports nothing but :mod:`os`, so ``stylized/__init__`` can use it first (Numba reads
``NUMBA_CACHE_DIR`` when it is imported)."""

from __future__ import annotations

import os

__all__ = ["user_cache_dir", "use_user_numba_cache"]


def user_cache_dir() -> str:
    """``$XDG_CACHE_HOME/stylized`` when ``XDG_CACHE_HOME`` is an absolute path, else ``~/.cache/stylized``.

    >>> user_cache_dir().endswith("stylized")
    True
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG default
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "stylized")


def use_user_numba_cache() -> None:
    """Numba caches compiled kernels under ``<user cache>/numba`` unless ``NUMBA_CACHE_DIR`` is already set."""
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(user_cache_dir(), "numba"))
