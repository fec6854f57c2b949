"""Fused CPU kernels (Numba) for :mod:`simulations.transformer.rotation`.

One pass over the data instead of PyTorch's six to eight elementwise kernels per rotation (on
the cpu preset these are memory-bound: the strided half-width views of the head dim run at a
fraction of the contiguous speed).  Canonical shapes are 5-D: ``x`` [A, B, S, C, d] and
``cos``/``sin`` [A', B', S', C', d/2], each of A', B', S', C' either equal to the matching dim
of ``x`` or 1 (broadcast).  The slot dim S (the Q/K/V slot of a fused projection) is rotated for
``s < n_rot`` and copied otherwise.

Arithmetic: the forward is float32 with the reference's products and sums in the same order
(no fast-math, so no fused multiply-add): bit-identical to ``model.rotate``.  The backward
accumulates ∂L/∂ψ in float64 directly into ψ's (broadcast) shape.
"""

from __future__ import annotations

import numpy as np

try:  # numba is a core dependency of the project; stay importable without it
    import numba

    _njit = numba.njit(cache=True, nogil=True)
    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised only without numba
    AVAILABLE = False

    def _njit(f):  # type: ignore[no-redef]
        return f


@_njit
def rotate_fwd(x, cos, sin, out, n_rot, inverse):  # pragma: no cover - compiled
    """``out`` ← R(ψ)x (``inverse``: R(−ψ)x) on the first ``n_rot`` slots, a copy elsewhere."""
    A, B, S, C, d = out.shape
    h = d // 2
    ca, cb, cs_, cc = cos.shape[0] > 1, cos.shape[1] > 1, cos.shape[2] > 1, cos.shape[3] > 1
    for a in range(A):
        ia = a if ca else 0
        for b in range(B):
            ib = b if cb else 0
            for s in range(S):
                is_ = s if cs_ else 0
                for c in range(C):
                    ic = c if cc else 0
                    xr = x[a, b, s, c]
                    o = out[a, b, s, c]
                    if s >= n_rot:
                        for j in range(d):
                            o[j] = xr[j]
                        continue
                    co = cos[ia, ib, is_, ic]
                    si = sin[ia, ib, is_, ic]
                    if inverse:
                        for j in range(h):
                            o[j] = xr[j] * co[j] + xr[j + h] * si[j]
                            o[j + h] = xr[j + h] * co[j] - xr[j] * si[j]
                    else:
                        for j in range(h):
                            o[j] = xr[j] * co[j] - xr[j + h] * si[j]
                            o[j + h] = xr[j] * si[j] + xr[j + h] * co[j]


@_njit
def rotate_bwd(g, x, cos, sin, gx, gpsi, n_rot, inverse, need_psi):  # pragma: no cover - compiled
    """``gx`` ← R(∓ψ)g (pass-through beyond ``n_rot``); ``gpsi`` += ±(x₁ x̄₂ − x₂ x̄₁)."""
    A, B, S, C, d = gx.shape
    h = d // 2
    ca, cb, cs_, cc = cos.shape[0] > 1, cos.shape[1] > 1, cos.shape[2] > 1, cos.shape[3] > 1
    sign = np.float32(-1.0) if inverse else np.float32(1.0)
    for a in range(A):
        ia = a if ca else 0
        for b in range(B):
            ib = b if cb else 0
            for s in range(S):
                is_ = s if cs_ else 0
                for c in range(C):
                    ic = c if cc else 0
                    gr = g[a, b, s, c]
                    out = gx[a, b, s, c]
                    if s >= n_rot:
                        for j in range(d):
                            out[j] = gr[j]
                        continue
                    co = cos[ia, ib, is_, ic]
                    si = sin[ia, ib, is_, ic]
                    for j in range(h):
                        sj = si[j] * sign
                        out[j] = gr[j] * co[j] + gr[j + h] * sj
                        out[j + h] = gr[j + h] * co[j] - gr[j] * sj
                    if need_psi:
                        xr = x[a, b, s, c]
                        acc = gpsi[ia, ib, is_, ic]
                        for j in range(h):
                            acc[j] += sign * (xr[j] * out[j + h] - xr[j + h] * out[j])
