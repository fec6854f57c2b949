"""C5 inside trained models: per layer and head, the far contribution of the values against its C5 prediction.

On held-out windows of length ``L`` (multiples of ``L_train``), for each query ``i`` of a few evenly spread
positions with far sources (``i − j ≥ D``), from the real forward pass (``GPT.forward(…, return_intermediates=True)``:
the module's own q, k, v and angle draws):

* the far mass ``ρ_D = Σ_far α_ij`` and the far contribution ``F = Σ_far α_ij V_{j→i} v_j`` (``V_{j→i}`` the
  value transport: ``R(ψ^v_j − ψ^v_i)`` for the Q/K/V variants, ``I`` for Q/K), its energy ``‖F‖²``;
* the far values' common component ``b̂ = mean_far v_j`` (the unrotated values) and the noise ``ξ_j = v_j − b̂``:
  the coherent reference ``ρ_D² ‖b̂‖²`` and the noise plug-in ``Σ_far α_ij² ‖ξ_j‖²``;
* the near signal's energy ``‖Σ_near α_ij V_{j→i} v_j‖²``;
* the C5 prediction (claim C5: ``E[(P_{j→i}b)ᵀ(P_{k→i}b)] = Σ_b ‖b_b‖² Re χ_b^{|j−k|}``) with the head's measured
  weights, ``b̂`` and noise — the exact finite-M plug-in of :func:`stylized.theory.value_theory.quadratic_form`:
  ``‖F‖²_pred = Σ_b ‖b̂_b‖² Σ_{j,k} α_ij α_ik Re χ_b^{|j−k|} + Σ_far α_ij² ‖ξ_j‖²``, with ``χ_b`` the step law
  of the head's value stream: ``sinc ω_b`` (uniform angles) for the random variants, ``Σ_v p_v e^{iθ_{v,b}}``
  (``θ_v = π tanh E_ℓ[v] − ω``, ``p_v`` the held-out token frequencies) for learned tables, ``χ_b = 1`` for a
  Q/K head (no transport: the coherent ``ρ_D²‖b̂‖²`` plus noise).  The same head's counterfactual with the other
  transport (``pred_swap``: a Q/K head as if its values were transported by its own angle law, a Q/K/V head as
  if they were not) gives the suppression C5 attributes to transport, ``pred_qkv / pred_qk``.

Planes use the model's half-split layout (plane ``b`` = coordinates ``b`` and ``b + d_h/2``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..model.gpt import GPT, AttentionIntermediates, CausalSelfAttention
from .probe import query_positions, token_frequencies

__all__ = ["DEFAULT_MULTIPLES", "VARIANTS_C5", "FIELDS", "plane_sums", "value_chi", "head_rows", "probe_values"]

DEFAULT_MULTIPLES = (1, 4, 16, 64)
#: the variants whose value transport C5 describes (Q/K: none; Q/K/V: the rotation stream of the values)
VARIANTS_C5 = ("random-qk", "random-qkv", "learned-qk", "learned-qkv")
#: per (window, query) quantities of :func:`head_rows`
FIELDS = ("M", "rho", "far", "coherent", "noise", "pred", "pred_swap", "near", "v2", "b2")


def plane_sums(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``Q[t, b] = Σ_{j,k} a_tj a_tk Re z_b^{|j−k|}`` for rows of ``a`` (``(T, M)``) and ratios ``z`` (``(B,)`` or
    ``(T, B)``): per plane, the quadratic form of :func:`stylized.theory.value_theory.quadratic_form` (whose
    ``w``-weighted sum this is), by the same recursion ``h_k = z (h_{k−1} + a_{k−1})``."""
    a = np.asarray(a, dtype=float)
    T, M = a.shape
    z = np.broadcast_to(np.asarray(z, dtype=complex), (T, np.shape(z)[-1]))
    h = np.zeros(z.shape, dtype=complex)
    cross = np.zeros(z.shape, dtype=complex)
    first = int(np.argmax(np.any(a != 0, axis=0))) if np.any(a) else M  # leading zero columns add nothing
    for k in range(first + 1, M):
        h = z * (h + a[:, k - 1, None])
        cross += a[:, k, None] * h
    return np.sum(a * a, axis=1)[:, None] + 2.0 * np.real(cross)


def value_chi(attn: CausalSelfAttention, probs: np.ndarray) -> np.ndarray | None:
    """``χ_{h,b}`` [H, B] of the head's rotation law (for its values when transported): ``sinc ω_b`` for random
    angles, ``Σ_v p_v e^{iθ_{v,h,b}}`` for learned tables, ``e^{iω_b}`` for RoPE; None without rotation."""
    src = attn.angle_source
    if src is None:
        return None
    omega = attn.omega.double().cpu().numpy()
    H, B = attn.n_head, omega.size
    if src == "random":
        return np.broadcast_to(np.sinc(omega / math.pi).astype(complex), (H, B)).copy()
    if src == "rope":
        return np.broadcast_to(np.exp(1j * omega), (H, B)).copy()
    with torch.no_grad():
        table = math.pi * torch.tanh(attn.angle_table.double()).cpu().numpy()  # [V, H'·B]
    Hh = table.shape[1] // B
    theta = table.reshape(-1, Hh, B) - omega  # θ_v = π tanh E[v] − ω
    chi = np.einsum("v,vhb->hb", np.asarray(probs, float), np.exp(1j * theta))
    return np.broadcast_to(chi, (H, B)).copy() if Hh == 1 else chi


