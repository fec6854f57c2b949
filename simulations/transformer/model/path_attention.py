"""PaTH attention: causal attention with accumulated Householder transport (pure torch, chunked).

The transport of a key from position j to the query at i is P_{j→i} = H_i ⋯ H_{j+1} with
H_t = I − β_t w_t w_tᵀ, β_t ∈ (0, 2), ‖w_t‖ = 1.  :func:`path_score_chunks` yields the scaled
scores s_ij = q_iᵀ P_{j→i} k_j / √d one query chunk at a time (the delta-rule / UT-transform
algebra, written once here); :func:`path_attention` is its softmax-weighted sum, and the probe
(:mod:`~simulations.transformer.evaluate.probe`) reads the same chunks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

__all__ = ["path_score_chunks", "path_attention"]


def path_score_chunks(
    q: torch.Tensor, k: torch.Tensor, beta: torch.Tensor, w: torch.Tensor, chunk: int = 64
) -> Iterator[tuple[int, int, torch.Tensor]]:
    """Yield ``(a, b, s)``: s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j / √d for queries a ≤ i < b and keys j < b.

    Write the transported keys as a state S_i = Σ_{j≤i} P_{j→i} k_j e_jᵀ (d × i);
    it obeys the delta-rule recurrence S_i = H_i S_{i-1} + k_i e_iᵀ.  With
    u_t = w_tᵀ S_{t-1}, S_i = S_{a-1} + Σ k_j e_jᵀ - Σ_{t≤i} β_t w_t u_t, and the
    rows u_t of a chunk [a, b) solve the unit lower-triangular system
    (I + C) U = W_c S_{a-1}ᵀ ⊕ strictly-lower(W_c K_cᵀ), C_ts = β_s w_tᵀ w_s (s < t).
    Chunk scores are then [Q_c K̃ᵀ | tril(Q_c K_cᵀ)] - tril(Q_c W_cᵀ) diag(β) U and
    the transported keys after the chunk are [K̃; K_c] - Uᵀ diag(β) W_c.

    Parameters
    ----------
    q, k : Tensor [B, H, L, d] (float32)
    beta : Tensor [B, H, L], β_t ∈ (0, 2)
    w : Tensor [B, H, L, d], unit vectors w_t
    chunk : int
        Query chunk size C.

    Yields
    ------
    a, b : int
        The chunk's query range.
    s : Tensor [B, H, b−a, b]
        Scaled scores, ``−inf`` above the diagonal.
    """
    B, H, L, d = q.shape
    scale = 1.0 / math.sqrt(d)
    dev = q.device
    k_prev = k.new_zeros(B, H, 0, d)  # K̃: keys transported to position a-1
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
        yield a, b, (s * scale).masked_fill(~causal, float("-inf"))
        k_prev = keys - U.transpose(-1, -2) @ (bc.unsqueeze(-1) * wc)


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

    Only the chunk loop of :func:`path_score_chunks` runs in Python; O(L²(d + C)) time,
    O(L·(d + C)) memory.

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
    outs = []
    for _a, b, s in path_score_chunks(q, k, beta, w, chunk):
        p = torch.softmax(s, dim=-1)
        if dropout_p > 0.0:
            p = F.dropout(p, dropout_p)
        outs.append(p @ v[:, :, :b])
    return torch.cat(outs, dim=2).to(dtype)
