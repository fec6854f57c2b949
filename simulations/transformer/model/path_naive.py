"""PaTH attention, the plain O(L²) reference beside the chunked :mod:`.path_attention` (FLA's ``naive.py``).

Straight from the definition, one query at a time, in float64: s_ij = q_iᵀ P_{j→i} k_j / √d with
P_{j→i} = H_i ⋯ H_{j+1}, H_t = I − β_t w_t w_tᵀ.  Since every H_t is symmetric, q_iᵀ P_{j→i} = (H_{j+1} ⋯ H_i q_i)ᵀ:
walking the keys back from j = i, the query is transported one reflection at a time (r ← r − β_j w_j w_jᵀ r).
O(L² d) time per head; for tests (``tests/transformer/model/test_model.py`` compares the chunked path with it).
"""

from __future__ import annotations

import math

import torch

__all__ = ["path_scores_naive", "path_attention_naive"]


def path_scores_naive(q: torch.Tensor, k: torch.Tensor, beta: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Scores s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j / √d [B, H, L, L] in float64, ``-inf`` above the diagonal (j > i).

    ``q``, ``k``, ``w``: [B, H, L, d] (``w`` unit vectors); ``beta``: [B, H, L], β_t ∈ (0, 2).
    """
    q, k, beta, w = (t.double() for t in (q, k, beta, w))
    B, H, L, d = q.shape
    s = torch.full((B, H, L, L), float("-inf"), dtype=torch.float64)
    for i in range(L):
        r = q[:, :, i]  # H_{j+1} ⋯ H_i q_i, starting at j = i (no reflection)
        for j in range(i, -1, -1):
            s[:, :, i, j] = (r * k[:, :, j]).sum(-1) / math.sqrt(d)
            r = r - beta[:, :, j, None] * w[:, :, j] * (w[:, :, j] * r).sum(-1, keepdim=True)
    return s


def path_attention_naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                         w: torch.Tensor) -> torch.Tensor:
    """o_i = Σ_{j≤i} softmax_j(s_ij) v_j with :func:`path_scores_naive` [B, H, L, d], in ``v``'s dtype."""
    p = torch.softmax(path_scores_naive(q, k, beta, w), dim=-1)
    return (p @ v.double()).to(v.dtype)
