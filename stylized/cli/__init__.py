"""The ``stylized`` command line (:mod:`.main`), its option validation (:mod:`.validate`), compact tables
(:mod:`.table`) and ``figures --from`` (:mod:`.figures`)."""

from .app import main

__all__ = ["main"]
