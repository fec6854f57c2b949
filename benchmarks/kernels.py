"""Kernel rows of ``stylized bench``: each hot Numba kernel against its NumPy twin, side by side."""

from __future__ import annotations

import numpy as np

from .timing import row

__all__ = ["kernel_rows"]


def kernel_rows(repeat: int, small: bool) -> list[dict]:
    from stylized.core.counter_rng import normals
    from stylized.engine.kernels import (
        householder_overlaps_numba,
        householder_overlaps_numpy,
        householder_queries_numba,
        householder_queries_numpy,
        householder_route,
        householder_route_numpy,
        so2_scores_numba,
        so2_scores_numpy,
    )
    from stylized.engine.sampling import sample_far_route, sample_far_route_dense
    from stylized.laws.families import make_family, uniform_sphere

    rng = np.random.default_rng(0)
    L, d = (2048, 16) if small else (65_536, 64)
    q = np.full(d, 1.0 / np.sqrt(d))
    U, U32 = np.empty((L, d)), np.empty((L, d), dtype=np.float32)
    rows = [row(f"householder route u_j = P_(j→i)ᵀq, L={L}, d={d}, incl. draws, into a reused out (Numba, 2 segments)",
                 "kernel", "NumPy: uniform_sphere draws (PCG64) + NumPy rank-one loop",
                 lambda: householder_route(q, L, seed=1, out=U), lambda: householder_route_numpy(q, L, 1), repeat,
                 goal="≤ 10 ms including the draws", met=lambda s, b: s <= 0.010),
            row(f"householder route, L={L}, d={d}, incl. draws, float32 out (half the memory traffic)", "kernel",
                 "NumPy: uniform_sphere draws (PCG64) + NumPy rank-one loop",
                 lambda: householder_route(q, L, seed=1, out=U32), lambda: householder_route_numpy(q, L, 1), repeat)]
    w = uniform_sphere(rng, (L,), d)
    rows.append(row(f"householder route on pre-drawn w, L={L}, d={d} (Numba)", "kernel", "NumPy rank-one loop",
                     lambda: householder_queries_numba(w, q), lambda: householder_queries_numpy(w, q), repeat))
    gdraw = np.random.Generator(np.random.SFC64(2))
    rows.append(row(f"draws alone: {L}×{d} standard normals, counter-based Box–Muller (Numba SIMD)", "sampler",
                     "NumPy Generator(SFC64).standard_normal (ziggurat)", lambda: normals(3, L * d),
                     lambda: gdraw.standard_normal(L * d), repeat))
    th = rng.uniform(-1, 1, (L, d // 2))
    dot, cross = rng.standard_normal((2, L, d // 2))
    rows.append(row(f"SO(2) scores qᵀP_(j→i)k_j, one trial, L={L}, d={d} (Numba)", "kernel",
                     "NumPy: route_angles + cos/sin", lambda: so2_scores_numba(th, dot, cross),
                     lambda: so2_scores_numpy(th, dot, cross), repeat))
    rows.append(_so2_sweep_row(small, repeat))
    T, N, dh = (64, 20, 16) if small else (2000, 100, 64)
    ww = uniform_sphere(rng, (T, N), dh)
    qh = np.full(dh, 1.0 / np.sqrt(dh))
    ns = np.array([0, 1, 5, N // 2, N])
    rows.append(row(f"householder overlaps qᵀP_n q, {T} trials × n≤{N}, d={dh} (Numba prange)", "kernel",
                     "NumPy: batched rank-one updates", lambda: householder_overlaps_numba(ww, qh, ns),
                     lambda: householder_overlaps_numpy(ww, qh, ns), repeat))
    fam = make_family("lazy-haar", d=8 if small else 64, p=0.5)
    n, size = (4, 8) if small else (32, 32)
    rows.append(row(f"far-route P_n q, lazy-haar p=0.5, d={fam.d}, n={n}, {size} draws (exact law)", "sampler",
                     "dense: scipy ortho_group Haar matrices + products",
                     lambda: sample_far_route(fam, n, size, 3), lambda: sample_far_route_dense(fam, n, size, 3),
                     repeat, goal="≥ 100× dense", met=lambda s, b: b / s >= 100))
    return rows


def _so2_sweep_row(small: bool, repeat: int) -> dict:
    """The SO(2) score sweep end to end (draws + scores + far log-sum-exp) for 100 trials at d=64, L=65,536."""
    from stylized.engine.context_sweep import so2_context_inputs, so2_context_numba
    from stylized.engine.kernels import so2_context_sampled
    from stylized.laws.families import make_family

    T, L, d = (10, 4096, 16) if small else (100, 65_536, 64)
    fam = make_family("rope-random", d)
    q = np.full(d, 1.0 / np.sqrt(d))

    def ours():
        return so2_context_sampled(fam, L, T, 0, q, 8.0, 16, 3)

    def base():  # the previous pipeline: NumPy draws in chunks of 4 trials, then the Numba sweep kernel
        rng = np.random.default_rng(0)
        return [so2_context_numba(*so2_context_inputs(fam, L, 4, rng, q, 3), 8.0, 16) for _ in range(T // 4)]

    return row(f"SO(2) score sweep end to end incl. draws, {T} trials, d={d}, L={L} (fused counter-RNG kernel)",
                "end-to-end", "NumPy draws (so2_context_inputs) + Numba so2_context kernel", ours, base,
                min(repeat, 2), goal="≤ 1.5 s including the draws", met=lambda s, b: s <= 1.5)
