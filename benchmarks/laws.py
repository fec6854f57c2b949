"""Step-law rows of ``stylized bench``: the generic dense path of a user's law, side by side.

* the generic path (:meth:`stylized.laws.base.StepLaw.route_queries` on pre-drawn dense steps: the compiled kernel
  :func:`stylized.engine.dense_kernels.dense_route_queries`) against a NumPy per-step loop (the same draws, one
  ``Mᵀu`` per route and step), goal ≥ 10× on the threads chosen by measurement
  (:func:`stylized.engine.dense_kernels.dense_threads`), beside the kernel on one thread and on Numba's thread
  count; and its NumPy twin (one batched product per step) against the same loop;
* the same generic path on dense Householder matrices against the Householder Numba kernel
  (``householder_overlaps``) at ``d = 64``: what a law's structured override buys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .timing import row

__all__ = ["bench_rows"]


def _dense_householder():
    from stylized import StepLaw
    from stylized.core.step_ops import uniform_sphere

    @dataclass(frozen=True)
    class DenseHouseholder(StepLaw):
        """Householder reflections handed over as dense matrices: what a user's law looks like."""

        d: int

        def sample(self, xrng, shape, xp=np):
            w = uniform_sphere(xrng, shape, self.d, xp)
            return xp.eye(self.d) - 2.0 * w[..., :, None] * w[..., None, :]

    return DenseHouseholder


def _per_step_loop(steps, q):
    """``u_n = m_nᵀ u_{n−1}`` chain by chain and step by step (the baseline)."""
    T, N, d = steps.shape[:3]
    out = np.empty((T, N, d))
    for t in range(T):
        u = np.array(q, dtype=float)
        out[t, 0] = u
        for n in range(1, N):
            u = steps[t, n].T @ u
            out[t, n] = u
    return out


def bench_rows(repeat: int) -> list[dict]:
    from stylized.engine.sampling import sample_overlaps
    from stylized.laws.families import make_family

    law_cls = _dense_householder()
    rows = []
    import numba

    from stylized.engine.dense_kernels import (
        dense_route_queries_numba,
        dense_route_queries_numpy,
        dense_route_queries_serial,
        dense_threads,
    )

    for d, size, nmax in ((16, 512, 64), (64, 256, 64)):
        law = law_cls(d=d)
        steps = law.sample(np.random.default_rng(1), (size, nmax), np)
        q = np.full(d, 1.0 / np.sqrt(d))
        law.route_queries(steps[:1, :2], q)  # compile before timing
        rows.append(row(f"generic dense law, NumPy twin (one batched product per step), {size} routes × {nmax} steps, "
                         f"d={d}", "kernel", "NumPy per-step loop (one m_nᵀu per route and step)",
                         lambda steps=steps, q=q: dense_route_queries_numpy(steps, q),
                         lambda steps=steps, q=q: _per_step_loop(steps, q), repeat))
        for name, kernel in (("1 thread", dense_route_queries_serial),
                             (f"{numba.get_num_threads()} threads (prange)", dense_route_queries_numba)):
            rows.append(row(f"dense kernel on {name}, {size} routes × {nmax} steps, d={d}", "kernel",
                             "NumPy per-step loop (one m_nᵀu per route and step)",
                             lambda kernel=kernel, steps=steps, q=q: kernel(steps, q),
                             lambda steps=steps, q=q: _per_step_loop(steps, q), repeat))
        rows.append(row(f"generic dense law: u_n = P_nᵀq on pre-drawn steps, {size} routes × {nmax} steps, d={d} "
                         f"(StepLaw.route_queries: the compiled kernel on {dense_threads()} thread(s), chosen by "
                         "measurement)", "kernel", "NumPy per-step loop (one m_nᵀu per route and step)",
                         lambda law=law, steps=steps, q=q: law.route_queries(steps, q),
                         lambda steps=steps, q=q: _per_step_loop(steps, q), repeat,
                         goal="≥ 10× the per-step loop" if d == 16 else None,
                         met=(lambda s, b: b / s >= 10.0) if d == 16 else None))
    d, size, nmax = 64, 256, 64
    law, hh = law_cls(d=d), make_family("householder", d)
    ns = np.array([1, 8, nmax])
    q = np.full(d, 1.0 / np.sqrt(d))
    sample_overlaps(hh, ns, 4, 0, "numba")  # compile before timing
    rows.append(row(f"Householder Numba kernel vs the generic dense path, qᵀP_n q incl. draws, {size} chains × {nmax} "
                     f"steps, d={d}", "sampler", "generic dense path (walk_scores on dense Householder matrices)",
                     lambda: sample_overlaps(hh, ns, size, 1, "numba", q=q),
                     lambda: law.walk_scores(ns, size, np.random.default_rng(1), np, q=q), repeat))
    return rows
