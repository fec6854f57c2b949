"""The dense path's threads are chosen by measurement: the one-thread and the parallel kernel give equal results,
and :func:`dense_threads` keeps whichever it timed faster (timings live in ``stylized bench``, not here)."""

from __future__ import annotations

import numba
import numpy as np

from stylized.engine import dense_kernels as dk


def test_serial_and_parallel_kernels_are_equal():
    rng = np.random.default_rng(5)
    steps, q = rng.standard_normal((37, 11, 6, 6)), rng.standard_normal(6)
    serial, parallel = dk.dense_route_queries_serial(steps, q), dk.dense_route_queries_numba(steps, q)
    assert np.array_equal(serial, parallel)
    assert np.allclose(serial, dk.dense_route_queries_numpy(steps, q), atol=1e-12)


def test_dense_threads_keeps_the_faster_kernel():
    threads = dk.dense_threads()
    assert threads in (1, numba.get_num_threads())
    serial_s, parallel_s = dk._CHOSEN["seconds"]
    assert serial_s > 0 and parallel_s > 0
    want = dk.dense_route_queries_numba if threads > 1 else dk.dense_route_queries_serial
    assert dk._CHOSEN["kernel"] is want and (threads == 1) == (serial_s <= parallel_s or numba.get_num_threads() == 1)
    assert dk.dense_threads() == threads  # measured once per process
