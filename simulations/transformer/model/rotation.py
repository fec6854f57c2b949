"""Fast accumulated rotation: a ``torch.autograd.Function`` with the closed-form backward.

The naive reference is :func:`simulations.transformer.model.gpt.rotate` (plain autograd through
``cos``/``sin``, slicing and ``cat``); this module is the fast path beside it (FLA style:
``tests/transformer/model/test_rotation.py`` compares outputs *and* gradients of the two, and
checks the backward with ``torch.autograd.gradcheck`` in float64).

Half-split layout: for x = [x₁, x₂] (each d_h/2) and angle ψ (one per plane),

    y = R(ψ)x = [x₁ cos ψ − x₂ sin ψ,  x₁ sin ψ + x₂ cos ψ].

Backward, with upstream gradient g = [g₁, g₂]:

* ∂L/∂x = R(−ψ) g = [g₁ cos ψ + g₂ sin ψ,  g₂ cos ψ − g₁ sin ψ];
* ∂L/∂ψ = (−x₁ sin ψ − x₂ cos ψ) g₁ + (x₁ cos ψ − x₂ sin ψ) g₂, which (R commutes with the
  plane's quarter turn) equals x₁ (∂L/∂x)₂ − x₂ (∂L/∂x)₁: two products on tensors the backward
  has anyway.  It is summed over the dimensions along which ψ was broadcast (the Q/K/V slot,
  the batch for RoPE, the heads for shared angles).  The fused CPU kernel uses the equal form
  y₁g₂ − y₂g₁ (∂y/∂ψ = [−y₂, y₁]) on the saved output y, contiguous and already kept alive by
  SDPA / ``c_proj``, so x need not be saved.

The inverse rotation R(−ψ) (the ``-qkv`` output at the query) has sin → −sin and −∂L/∂ψ.

What this path saves (CPU, cpu preset, one thread; ``bench.py --naive``): the reference rotates
strided [B, H, L, d] views of the fused projection with seven elementwise kernels per tensor
plus autograd's backward through cos/sin.  Here Q, K (and V when it shares ψ) are rotated in one
call on the contiguous [B, L, 3, H, d] projection (:func:`rotate_qkv`), cos/sin are formed once
per layer, the inverse rotation of the output writes the [B, L, H, d] layout ``c_proj`` needs
(:func:`unrotate_output`, no ``contiguous()`` copy), and on CPU in float32 forward and backward
are single fused passes (Numba, :mod:`.rotation_kernels`; elsewhere, e.g. CUDA or bf16, a few
PyTorch kernels).  Measured (CPU time per step, interleaved medians): learned-qkv / rope 1.51 with
the reference, 1.18 with this path, 1.09 with the angles ψ given.  The learned angles' own cost
(float64 tanh / gather / cumsum over [B, L, H, d/2] and its autograd backward) is taken by
:mod:`.learned_rotation`: ψ from one Numba pass, and, when ψ carries its ``LearnedSource``,
:func:`rotate_qkv` / :func:`unrotate_output` rotate through ``LearnedRotation``, whose backward
turns ∂L/∂ψ into ∂L/∂E in place (learned-qkv / rope ≈ 1.08).

The forward is bit-identical to the reference: the same float64 cos/sin rounded to float32,
the same float32 products (x₂·(−s) = −(x₂s) exactly, addition commutes), float32 arithmetic
under bf16 autocast.  The backward uses fused multiply-adds (equal to round-off).

:func:`accumulate_fast` is the companion for Φ_t = Σ_{s≤t} θ_s (mod 2π): its backward is the
reversed cumulative sum.
"""

from __future__ import annotations

import math
import os

import torch

TWO_PI = 2.0 * math.pi
#: ``STYLIZED_NAIVE_ROTATION=1`` routes the model through the naive reference instead
USE_FAST = os.environ.get("STYLIZED_NAIVE_ROTATION", "") in ("", "0")
#: ``STYLIZED_ROTATION_KERNELS=0`` disables the fused Numba kernels (CPU float32 only)
USE_KERNELS = os.environ.get("STYLIZED_ROTATION_KERNELS", "1") not in ("0", "")


def fused_kernels():
    from . import rotation_kernels

    return rotation_kernels


