"""The small GPT's configuration and its variants (what each position mechanism is made of).

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
    the cpu preset's budget is set in its preset, see ``presets.PRESETS``).
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
ssmax / learned-qkv-ssmax
    Scalable-Softmax (Nakanishi 2025), the transformer's log-length scaling: the query
    at position i is multiplied by s_h·log n_i, n_i = i + 1 keys visible to it, with one
    learned scalar s_h per layer and head, initialised to 1/log L_train (the query is
    unscaled at n = L_train; a constant fill, so no random stream moves).  ``ssmax`` has no
    rotation; ``learned-qkv-ssmax`` adds the learned rotation of ``learned-qkv``.

Rotations use the half-split layout: for x = [x₁, x₂] (each d_h/2),
R(ψ)x = [x₁ cos ψ - x₂ sin ψ, x₁ sin ψ + x₂ cos ψ].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import NamedTuple

__all__ = ["VariantSpec", "VARIANT_SPECS", "VARIANTS", "MAIN_VARIANTS", "VALUE_ANGLES", "ANGLE_HEADS",
           "ANGLE_TOKENS", "LM_HEADS", "INITS", "GPTConfig", "validate_config"]


class VariantSpec(NamedTuple):
    """What a variant is made of."""

    angle_source: str | None  # "rope" | "random" | "learned" | None
    rotate_v: bool  # transport values too (``-qkv``)
    alibi: bool  # additive ALiBi bias
    path: bool  # PaTH Householder transport
    forget_gate: bool = False  # FoX accumulated forget-gate bias
    log_scale: bool = False  # Scalable-Softmax: query × s_h·log n_i


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
    "ssmax": VariantSpec(None, False, False, False, False, True),
    "learned-qkv-ssmax": VariantSpec("learned", True, False, False, False, True),
}
VARIANTS: tuple[str, ...] = tuple(VARIANT_SPECS)
#: the eight variants compared by default
MAIN_VARIANTS: tuple[str, ...] = (
    "rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk", "learned-qkv", "path",
)
VALUE_ANGLES = ("independent", "same")
ANGLE_HEADS = ("per-head", "shared")
ANGLE_TOKENS = ("query", "key")
LM_HEADS = ("tied", "untied")
INITS = ("nanogpt", "torch")


@dataclass(frozen=True)
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
    bias : bool
        Biases in every Linear of the blocks (the author's; nanoGPT's ``bias=False`` option).
    angle_tokens : str
        Which tokens' learned angles the route ``j → i`` accumulates: ``"query"`` (``j+1 … i``, the query's token
        included, the key's not: ``P_{j→i} = M_i ⋯ M_{j+1}``, the paper's formula; the default) or ``"key"``
        (``j … i−1``, the key's token included, the query's not: the author's code, an exclusive cumulative sum).
        Only ``learned-*`` variants read it (random angles are i.i.d. per position, so the shift does not change
        their law).
    lm_head : str
        ``"tied"`` (the output projection is the token embedding, no bias: nanoGPT) or ``"untied"`` (its own
        ``Linear`` with a bias: the author's).
    init : str
        ``"nanogpt"`` (``N(0, 0.02)`` weights, zero biases, residual projections scaled by ``1/sqrt(2 n_layer)``)
        or ``"torch"`` (PyTorch's default initialisation of every module: the author's).
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
    angle_tokens: str = "query"
    lm_head: str = "tied"
    init: str = "nanogpt"
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
    for name, allowed in (("angle_tokens", ANGLE_TOKENS), ("lm_head", LM_HEADS), ("init", INITS)):
        if getattr(cfg, name) not in allowed:
            raise ValueError(f"{name}={getattr(cfg, name)!r} is not one of: {', '.join(allowed)}")
    if not cfg.rope_base > 1.0:
        raise ValueError(f"rope_base={cfg.rope_base!r} must be > 1")
