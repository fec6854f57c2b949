"""The recall horizon forecast from each checkpoint's own step law (issue 26, item 2).

Everything the forecast uses is measured on inputs of length ``L_train = 64``: the distance layout of
:func:`.recall.make_batch` at key → query distances :data:`SHORT_DISTANCES` (``N = 8`` pairs), read in the
model's last layer (the layer that looks the key up; :func:`measure`).

* **The retrieving head and its target.**  For each head ``h`` and offset ``o ∈ {0, 1}`` (the key ``k_i``, or
  the value after it, at ``i − d + o``), the share of queries whose measured top logit is at the target; the
  pair with the largest share is the head the forecast follows.
* **Its content.**  Unrotated query vectors at the query positions with their target keys (pairs kept
  together), the unrotated keys at every other position ``t ≥ 1`` (the haystack pool), and ``BOS`` keys.
* **Its step law** ``M_t = f(x_t)``: per token ``v``, the steps the head applied at positions holding ``v`` —
  the plane angles ``θ_t = ψ_t − ψ_{t−1}`` (RoPE: ``ω``; random-*: draws of ``U(−ω_b, ω_b)``; learned-*:
  ``±(π tanh E[v] − ω)``), PaTH's ``(β_t, w_t)`` (``M_t = I − β_t w_t w_tᵀ``), FoX's ``log f_t``, ALiBi's slope
  ``m_h``.  The token process is a law of the step-law protocol fitted on the same stream: ``unigram``
  (:class:`~stylized.laws.so2.TokenAngles` with the token frequencies) or ``markov``
  (:class:`~stylized.laws.markov_tokens.MarkovTokens` with the bigram transitions, pseudocount
  :data:`PSEUDOCOUNT`).  A step for token ``v`` is one of ``v``'s measured steps, drawn uniformly; the
  ``task-layout`` version takes the tokens from the task's own generator instead: it reads the evaluation
  distribution's layout at length ``L`` (not an L_train-only forecast, hence its name).

The forecast at distance ``d`` (context ``L = max(64, d + 2N + 1)``, query ``i`` one of the ``N`` query slots,
target ``j* = i − d + o``): ``T`` stylized contexts.  Each takes a measured (query, target) pair, ``BOS`` at 0 and,
at every position ``t = 1 … i``, a token from the token process (``unigram``, ``markov``, or ``task-layout``:
the task's own sequence at distance ``d``, the generator's layout) and one measured position holding that token,
whose key is the haystack key at ``t`` and whose step is ``M_t``; the keys are transported to the query along
these routes
(:math:`s_{ij} = q_iᵀ P_{j→i} k_j/√d_h` plus the head's bias).  The predicted accuracy is the probability that
the target holds the top logit, ``P_1(d)`` (the far-retrieval check's rank-one probability, with the head's
own content in place of Haar keys), with its Wilson 95% interval over the ``T`` contexts.  The predicted
horizon is the first distance of the grid with ``P_1 < 0.5``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stylized.core.estimators import proportion_ci
from stylized.laws.markov_tokens import MarkovTokens
from stylized.laws.so2 import TokenAngles

from ..evaluate.probe import full_scores, score_bias
from ..model.gpt import GPT, AttentionIntermediates, CausalSelfAttention
from .task import RecallTask, make_batch

__all__ = ["SHORT_DISTANCES", "PSEUDOCOUNT", "VERSIONS", "HeadRecord", "measure", "token_law", "forecast_accuracy"]

SHORT_DISTANCES = (16, 32, 47)  # distance layouts that fit in L_train = 64 with 8 pairs (d ≤ L − 2N − 1)
N_SHORT = 64  # sequences per short distance
VERSIONS = ("unigram", "markov", "task-layout")  # the token process of the step law
PSEUDOCOUNT = 1e-3  # added to every bigram count among the tokens seen (the chain must be irreducible)


@dataclass
class HeadRecord:
    """What :func:`measure` read from one checkpoint's retrieving head (all from inputs of length ``L_train``)."""

    variant: str
    head: int
    offset: int  # target at i − d + offset
    top1_short: dict  # {(head, offset): measured share of queries whose top logit is the target}
    head_dim: int
    q: np.ndarray  # (P, d_h) unrotated queries at the query positions
    k_target: np.ndarray  # (P, d_h) their target keys
    k_pool: np.ndarray  # (K, d_h) unrotated keys at positions t ≥ 1
    k_bos: np.ndarray  # (W, d_h) keys at position 0
    tokens: np.ndarray  # (S,) the token at every step position t ≥ 1
    theta: np.ndarray | None  # (S, B) the head's plane angles ψ_t − ψ_{t−1} (None: no rotation)
    beta: np.ndarray | None  # (S,) PaTH
    w: np.ndarray | None  # (S, d_h) PaTH
    log_f: np.ndarray | None  # (S,) FoX
    slope: float  # ALiBi m_h (0 otherwise)
    streams: list  # the measured token sequences (for the token process)


