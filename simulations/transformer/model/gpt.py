"""Small GPT with the paper's attention position mechanisms (nanoGPT style).

Every variant is "transport the key to the query, then take a dot product":
s_ij = q_iᵀ P_{j→i} k_j / sqrt(d_h), with P_{j→i} = M_i M_{i-1} ⋯ M_{j+1} a product of
per-token transports M_t.  What each variant is made of, and its configuration, is in
:mod:`~simulations.transformer.model.config`; the additive / multiplicative far-mass controls (ALiBi, FoX,
Scalable-Softmax) in :mod:`.attention_bias`; PaTH's Householder attention in
:mod:`.path_attention`; the fused rotation kernels in :mod:`.rotation` and
:mod:`.learned_rotation`.  This module holds the rotation helpers and the modules.

Rotations use the half-split layout: for x = [x₁, x₂] (each d_h/2),
R(ψ)x = [x₁ cos ψ - x₂ sin ψ, x₁ sin ψ + x₂ cos ψ].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import learned_rotation, rotation
from .attention_bias import alibi_slopes, biased_attention, fox_gate_bias_init, ssmax_query, ssmax_scale_init
from .config import VARIANT_SPECS, GPTConfig
from .path_attention import path_attention

__all__ = ["TWO_PI", "GPT", "AttentionIntermediates", "Block", "CausalSelfAttention", "MLP", "accumulate",
           "head_cos_sin", "rope_frequencies", "rotate"]

TWO_PI = 2.0 * math.pi


# ---------------------------------------------------------------------------
# position helpers
# ---------------------------------------------------------------------------


def rope_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoPE frequencies ω_b = base^{-2b/d_h}, b = 0..d_h/2-1 (float64)."""
    b = torch.arange(head_dim // 2, dtype=torch.float64)
    return base ** (-2.0 * b / head_dim)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply R(ψ) (half-split layout) to ``x`` [..., L, d_h] given cos/sin [..., L, d_h/2]."""
    h = x.shape[-1] // 2
    xf = x.float()  # rotate in float32 even under bf16 autocast
    x1, x2 = xf[..., :h], xf[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).to(x.dtype)


def accumulate(theta: torch.Tensor) -> torch.Tensor:
    """Φ_t = Σ_{s≤t} θ_s along dim 1, in float64, reduced mod 2π."""
    return torch.remainder(torch.cumsum(theta.double(), dim=1), TWO_PI)


def head_cos_sin(psi: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of ψ [B or 1, H or 1, L, d_h/2] (or [B or 1, L, d_h/2]) for [B, H, L, d_h/2] broadcasting."""
    if psi.dim() == 3:
        psi = psi.unsqueeze(1)
    return torch.cos(psi).to(dtype), torch.sin(psi).to(dtype)


# ---------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------


@dataclass
class AttentionIntermediates:
    """What one attention module computed in its forward pass, for the probes (x-transformers' ``Intermediates``).

    The module's own tensors, nothing recomputed: its input ``x`` [B, L, C]; the projections before the rotation
    ``q0, k0, v0`` and after it ``q, k, v`` [B, H, L, d_h] (``R(ψ_i) q_i`` and ``R(ψ_j) k_j``, whose product is
    ``q_iᵀ P_{j→i} k_j``; ``v`` rotated by ``ψ^v`` for ``-qkv``, the output then turned back by ``R(−ψ^v_i)``);
    ``q_scaled`` the query the scores read (``s_h log n_i · q_i`` under Scalable-Softmax, ``q`` itself otherwise);
    the angles ``psi``, ``psi_v``; PaTH's ``beta``, ``w``; FoX's ``log_gate_cum`` (``c_t``).  The weights
    ``α_ij`` are not kept ([B, H, L, L] does not fit at the probed lengths): the probes form them in chunks from
    these (:func:`simulations.transformer.evaluate.probe.score_chunks`).  Eval mode: attention dropout is not in them.
    """

    x: torch.Tensor
    q0: torch.Tensor
    k0: torch.Tensor
    v0: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    q_scaled: torch.Tensor
    psi: torch.Tensor | None = None
    psi_v: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    w: torch.Tensor | None = None
    log_gate_cum: torch.Tensor | None = None


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention with the transport of ``config.variant``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        spec = VARIANT_SPECS[config.variant]
        self.angle_source, self.rotate_v = spec.angle_source, spec.rotate_v
        self.use_alibi, self.use_path, self.use_fox = spec.alibi, spec.path, spec.forget_gate
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.dropout = config.dropout
        self.angle_heads = config.n_head if config.angle_heads == "per-head" else 1
        if self.angle_source is not None:
            self.register_buffer(
                "omega", rope_frequencies(self.head_dim, config.rope_base), persistent=False
            )
        if self.angle_source == "learned":
            # E_ℓ[vocab, H·d_h/2] (per head, the author's) or [vocab, d_h/2] (shared),
            # zero-initialised -> model == RoPE at init
            self.angle_table = nn.Parameter(torch.zeros(config.vocab_size, self.angle_heads * self.head_dim // 2))
        if self.use_alibi:
            self.register_buffer(
                "slopes",
                torch.tensor(alibi_slopes(config.n_head), dtype=torch.float32),
                persistent=False,
            )
        if self.use_path:
            self.path_w = nn.Linear(config.n_embd, config.n_embd, bias=False)
            self.path_conv = nn.Conv1d(
                config.n_embd, config.n_embd, config.path_conv,
                groups=config.n_embd, padding=config.path_conv - 1, bias=False,
            )
            self.path_beta = nn.Linear(config.n_embd, config.n_head, bias=True)
        if self.use_fox:
            # raw parameters (not nn.Linear), so GPT._init_weights keeps w = 0, b = 3..6
            self.fox_w = nn.Parameter(torch.zeros(config.n_head, config.n_embd))
            self.fox_b = nn.Parameter(fox_gate_bias_init(config.n_head))
        self.use_ssmax = spec.log_scale
        if self.use_ssmax:
            # raw parameter filled with a constant: draws nothing from the torch stream
            self.ssmax_s = nn.Parameter(ssmax_scale_init(config.n_head, config.block_size))

    # -- transports ---------------------------------------------------------
    def angles(
        self,
        idx: torch.Tensor | None,
        B: int,
        L: int,
        device: torch.device,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Rotation angles ψ (queries/keys) and ψ^v (values), each [B or 1, H' , L, d_h/2] float64.

        ``H' = H`` with per-head angles (tables and random streams), 1 when shared.
        ``rope``: ψ_t = tω.  ``random-*``: ψ = Φ = cumsum θ, θ ~ U(-ω, ω) (fresh
        draw; ``generator`` makes it reproducible).  ``learned-*``: ψ = -Φ with
        θ_t = π tanh(E[x_t]) - ω.
        """
        src = self.angle_source
        if src is None:
            return None, None
        omega = self.omega.to(device)
        Hh = self.angle_heads
        if src == "rope":
            t = torch.arange(L, dtype=torch.float64, device=device).unsqueeze(-1)
            psi = torch.remainder(t * omega, TWO_PI).view(1, 1, L, -1)
            return psi, None
        if src == "random":
            shape = (B, L, Hh, omega.shape[0])

            def draw() -> torch.Tensor:
                u = torch.rand(shape, dtype=torch.float64, generator=generator,
                               device="cpu" if generator is not None else device)
                return accumulate((2.0 * u.to(device) - 1.0) * omega).permute(0, 2, 1, 3)

            psi = draw()
            psi_v = None
            if self.rotate_v:
                psi_v = psi if self.config.value_angles == "same" else draw()
            return psi, psi_v
        # learned
        if idx is None:
            raise ValueError("idx is required for learned-angle variants")
        # θ for the whole vocabulary once (V rows, not B·L), then gathered; ψ = -Φ is left
        # unreduced (cos/sin are taken in float64, exact enough for |Φ| ≲ 10⁶).  Fast path:
        # fused Numba kernels with closed-form backward, ψ's gradient routed to E inside the
        # rotation's backward; naive reference: plain autograd (learned_rotation.py)
        if self.config.angle_tokens == "key":  # the author's route j … i−1: position t takes token t−1's angle
            idx = torch.cat([idx[:, :1], idx[:, :-1]], dim=1)  # (the first is any: a constant cancels in P_{j→i})
        if rotation.USE_FAST:
            psi = learned_rotation.learned_angles(self.angle_table, idx, omega, Hh)
        else:
            psi = learned_rotation.learned_angles_reference(self.angle_table, idx, omega, Hh)
        return psi, (psi if self.rotate_v else None)

    def householder(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """PaTH parameters β [B, H, L] ∈ (0, 2) and unit w [B, H, L, d_h]."""
        B, L, C = x.shape
        beta = 2.0 * torch.sigmoid(self.path_beta(x)).transpose(1, 2)
        u = self.path_w(x).transpose(1, 2)  # [B, C, L]
        u = F.silu(self.path_conv(u)[..., :L]).transpose(1, 2)  # causal: keep first L; SiLU as FLA's ShortConvolution
        w = u.view(B, L, self.n_head, self.head_dim).transpose(1, 2)
        return beta, F.normalize(w.float(), dim=-1).to(x.dtype)

    def log_gate_cumsum(self, x: torch.Tensor) -> torch.Tensor:
        """FoX c_t = Σ_{s≤t} log f_s, f_s = sigmoid(w_hᵀ x_s + b_h): [B, H, L] float64.

        The bias of the pair (i, j ≤ i) is c_i - c_j = Σ_{s=j+1}^{i} log f_s ≤ 0.
        """
        with torch.autocast(x.device.type, enabled=False):  # gate in float32 under autocast
            logit = F.linear(x.float(), self.fox_w.float(), self.fox_b.float())  # [B, L, H]
        return torch.cumsum(F.logsigmoid(logit).double(), dim=1).transpose(1, 2)

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Unrotated q, k, v [B, H, L, d_h] of the input ``x`` [B, L, C]."""
        return self.split_heads(self.c_attn(x))

    def split_heads(self, proj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v [B, H, L, d_h]: views of the fused projection ``proj = c_attn(x)`` [B, L, 3C]."""
        B, L, C3 = proj.shape
        shape = (B, L, self.n_head, self.head_dim)
        return tuple(t.view(shape).transpose(1, 2) for t in proj.split(C3 // 3, dim=2))  # type: ignore[return-value]

    def forward(
        self,
        x: torch.Tensor,
        idx: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        psi: torch.Tensor | None = None,
        psi_v: torch.Tensor | None = None,
        return_intermediates: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionIntermediates]:
        """Attention output [B, L, C]; ``psi``/``psi_v`` override the drawn angles.

        ``return_intermediates``: ``(output, AttentionIntermediates)``, the output computed as without it.
        """
        B, L, C = x.shape
        dp = self.dropout if self.training else 0.0
        vstate = beta = w = log_gate_cum = None
        if self.angle_source is not None and psi is None:
            psi, psi_v = self.angles(idx, B, L, x.device, generator)
        proj = self.c_attn(x)
        if self.angle_source is not None and rotation.USE_FAST:
            # closed-form autograd Function on the fused projection (rotation.py)
            q, k, v, vstate = rotation.rotate_qkv(proj, self.n_head, psi, psi_v if self.rotate_v else None)
        else:
            q, k, v = self.split_heads(proj)
            if self.angle_source is not None:  # the naive reference
                cos, sin = head_cos_sin(psi, torch.float32)
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
                if self.rotate_v:
                    cos_v, sin_v = head_cos_sin(psi_v, torch.float32)
                    v = rotate(v, cos_v, sin_v)
        q_scaled = ssmax_query(q, self.ssmax_s) if self.use_ssmax else q
        if self.use_path:
            beta, w = self.householder(x)
            y = path_attention(q_scaled, k, v, beta, w, chunk=self.config.path_chunk, dropout_p=dp)
        elif self.use_alibi or self.use_fox:
            log_gate_cum = self.log_gate_cumsum(x) if self.use_fox else None
            y = biased_attention(
                q_scaled, k, v,
                slopes=self.slopes if self.use_alibi else None,
                log_gate_cum=log_gate_cum,
                dropout_p=dp,
            )
        else:
            y = F.scaled_dot_product_attention(q_scaled, k, v, dropout_p=dp, is_causal=True)
        if vstate is not None:  # R(-ψ^v_i) at the query, written as [B, L, C]
            y = rotation.unrotate_output(y, vstate)
        else:
            if self.rotate_v:  # R(-ψ^v_i) at the query
                y = rotate(y, cos_v, -sin_v)
            y = y.transpose(1, 2).contiguous().view(B, L, C)
        out = self.resid_dropout(self.c_proj(y))
        if not return_intermediates:
            return out
        if self.angle_source is not None:  # the naive reference's layout (contiguous) whichever path ran: the
            q, k = q.contiguous(), k.contiguous()  # probes' float64 products depend on it in the last bit
            q_scaled = q_scaled.contiguous() if self.use_ssmax else q
            v = v.contiguous() if self.rotate_v else v
        q0, k0, v0 = self.split_heads(proj)
        return out, AttentionIntermediates(x, q0, k0, v0, q, k, v, q_scaled, psi, psi_v if self.rotate_v else None,
                                           beta, w, log_gate_cum)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-LayerNorm transformer block."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(
        self, x: torch.Tensor, idx: torch.Tensor, generator=None, return_intermediates: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionIntermediates]:
        a = self.attn(self.ln_1(x), idx, generator, return_intermediates=return_intermediates)
        a, inter = a if return_intermediates else (a, None)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return (x, inter) if return_intermediates else x


class GPT(nn.Module):
    """Decoder-only transformer, tied embeddings, no absolute position embedding."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        if config.lm_head == "tied":
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # tied
        else:  # the author's: its own projection with a bias
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=True)
        if config.init == "nanogpt":
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        return_intermediates: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None] | tuple[torch.Tensor, torch.Tensor | None, list[AttentionIntermediates]]:
        """Logits [B, L, V] and (if ``targets``) the mean cross-entropy.

        ``return_intermediates``: a third item, the :class:`AttentionIntermediates` of every layer (in order);
        the logits are those of the call without it, bit for bit.
        """
        x = self.drop(self.wte(idx))
        intermediates = []
        for block in self.blocks:
            if return_intermediates:
                x, inter = block(x, idx, generator, return_intermediates=True)
                intermediates.append(inter)
            else:
                x = block(x, idx, generator)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))
        return (logits, loss, intermediates) if return_intermediates else (logits, loss)

    def param_groups(self, weight_decay: float, lr: float, decay_all: bool = True) -> list[dict]:
        """AdamW groups: matrices, vectors, and the angle tables at lr·angle_lr_mult.

        ``decay_all`` (the author's setting): weight decay on every parameter, tables
        included; otherwise vectors (biases, LayerNorm) and tables are not decayed.
        """
        decay, no_decay, angle = [], [], []
        for name, p in self.named_parameters():
            if not p.requires_grad:
                continue
            if name.endswith("angle_table"):
                angle.append(p)
            elif p.dim() >= 2:
                decay.append(p)
            else:
                no_decay.append(p)
        wd_other = weight_decay if decay_all else 0.0
        groups = [
            {"params": decay, "weight_decay": weight_decay, "lr_mult": 1.0},
            {"params": no_decay, "weight_decay": wd_other, "lr_mult": 1.0},
        ]
        if angle:
            groups.append(
                {"params": angle, "weight_decay": wd_other, "lr_mult": self.config.angle_lr_mult}
            )
        for g in groups:
            g["lr"] = lr * g["lr_mult"]
        return groups
