"""Monte Carlo plumbing: reproducible chunked seeding and progress bars.

Trials are split into fixed-size chunks, each with its own Generator spawned from
``SeedSequence(seed)``, so a result depends on the seed and the chunk size only —
never on the number of threads or processes that ran the chunks.

Example
-------
>>> sizes = [n for n, _ in chunked_generators(1000, seed=0, chunk=256)]
>>> sizes
[256, 256, 256, 232]
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

import numpy as np
from tqdm.auto import tqdm

__all__ = ["chunked_generators", "progress", "check_positive_int"]


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    """Validate an integer option ``value ≥ minimum``; the error names the option."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def chunked_generators(trials: int, seed: int, chunk: int = 256) -> Iterator[tuple[int, np.random.Generator]]:
    """Yield ``(size, Generator)`` for consecutive chunks covering ``trials`` trials."""
    trials = check_positive_int("trials", trials)
    n_chunks = -(-trials // chunk)
    for c, ss in enumerate(np.random.SeedSequence(seed).spawn(n_chunks)):
        yield min(chunk, trials - c * chunk), np.random.default_rng(ss)


def progress(iterable: Iterable, *, total: int | None = None, desc: str = "", enabled: bool = True):
    """A tqdm progress bar on stderr (hidden when disabled or when stderr is not a terminal)."""
    return tqdm(iterable, total=total, desc=desc, disable=(not enabled) or not sys.stderr.isatty(),
                file=sys.stderr, leave=False, mininterval=0.5)