@torch.no_grad()
def head_rows(attn: CausalSelfAttention, inter: AttentionIntermediates, D: int, queries: np.ndarray,
              chi: np.ndarray | None) -> dict[str, np.ndarray]:
    """Per (window, head, query) the quantities of :data:`FIELDS` (float64 [W, H, Q]); see the module."""
    if attn.use_alibi or attn.use_path or getattr(attn, "use_fox", False):
        raise ValueError("value-probe: the C5 probe reads bias-free rotation (or position-free) attention only")
    q, k, v_rot = inter.q_scaled, inter.k, inter.v
    v0 = inter.v0  # the unrotated values: their common component b̂ and noise
    W, H, L, d = q.shape
    Bp = d // 2
    v0, v_rot = v0.double(), v_rot.double()
    out = {f: np.full((W, H, len(queries)), np.nan) for f in FIELDS}
    own = chi if chi is not None else np.ones((H, Bp), complex)  # the head's own angle law (none: no transport)
    qset = torch.as_tensor(queries, dtype=torch.long)
    # the scores of :func:`.probe.score_chunks` (q_iᵀ k_j/√d_h in float32, −inf above the diagonal), queried rows only
    sc = (q[:, :, qset].float() @ k.float().transpose(-1, -2)) / math.sqrt(d)
    sc = sc.masked_fill(torch.arange(L).view(1, -1) > qset.view(-1, 1), float("-inf"))
    alpha = torch.softmax(sc.double(), dim=-1)  # [W, H, Q, L]
    for n, qi in enumerate(qset.tolist()):
        al = alpha[:, :, n, : qi + 1]
        far = torch.zeros(qi + 1, dtype=torch.bool)
        far[: qi - D + 1] = True
        af, an = al * far, al * ~far
        vr, vu = v_rot[:, :, : qi + 1], v0[:, :, : qi + 1]
        Fv = torch.einsum("whj,whjd->whd", af, vr)
        Nv = torch.einsum("whj,whjd->whd", an, vr)
        bhat = vu[:, :, far].mean(dim=2)  # [W, H, d]
        xi2 = ((vu[:, :, far] - bhat[:, :, None]) ** 2).sum(-1)  # [W, H, M]
        rho = af.sum(-1)
        bb = (bhat[..., :Bp] ** 2 + bhat[..., Bp:] ** 2).numpy()  # ‖b̂_b‖² per plane [W, H, B]
        A = af[:, :, far].numpy().reshape(W * H, -1)
        noise = (af[:, :, far] ** 2 * xi2).sum(-1).numpy()
        rows_h = np.repeat(np.arange(H)[None, :], W, axis=0).ravel()
        q_trans = plane_sums(A, own[rows_h]).reshape(W, H, Bp)
        coh_t, coh_f = (bb * q_trans).sum(-1), (rho ** 2).numpy() * bb.sum(-1)  # χ = 1: Σ_{j,k} α_j α_k = ρ_D²
        mine, swap = (coh_t, coh_f) if attn.rotate_v else (coh_f, coh_t)
        for f, x in (("M", np.full((W, H), float(far.sum()))), ("rho", rho.numpy()),
                     ("far", (Fv ** 2).sum(-1).numpy()), ("coherent", coh_f),
                     ("noise", noise), ("pred", mine + noise), ("pred_swap", swap + noise),
                     ("near", (Nv ** 2).sum(-1).numpy()), ("v2", (vu[:, :, far] ** 2).sum(-1).mean(-1).numpy()),
                     ("b2", bb.sum(-1))):
            out[f][:, :, n] = x
    return out


@torch.no_grad()
def probe_values(model: GPT, tokens: np.ndarray, multiples=DEFAULT_MULTIPLES, D: int | None = None,
                 n_windows: int = 4, n_queries: int = 8, seed: int = 0,
                 window_ends: np.ndarray | None = None) -> dict:
    """Per length, layer and head, the :data:`FIELDS` arrays [W, Q] of :func:`head_rows` (module doc).

    ``D`` defaults to ``L_train // 2`` (so ``L_train`` itself has far sources); windows end at ``window_ends``
    (default: evenly spread over ``tokens``), the same ends at every length; ``n_queries`` query positions per
    window evenly spread over ``[D, L − 1]``; random angles drawn from ``seed``."""
    model.eval()
    cfg = model.config
    L_train = cfg.block_size
    D = L_train // 2 if D is None else int(D)
    tokens = np.asarray(tokens)
    longest = L_train * max(multiples)
    if window_ends is None:
        window_ends = np.linspace(longest, len(tokens), n_windows).astype(np.int64)
    probs = token_frequencies(tokens, cfg.vocab_size)
    chis = [value_chi(b.attn, probs) for b in model.blocks]
    out = {"D": D, "L_train": L_train, "n_windows": len(window_ends), "n_queries": n_queries, "lengths": {}}
    for m in multiples:
        L = m * L_train
        x = torch.from_numpy(np.stack([tokens[e - L: e] for e in window_ends]).astype(np.int64))
        queries = query_positions(L, D, n_queries)
        _, _, inters = model(x, generator=torch.Generator().manual_seed(30_011 + seed), return_intermediates=True)
        layers = [head_rows(blk.attn, inter, D, queries, chi) for blk, inter, chi in zip(model.blocks, inters, chis)]
        out["lengths"][str(L)] = {"L": L, "multiple": m, "queries": queries.tolist(), "layers": layers}
    out["chi"] = [None if c is None else np.abs(c).tolist() for c in chis]
    return out
