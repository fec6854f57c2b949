"""Additive and multiplicative far-mass controls of the attention logits: ALiBi, FoX, Scalable-Softmax.

* ALiBi: the bias −m_h (i − j) with the slopes of :func:`alibi_slopes`.
* FoX: the accumulated forget-gate bias c_i − c_j = Σ_{s=j+1}^{i} log f_s
  (:func:`fox_gate_bias_init` for the gate's initial biases).
* Scalable-Softmax (``ssmax``, Nakanishi 2025): the query multiplied by s_h·log n_i, n_i the
  number of keys visible to query i (:func:`ssmax_query`).

Both biases reach SDPA as one float mask through the query-chunked :func:`biased_attention`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["alibi_slopes", "GATE_BLOCK_ELEMENTS", "biased_attention", "alibi_attention", "fox_gate_bias_init",
           "ssmax_scale_init", "ssmax_query"]


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

    Without autograd (evaluation) an ALiBi-only bias is a 4-D mask [1, H, chunk, L] (a 3-D one sends SDPA
    to its math kernel: several times the time, and its intermediates) with the same values, written once
    per call as its H·(chunk + L − 1) diagonals: the bias depends on i − j only, so the mask of the last
    chunk with its queries in reverse order is a strided view of them, and every chunk's mask is a window
    of that view (each chunk's queries are reversed, and its outputs back).  Under autograd (training) the
    code path is the one the committed ALiBi runs were trained with, so they retrain bit for bit.
    """
    B, H, L, _ = q.shape
    four_d = not (torch.is_grad_enabled() and q.requires_grad)
    if log_gate_cum is not None:
        chunk = max(1, min(chunk, GATE_BLOCK_ELEMENTS // max(1, B * H * L)))
    window = None
    if slopes is not None and four_d and log_gate_cum is None:  # evaluation, ALiBi only: one Toeplitz mask
        c = min(chunk, L)
        dist = (L - 1 - torch.arange(c + L - 1, device=q.device)).to(q.dtype)  # i − j along the diagonals
        dist.masked_fill_(dist < 0, float("inf"))  # future keys: −m_h · inf = −inf
        diag = torch.empty((H, c + L - 1), dtype=q.dtype, device=q.device)
        torch.mul(-slopes.view(-1, 1).to(q.dtype), dist, out=diag)
        window = diag.as_strided((1, H, c, L), (0, c + L - 1, 1, 1))  # [r, j] = −m_h (i − j), i = L − 1 − r
    outs = []
    for a in range(0, L, chunk):
        b = min(a + chunk, L)
        if window is not None:  # the chunk's queries in reverse order, so that its mask is a window of the view
            bias = window[:, :, : b - a, L - b:]
            bias = bias if q.device.type == "cpu" else bias.contiguous()  # other kernels may want aligned rows
            y = F.scaled_dot_product_attention(q[:, :, a:b].flip(2), k[:, :, :b], v[:, :, :b], attn_mask=bias,
                                               dropout_p=dropout_p)
            outs.append(y.flip(2))
            continue
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


def ssmax_scale_init(n_head: int, block_size: int) -> torch.Tensor:
    """Initial Scalable-Softmax scales s_h = 1/log L_train: the query is unscaled at n = L_train."""
    return torch.full((n_head,), 1.0 / math.log(max(2, block_size)))


def ssmax_query(q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Scalable-Softmax (Nakanishi 2025): q_i ← s_h·log(n_i)·q_i, n_i = i + 1 keys visible to query i.

    ``q`` [B, H, L, d_h], ``s`` [H]; the logits of query i then grow like log n_i, which keeps
    the attention on the near keys from diluting as the number of far keys grows.
    """
    L = q.shape[-2]
    log_n = torch.log(torch.arange(1, L + 1, device=q.device, dtype=torch.float32))
    scale = s.float().view(1, -1, 1, 1) * log_n.view(1, 1, L, 1)
    return (q.float() * scale).to(q.dtype)
