"""The bridge's predictor: a trained head's far mass ρ_D(L) forecast from what is measured at L ≤ L_train.

Inputs (:func:`train_length_stats`, all measured on held-out windows of length ``L_train``, never longer):

* the score profile by distance, ``log mean e^{s(n)}`` for ``n < L_train`` (reported);
* the near sum ``Z_N = Σ_{n<D} e^{s_{i,i−n}}`` at every query ``i ∈ [D, L_train)``;
* the far-score law: the (unrotated) query/key pairs ``(q_i, k_j)`` with ``i − j ≥ D`` (distances up to
  ``L_train``), per rotation plane ``b`` as complex numbers ``z = x_b + i x_{b+d/2}``;
* the step law of the transport through its route characteristic ``m_b(n) = E e^{iA_{n,b}}`` of the relative
  angle after ``n`` steps: ``χ_bⁿ`` for i.i.d. steps (RoPE ``χ_b = e^{−iω_b}``; random ``sinc ω_b``) and, for
  learned tables, the token process kept by ``stylized transformer chi-markov`` (:mod:`.chi_markov`): the
  **training** stream's bigram chain, ``m_b(n) = π D_b (T D_b)^{n−1} 1`` (the twisted transfer operator,
  :func:`stylized.theory.markov_theory.route_characteristic_grid`); without a training stream, the unigram
  ``χ_b = Σ_v p_v e^{iθ_{v,b}}`` of the windows' own tokens;  the ALiBi slopes ``m_h``, the FoX gates' mean
  ``E f`` and the Scalable-Softmax scales ``s_h``;
* ``λ`` (largest |logit| without bias), measured on these windows only: it is then used on other
  (comparison) queries, where ``ρ_D ≥ M/(M + K e^{2λ})`` can fail.

Prediction (:func:`predict_rho`) for the query ``i = L − 1`` of a window of length ``L``:

    ρ̂_D(L) = E_query F(L) / (F(L) + Z_N(L)),   F(L) = Σ_{n=D}^{L−1} E_{(q,k)} exp(κ_L s(n) + b(n)),
    s(n) = Σ_b Re(conj(z_q,b) z_k,b e^{iA_{n,b}}) / √d_h,   A_{n,b} ∼ wrapped normal with E e^{iA} = m_b(n),

``κ_L = s_h log L`` (ssmax; 1 otherwise), ``b(n) = −m_h n`` (ALiBi) or ``n log E f`` (FoX, its
expectation), and ``Z_N(L)`` the mean near sum with the near logits rescaled by ``κ_L``.  PaTH has no
step law here: its far scores are drawn from the measured far logits (a stationary far law).  The
interval is a percentile bootstrap over the held-out windows (pairs and near sums resampled together).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..evaluate.probe import full_scores, layer_family, score_bias, score_chunks, token_frequencies
from ..model.gpt import GPT, AttentionIntermediates, CausalSelfAttention

__all__ = ["heldout_ends", "train_length_stats", "markov_route", "predict_rho", "measure_rho", "relative_step_chi", "MAX_INPUT_LEN"]

#: every prediction input is measured on windows of at most this many multiples of L_train
MAX_INPUT_LEN = 1


def heldout_ends(n_tokens: int, L_train: int, avoid_ends: np.ndarray, avoid_len: int, n_windows: int) -> np.ndarray:
    """Ends of ``n_windows`` windows of length ``L_train`` that overlap none of ``[e − avoid_len, e)``."""
    cand = np.linspace(L_train, n_tokens - 1, 8 * n_windows + 2).astype(np.int64)[1:-1]
    ok = np.ones(len(cand), bool)
    for e in np.asarray(avoid_ends):
        ok &= ~((cand > e - avoid_len) & (cand - L_train < e))
    cand = cand[ok]
    if len(cand) < n_windows:
        raise ValueError(f"n_windows={n_windows}: only {len(cand)} held-out windows avoid the comparison windows")
    return cand[np.linspace(0, len(cand) - 1, n_windows).round().astype(int)]


def relative_step_chi(attn: CausalSelfAttention, probs: np.ndarray) -> np.ndarray:
    """χ_b of the per-token relative angle Δ = ψ_j − ψ_i per step, [H, d_h/2] complex (1 without rotation).

    RoPE ψ_t = tω: Δ = −nω, χ = e^{−iω}.  Random ψ = Φ: Δ = −Σθ, χ = sinc ω (real).  Learned ψ = −Φ:
    Δ = +Σθ, χ = Σ_v p_v e^{iθ_v} (the trained tables under the corpus distribution ``probs``).
    """
    H, B = attn.n_head, attn.head_dim // 2
    fam = layer_family(attn, probs)
    if fam is None:
        return np.ones((H, B), complex)
    chi = np.asarray(fam.chi(), complex)
    if attn.angle_source == "rope":
        chi = np.conj(chi)
    return np.broadcast_to(chi.reshape(-1, B), (H, B)).copy() if chi.size in (B, H * B) else np.ones((H, B), complex)


def _kappa(attn: CausalSelfAttention, n_keys) -> np.ndarray:
    """Scalable-Softmax factor s_h log n per head ([H] or [H, len(n_keys)]); ones otherwise."""
    n = np.asarray(n_keys, dtype=float)
    if not getattr(attn, "use_ssmax", False):
        return np.ones((attn.n_head,) + n.shape)
    s = attn.ssmax_s.detach().double().numpy()
    return s.reshape((-1,) + (1,) * n.ndim) * np.log(n)


@torch.no_grad()
def train_length_stats(model: GPT, tokens: np.ndarray, ends: np.ndarray, D: int, keys_per_query: int = 8,
                       seed: int = 0, train_tokens: np.ndarray | None = None) -> dict:
    """Every input of the prediction, measured on windows ``tokens[e − L_train: e]`` (see the module doc).

    ``train_tokens`` (the training stream): the token statistics of a learned table come from it, as a bigram
    chain (``markov`` per layer: the seen tokens' table and ``T``); without it, the windows' unigram ``χ_b``.

    Returns a dict with ``L_train``, ``D``, ``input_len`` (the longest window used: ``L_train``) and
    ``layers``: per layer NumPy arrays ``near`` [W, H, Q, D] (near logits without the scale κ, queries
    ``i ∈ [D, L_train)``), ``near_bias``, ``c = conj(z_q,i) z_k,j`` [W, Q, K, H, B'] for ``K`` far keys
    ``j ≤ i − D`` of every query (unrotated, per plane), ``chi`` [H, B'], ``slopes`` [H], ``log_ef`` [H], ``ssmax_s`` [H] or
    None, ``lam`` [H], ``profile`` [H, L_train] (log mean e^{logit} by distance), ``stationary`` (PaTH).
    """
    L = model.config.block_size
    if not 1 <= D < L:
        raise ValueError(f"D={D!r} must be in [1, L_train={L}) so that far keys exist at L_train")
    x = torch.from_numpy(np.stack([tokens[e - L: e] for e in ends]).astype(np.int64))
    if x.shape[1] > MAX_INPUT_LEN * L:
        raise AssertionError("a prediction input was measured beyond L_train")
    chain = None
    if train_tokens is None:
        probs = token_frequencies(tokens, model.config.vocab_size)
    else:
        from .chi_markov import bigram_chain

        chain = bigram_chain(train_tokens)
        probs = np.zeros(model.config.vocab_size)
        probs[chain[0]] = chain[1]
    rng = np.random.default_rng(seed)
    W = len(ends)
    qpos = np.arange(D, L)
    # K far keys per query (w, i): j uniform on [0, i − D], the same draw for every layer
    far_j = np.floor(rng.random((W, len(qpos), keys_per_query)) * (qpos - D + 1)[None, :, None]).astype(np.int64)
    layers: list[dict] = []

    def layer_stats(attn: CausalSelfAttention, inter: AttentionIntermediates) -> None:
        q0, k0, s = inter.q0.float(), inter.k0.float(), full_scores(attn, inter)
        bias = score_bias(attn, inter).expand(W, -1, -1, -1)
        kap = torch.from_numpy(_kappa(attn, np.arange(1, L + 1)))  # [H, L] at query i: n = i + 1
        finite = torch.isfinite(s)
        scaled = s.masked_fill(~finite, 0.0) * kap.view(1, -1, L, 1)
        logit = (scaled + bias).masked_fill(~finite, float("-inf"))
        lam = scaled.abs().amax(dim=(0, 2, 3)).numpy()
        dist = torch.arange(L).view(-1, 1) - torch.arange(L).view(1, -1)
        prof = np.full((attn.n_head, L), np.nan)
        for n in range(L):
            m = dist == n
            prof[:, n] = torch.logsumexp(logit[:, :, m], dim=(-1)).logsumexp(0).numpy() - math.log(W * int(m.sum()))
        near_idx = qpos[:, None] - np.arange(D)[None, :]  # [Q, D] key positions
        s_np, bias_np = s.numpy(), bias.numpy()
        near = s_np[:, :, qpos[:, None], near_idx]  # [W, H, Q, D]
        near_bias = bias_np[:, :, qpos[:, None], near_idx]
        B = attn.head_dim // 2
        wi = np.arange(W)[:, None, None]
        qi = np.broadcast_to(qpos[None, :, None], far_j.shape)
        if attn.use_path:  # stationary far law: the measured far logits, as one plane with c = s·√d
            c = (s_np.transpose(0, 2, 3, 1)[wi, qi, far_j] * math.sqrt(attn.head_dim))[..., None]  # [W, Q, K, H, 1]
            chi = np.ones((attn.n_head, 1), complex)
        else:
            qa, ka = q0.numpy().transpose(0, 2, 1, 3), k0.numpy().transpose(0, 2, 1, 3)  # [W, L, H, d]
            zq = qa[..., :B] + 1j * qa[..., B:]
            zk = ka[..., :B] + 1j * ka[..., B:]
            c = np.conj(zq[wi, qi]) * zk[wi, far_j]  # [W, Q, K, H, B]
            chi = relative_step_chi(attn, probs)
        markov = None
        if chain is not None and attn.angle_source == "learned":
            table = np.asarray(layer_family(attn, probs).table)[chain[0]]  # (seen tokens, H·B)
            markov = {"table": table, "transition": chain[2]}
        log_ef = np.zeros(attn.n_head)
        if getattr(attn, "use_fox", False):
            with torch.autocast("cpu", enabled=False):
                logit_f = torch.nn.functional.linear(inter.x.float(), attn.fox_w.float(), attn.fox_b.float())
            log_ef = np.log(torch.sigmoid(logit_f).double().mean(dim=(0, 1)).numpy())
        layers.append({
            "near": near, "near_bias": near_bias, "c": c.astype(np.complex64), "chi": chi,
            "markov": markov,
            "slopes": attn.slopes.double().numpy() if attn.use_alibi else np.zeros(attn.n_head),
            "log_ef": log_ef, "ssmax_s": attn.ssmax_s.double().numpy() if getattr(attn, "use_ssmax", False) else None,
            "lam": lam, "profile": prof, "stationary": bool(attn.use_path), "head_dim": attn.head_dim,
        })

    _, _, inters = model(x, generator=torch.Generator().manual_seed(10_007 + seed), return_intermediates=True)
    for blk, inter in zip(model.blocks, inters):
        layer_stats(blk.attn, inter)
    return {"L_train": L, "D": D, "input_len": int(x.shape[1]), "n_windows": W, "keys_per_query": keys_per_query,
            "layers": layers}


def _query_rho(lay: dict, L: int, D: int, u: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per held-out query: ρ_t = F_t/(F_t + Z_t) at length ``L`` and log F_t, each [W, Q, H].

    ``F_t = Σ_k w_k exp(κ_L s_k + b(n_k))`` over the query's ``K`` far keys: key ``k`` is moved to a
    distance ``n_k`` drawn uniformly in stratum ``k mod S`` of ``[D, L)`` (``S ≤ K`` geometric strata,
    ``w_k`` = stratum length / keys in it: unbiased for Σ_{n=D}^{L−1}, and a decaying bias keeps its
    near strata), with the relative angle ``A ∼ WN(n arg χ, −2n log|χ|)``.
    """
    kap = _kappa_of(lay, L)
    K = u.shape[-1]
    edges = np.unique(np.round(np.geomspace(D, L, K + 1)).astype(np.int64))
    strat = np.arange(K) % (len(edges) - 1)
    lo, width = edges[strat], np.diff(edges)[strat]
    weight = width / np.bincount(strat)[strat]  # [K]
    n = lo + np.floor(u * width)  # [W, Q, K]
    route = lay.get("route")
    if route is None:  # i.i.d. steps: m_b(n) = χ_bⁿ
        chi = lay["chi"]
        mod = np.clip(np.abs(chi), 1e-300, 1.0)
        A = n[..., None, None] * np.angle(chi) + np.sqrt(n[..., None, None] * -2.0 * np.log(mod)) * z  # [W,Q,K,H,B]
    else:  # the token chain's m_b(n), looked up by distance
        m = route[n.astype(np.int64)]  # [W, Q, K, H, B]
        A = np.angle(m) + np.sqrt(-2.0 * np.log(np.clip(np.abs(m), 1e-300, 1.0))) * z
    s = (lay["c"] * np.exp(1j * A)).real.sum(-1) / math.sqrt(lay["head_dim"])  # [W, Q, K, H]
    e = kap * s + n[..., None] * (lay["log_ef"] - lay["slopes"]) + np.log(weight)[:, None]
    top = e.max(axis=2, keepdims=True)
    log_f = np.squeeze(top, 2) + np.log(np.exp(e - top).sum(axis=2))  # [W, Q, H]
    near = lay["near"] * kap[None, :, None, None] + lay["near_bias"]  # [W, H, Q, D]
    log_z = np.logaddexp.reduce(near, axis=-1).transpose(0, 2, 1)  # [W, Q, H]
    return 1.0 / (1.0 + np.exp(log_z - log_f)), log_f


def markov_route(chain: dict, nmax: int, shape: tuple[int, int]) -> np.ndarray:
    """``m_b(n)`` of the bigram chain at every ``n = 0 … nmax``: ``(nmax + 1, H, B)`` complex."""
    from stylized.theory.markov_theory import route_characteristic_grid

    return route_characteristic_grid(chain["transition"], chain["table"], int(nmax)).reshape((int(nmax) + 1, *shape))


def predict_rho(stats: dict, lengths, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """ρ̂_D(L) per layer and head at the query ``i = L − 1`` of windows of the given ``lengths``.

    ρ̂ is the mean of the per-query ``ρ_t`` of :func:`_query_rho` over every held-out query (``W·Q``
    of them); ``lo``/``hi`` its 2.5 / 97.5 % percentile bootstrap over windows (``n_boot`` resamples).
    Returns one dict per layer with ``rho``, ``lo``, ``hi`` [len(lengths), H] and ``lengths``.
    """
    if stats["input_len"] > MAX_INPUT_LEN * stats["L_train"]:
        raise AssertionError("a prediction input was measured beyond L_train")
    D = stats["D"]
    lengths = [int(x) for x in lengths]
    rng = np.random.default_rng(seed)
    W = stats["n_windows"]
    boot = rng.integers(0, W, (n_boot, W))
    out = []
    for lay in stats["layers"]:
        H = lay["chi"].shape[0]
        if lay.get("markov") is not None:
            lay = {**lay, "route": markov_route(lay["markov"], max(lengths), lay["chi"].shape)}
        u = rng.random(lay["c"].shape[:3])  # common random numbers across lengths
        z = rng.standard_normal(lay["c"].shape).astype(np.float32)
        rho = np.zeros((len(lengths), H))
        lo, hi = np.zeros_like(rho), np.zeros_like(rho)
        for k, L in enumerate(lengths):
            if L <= D:
                continue
            r, _ = _query_rho(lay, L, D, u, z)
            per_w = r.mean(axis=1)  # [W, H]
            rho[k] = per_w.mean(axis=0)
            lo[k], hi[k] = np.percentile(per_w[boot].mean(axis=1), [2.5, 97.5], axis=0)
        out.append({"rho": rho, "lo": lo, "hi": hi, "lengths": lengths})
    return out


def _kappa_of(lay: dict, L: int) -> np.ndarray:
    return np.ones(len(lay["lam"])) if lay["ssmax_s"] is None else lay["ssmax_s"] * math.log(L)


def bound_on_queries(lam: np.ndarray, rho: np.ndarray, L: int, D: int) -> np.ndarray:
    """Does ``ρ_D ≥ M/(M + K e^{2λ})`` (M = L − D far, K = D near keys) hold, per measured query? [..., H]."""
    M, K = L - D, D
    return rho >= M / (M + K * np.exp(2.0 * lam))


@torch.no_grad()
def measure_rho(model: GPT, tokens: np.ndarray, ends: np.ndarray, L: int, D: int, n_last: int = 4,
                seed: int = 0) -> dict:
    """Measured ρ_D at the last ``n_last`` queries of windows ``tokens[e − L: e]`` (comparison only).

    Returns per layer ``rho`` [W, H, n_last] and ``lam_q`` [W, H, n_last] (each query's own largest |logit|).
    """
    x = torch.from_numpy(np.stack([tokens[e - L: e] for e in ends]).astype(np.int64))
    qsel = torch.arange(L - n_last, L)
    out: list[dict] = []
    _, _, inters = model(x, generator=torch.Generator().manual_seed(10_007 + seed), return_intermediates=True)
    for blk, inter in zip(model.blocks, inters):
        attn, q, k = blk.attn, inter.q, inter.k
        if attn.use_path:  # the chunks must all run (the keys are transported chunk by chunk)
            rows = []
            for a, b, c in score_chunks(attn, inter, scaled=False):
                if b > L - n_last:
                    lo = max(a, L - n_last)
                    rows.append(torch.nn.functional.pad(c[:, :, lo - a:], (0, L - b), value=float("-inf")))
            s = torch.cat(rows, dim=2).double()
        else:
            s = (q[:, :, qsel].double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        kap = torch.from_numpy(_kappa(attn, (qsel + 1).numpy()))  # [H, n_last]
        s = s * kap.view(1, -1, n_last, 1)
        dist = (qsel.view(-1, 1) - torch.arange(L).view(1, -1)).double()
        logit = s.masked_fill(dist < 0, float("-inf"))
        if attn.use_alibi:
            logit = logit - attn.slopes.double().view(1, -1, 1, 1) * dist.clamp(min=0)
        if getattr(attn, "use_fox", False):
            c = inter.log_gate_cum
            logit = logit + c[:, :, qsel].unsqueeze(-1) - c.unsqueeze(-2)
        far = torch.logsumexp(logit.masked_fill(dist < D, float("-inf")), dim=-1)
        rho = torch.exp(far - torch.logsumexp(logit, dim=-1))
        lam_q = s.masked_fill(dist < 0, 0.0).abs().amax(dim=-1)
        out.append({"rho": rho.numpy(), "lam_q": lam_q.numpy()})
    return {"L": L, "D": D, "layers": out}
