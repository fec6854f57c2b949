"""Learned angles on the fast path: ψ from the angle tables, and ψ's gradient routed to E.

Naive reference beside the fast path (FLA style, compared in ``tests/transformer/model/test_rotation.py``):
:func:`learned_angles_reference` is plain autograd through

    θ_t = π·tanh(E[x_t]) − ω,   ψ_t = −Σ_{s≤t} θ_s   (float64, unreduced),

then :func:`.rotation.rotate_fast` takes ψ as an ordinary autograd input.  On CPU with the
Numba kernels:

* :class:`LearnedAngles` computes ψ in one pass (gather, product, cumulative sum: bit-identical
  to the reference) and differentiates it in closed form: with g = ∂L/∂ψ,
  ∂L/∂θ_s = −Σ_{t≥s} g_t (reversed cumulative sum), scatter-added over the positions reading
  row v, times π(1 − tanh² E[v]).
* :func:`learned_angles` attaches a :class:`LearnedSource` to the ψ it returns.  When
  :func:`.rotation.rotate_qkv` / :func:`.rotation.unrotate_output` receive that ψ unchanged,
  they rotate through :class:`LearnedRotation`, whose backward turns ∂L/∂ψ into ∂L/∂E inside
  the rotation's own backward pass (∂L/∂ψ is never written out, no autograd sum of the Q/K/V
  and output contributions, no separate ψ backward): ψ then is not part of the graph, and E
  receives the same gradient (to round-off) as through ψ.  Anything else done with ψ (the
  probes, the naive path) differentiates through :class:`LearnedAngles` as usual; so does a ψ
  on which ``retain_grad()`` was called (``torch.autograd.grad(loss, psi)`` on a routed ψ
  finds ψ unused: differentiate with respect to E).

Per layer of the cpu preset this is 65K float64 angles: the reference's ten-odd PyTorch kernels
and autograd nodes cost mostly overhead, and ∂L/∂ψ's round trips through memory (written by
the rotations' backward, summed by autograd, read back) about as much as the arithmetic.
Measured (``bench.py --preset cpu --threads 1 --clock cpu``, interleaved medians, learned-qkv /
rope): 1.16 with the reference angles, 1.10 with :class:`LearnedAngles` (and the rotation's
backward reading y), 1.08 with the routed gradient.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import rotation


def learned_angles_reference(
    angle_table: torch.Tensor, idx: torch.Tensor, omega: torch.Tensor, n_tables: int
) -> torch.Tensor:
    """The naive reference of :func:`learned_angles` (plain autograd through PyTorch ops)."""
    table = math.pi * torch.tanh(angle_table.double()) - omega.repeat(n_tables)
    theta = torch.nn.functional.embedding(idx, table).view(*idx.shape, n_tables, -1)
    return -torch.cumsum(theta, dim=1).permute(0, 2, 1, 3)


class LearnedAngles(torch.autograd.Function):
    """``(E, tanh E, idx, ω, H') -> ψ`` [B, H', L, d/2] with the closed-form backward.

    ``tanh E`` (float64, computed by PyTorch: the reference's values) is an input so that
    :class:`LearnedSource` can share it.  One Numba pass each way
    (:func:`.rotation_kernels.learned_angles_fwd` / ``_bwd``).
    """

    @staticmethod
    def forward(ctx, angle_table, tanh_e, idx, omega, n_tables):  # type: ignore[override]
        B, L = idx.shape
        psi = torch.empty(B, L, tanh_e.shape[1], dtype=torch.float64)
        rotation.fused_kernels().learned_angles_fwd(tanh_e.numpy(), omega.double().numpy(), idx.numpy(), psi.numpy())
        ctx.save_for_backward(tanh_e, idx)
        ctx.table_dtype = angle_table.dtype
        return psi.view(B, L, n_tables, -1).permute(0, 2, 1, 3)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        tanh_e, idx = ctx.saved_tensors
        B, L = idx.shape
        g = g.permute(0, 2, 1, 3).reshape(B, L, -1).double()  # a view when g is ψ's layout
        grad = torch.empty(tanh_e.shape, dtype=ctx.table_dtype)
        rotation.fused_kernels().learned_angles_bwd(g.numpy(), idx.numpy(), tanh_e.numpy(), grad.numpy())
        return grad, None, None, None, None


class LearnedRotation(torch.autograd.Function):
    """``(E, x, cos ψ, sin ψ, idx, tanh E, n_rot, inverse) -> R(±ψ)x``, gradients to E and x.

    ``x`` [B, L, S, H, d] (any strides; the first ``n_rot`` slots rotated, the rest copied),
    ``cos``/``sin`` [B, L, 1, H', d/2] contiguous (H' = H or 1), ``idx`` [B, L].  The forward is
    :func:`.rotation_kernels.rotate_fwd` (bit-identical to the reference rotation); the backward
    (:func:`.rotation_kernels.learned_rotate_bwd`) forms ∂L/∂x and ∂L/∂ψ_t = ±(y₁g₂ − y₂g₁)
    summed over slots (and heads when H' = 1) in one pass, then the reversed cumulative sum of
    ∂L/∂ψ over t, scatter-added into the table's rows and scaled by π(1 − tanh² E): ∂L/∂E.
    ``y`` is the saved output (kept alive by SDPA / ``c_proj`` anyway), not x.
    """

    @staticmethod
    def forward(ctx, angle_table, x, cos, sin, idx, tanh_e, n_rot, inverse):  # type: ignore[override]
        out = torch.empty(x.shape, dtype=x.dtype)
        rotation.fused_kernels().rotate_fwd(*rotation.numpy_5d(x, cos, sin, out), n_rot, bool(inverse))
        ctx.n_rot, ctx.inverse, ctx.table_dtype = n_rot, bool(inverse), angle_table.dtype
        ctx.save_for_backward(cos, sin, out, idx, tanh_e)
        return out

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        cos, sin, y, idx, tanh_e = ctx.saved_tensors
        need_e = ctx.needs_input_grad[0]
        gx = torch.empty(y.shape, dtype=y.dtype)
        grad_e = torch.empty(tanh_e.shape if need_e else (1, 1), dtype=ctx.table_dtype)
        rotation.fused_kernels().learned_rotate_bwd(g.to(y.dtype).contiguous().numpy(), y.numpy(), cos.numpy(),
                                           sin.numpy(), gx.numpy(), idx.numpy(), tanh_e.numpy(),
                                           grad_e.numpy(), ctx.n_rot, ctx.inverse, need_e)
        return (grad_e if need_e else None, gx if ctx.needs_input_grad[1] else None,
                None, None, None, None, None, None)


class LearnedSource(NamedTuple):
    """What :func:`learned_angles` attaches to ψ (``psi._learned_source``): E, tanh E, idx,
    cos ψ and sin ψ (float32, [B, L, H', d/2], formed while ψ was in cache), and ψ's version
    counter then (an in-place change of ψ voids all of it)."""

    table: torch.Tensor
    tanh_e: torch.Tensor
    idx: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    version: int

    def cos_sin(self, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """cos ψ, sin ψ as :func:`.rotation.cos_sin` of ``blh_view(psi)`` gives them (None if ψ changed)."""
        return (self.cos, self.sin) if psi._version == self.version else None

    def applies(self, psi: torch.Tensor, x: torch.Tensor, cos: torch.Tensor) -> bool:
        """The routed rotation applies to ``x`` [B, L, S, H, d] with ``cos`` [B, L, 1, H', d/2]."""
        return (psi._version == self.version and not psi.retains_grad and rotation.USE_KERNELS
                and x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
                and cos.dtype == x.dtype and x.dim() == 5 and cos.dim() == 5
                and tuple(x.shape[:2]) == tuple(self.idx.shape) == tuple(cos.shape[:2])
                and cos.shape[2] == 1 and cos.shape[3] in (1, x.shape[3]) and 2 * cos.shape[4] == x.shape[4])

    def rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_rot: int,
               inverse: bool = False) -> torch.Tensor:
        """R(±ψ)x on the first ``n_rot`` slots through :class:`LearnedRotation`."""
        return LearnedRotation.apply(self.table, x, cos.contiguous(), sin.contiguous(), self.idx,
                                     self.tanh_e, n_rot, inverse)


def learned_source(psi: torch.Tensor | None) -> LearnedSource | None:
    """The :class:`LearnedSource` attached to ``psi``, if any."""
    return getattr(psi, "_learned_source", None)


def learned_angles(
    angle_table: torch.Tensor, idx: torch.Tensor, omega: torch.Tensor, n_tables: int
) -> torch.Tensor:
    """ψ = −Φ, Φ_t = Σ_{s≤t} (π·tanh E[x_s] − ω), per table (``CausalSelfAttention.angles``).

    Parameters
    ----------
    angle_table : Tensor [V, H'·d/2]
        E_ℓ (float32, or float64 for ``gradcheck``).
    idx : Tensor [B, L]
        Token ids.
    omega : Tensor [d/2]
        RoPE frequencies ω (float64).
    n_tables : int
        H': tables per layer (H per head, 1 shared).

    Returns
    -------
    Tensor [B, H', L, d/2], float64, unreduced (a [B, L, H', d/2]-contiguous view), equal to
    :func:`learned_angles_reference` bit for bit.  On CPU with the Numba kernels it comes from
    :class:`LearnedAngles` and carries a :class:`LearnedSource`; elsewhere it is the reference.
    """
    if not (rotation.USE_KERNELS and angle_table.device.type == "cpu" and idx.device.type == "cpu"
            and idx.dim() == 2 and angle_table.dtype in (torch.float32, torch.float64)
            and rotation.fused_kernels().AVAILABLE):
        return learned_angles_reference(angle_table, idx, omega, n_tables)
    idx = idx.long()
    tanh_e = torch.tanh(angle_table.detach().double())  # PyTorch's tanh: the reference's values
    psi = LearnedAngles.apply(angle_table, tanh_e, idx, omega, n_tables)
    cos, sin = rotation.cos_sin(psi)  # ψ's [B, L, H', d/2] memory order, so blh_view views are contiguous
    psi._learned_source = LearnedSource(angle_table, tanh_e, idx, rotation.blh_view(cos), rotation.blh_view(sin), psi._version)
    return psi