def _positions(L: int, N: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Query positions and key positions of the distance layout (see :func:`.recall.make_batch`)."""
    q_at = L - 2 * N + 2 * np.arange(N)
    return q_at, q_at - d


@torch.no_grad()
def measure(model: GPT, task: RecallTask, seed: int = 0, variant: str = "") -> HeadRecord:
    """Read the last layer's heads on the distance layouts at :data:`SHORT_DISTANCES` (length ``task.length``)."""
    L, N = task.length, task.n_pairs
    got: dict = {}
    chunks: list[dict] = []

    def read_layer(attn: CausalSelfAttention, inter: AttentionIntermediates) -> dict:
        q0, k0, s = inter.q0.float(), inter.k0.float(), full_scores(attn, inter)
        logit = s + score_bias(attn, inter)  # [W, H, L, L]
        rec = {"q0": q0.double().numpy(), "k0": k0.double().numpy(), "logit": logit.numpy()}
        if inter.psi is not None:
            p = inter.psi.double().numpy()  # [W or 1, H', L, B]
            th = np.diff(p, axis=2)
            rec["theta"] = np.broadcast_to(th, (q0.shape[0],) + th.shape[1:])
        if attn.use_path:
            rec["beta"], rec["w"] = inter.beta.double().numpy(), inter.w.double().numpy()
        if getattr(attn, "use_fox", False):
            rec["log_f"] = np.diff(inter.log_gate_cum.numpy(), axis=2)  # c [W, H, L]
        got.update(head_dim=attn.head_dim, slopes=attn.slopes.double().numpy() if attn.use_alibi else None)
        return rec

    for d in SHORT_DISTANCES:
        rng = np.random.default_rng([seed, 7, d])
        x, _ = make_batch(task, rng, N_SHORT, L, N, d)
        _, _, inters = model(x, generator=torch.Generator().manual_seed(20_011 + seed + d), return_intermediates=True)
        chunks.append({**read_layer(model.blocks[-1].attn, inters[-1]), "d": d, "idx": x.numpy()})
    H = chunks[0]["q0"].shape[1]
    hits = {(h, o): [] for h in range(H) for o in (0, 1)}
    for c in chunks:
        q_at, k_at = _positions(L, N, c["d"])
        top = c["logit"][:, :, q_at, :].argmax(-1)  # [W, H, N]
        for (h, o), v in hits.items():
            v.append(top[:, h, :] == (k_at + o)[None, :])
    share = {k: float(np.concatenate(v).mean()) for k, v in hits.items()}
    head, offset = max(share, key=share.get)
    qs, kt, kp, kb, tok, th, be, ww, lf = [], [], [], [], [], [], [], [], []
    for c in chunks:
        q_at, k_at = _positions(L, N, c["d"])
        qs.append(c["q0"][:, head, q_at].reshape(-1, got["head_dim"]))
        kt.append(c["k0"][:, head, k_at + offset].reshape(-1, got["head_dim"]))
        kp.append(c["k0"][:, head, 1:].reshape(-1, got["head_dim"]))
        kb.append(c["k0"][:, head, 0])
        tok.append(c["idx"][:, 1:].reshape(-1))
        if "theta" in c:
            hh = head if c["theta"].shape[1] > 1 else 0
            th.append(c["theta"][:, hh].reshape(-1, c["theta"].shape[-1]))
        if "beta" in c:
            be.append(c["beta"][:, head, 1:].reshape(-1))
            ww.append(c["w"][:, head, 1:].reshape(-1, got["head_dim"]))
        if "log_f" in c:
            lf.append(c["log_f"][:, head].reshape(-1))
    cat = (lambda a: np.concatenate(a) if a else None)  # noqa: E731
    slope = float(got["slopes"][head]) if got["slopes"] is not None else 0.0
    return HeadRecord(variant, int(head), int(offset), {f"{h},{o}": v for (h, o), v in share.items()},
                      int(got["head_dim"]), cat(qs), cat(kt), cat(kp), cat(kb), cat(tok), cat(th), cat(be), cat(ww),
                      cat(lf), slope, [c["idx"][:, 1:] for c in chunks])


def token_law(rec: HeadRecord, version: str):
    """The token process of the step law on the tokens seen at ``t ≥ 1`` (relabelled ``0 … V−1``):
    ``unigram`` :class:`TokenAngles` (frequencies) or ``markov`` :class:`MarkovTokens` (bigram transitions).
    Returns ``(law, seen)``; ``seen[v]`` is the task token of label ``v``.  The law's table is zero: only its
    tokens are used (the head's step for a token comes from that token's measured steps)."""
    seen = np.unique(rec.tokens)
    lab = np.searchsorted(seen, rec.tokens)
    V = seen.size
    if version == "unigram":
        return TokenAngles(2, table=np.zeros((V, 1)), probs=np.bincount(lab, minlength=V) / lab.size), seen
    if version != "markov":
        raise ValueError(f"version must be 'unigram' or 'markov', got {version!r}")
    counts = np.full((V, V), PSEUDOCOUNT)
    for s in rec.streams:
        a = np.searchsorted(seen, s)
        np.add.at(counts, (a[:, :-1].ravel(), a[:, 1:].ravel()), 1.0)
    return MarkovTokens(2, table=np.zeros((V, 1)), transition=counts / counts.sum(1, keepdims=True)), seen


def _step_picker(rec: HeadRecord, seen: np.ndarray):
    """``pick(labels, rng)``: for each token label a uniformly drawn position holding that token."""
    lab = np.searchsorted(seen, rec.tokens)
    order = np.argsort(lab, kind="stable")
    start = np.searchsorted(lab[order], np.arange(seen.size))
    count = np.bincount(lab, minlength=seen.size)

    def pick(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return order[start[labels] + (rng.random(labels.shape) * count[labels]).astype(np.int64)]
    return pick


def _logits(rec: HeadRecord, q: np.ndarray, keys: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """``(T, i)`` logits of keys ``j = 0 … i−1`` for queries at ``i``: ``q_iᵀ P_{j→i} k_j/√d_h`` plus bias.

    ``steps`` ``(T, i)``: pool positions of the steps ``M_1 … M_i`` (column ``t − 1`` holds ``M_t``), so the
    route of key ``j`` is ``M_{j+1} … M_i``."""
    T, n = steps.shape
    d = rec.head_dim
    out = np.empty((T, n))
    if rec.w is not None:  # PaTH: u ← H_{j+1} u from u = q, walking j down from i − 1
        u = q.copy()
        for j in range(n - 1, -1, -1):
            w, b = rec.w[steps[:, j]], rec.beta[steps[:, j]]
            u = u - (b * np.einsum("td,td->t", w, u))[:, None] * w
            out[:, j] = np.einsum("td,td->t", u, keys[:, j])
    elif rec.theta is not None:  # planes: Re Σ_b conj(z_q) z_k e^{i(ψ_j − ψ_i)}, ψ_j − ψ_i = −Σ_{t=j+1}^{i} θ_t
        B = d // 2
        zq = q[:, None, :B] + 1j * q[:, None, B:]
        zk = keys[..., :B] + 1j * keys[..., B:]
        th = rec.theta[steps]  # (T, i, B)
        rev = np.cumsum(th[:, ::-1], axis=1)[:, ::-1]  # Σ_{t=j+1}^{i} θ_t at column j
        out = np.real(np.sum(np.conj(zq) * zk * np.exp(-1j * rev), axis=-1))
    else:
        out = np.einsum("td,tjd->tj", q, keys)
    out /= math.sqrt(d)
    dist = np.arange(n, 0, -1, dtype=float)  # i − j
    if rec.slope:
        out -= rec.slope * dist[None, :]
    if rec.log_f is not None:
        out += np.cumsum(rec.log_f[steps][:, ::-1], axis=1)[:, ::-1]
    return out


def _labels(version: str, law, seen: np.ndarray, task: RecallTask, rng: np.random.Generator, T: int, L: int,
            n_pairs: int, d: int, i: int) -> np.ndarray:
    """``(T, i)`` token labels of positions ``1 … i``: drawn from the fitted token law, or (``task-layout``) the task's
    own sequences at distance ``d`` (:func:`.recall.make_batch`)."""
    if version in ("unigram", "markov"):
        return np.asarray(law.sample_tokens(rng, (T, i)))
    x, _ = make_batch(task, rng, T, L, n_pairs, d)
    tok = x.numpy()[:, 1: i + 1]
    lab = np.searchsorted(seen, tok)
    if not np.array_equal(seen[np.minimum(lab, seen.size - 1)], tok):
        raise ValueError("the task's sequences hold a token never seen at L_train: no measured step for it")
    return lab


def forecast_accuracy(rec: HeadRecord, distances, version: str = "unigram", trials: int = 256,
                      n_pairs: int = 8, length: int = 64, seed: int = 0, chunk: int = 32) -> list[dict]:
    """Predicted ``P_1(d)`` per distance (module doc): rows ``{distance, p1, lo, hi, trials}``.

    ``version``: the token process (:data:`VERSIONS`).  Position ``t`` of a stylized context takes one measured
    position holding its token: its key ``k_t`` and its step ``M_t`` together, as in a real sequence."""
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {', '.join(VERSIONS)}, got {version!r}")
    law, seen = token_law(rec, "markov" if version == "markov" else "unigram")
    pick = _step_picker(rec, seen)
    task = RecallTask()
    rows = []
    for d in distances:
        rng = np.random.default_rng([seed, 11, int(d)])
        L = max(length, int(d) + 2 * n_pairs + 1)
        wins = 0
        for start in range(0, trials, chunk):
            T = min(chunk, trials - start)
            i = L - 2 * n_pairs + 2 * int(rng.integers(0, n_pairs))
            jt = i - int(d) + rec.offset
            pair = rng.integers(0, rec.q.shape[0], T)
            picks = pick(_labels(version, law, seen, task, rng, T, L, n_pairs, int(d), i), rng)  # positions 1 … i
            keys = np.empty((T, i, rec.head_dim))
            keys[:, 1:] = rec.k_pool[picks[:, : i - 1]]
            keys[:, 0] = rec.k_bos[rng.integers(0, rec.k_bos.shape[0], T)]
            keys[:, jt] = rec.k_target[pair]
            s = _logits(rec, rec.q[pair], keys, picks)
            tgt = s[:, jt].copy()
            s[:, jt] = -np.inf
            wins += int(np.count_nonzero(tgt > s.max(axis=1)))
        ci = proportion_ci(wins, trials)
        rows.append({"distance": int(d), "p1": wins / trials, "lo": ci.ci_low, "hi": ci.ci_high, "trials": int(trials)})
    return rows
