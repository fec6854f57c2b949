"""Probe a trained checkpoint for the stylized model's quantities: λ, ρ_D(L), χ_b.

For every layer ℓ and head h, on held-out text, at every evaluation length L:

* **logit scale** ``λ = max_{j≤i} |q_iᵀ P_{j→i} k_j| / √d_h`` over every causal pair of the
  probed windows (rotation / Householder transport included, ALiBi bias excluded: the bound
  ``ρ_D ≥ M_L/(M_L + K e^{2λ})`` is about the bounded part of the logit).
* **far mass** ``ρ_D(L) = Σ_{j ≤ i−D} α_ij`` of the real attention weights (bias included),
  averaged over ``n_queries`` query positions ``i`` evenly spread over ``[D, L−1]`` (the only
  queries that have far sources; none exist at ``L = D``) and over windows; ``rho_last`` is the
  value at the stylized model's query ``i = L−1``.  Also the per-query bound
  ``M_i/(M_i + K e^{2λ_i})`` (``λ_i`` = that query's largest |logit|), which must hold for every
  query of a bias-free variant, and the near / far log-partition sums
  ``log Z_N = LSE_{i−j<D} s_ij`` and ``log μ̂ = log mean_{far j} e^{s_ij}``.
* **characteristic values** (accumulated rotations) ``χ_b = E[e^{iθ_b}]``: exact ``sinc ω_b`` for
  random angles; ``Σ_v p_v e^{iθ_{v,b}}`` with ``θ_v = π tanh E_ℓ[v] − ω`` and ``p_v`` the validation
  token frequencies for learned tables; ``e^{iω_b}`` (|χ| = 1, no gap) for RoPE.  Hence the
  spectral gap ``γ = 1 − max_b |χ_b|`` and the per-plane windows ``W_b(ε) = ⌈ln ε / ln |χ_b|⌉``.

The probes read the real forward pass: ``GPT.forward(…, return_intermediates=True)`` returns every
attention module's own transported q, k, v, angles and gates
(:class:`~simulations.transformer.model.gpt.AttentionIntermediates`), from which the weights are formed
in chunks of queries (:func:`score_chunks`); the tests check ``o = Σ_j α_ij V_{j→i} v_j`` against the
module output for every variant.

Example
-------
>>> import torch
>>> from simulations.transformer.model.gpt import GPT, GPTConfig
>>> m = GPT(GPTConfig(variant="random-qk", n_layer=1, n_head=2, n_embd=8, block_size=8)).eval()
>>> res = probe_model(m, np.arange(400) % 7, multiples=[1, 2], n_windows=1)
>>> sorted(res["lengths"])
[8, 16]
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from stylized.laws.families import SO2Uniform, TokenAngles

from ..model.gpt import GPT, AttentionIntermediates, CausalSelfAttention
from ..model.path_attention import path_score_chunks

DEFAULT_MULTIPLES = (1, 4, 16, 64)
WINDOW_EPS = 0.05  # ε of the reported mixing windows W_b(ε)


# ---------------------------------------------------------------------------
# scores of one attention module, from its intermediates
# ---------------------------------------------------------------------------
def score_chunks(
    attn: CausalSelfAttention, inter: AttentionIntermediates, chunk: int = 256, scaled: bool = True
) -> Iterator[tuple[int, int, torch.Tensor]]:
    """Yield ``(a, b, s)``: scores ``s_ij = q_iᵀ P_{j→i} k_j/√d_h`` for queries ``a ≤ i < b``, keys ``j < b``.

    ``s`` is [B, H, b−a, b] float32 with ``−inf`` above the diagonal; no ALiBi bias.  ``scaled``: the query
    the module's softmax reads (Scalable-Softmax factor ``s_h log n_i`` included); ``False``: without that
    factor.  For PaTH the transported keys come from
    :func:`~simulations.transformer.model.path_attention.path_score_chunks`, the same chunks the module's
    attention reads.
    """
    q, k = (inter.q_scaled if scaled else inter.q), inter.k
    scale = 1.0 / math.sqrt(q.shape[-1])
    L = q.shape[2]
    dev = q.device
    if not attn.use_path:
        q, k = q.float(), k.float()
        for a in range(0, L, chunk):
            b = min(a + chunk, L)
            s = (q[:, :, a:b] @ k[:, :, :b].transpose(-1, -2)) * scale
            i = torch.arange(a, b, device=dev).view(-1, 1)
            j = torch.arange(0, b, device=dev).view(1, -1)
            yield a, b, s.masked_fill(j > i, float("-inf"))
        return
    q, k, beta, w = (t.float() for t in (q, k, inter.beta, inter.w))
    yield from path_score_chunks(q, k, beta, w, attn.config.path_chunk)


def full_scores(attn: CausalSelfAttention, inter: AttentionIntermediates) -> torch.Tensor:
    """The raw logits ``s_ij = q_iᵀ P_{j→i} k_j/√d`` [B, H, L, L] float64 (no Scalable-Softmax factor, no bias;
    ``−inf`` above the diagonal): small windows only."""
    L = inter.q.shape[2]
    return torch.cat([F.pad(c, (0, L - c.shape[-1]), value=float("-inf"))
                      for _, _, c in score_chunks(attn, inter, scaled=False)], dim=2).double()


def score_bias(attn: CausalSelfAttention, inter: AttentionIntermediates) -> torch.Tensor:
    """ALiBi ``−m_h(i−j)`` plus FoX ``c_i − c_j``, [B or 1, H, L, L] float64 (0 where neither applies)."""
    L = inter.x.shape[1]
    i = torch.arange(L).view(-1, 1)
    j = torch.arange(L).view(1, -1)
    out = torch.zeros(1, attn.n_head, L, L, dtype=torch.float64)
    if attn.use_alibi:
        out = out - attn.slopes.double().view(1, -1, 1, 1) * (i - j).double()
    if getattr(attn, "use_fox", False):
        c = inter.log_gate_cum  # [B, H, L]
        out = out + c.unsqueeze(-1) - c.unsqueeze(-2)
    return out


def alibi_bias(attn: CausalSelfAttention, a: int, b: int, n_keys: int, device) -> torch.Tensor | float:
    """``−m_h (i − j)`` for queries ``a ≤ i < b`` and keys ``j < n_keys`` ([H, b−a, n_keys]); 0 without ALiBi."""
    if not attn.use_alibi:
        return 0.0
    i = torch.arange(a, b, device=device).view(-1, 1)
    j = torch.arange(0, n_keys, device=device).view(1, -1)
    return -attn.slopes.view(-1, 1, 1).float() * (i - j).float()


def attention_weights(attn: CausalSelfAttention, inter: AttentionIntermediates) -> torch.Tensor:
    """Full causal weights ``α`` [B, H, L, L] (bias included) of the module's scores.

    Small inputs only (tests): ``o_i = Σ_j α_ij v_j`` with the rotated values ``inter.v``, then ``R(−ψ^v_i)``
    for ``-qkv``, then ``c_proj``, reproduces the module output.
    """
    L = inter.q.shape[2]
    rows = [s + alibi_bias(attn, a, b, b, s.device) for a, b, s in score_chunks(attn, inter)]
    s = torch.cat([F.pad(r, (0, L - r.shape[-1]), value=float("-inf")) for r in rows], dim=2)
    return torch.softmax(s, dim=-1)


def query_positions(L: int, D: int, n_queries: int) -> np.ndarray:
    """Up to ``n_queries`` positions evenly spread over ``[D, L−1]`` (always including ``L−1``)."""
    if L <= D:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(D, L - 1, n_queries).round().astype(np.int64))


def head_stats(attn: CausalSelfAttention, inter: AttentionIntermediates, D: int, queries: np.ndarray,
               chunk: int = 256) -> dict:
    """Per-head λ, ρ_D at ``queries``, the per-query bound, and near/far log-partition sums.

    Returns arrays over heads: ``lam`` [H]; and over (window, head, query): ``rho``, ``bound``,
    ``lse_near``, ``log_mu_far`` (all float64 NumPy).
    """
    q = inter.q
    B, H, L, _ = q.shape
    lam = torch.zeros(H, dtype=torch.float64)
    qset = torch.as_tensor(queries, dtype=torch.long)
    out = {key: np.full((B, H, len(queries)), np.nan) for key in ("rho", "bound", "lse_near", "log_mu_far")}
    for a, b, s in score_chunks(attn, inter, chunk):
        finite = torch.isfinite(s)
        lam = torch.maximum(lam, s.abs().masked_fill(~finite, 0.0).amax(dim=(0, 2, 3)).double())
        sel = ((qset >= a) & (qset < b)).nonzero().flatten()
        if sel.numel() == 0:
            continue
        rows = (qset[sel] - a).to(q.device)
        sr = s[:, :, rows].double()  # [B, H, Q', b]
        ii = qset[sel].view(-1, 1).to(q.device)
        jj = torch.arange(b, device=q.device).view(1, -1)
        dist = ii - jj  # [Q', b]
        logits = sr
        if attn.use_alibi:
            logits = sr - attn.slopes.double().view(1, -1, 1, 1) * dist.double()
        far, near = (dist >= D) & (dist >= 0), (dist < D) & (dist >= 0)
        lse_all = torch.logsumexp(logits, dim=-1)
        lse_far = torch.logsumexp(logits.masked_fill(~far, float("-inf")), dim=-1)
        lse_near = torch.logsumexp(logits.masked_fill(~near, float("-inf")), dim=-1)
        n_far = far.sum(-1).double()  # M_i = i − D + 1
        lam_i = sr.abs().masked_fill(~(far | near), 0.0).amax(dim=-1)
        K = near.sum(-1).double()
        bound = n_far / (n_far + K * torch.exp(2.0 * lam_i))
        idx = sel.numpy()
        out["rho"][:, :, idx] = torch.exp(lse_far - lse_all).numpy()
        out["bound"][:, :, idx] = bound.numpy()
        out["lse_near"][:, :, idx] = lse_near.numpy()
        out["log_mu_far"][:, :, idx] = (lse_far - torch.log(n_far)).numpy()
    out["lam"] = lam.numpy()
    return out


# ---------------------------------------------------------------------------
# characteristic values of the accumulated rotations
# ---------------------------------------------------------------------------
def token_frequencies(tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    """Empirical ``p_v`` of the validation stream (length ``vocab_size``)."""
    counts = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=vocab_size)[:vocab_size]
    return counts / counts.sum()


def layer_family(attn: CausalSelfAttention, probs: np.ndarray) -> SO2Uniform | TokenAngles | None:
    """The stylized step law of one layer's rotation: ``SO2Uniform(ω)``, ``TokenAngles`` or ``None``.

    RoPE is the one-token family ``θ = ω`` (``χ_b = e^{iω_b}``, ``|χ_b| = 1``).
    """
    src = attn.angle_source
    if src is None:
        return None
    omega = attn.omega.double().cpu().numpy()
    d = attn.head_dim
    if src == "random":
        return SO2Uniform(d=d, omega=tuple(omega))
    if src == "rope":
        return TokenAngles(d, table=omega[None, :], probs=np.ones(1))
    heads = attn.angle_table.shape[1] // len(omega)  # per-head tables: the planes of every head
    with torch.no_grad():
        table = math.pi * torch.tanh(attn.angle_table.double()).cpu().numpy() - np.tile(omega, heads)
    return TokenAngles(d * heads, table=table, probs=probs)


def chi_summary(family, eps: float = WINDOW_EPS) -> dict | None:
    """``χ_b`` (abs, arg), the gap ``γ`` and the windows ``W_b(ε)`` of a family (JSON-ready)."""
    if family is None:
        return None
    chi = family.chi()
    a = np.abs(chi)
    unit = a >= 1.0 - 1e-12  # |χ_b| = 1 up to rounding (RoPE): no mixing
    win = np.where(unit, np.inf, family.plane_windows(eps))
    return {
        "chi_abs": np.where(unit, 1.0, a).tolist(),
        "chi_arg": np.angle(chi).tolist(),
        "gap": float(max(0.0, 1.0 - np.max(np.where(unit, 1.0, a)))),
        "eps": eps,
        "windows": [None if not np.isfinite(w) else float(w) for w in win],
    }


# ---------------------------------------------------------------------------
# the probe
# ---------------------------------------------------------------------------
def _window_ends(n_tokens: int, max_len: int, n_windows: int) -> np.ndarray:
    if n_tokens - 1 < max_len:
        raise ValueError(f"lengths: the longest window ({max_len} tokens) exceeds the validation set "
                         f"({n_tokens} tokens); use smaller --lengths")
    return np.linspace(max_len, n_tokens - 1, n_windows + 2)[1:-1].astype(np.int64)


def _nanmean(x: np.ndarray, axis=None):
    with np.errstate(all="ignore"):
        return np.nanmean(x, axis=axis) if np.isfinite(x).any() else np.full(
            np.mean(x, axis=axis).shape if axis is not None else (), np.nan)


def check_probe(L_train: int, multiples, D: int | None, n_windows: int, n_queries: int, flag_prefix: str = "",
                need_far: bool = False) -> tuple[list[int], int]:
    """(sorted multiples, D), else :class:`~stylized.InvalidInput` naming the argument (``flag_prefix`` + its
    name: ``--D`` on the command line).  ``need_far``: ``D`` (default ``L_train``) must lie below the longest
    probed length, else no query has a far source and every ρ_D is undefined (λ and χ_b are still measured)."""
    from stylized.core.errors import InvalidInput

    def bad_int(x, lo) -> bool:
        return isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < lo

    multiples = list(multiples)
    if not multiples or any(bad_int(m, 1) for m in multiples):
        raise InvalidInput(f"{flag_prefix}lengths: must be positive integers (multiples of L_train), got {multiples!r}")
    multiples = sorted(int(m) for m in multiples)
    longest = L_train * multiples[-1]
    D = L_train if D is None else D
    if bad_int(D, 1):
        raise InvalidInput(f"{flag_prefix}D: must be a positive integer, got {D!r}")
    if need_far and D >= longest:
        raise InvalidInput(f"{flag_prefix}D: must be an integer in [1, {longest - 1}] (below the longest probed "
                           f"length {longest} = {multiples[-1]} × L_train {L_train}), got {D!r}")
    for name, v in (("windows", n_windows), ("queries", n_queries)):
        if bad_int(v, 1):
            raise InvalidInput(f"{flag_prefix}{name}: must be a positive integer, got {v!r}")
    return multiples, int(D)


@torch.no_grad()
def probe_model(
    model: GPT,
    tokens: np.ndarray,
    multiples: list[int] | tuple[int, ...] = DEFAULT_MULTIPLES,
    D: int | None = None,
    n_windows: int = 2,
    n_queries: int = 32,
    seed: int = 0,
    chunk: int = 256,
    variant: str | None = None,
    flag_prefix: str = "",
) -> dict:
    """Probe ``model`` on the validation stream ``tokens`` (see the module docstring).

    Parameters
    ----------
    multiples : lengths ``L = m · L_train`` to probe.
    D : near/far threshold (default: the training length ``L_train``).
    n_windows : windows (batch) per length, evenly spread over ``tokens``; the same window ends at every length.
    n_queries : query positions per window for ``ρ_D``.
    seed : seed of the random-angle draws (``torch.Generator``).

    Returns
    -------
    dict with ``lengths``, ``D``, ``layers`` (per layer: ``chi`` summary and per-length per-head
    ``lam``, ``rho``, ``rho_last``, ``rho_se``, ``bound_holds``, ``lse_near``, ``log_mu_far``).
    """
    model.eval()
    cfg = model.config
    L_train = cfg.block_size
    multiples, D = check_probe(L_train, multiples, D, n_windows, n_queries, flag_prefix)
    tokens = np.asarray(tokens)
    ends = _window_ends(len(tokens), L_train * multiples[-1], n_windows)
    probs = token_frequencies(tokens, cfg.vocab_size)
    layers = []
    for blk in model.blocks:
        fam = layer_family(blk.attn, probs)
        layers.append({"family": None if fam is None else fam.name, "chi": chi_summary(fam), "lengths": {}})
    dev = next(model.parameters()).device
    for m in multiples:
        L = m * L_train
        x = torch.from_numpy(np.stack([tokens[e - L: e] for e in ends]).astype(np.int64)).to(dev)
        queries = query_positions(L, D, n_queries)
        gen = torch.Generator().manual_seed(10_007 + seed)
        _, _, inters = model(x, generator=gen, return_intermediates=True)
        for layer, (blk, inter) in enumerate(zip(model.blocks, inters)):
            attn = blk.attn
            st = head_stats(attn, inter, D, queries, chunk)
            nq = st["rho"].shape[-1]
            rho = st["rho"].reshape(-1, attn.n_head, nq) if nq else st["rho"]
            per_head_rho = _nanmean(rho, axis=(0, 2)) if nq else np.full(attn.n_head, np.nan)
            se = (np.nanstd(rho, axis=(0, 2), ddof=1) / math.sqrt(rho.shape[0] * nq)) if nq > 1 else \
                np.full(attn.n_head, np.nan)
            bound_ok = None
            if nq and not attn.use_alibi:
                bound_ok = bool(np.all(st["rho"] >= st["bound"] * (1 - 1e-6) - 1e-12))
            layers[layer]["lengths"][str(L)] = {
                "L": L,
                "multiple": L // L_train,
                "lam": st["lam"].tolist(),
                "rho": per_head_rho.tolist(),
                "rho_se": np.asarray(se).tolist(),
                "rho_last": (st["rho"][:, :, -1].mean(axis=0).tolist() if nq else [None] * attn.n_head),
                "bound_holds": bound_ok,
                "lse_near": (_nanmean(st["lse_near"], axis=(0, 2)).tolist() if nq else None),
                "log_mu_far": (_nanmean(st["log_mu_far"], axis=(0, 2)).tolist() if nq else None),
                "n_queries": int(nq) * len(ends),
            }
    return {
        "variant": variant or cfg.variant,
        "L_train": L_train,
        "D": D,
        "head_dim": cfg.head_dim,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "lengths": [m * L_train for m in multiples],
        "multiples": multiples,
        "n_windows": len(ends),
        "n_queries": n_queries,
        "seed": seed,
        "alibi_slopes": (model.blocks[0].attn.slopes.tolist() if model.blocks[0].attn.use_alibi else None),
        "layers": layers,
    }


def probe_checkpoint(
    path: str | os.PathLike,
    multiples: list[int] | tuple[int, ...] = DEFAULT_MULTIPLES,
    D: int | None = None,
    n_windows: int = 2,
    n_queries: int = 32,
    seed: int = 0,
    tokens: np.ndarray | None = None,
    device: str = "cpu",
    flag_prefix: str = "",
    need_far: bool = False,
) -> dict:
    """Load a checkpoint (:func:`.train.load_model`: a bad file is one line naming it) and probe it on its
    corpus' held-out split (or on ``tokens``); the arguments are checked (:func:`check_probe`) before any work."""
    from ..data.corpus import corpus_for
    from ..train.loop import load_model

    path = Path(path)
    model, ck = load_model(path, device)
    check_probe(model.config.block_size, multiples, D, n_windows, n_queries, flag_prefix, need_far)
    if tokens is None:
        tokens = corpus_for(ck.get("train_config", {})).val
    res = probe_model(model, tokens, multiples, D, n_windows, n_queries, seed, variant=ck.get("variant"),
                      flag_prefix=flag_prefix)
    res["checkpoint"] = str(path)
    res["step"] = int(ck.get("step", 0))
    return res
