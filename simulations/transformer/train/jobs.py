"""Running a command's (variant, seed) jobs: argument checks and the serial or process-pool map.

``compare``, ``far-context``, ``passkey`` and ``lr-sweep`` train and evaluate one checkpoint per job.  With
``workers = 1`` the jobs run in this process (sharing a loaded corpus); otherwise in ``workers`` spawned
processes with one torch thread each (two threads per process thrash a 2-core machine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..model.config import MAIN_VARIANTS, VARIANTS

__all__ = ["check_variants_and_workers", "map_jobs"]


def check_variants_and_workers(variants: Iterable[str] | None, workers: int) -> list[str]:
    """``variants`` as a list (default: the main variants), each a known variant; ``workers`` in [1, 64]."""
    variants = list(variants or MAIN_VARIANTS)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"variants: {v!r} is not one of: {', '.join(VARIANTS)}")
    if not isinstance(workers, int) or not 1 <= workers <= 64:
        raise ValueError(f"workers={workers!r} must be an integer in [1, 64]")
    return variants


def map_jobs(fn: Callable, serial: Sequence[tuple], parallel: Sequence[tuple], workers: int,
             on_result: Callable | None = None) -> list:
    """``fn(*args)`` for every job, results in job order: the ``serial`` argument tuples in this process when
    ``workers ≤ 1``, else the ``parallel`` ones (picklable, one thread each) in ``workers`` spawned processes.
    ``on_result`` sees each result as soon as it is ready (progress lines)."""
    if workers <= 1:
        out = []
        for args in serial:
            out.append(fn(*args))
            if on_result:
                on_result(out[-1])
        return out
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
        futs = [ex.submit(fn, *args) for args in parallel]
        if on_result:
            for f in as_completed(futs):
                on_result(f.result())
        return [f.result() for f in futs]
