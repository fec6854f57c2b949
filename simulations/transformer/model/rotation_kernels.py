"""Fused CPU kernels (Numba) for :mod:`simulations.transformer.model.rotation`.

One pass over the data instead of PyTorch's six to eight elementwise kernels per rotation (on
the cpu preset these are memory-bound: the strided half-width views of the head dim run at a
fraction of the contiguous speed).  Canonical shapes are 5-D: ``x`` [A, B, S, C, d] and
``cos``/``sin`` [A', B', S', C', d/2], each of A', B', S', C' either equal to the matching dim
of ``x`` or 1 (broadcast).  The slot dim S (the Q/K/V slot of a fused projection) is rotated for
``s < n_rot`` and copied otherwise.

Arithmetic: the forward is float32 with the reference's products and sums in the same order
(no fast-math, so no fused multiply-add): bit-identical to ``model.rotate``.  The backward
accumulates ∂L/∂ψ in float64 directly into ψ's (broadcast) shape.

The learned angles (:mod:`.learned_rotation`): :func:`learned_angles_fwd` (ψ = −cumsum of the
gathered θ table, bit-identical to PyTorch's float64 ops), :func:`learned_angles_bwd` (its
closed-form backward to the table) and :func:`learned_rotate_bwd` (the rotation's backward
with ∂L/∂ψ turned into the table's gradient on the spot).  All kernels are serial: results do
not depend on the thread count.
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
def rotate_bwd(g5, y5, cos5, sin5, gx5, gpsi5, n_rot, inverse, need_psi, init_psi):  # pragma: no cover
    """``gx`` ← R(∓ψ)g (pass-through beyond ``n_rot``); ``gpsi`` += ±(y₁g₂ − y₂g₁).

    All arrays C-contiguous 5-D: ``g``, ``y`` (the forward's output) and ``gx`` [A, B, S, C, d],
    ``cos``, ``sin`` and ``gpsi`` [A', B', S', C', d/2] (each primed dim 1 or equal).
    ∂y/∂ψ = ±[−y₂, y₁] (the plane's quarter turn of the output), so ∂L/∂ψ = ±(y₁g₂ − y₂g₁):
    x is not needed.  ``init_psi``: ``gpsi`` is uninitialised and broadcast at most along S,
    so the first visit of a row (s = 0, or every s when S' = S) assigns instead of adding.
    Flat [rows, d] indexing: Numba vectorizes the float64 accumulation of this form about
    1.6× faster than per-row slices.
    """
    A, B, S, C, d = gx5.shape
    A2, B2, S2, C2, h = cos5.shape
    g = g5.reshape((A * B * S * C, d))
    y = y5.reshape((A * B * S * C, d))
    gx = gx5.reshape((A * B * S * C, d))
    cos = cos5.reshape((A2 * B2 * S2 * C2, h))
    sin = sin5.reshape((A2 * B2 * S2 * C2, h))
    gpsi = gpsi5.reshape((gpsi5.size // gpsi5.shape[4], gpsi5.shape[4]))
    sign = np.float32(-1.0) if inverse else np.float32(1.0)
    r = 0
    for a in range(A):
        ia = a if A2 > 1 else 0
        for b in range(B):
            ib = ia * B2 + (b if B2 > 1 else 0)
            for s in range(S):
                is_ = ib * S2 + (s if S2 > 1 else 0)
                first = init_psi and (s == 0 or S2 > 1)
                for c in range(C):
                    rc = is_ * C2 + (c if C2 > 1 else 0)
                    if s >= n_rot:
                        for j in range(d):
                            gx[r, j] = g[r, j]
                    else:
                        for j in range(h):
                            sj = sin[rc, j] * sign
                            gx[r, j] = g[r, j] * cos[rc, j] + g[r, j + h] * sj
                            gx[r, j + h] = g[r, j + h] * cos[rc, j] - g[r, j] * sj
                        if need_psi and first:
                            for j in range(h):
                                gpsi[rc, j] = sign * (y[r, j] * g[r, j + h] - y[r, j + h] * g[r, j])
                        elif need_psi:
                            for j in range(h):
                                gpsi[rc, j] += sign * (y[r, j] * g[r, j + h] - y[r, j + h] * g[r, j])
                    r += 1


@_njit
def learned_angles_fwd(tanh_e, omega, idx, psi):  # pragma: no cover - compiled
    """``psi[b, t, j]`` ← −Σ_{s≤t} θ_{b,s,j}, θ = π·tanh E[idx] − ω (sequential float64 sum).

    ``tanh_e`` [V, J] (float64), ``omega`` [h] with J = H'·h (ω repeated per head), ``idx``
    [B, L] (int64), ``psi`` [B, L, J].  The θ table is formed once (V rows, as the reference's
    ``π·tanh(E) − ω.repeat(H')``: a product then a difference, no fused multiply-add) and
    accumulated left to right from 0, as ``torch.cumsum`` does: bit-identical.
    """
    V, J = tanh_e.shape
    h = omega.shape[0]
    theta = np.empty((V, J))
    for v in range(V):
        for k in range(0, J, h):
            for j in range(h):
                theta[v, k + j] = np.pi * tanh_e[v, k + j] - omega[j]
    B, L = idx.shape
    acc = np.empty(J)
    for b in range(B):
        acc[:] = 0.0
        for t in range(L):
            v = idx[b, t]
            if v < 0 or v >= V:
                raise IndexError("learned angles: token index out of range of the angle table")
            row = theta[v]
            out = psi[b, t]
            for j in range(J):
                acc[j] += row[j]
                out[j] = -acc[j]


@_njit
def _table_grad(gtab, tanh_e, grad_e):  # pragma: no cover - compiled
    """``grad_e`` ← (∂L/∂θ̄·π)(1 − tanh²E): the table gradient from the row sums ``gtab``."""
    V, J = gtab.shape
    for v in range(V):
        for j in range(J):
            t = tanh_e[v, j]
            grad_e[v, j] = (gtab[v, j] * np.pi) * (1.0 - t * t)


@_njit
def _scatter_rev_cumsum(g, idx, sign, gtab):  # pragma: no cover - compiled
    """``gtab[idx[b, s]]`` += sign·Σ_{t≥s} g[b, t] for all b, s (``g`` [B, L, J], any dtype)."""
    B, L, J = g.shape
    acc = np.empty(J)
    for b in range(B):
        acc[:] = 0.0
        for t in range(L - 1, -1, -1):
            row = gtab[idx[b, t]]
            gr = g[b, t]
            for j in range(J):
                acc[j] += sign * gr[j]
                row[j] += acc[j]


@_njit
def learned_angles_bwd(g, idx, tanh_e, grad_e):  # pragma: no cover - compiled
    """``grad_e`` ← ∂L/∂E from ``g`` = ∂L/∂ψ [B, L, J] (float64, any strides).

    ∂L/∂θ_{b,s} = −Σ_{t≥s} g_{b,t} (the reversed cumulative sum), scatter-added into the
    rows ``idx[b, s]`` of a float64 [V, J] sum, then ∂L/∂E = (sum·π)(1 − tanh²E) rounded to
    ``grad_e``'s dtype (the reference's order: embedding backward, ×π, tanh backward).
    """
    gtab = np.zeros(tanh_e.shape)
    _scatter_rev_cumsum(g, idx, -1.0, gtab)
    _table_grad(gtab, tanh_e, grad_e)


@_njit
def learned_rotate_bwd(g5, y5, cos5, sin5, gx5, idx, tanh_e, grad_e, n_rot, inverse, need_e):  # pragma: no cover
    """Backward of the routed learned rotation: ``gx`` ← R(∓ψ)g and ``grad_e`` ← ∂L/∂E.

    ``g``, ``y`` (the forward's output), ``gx``: C-contiguous [B, L, S, H, d]; ``cos``, ``sin``:
    [B, L, 1, H', d/2] (H' = H or 1); ``idx`` [B, L]; ``tanh_e``/``grad_e`` [V, H'·d/2].
    One pass in memory order forms gx and D_t = Σ_{s<n_rot, heads} (y₁g₂ − y₂g₁) (in x's
    dtype, as the reference sums its slots); ∂L/∂ψ_t = ±D_t (+ forward, − inverse), and the
    reversed cumulative sum −Σ_{t'≥t} ∂L/∂ψ_{t'} = ∂L/∂θ_t goes (float64) to the rows
    ``idx[b, t]``.  (A single pass from the last position is slower in Numba.)
    """
    B, L, S, C, d = gx5.shape
    C2, h = cos5.shape[3], cos5.shape[4]
    R = B * L * S * C
    g = g5.reshape((R, d))
    y = y5.reshape((R, d))
    gx = gx5.reshape((R, d))
    cos = cos5.reshape((B * L * C2, h))
    sin = sin5.reshape((B * L * C2, h))
    n_psi = B * L * C2 if need_e else 1
    # rows are first visited at s = 0 (and c = 0 when H' = 1): assigned there, added to after
    dpsi = np.empty((n_psi, h), dtype=g5.dtype) if n_rot >= 1 else np.zeros((n_psi, h), dtype=g5.dtype)
    r = 0
    for bt in range(B * L):
        for s in range(S):
            for c in range(C):
                rc = bt * C2 + (c if C2 > 1 else 0)
                if s < n_rot:
                    for j in range(h):
                        sj = -sin[rc, j] if inverse else sin[rc, j]
                        gx[r, j] = g[r, j] * cos[rc, j] + g[r, j + h] * sj
                        gx[r, j + h] = g[r, j + h] * cos[rc, j] - g[r, j] * sj
                    if need_e and s == 0 and (C2 > 1 or c == 0):
                        for j in range(h):
                            dpsi[rc, j] = y[r, j] * g[r, j + h] - y[r, j + h] * g[r, j]
                    elif need_e:
                        for j in range(h):
                            dpsi[rc, j] += y[r, j] * g[r, j + h] - y[r, j + h] * g[r, j]
                else:
                    for j in range(d):
                        gx[r, j] = g[r, j]
                r += 1
    if need_e:
        gtab = np.zeros(tanh_e.shape)
        _scatter_rev_cumsum(dpsi.reshape((B, L, C2 * h)), idx, 1.0 if inverse else -1.0, gtab)
        _table_grad(gtab, tanh_e, grad_e)