def _use_kernels(x: torch.Tensor, cos: torch.Tensor) -> bool:
    """The fused CPU kernels apply: float32 on CPU, x of the full (un-broadcast) shape, ≤ 5-D."""
    if not (USE_KERNELS and x.device.type == "cpu" and x.dtype == torch.float32 and cos.dtype == torch.float32):
        return False
    if x.dim() > 5 or cos.dim() > x.dim() or x.shape[-1] != 2 * cos.shape[-1]:
        return False
    off = x.dim() - cos.dim()  # cos broadcasts against x's leading dims (each 1 or equal)
    if any(n != 1 and n != x.shape[off + i] for i, n in enumerate(cos.shape[:-1])):
        return False
    return fused_kernels().AVAILABLE


def numpy_5d(*ts: torch.Tensor) -> list:
    """NumPy views of tensors, leading dims padded with 1 to 5-D."""
    return [t.detach().reshape((1,) * (5 - t.dim()) + tuple(t.shape)).numpy() if t.dim() < 5
            else t.detach().numpy() for t in ts]


def _n(n_rot: int | None, x: torch.Tensor) -> int:
    """Slots to rotate along dim −3 (all when ``n_rot`` is None)."""
    return (x.shape[-3] if x.dim() >= 3 else 1) if n_rot is None else n_rot


