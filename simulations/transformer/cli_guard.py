"""The transformer commands' error handling: :mod:`.cli` runs every sub-command under :func:`guard`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def guard(fn: Callable[[argparse.Namespace], int | None]) -> Callable[[argparse.Namespace], int]:
    """Run a sub-command: set ``--threads``; a ``ValueError`` (:class:`stylized.InvalidInput` included) becomes
    one line on stderr and exit 2."""
    def run(args: argparse.Namespace) -> int:
        if getattr(args, "threads", None):
            import torch

            torch.set_num_threads(args.threads)
        try:
            return fn(args) or 0
        except ValueError as e:  # InvalidInput (bad input, a bad file) and the configuration checks' ValueErrors
            first = str(e).split("\n")[0] or type(e).__name__
            print("error: " + "".join(c if c.isprintable() else " " for c in first), file=sys.stderr)
            raise SystemExit(2) from None

    return run
