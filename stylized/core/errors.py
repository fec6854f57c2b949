"""The one exception type for bad input: :class:`InvalidInput`.

Three kinds of failure are told apart (``stylized check``, ``stylized.run``):

* **bad input**: an option outside its range, options that do not fit together (a work estimate over the
  cap, an odd ``d`` for an SO(2) family), an unusable destination: :class:`InvalidInput`, raised only by the
  validation that runs before any work or file; the CLI prints one line naming the option, exit status 2;
* **a claim that does not hold**: not an exception; exit status 1;
* **anything else** (a ``ValueError`` raised while a check runs included): an internal error; the CLI prints
  one line and keeps the traceback in a file, exit status 3.

``InvalidInput`` subclasses ``ValueError``, so ``except ValueError`` keeps catching bad input.  A step law that is
not what it claims (a user's module that cannot be imported, a factory that raises or returns no law, draws that are
NaN, complex, wrongly shaped or not orthogonal) is :class:`InvalidLaw`, a kind of bad input naming ``--family``.

>>> issubclass(InvalidInput, ValueError), issubclass(InvalidLaw, InvalidInput)
(True, True)
"""

from __future__ import annotations

__all__ = ["InvalidInput", "InvalidLaw"]


class InvalidInput(ValueError):
    """Bad input, found by validation before any work: the message is one line naming the option
    (``--d: …`` on the command line, ``d: …`` from Python) and its allowed range."""


InvalidInput.__module__ = "stylized"  # shown (tracebacks, doctests) by its public name, stylized.InvalidInput


class InvalidLaw(InvalidInput):
    """A step law refused before use (:mod:`stylized.laws.trust`): its module, factory or ``sample`` raised (any
    exception, ``SystemExit`` and ``KeyboardInterrupt`` included), it built no law, or its draws are not what it
    declares; the message is one line naming the property (``--family: …`` on the command line)."""


def save_traceback(exc: BaseException, argv: list[str] | None = None) -> str:
    """Write ``exc``'s full traceback (with the version and ``argv``) to a new file under the user's cache
    folder (``<cache>/stylized/errors/``, else the system's temporary folder); returns the file's path, or
    ``"(not saved: …)"`` when neither can be written."""
    import os
    import sys
    import tempfile
    import time
    import traceback

    from .. import __version__
    from ._cache import user_cache_dir

    text = (f"stylized {__version__}, Python {sys.version.split()[0]}\nargv: {argv!r}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    why = ""
    for folder in (os.path.join(user_cache_dir(), "errors"), tempfile.gettempdir()):
        try:
            os.makedirs(folder, exist_ok=True)
            fd, path = tempfile.mkstemp(dir=folder, prefix=time.strftime("traceback-%Y%m%d-%H%M%S-"), suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text)
            return path
        except OSError as e:
            why = e.strerror or type(e).__name__
    return f"(not saved: {why})"