def cos_sin(psi: torch.Tensor, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos ψ and sin ψ (evaluated in ψ's dtype, then rounded to ``dtype``), outside autograd."""
    with torch.no_grad():
        return torch.cos(psi).to(dtype), torch.sin(psi).to(dtype)


def _rot_into(out: torch.Tensor, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mode: str) -> None:
    """``out`` ← a plane rotation of ``x`` in cos/sin's dtype, half by half (no full-size temporaries).

    ``mode``: ``"fwd"`` R(ψ)x = [x₁c − x₂s, x₁s + x₂c] (two products then a sum, in the
    reference's order: bit-identical); ``"inv"`` R(−ψ)x = [x₁c + x₂s, x₂c − x₁s] (the
    reference's x₁c − x₂(−s), x₁(−s) + x₂c, bit-identical); ``"bwd"`` / ``"bwd_inv"``: the
    transposes R(−ψ)g / R(ψ)g with fused multiply-adds (backward only).
    """
    h = x.shape[-1] // 2
    xf = x.to(cos.dtype)
    x1, x2 = xf[..., :h], xf[..., h:]
    o1, o2 = out[..., :h], out[..., h:]
    if mode == "fwd":
        torch.mul(x1, cos, out=o1)
        o1.sub_(x2 * sin)
        torch.mul(x2, cos, out=o2)
        o2.add_(x1 * sin)
    elif mode == "inv":
        torch.mul(x1, cos, out=o1)
        o1.add_(x2 * sin)
        torch.mul(x2, cos, out=o2)
        o2.sub_(x1 * sin)
    else:  # transposes: bwd = R(−ψ) (inverse of fwd), bwd_inv = R(ψ)
        sign = 1.0 if mode == "bwd" else -1.0
        torch.mul(x1, cos, out=o1)
        o1.addcmul_(x2, sin, value=sign)
        torch.mul(x2, cos, out=o2)
        o2.addcmul_(x1, sin, value=-sign)


def _rotate_prefix(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_rot: int | None, mode: str, dtype: torch.dtype
) -> torch.Tensor:
    """Rotate ``x`` (all of it, or its first ``n_rot`` slots along dim −3; the rest copied)."""
    shape = torch.broadcast_shapes(x.shape[:-1], cos.shape[:-1]) + x.shape[-1:]
    out = torch.empty(shape, dtype=dtype, device=x.device)
    part = out if n_rot is None else out.narrow(-3, 0, n_rot)
    xr = x if n_rot is None else x.narrow(-3, 0, n_rot)
    y = part if dtype == cos.dtype else torch.empty(part.shape, dtype=cos.dtype, device=x.device)
    _rot_into(y, xr, cos, sin, mode)
    if y is not part:
        part.copy_(y)
    if n_rot is not None and n_rot < x.shape[-3]:
        rest = x.shape[-3] - n_rot
        out.narrow(-3, n_rot, rest).copy_(x.narrow(-3, n_rot, rest))
    return out


class AccumulatedRotation(torch.autograd.Function):
    """``(ψ, cos ψ, sin ψ, inverse, x, n_rot) -> R(±ψ)x`` with the closed-form backward.

    ``x`` is [..., d] (float32 or bf16, or float64 for ``gradcheck``); ψ, cos ψ and sin ψ are
    [..., d/2], broadcastable against ``x[..., :d/2]`` (ψ float64 in the model; cos/sin float32,
    the dtype the rotation is computed in).
    ``n_rot``: rotate only the first ``n_rot`` entries of dim −3 (the Q/K/V slot of a fused
    [B, L, 3, H, d] projection) and pass the others through, so one tensor (and one
    gradient) covers the whole projection.  The result is contiguous.
    """

    @staticmethod
    def forward(ctx, psi, cos, sin, inverse, x, n_rot=None):  # type: ignore[override]
        ctx.inverse, ctx.n_rot = bool(inverse), n_rot
        ctx.psi_shape, ctx.psi_dtype = psi.shape, psi.dtype
        ctx.kernels = _use_kernels(x, cos)
        if ctx.kernels:  # the backward needs the output y (∂ψ from y and g), not x
            out = torch.empty(x.shape, dtype=x.dtype)
            fused_kernels().rotate_fwd(*numpy_5d(x, cos, sin, out), _n(n_rot, x), ctx.inverse)
            ctx.save_for_backward(cos, sin, out)
            return out
        ctx.save_for_backward(cos, sin, x)
        return _rotate_prefix(x, cos, sin, n_rot, "inv" if ctx.inverse else "fwd", x.dtype)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        n_rot = ctx.n_rot
        if ctx.kernels:
            cos, sin, y = ctx.saved_tensors
            gx = torch.empty(y.shape, dtype=torch.float32)
            need_psi, n = ctx.needs_input_grad[0], _n(n_rot, y)
            # ψ broadcast at most along the slot dim (the model's layouts): no zero fill needed
            c5, y5 = (1,) * (5 - cos.dim()) + tuple(cos.shape), (1,) * (5 - y.dim()) + tuple(y.shape)
            init = need_psi and n >= 1 and c5[:2] == y5[:2] and c5[3] == y5[3]
            gpsi = (torch.empty if init else torch.zeros)(cos.shape if need_psi else (1,) * cos.dim(),
                                                          dtype=torch.float64)
            fused_kernels().rotate_bwd(*numpy_5d(g.to(torch.float32).contiguous(), y, cos.contiguous(), sin.contiguous(),
                                        gx, gpsi), n, ctx.inverse, need_psi, init)
            if need_psi:
                if gpsi.shape != ctx.psi_shape:
                    gpsi = gpsi.sum_to_size(ctx.psi_shape)
                gpsi = gpsi.to(ctx.psi_dtype)
            return gpsi if need_psi else None, None, None, None, gx if ctx.needs_input_grad[4] else None, None
        cos, sin, x = ctx.saved_tensors
        gx = _rotate_prefix(g, cos, sin, n_rot, "bwd_inv" if ctx.inverse else "bwd", cos.dtype)
        gpsi = None
        if ctx.needs_input_grad[0]:  # ∂ψ = ±(x₁ x̄₂ − x₂ x̄₁), summed over broadcast dims
            h = x.shape[-1] // 2
            xr = (x if n_rot is None else x.narrow(-3, 0, n_rot)).to(cos.dtype)
            gr = gx if n_rot is None else gx.narrow(-3, 0, n_rot)
            gpsi = xr[..., :h] * gr[..., h:]
            gpsi.addcmul_(xr[..., h:], gr[..., :h], value=-1.0)
            if ctx.inverse:
                gpsi.neg_()
            gpsi = gpsi.sum_to_size(ctx.psi_shape).to(ctx.psi_dtype)
        gx = gx.to(x.dtype) if ctx.needs_input_grad[4] else None
        return gpsi, None, None, None, gx, None


def rotate_fast(
    psi: torch.Tensor,
    x: torch.Tensor,
    inverse: bool = False,
    cs: tuple[torch.Tensor, torch.Tensor] | None = None,
    n_rot: int | None = None,
) -> torch.Tensor:
    """R(ψ)x (``inverse``: R(−ψ)x) through :class:`AccumulatedRotation`.

    Parameters
    ----------
    psi : Tensor [..., d/2]
        Angles, broadcastable against ``x[..., :d/2]``; gradients flow to it in closed form.
    x : Tensor [..., d]
    inverse : bool
        Apply R(−ψ) (the query-side inverse of the ``-qkv`` variants).
    cs : (cos, sin), optional
        Precomputed :func:`cos_sin` of ``psi`` (reused across calls with the same ψ).
    n_rot : int, optional
        Rotate only ``x``'s first ``n_rot`` entries along dim −3 (the rest pass through).

    Returns
    -------
    Tensor, the broadcast shape of ``x``, contiguous, ``x.dtype``.
    """
    cos, sin = cs if cs is not None else cos_sin(psi, torch.float64 if x.dtype == torch.float64 else torch.float32)
    return AccumulatedRotation.apply(psi, cos, sin, inverse, x, n_rot)


def blh_view(psi: torch.Tensor) -> torch.Tensor:
    """ψ [B', H', L, h] (or [B', L, h]) as a [B', L, H', h] view (the angles' memory layout)."""
    if psi.dim() == 3:
        psi = psi.unsqueeze(1)
    return psi.permute(0, 2, 1, 3)


def rotate_qkv(
    qkv: torch.Tensor, n_head: int, psi: torch.Tensor, psi_v: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple | None]:
    """Rotated q, k (and v) [B, H, L, d_h] from the fused projection ``qkv`` [B, L, 3C].

    Parameters
    ----------
    qkv : Tensor [B, L, 3C]
        ``c_attn(x)``.
    n_head : int
    psi : Tensor [B or 1, H or 1, L, d_h/2]
        Query/key angles.
    psi_v : Tensor, optional
        Value angles (``-qkv`` variants); ``psi_v is psi`` rotates all three in one call.

    Returns
    -------
    q, k, v : Tensor [B, H, L, d_h]
        As ``CausalSelfAttention.qkv`` then ``rotate`` would give them (bit-identical).
    vstate : tuple or None
        What :func:`unrotate_output` needs (``None`` without value rotation).
    """
    B, L, C3 = qkv.shape
    x = qkv.view(B, L, 3, n_head, C3 // (3 * n_head))
    pl = blh_view(psi)
    # ψ from the learned tables (learned_rotation.learned_angles): cos/sin formed with ψ, and
    # ψ's gradient routed to E directly
    src = getattr(psi, "_learned_source", None)
    cs = (src.cos_sin(psi) if src is not None else None) or cos_sin(pl)
    vstate = None
    same = psi_v is psi
    cs5 = (cs[0].unsqueeze(2), cs[1].unsqueeze(2))
    if src is not None and (same or psi_v is None) and src.applies(psi, x, cs5[0]):
        r = src.rotate(x, *cs5, n_rot=3 if same else 2)
    else:
        src = None
        r = rotate_fast(pl.unsqueeze(2), x, cs=cs5, n_rot=3 if same else 2)
    q, k, v = r.unbind(2)
    if same:
        vstate = (pl, cs, src)
    elif psi_v is not None:
        pvl = blh_view(psi_v)
        cs_v = cos_sin(pvl)
        v = rotate_fast(pvl, v, cs=cs_v)
        vstate = (pvl, cs_v, None)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), vstate


def unrotate_output(y: torch.Tensor, vstate: tuple) -> torch.Tensor:
    """R(−ψ^v_i) y_i at the query: y [B, H, L, d_h] -> [B, L, H·d_h] (contiguous)."""
    pvl, cs, src = vstate
    B, H, L, d = y.shape
    if src is not None:  # the learned route of rotate_qkv: x [B, L, 1, H, d], cos [B, L, 1, H', d/2]
        x, c5 = y.transpose(1, 2).unsqueeze(2), cs[0].unsqueeze(2)
        if src.applies(pvl, x, c5):  # pvl: a view of ψ (same version counter)
            return src.rotate(x, c5, cs[1].unsqueeze(2), n_rot=1, inverse=True).view(B, L, H * d)
    return rotate_fast(pvl, y.transpose(1, 2), inverse=True, cs=cs).view(B, L, H * d)


class _Accumulate(torch.autograd.Function):
    """Φ = (Σ_{s≤t} θ_s mod 2π) along ``dim``; backward: the reversed cumulative sum."""

    @staticmethod
    def forward(ctx, theta, dim):  # type: ignore[override]
        ctx.dim = dim
        return torch.remainder(torch.cumsum(theta, dim=dim), TWO_PI)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        return torch.flip(torch.cumsum(torch.flip(g, (ctx.dim,)), dim=ctx.dim), (ctx.dim,)), None


def accumulate_fast(theta: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Φ_t = Σ_{s≤t} θ_s along ``dim`` in float64, reduced mod 2π (as ``model.accumulate``).

    The remainder's derivative is 1 almost everywhere, so ∂L/∂θ_s = Σ_{t≥s} ∂L/∂Φ_t.
    """
    return _Accumulate.apply(theta.double(), dim)
