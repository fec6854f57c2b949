"""Small GPT with the paper's attention position mechanisms.

Every variant is "transport the key to the query, then take a dot product":
the score between query position i and key position j ≤ i is

    s_ij = q_iᵀ P_{j→i} k_j / sqrt(d_h),

where P_{j→i} is a product of per-token transport matrices M_t over the route
t = j+1..i (P_{j→i} = M_i M_{i-1} ⋯ M_{j+1}).

Variants (``GPTConfig.variant``)
--------------------------------
rope
    M_t = R(ω), ω_b = base^{-2b/d_h}, b = 0..d_h/2-1 (base 10000).  The rotation
    applied at position t is ψ_t = t·ω, so P_{j→i} = R(ψ_j - ψ_i) = R((j-i)ω).
nope
    No position signal (P = I), causal mask only.
alibi
    P = I plus the additive bias -m_h (i-j), slopes m_h = 2^{-8h/H} (Press et al.
    rule for H not a power of two, see :func:`alibi_slopes`).
random-qk / random-qkv
    Per-token angles θ_{t,b} ~ U(-ω_b, ω_b), drawn fresh for every position, layer
    and forward pass (training *and* evaluation), per head (``angle_heads``).
    Accumulated angle Φ_t = Σ_{s≤t} θ_s (float64 cumsum, reduced mod 2π); Q and K
    at t are rotated by ψ_t = Φ_t, so P_{j→i} = R(Φ_j - Φ_i) = R(-Σ_{s=j+1}^{i} θ_s).
    ``-qkv`` also rotates values by Φ^v_j and inverse-rotates the output at the
    query by -Φ^v_i: o_i = Σ_j α_ij R(Φ^v_j - Φ^v_i) v_j.  ``value_angles``:
    ``"independent"`` (default, a second independent angle stream, as in the
    author's reported runs) or ``"same"`` (Φ^v = Φ, the theory's transport).
learned-qk / learned-qkv
    Per-layer token tables E_ℓ[vocab, d_h/2], zero-initialised; per-token angle
    θ_t = π·tanh(E_ℓ[x_t]) - ω, Φ_t = Σ_{s≤t} θ_s.  Sign convention: Q/K (and V)
    at position t are rotated by ψ_t = -Φ_t, so at initialisation ψ_t = (t+1)ω,
    which is RoPE up to a global offset that cancels in P_{j→i}: the model equals
    ``rope`` exactly at init (tested).  ``-qkv`` transports values with the same
    learned angle (Φ^v = Φ).  Tables (and random streams) are per head by
    default, as the author's (``angle_heads="shared"``: one per layer).  The tables
    get their own learning-rate multiplier ``angle_lr_mult`` (1 = the author's ratio;
    the cpu preset's budget is set in its preset, see ``train.PRESETS``).
path
    PaTH-style Householder transport M_t = H_t = I - β_t w_t w_tᵀ with
    β_t = 2·sigmoid(linear(x_t)) ∈ (0, 2) and w_t = normalize(SiLU(causal depthwise
    conv_k(linear(x_t)))), per head (FLA's short convolution with its SiLU; FLA's
    low-rank factorisation of the w projection is not reproduced: a full linear map).  Pure-torch chunked implementation
    (:func:`path_attention`, delta-rule / UT-transform form with a triangular
    solve per chunk): O(L²(d + C)) time, O(L(d + C)) memory, checked against
    explicit matrix products in the tests.
random-qkv-alibi / learned-qkv-alibi
    The accumulated rotation of the ``-qkv`` variant plus the ALiBi bias.
fox / learned-qkv-fox
    FoX-style learned forget gate ("Forgetting Transformer", Lin et al. 2025),
    accumulated along the route: per layer and head, f_t = sigmoid(w_hᵀ x_t + b_h)
    ∈ (0, 1) from the attention input x_t (the block's LayerNormed input), and the
    logit bias D_ij = Σ_{s=j+1}^{i} log f_s = c_i - c_j with c_t = Σ_{s≤t} log f_s
    (logsigmoid in float32, cumsum in float64) is added to the scaled scores.
    ``fox`` has no rotation (the control); ``learned-qkv-fox`` adds the learned
    accumulated rotation of ``learned-qkv`` on Q, K and V.  Init: w_h = 0 and
    b_h = linspace(3, 6, H) (head 0 forgets fastest), so f_t = sigmoid(b_h) ∈
    [0.953, 0.998] and D_ij = -(i-j)·softplus(-b_h): **at init FoX is ALiBi with
    slopes softplus(-b_h) ≈ 0.049 … 0.0025** (tested).  The gate parameters
    (``fox_w`` [H, C], decayed; ``fox_b`` [H], not decayed) train at the base lr.
    The bias goes to SDPA as a float mask through the same query-chunked path as
    ALiBi (:func:`biased_attention`), with the chunk shrunk so that one
    [B, H, chunk, L] bias block stays ≤ 2^25 elements at long evaluation lengths.

Rotations use the half-split layout: for x = [x₁, x₂] (each d_h/2),
R(ψ)x = [x₁ cos ψ - x₂ sin ψ, x₁ sin ψ + x₂ cos ψ].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from . import learned_rotation as _learned
from . import rotation as _rotation


class VariantSpec(NamedTuple):
    """What a variant is made of."""

    angle_source: str | None  # "rope" | "random" | "learned" | None
    rotate_v: bool  # transport values too (``-qkv``)
    alibi: bool  # additive ALiBi bias
    path: bool  # PaTH Householder transport
    forget_gate: bool = False  # FoX accumulated forget-gate bias


#: variant -> (angle source, rotate values, alibi bias, path transport, forget gate)
VARIANT_SPECS: dict[str, VariantSpec] = {
    "rope": VariantSpec("rope", False, False, False),
    "nope": VariantSpec(None, False, False, False),
    "alibi": VariantSpec(None, False, True, False),
    "random-qk": VariantSpec("random", False, False, False),
    "random-qkv": VariantSpec("random", True, False, False),
    "learned-qk": VariantSpec("learned", False, False, False),
    "learned-qkv": VariantSpec("learned", True, False, False),
    "path": VariantSpec(None, False, False, True),
    "random-qkv-alibi": VariantSpec("random", True, True, False),
    "learned-qkv-alibi": VariantSpec("learned", True, True, False),
    "fox": VariantSpec(None, False, False, False, True),
    "learned-qkv-fox": VariantSpec("learned", True, False, False, True),
}
VARIANTS: tuple[str, ...] = tuple(VARIANT_SPECS)
#: the eight variants compared by default
MAIN_VARIANTS: tuple[str, ...] = (
    "rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk", "learned-qkv", "path",
)
VALUE_ANGLES = ("independent", "same")
ANGLE_HEADS = ("per-head", "shared")
TWO_PI = 2.0 * math.pi


@dataclass
class GPTConfig:
    """Model hyper-parameters (nanoGPT style).

    Parameters
    ----------
    vocab_size : int
        Token vocabulary (256 for the byte-level corpora).
    block_size : int
        Training context length L_train (no absolute position table exists, so
        the model runs at any length).
    n_layer, n_head, n_embd : int
        Depth, heads H, width; head dim d_h = n_embd / n_head.
    dropout : float
        Residual, attention and MLP dropout probability.
    variant : str
        One of :data:`VARIANTS`.
    rope_base : float
        Base of the RoPE frequencies ω_b = base^{-2b/d_h}.
    value_angles : str
        ``"independent"`` or ``"same"`` value stream for ``random-qkv``.
    angle_heads : str
        ``"per-head"`` (the author's: every head has its own table columns and its own
        random stream) or ``"shared"`` (one table / stream per layer, shared by its heads).
    angle_lr_mult : float
        Learning-rate multiplier for the learned angle tables E_ℓ (1 = the author's ratio).
    path_conv : int
        Kernel size of PaTH's causal depthwise convolution (3 or 4).
    path_chunk : int
        Query chunk size C of the chunked PaTH / ALiBi attention.
    """

    vocab_size: int = 256
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    variant: str = "rope"
    rope_base: float = 10000.0
    value_angles: str = "independent"
    angle_heads: str = "per-head"
    angle_lr_mult: float = 1.0
    path_conv: int = 3
    path_chunk: int = 64
    bias: bool = True
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_config(self)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


def validate_config(cfg: GPTConfig) -> None:
    """Raise ``ValueError`` naming the offending parameter and its allowed values."""
    if cfg.variant not in VARIANT_SPECS:
        raise ValueError(f"variant={cfg.variant!r} is not one of: {', '.join(VARIANTS)}")
    for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "path_chunk"):
        val = getattr(cfg, name)
        if not isinstance(val, int) or val < 1:
            raise ValueError(f"{name}={val!r} must be a positive integer")
    if cfg.n_embd % cfg.n_head != 0:
        raise ValueError(
            f"n_embd={cfg.n_embd} must be divisible by n_head={cfg.n_head}"
        )
    if VARIANT_SPECS[cfg.variant][0] is not None and cfg.head_dim % 2 != 0:
        raise ValueError(
            f"head_dim=n_embd/n_head={cfg.head_dim} must be even for rotation variant "
            f"{cfg.variant!r} (allowed: even values)"
        )
    if cfg.value_angles not in VALUE_ANGLES:
        raise ValueError(
            f"value_angles={cfg.value_angles!r} is not one of: {', '.join(VALUE_ANGLES)}"
        )
    if not 0.0 <= cfg.dropout < 1.0:
        raise ValueError(f"dropout={cfg.dropout!r} must be in [0, 1)")
    if cfg.angle_heads not in ANGLE_HEADS:
        raise ValueError(f"angle_heads={cfg.angle_heads!r} is not one of: {', '.join(ANGLE_HEADS)}")
    if cfg.path_conv not in (3, 4):
        raise ValueError(f"path_conv={cfg.path_conv!r} is not one of: 3, 4")
    if not cfg.angle_lr_mult >= 0.0:
        raise ValueError(f"angle_lr_mult={cfg.angle_lr_mult!r} must be >= 0")
    if not cfg.rope_base > 1.0:
        raise ValueError(f"rope_base={cfg.rope_base!r} must be > 1")


# ---------------------------------------------------------------------------
# position helpers
# ---------------------------------------------------------------------------


def rope_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoPE frequencies ω_b = base^{-2b/d_h}, b = 0..d_h/2-1 (float64)."""
    b = torch.arange(head_dim // 2, dtype=torch.float64)
    return base ** (-2.0 * b / head_dim)


def alibi_slopes(n_head: int) -> list[float]:
    """ALiBi slopes m_h, h = 1..H (Press et al. 2022).

    For H a power of two m_h = 2^{-8h/H}.  Otherwise take the slopes of the
    closest lower power of two n = 2^⌊log₂ H⌋ and append every other slope of
    the 2n sequence: ``get_slopes(2n)[0::2][:H-n]``.
    """

    def power_of_2(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if n_head < 1:
        raise ValueError(f"n_head={n_head!r} must be a positive integer")
    if math.log2(n_head).is_integer():
        return power_of_2(n_head)
    n = 2 ** math.floor(math.log2(n_head))
    return power_of_2(n) + power_of_2(2 * n)[0::2][: n_head - n]


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Apply R(ψ) (half-split layout) to ``x`` [..., L, d_h] given cos/sin [..., L, d_h/2]."""
    h = x.shape[-1] // 2
    xf = x.float()  # rotate in float32 even under bf16 autocast
    x1, x2 = xf[..., :h], xf[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).to(x.dtype)


def accumulate(theta: torch.Tensor) -> torch.Tensor:
    """Φ_t = Σ_{s≤t} θ_s along dim 1, in float64, reduced mod 2π."""
    return torch.remainder(torch.cumsum(theta.double(), dim=1), TWO_PI)


def _cos_sin(psi: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of ψ [B or 1, H or 1, L, d_h/2] (or [B or 1, L, d_h/2]) for [B, H, L, d_h/2] broadcasting."""
    if psi.dim() == 3:
        psi = psi.unsqueeze(1)
    return torch.cos(psi).to(dtype), torch.sin(psi).to(dtype)


# ---------------------------------------------------------------------------
# PaTH reference
# ---------------------------------------------------------------------------


def path_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    w: torch.Tensor,
    chunk: int = 64,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Causal attention with Householder transport, s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j / √d.

    Write the transported keys as a state S_i = Σ_{j≤i} P_{j→i} k_j e_jᵀ (d × i);
    it obeys the delta-rule recurrence S_i = H_i S_{i-1} + k_i e_iᵀ.  With
    u_t = w_tᵀ S_{t-1}, S_i = S_{a-1} + Σ k_j e_jᵀ - Σ_{t≤i} β_t w_t u_t, and the
    rows u_t of a chunk [a, b) solve the unit lower-triangular system
    (I + C) U = W_c S_{a-1}ᵀ ⊕ strictly-lower(W_c K_cᵀ), C_ts = β_s w_tᵀ w_s (s < t).
    Chunk scores are then [Q_c K̃ᵀ | tril(Q_c K_cᵀ)] - tril(Q_c W_cᵀ) diag(β) U and
    the transported keys after the chunk are [K̃; K_c] - Uᵀ diag(β) W_c.  Only
    the chunk loop runs in Python; O(L²(d + C)) time, O(L·(d + C)) memory.

    Parameters
    ----------
    q, k, v : Tensor [B, H, L, d]
    beta : Tensor [B, H, L], β_t ∈ (0, 2)
    w : Tensor [B, H, L, d], unit vectors w_t
    chunk : int
        Query chunk size C.
    dropout_p : float
        Attention dropout (training only).

    Returns
    -------
    Tensor [B, H, L, d]
    """
    dtype = v.dtype
    q, k, v, beta, w = (t.float() for t in (q, k, v, beta, w))
    B, H, L, d = q.shape
    scale = 1.0 / math.sqrt(d)
    dev = q.device
    k_prev = k.new_zeros(B, H, 0, d)  # K̃: keys transported to position a-1
    outs = []
    for a in range(0, L, chunk):
        b = min(a + chunk, L)
        n = b - a
        qc, kc, wc, bc = q[:, :, a:b], k[:, :, a:b], w[:, :, a:b], beta[:, :, a:b]
        keys = torch.cat((k_prev, kc), dim=2)  # [B,H,b,d]
        ones = torch.ones(n, n, dtype=torch.bool, device=dev)
        strict, incl = ones.tril(-1), ones.tril()
        old = torch.ones(n, a, dtype=torch.bool, device=dev)
        rhs = (wc @ keys.transpose(-1, -2)) * torch.cat((old, strict), dim=1)
        coup = (wc @ wc.transpose(-1, -2)) * bc.unsqueeze(-2) * strict
        eye = torch.eye(n, device=dev)
        U = torch.linalg.solve_triangular(eye + coup, rhs, upper=False, unitriangular=True)
        G = (qc @ wc.transpose(-1, -2)) * bc.unsqueeze(-2) * incl  # [B,H,n,n]
        causal = torch.cat((old, incl), dim=1)
        s = (qc @ keys.transpose(-1, -2)) * causal - G @ U
        s = (s * scale).masked_fill(~causal, float("-inf"))
        p = torch.softmax(s, dim=-1)
        if dropout_p > 0.0:
            p = F.dropout(p, dropout_p)
        outs.append(p @ v[:, :, :b])
        k_prev = keys - U.transpose(-1, -2) @ (bc.unsqueeze(-1) * wc)
    return torch.cat(outs, dim=2).to(dtype)


#: largest [B, H, chunk, keys] forget-gate bias block (elements) of :func:`biased_attention`
GATE_BLOCK_ELEMENTS = 1 << 25


def biased_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slopes: torch.Tensor | None = None,
    log_gate_cum: torch.Tensor | None = None,
    chunk: int = 1024,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Causal SDPA with an additive float bias, chunked over queries to bound memory.

    The bias of query i and key j ≤ i is -m_h (i-j) (ALiBi, ``slopes`` [H]) plus
    c_i - c_j (accumulated forget gate, ``log_gate_cum`` = c [B, H, L], float64).
    The gate part is formed per chunk [a, b) as (c_i - c_a) + (c_a - c_j), each
    half rounded to q's dtype, so keys near the chunk keep full precision
    however large |c| grows at long lengths.
    """
    B, H, L, _ = q.shape
    if log_gate_cum is not None:
        chunk = max(1, min(chunk, GATE_BLOCK_ELEMENTS // max(1, B * H * L)))
    outs = []
    for a in range(0, L, chunk):
        b = min(a + chunk, L)
        i = torch.arange(a, b, device=q.device).view(-1, 1)
        j = torch.arange(0, b, device=q.device).view(1, -1)
        bias = None
        if slopes is not None:
            dist = (i - j).to(q.dtype)
            bias = -slopes.view(-1, 1, 1).to(q.dtype) * dist  # [H, n, b]
        if log_gate_cum is not None:
            ref = log_gate_cum[:, :, a: a + 1]
            gate = ((log_gate_cum[:, :, a:b] - ref).to(q.dtype).unsqueeze(-1)
                    + (ref - log_gate_cum[:, :, :b]).to(q.dtype).unsqueeze(-2))  # [B, H, n, b]
            bias = gate if bias is None else bias + gate
        bias = bias.masked_fill(j > i, float("-inf"))
        outs.append(
            F.scaled_dot_product_attention(
                q[:, :, a:b], k[:, :, :b], v[:, :, :b], attn_mask=bias, dropout_p=dropout_p
            )
        )
    return torch.cat(outs, dim=2)


def alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slopes: torch.Tensor,
    chunk: int = 1024,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Causal SDPA with ALiBi bias -m_h (i-j), chunked over queries to bound memory."""
    return biased_attention(q, k, v, slopes=slopes, chunk=chunk, dropout_p=dropout_p)


def fox_gate_bias_init(n_head: int) -> torch.Tensor:
    """Initial forget-gate biases b_h = linspace(3, 6, H): f = sigmoid(b_h) ∈ [0.953, 0.998].

    With w = 0 the bias is -(i-j)·softplus(-b_h), i.e. ALiBi with slopes
    softplus(-b_h) ≈ 0.049 (b = 3) … 0.0025 (b = 6).
    """
    return torch.linspace(3.0, 6.0, n_head) if n_head > 1 else torch.full((1,), 3.0)


# ---------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------


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
        if _rotation.USE_FAST:
            psi = _learned.learned_angles(self.angle_table, idx, omega, Hh)
        else:
            psi = _learned.learned_angles_reference(self.angle_table, idx, omega, Hh)
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
        B, L, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        shape = (B, L, self.n_head, self.head_dim)
        return (t.view(shape).transpose(1, 2) for t in (q, k, v))  # type: ignore[return-value]

    def forward(
        self,
        x: torch.Tensor,
        idx: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        psi: torch.Tensor | None = None,
        psi_v: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention output [B, L, C]; ``psi``/``psi_v`` override the drawn angles."""
        B, L, C = x.shape
        dp = self.dropout if self.training else 0.0
        vstate = None
        if self.angle_source is not None and psi is None:
            psi, psi_v = self.angles(idx, B, L, x.device, generator)
        if self.angle_source is not None and _rotation.USE_FAST:
            # closed-form autograd Function on the fused projection (rotation.py)
            q, k, v, vstate = _rotation.rotate_qkv(
                self.c_attn(x), self.n_head, psi, psi_v if self.rotate_v else None
            )
        else:
            q, k, v = self.qkv(x)
            if self.angle_source is not None:  # the naive reference
                cos, sin = _cos_sin(psi, torch.float32)
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
                if self.rotate_v:
                    cos_v, sin_v = _cos_sin(psi_v, torch.float32)
                    v = rotate(v, cos_v, sin_v)
        if self.use_path:
            beta, w = self.householder(x)
            y = path_attention(q, k, v, beta, w, chunk=self.config.path_chunk, dropout_p=dp)
        elif self.use_alibi or self.use_fox:
            y = biased_attention(
                q, k, v,
                slopes=self.slopes if self.use_alibi else None,
                log_gate_cum=self.log_gate_cumsum(x) if self.use_fox else None,
                dropout_p=dp,
            )
        else:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dp, is_causal=True)
        if vstate is not None:  # R(-ψ^v_i) at the query, written as [B, L, C]
            y = _rotation.unrotate_output(y, vstate)
        else:
            if self.rotate_v:  # R(-ψ^v_i) at the query
                y = rotate(y, cos_v, -sin_v)
            y = y.transpose(1, 2).contiguous().view(B, L, C)
        return self.resid_dropout(self.c_proj(y))


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

    def forward(self, x: torch.Tensor, idx: torch.Tensor, generator=None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), idx, generator)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Decoder-only transformer, tied embeddings, no absolute position embedding."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
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
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits [B, L, V] and (if ``targets``) the mean cross-entropy."""
        x = self.drop(self.wte(idx))
        for block in self.blocks:
            x = block(x, idx, generator)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss

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
