"""Attention variants against naive per-pair transport references, causality, init, slopes."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.model.attention_bias import alibi_slopes, biased_attention  # noqa: E402
from simulations.transformer.model.config import VARIANT_SPECS, VARIANTS, GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT, CausalSelfAttention, rope_frequencies  # noqa: E402
from simulations.transformer.model.path_attention import path_attention, path_score_chunks  # noqa: E402
from simulations.transformer.model.path_naive import path_attention_naive, path_scores_naive  # noqa: E402

torch.set_num_threads(1)


def rot_matrix(psi: torch.Tensor) -> torch.Tensor:
    """Explicit d×d rotation R(ψ) in the half-split layout, ψ: [d/2]."""
    h = psi.shape[0]
    R = torch.zeros(2 * h, 2 * h, dtype=torch.float64)
    c, s = torch.cos(psi), torch.sin(psi)
    for b in range(h):
        R[b, b], R[b, b + h] = c[b], -s[b]
        R[b + h, b], R[b + h, b + h] = s[b], c[b]
    return R


def naive_attention(attn: CausalSelfAttention, x, psi=None, psi_v=None) -> torch.Tensor:
    """o_i = Σ_j α_ij V_{j→i} v_j, α = softmax_j(q_iᵀ P_{j→i} k_j/√d - m_h(i-j) + Σ_{s=j+1}^{i} log f_s).

    Explicit transport matrices; the forget gate f_s = sigmoid(w_hᵀ x_s + b_h) summed pair by pair.
    """
    B, L, C = x.shape
    H, d = attn.n_head, attn.head_dim
    q, k, v = (t.double() for t in attn.qkv(x))
    src, rot_v, use_alibi, use_path, use_fox, use_ssmax = VARIANT_SPECS[attn.config.variant]
    if use_path:
        beta, w = (t.double() for t in attn.householder(x))
    if use_fox:  # log f [B, L, H], float64, straight from the definition
        log_f = torch.log(torch.sigmoid(x.double() @ attn.fox_w.double().T + attn.fox_b.double()))
    slopes = alibi_slopes(H)
    out = torch.zeros(B, H, L, d, dtype=torch.float64)
    eye = torch.eye(d, dtype=torch.float64)
    for b_ in range(B):
        for h in range(H):
            for i in range(L):
                scores, vals = [], []
                for j in range(i + 1):
                    P, V = eye, eye
                    if src is not None:  # ψ [B or 1, H or 1, L, d/2]
                        pi = psi[0 if psi.shape[0] == 1 else b_, 0 if psi.shape[1] == 1 else h]
                        P = rot_matrix(pi[j] - pi[i])  # R(ψ_i)ᵀ R(ψ_j)
                        if rot_v:
                            pv = psi_v[b_, 0 if psi_v.shape[1] == 1 else h]
                            V = rot_matrix(pv[j] - pv[i])
                    if use_path:  # P_{j→i} = H_i H_{i-1} ⋯ H_{j+1}
                        for t in range(j + 1, i + 1):
                            wt = w[b_, h, t]
                            P = (eye - beta[b_, h, t] * torch.outer(wt, wt)) @ P
                    s = q[b_, h, i] @ P @ k[b_, h, j] / math.sqrt(d)
                    if use_ssmax:  # Scalable-Softmax: query × s_h log n_i, n_i = i + 1 visible keys
                        s = s * attn.ssmax_s[h].double() * math.log(i + 1)
                    if use_alibi:
                        s = s - slopes[h] * (i - j)
                    if use_fox:
                        s = s + sum((log_f[b_, t, h] for t in range(j + 1, i + 1)),
                                    torch.zeros((), dtype=torch.float64))
                    scores.append(s)
                    vals.append(V @ v[b_, h, j])
                a = torch.softmax(torch.stack(scores), dim=0)
                out[b_, h, i] = (a[:, None] * torch.stack(vals)).sum(0)
    y = out.transpose(1, 2).reshape(B, L, C).float()
    return attn.c_proj(y)


def tiny(variant: str, **kw) -> GPTConfig:
    base = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8, dropout=0.0,
                variant=variant, path_chunk=4)
    base.update(kw)
    return GPTConfig(**base)


@pytest.mark.parametrize("angle_heads", ["per-head", "shared"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_attention_matches_naive_reference(variant: str, angle_heads: str) -> None:
    torch.manual_seed(0)
    cfg = tiny(variant, rope_base=3.0, angle_heads=angle_heads)
    attn = CausalSelfAttention(cfg).eval()
    for p in attn.parameters():  # nonzero tables / larger weights for a sharper test
        torch.nn.init.normal_(p, std=0.5)
    B, L = 2, 11  # L not a multiple of path_chunk=4: exercises the cross-chunk path
    x = torch.randn(B, L, cfg.n_embd)
    idx = torch.randint(0, cfg.vocab_size, (B, L))
    gen = torch.Generator().manual_seed(1)
    psi, psi_v = attn.angles(idx, B, L, x.device, gen)
    with torch.no_grad():
        got = attn(x, idx, psi=psi, psi_v=psi_v)
        ref = naive_attention(attn, x, psi, psi_v)
    torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-4)


def test_path_attention_long_chunks_match_single_chunk() -> None:
    torch.manual_seed(0)
    B, H, L, d = 1, 2, 37, 4
    q, k, v = torch.randn(3, B, H, L, d).unbind(0)
    beta = 2 * torch.rand(B, H, L)
    w = torch.nn.functional.normalize(torch.randn(B, H, L, d), dim=-1)
    full = path_attention(q, k, v, beta, w, chunk=64)
    for c in (1, 5, 16):
        torch.testing.assert_close(path_attention(q, k, v, beta, w, chunk=c), full,
                                   atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("chunk", [1, 4, 16, 64])
def test_path_attention_matches_naive_reference(chunk: int) -> None:
    """The chunked UT-transform path against the plain O(L²) definition (:mod:`.path_naive`), scores and outputs."""
    torch.manual_seed(1)
    B, H, L, d = 2, 2, 21, 8  # L not a multiple of the chunk: a partial last chunk
    q, k, v = torch.randn(3, B, H, L, d).unbind(0)
    beta = 2 * torch.rand(B, H, L)
    w = torch.nn.functional.normalize(torch.randn(B, H, L, d), dim=-1)
    ref = path_scores_naive(q, k, beta, w)
    for a, b, s in path_score_chunks(q, k, beta, w, chunk):
        torch.testing.assert_close(s.double(), ref[:, :, a:b, :b], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(path_attention(q, k, v, beta, w, chunk=chunk), path_attention_naive(q, k, v, beta, w),
                               atol=1e-5, rtol=1e-4)


def test_random_angles_distribution_and_streams() -> None:
    cfg = tiny("random-qkv", n_head=1, n_embd=8, rope_base=10000.0)
    attn = CausalSelfAttention(cfg)
    L = 200
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    psi, psi_v = attn.angles(None, 2, L, torch.device("cpu"), g1)
    psi2, _ = attn.angles(None, 2, L, torch.device("cpu"), g2)
    assert torch.equal(psi, psi2)  # generator -> reproducible
    assert not torch.allclose(psi, psi_v)  # independent value stream (default)
    omega = rope_frequencies(cfg.head_dim)
    inc = torch.remainder(psi.diff(dim=2) + math.pi, 2 * math.pi) - math.pi  # θ_t, t ≥ 1
    assert (inc.abs() <= omega + 1e-9).all()
    assert (inc.abs().amax(dim=(0, 1, 2)) > 0.8 * omega).all()  # fills U(-ω, ω)
    same = CausalSelfAttention(tiny("random-qkv", value_angles="same"))
    p, pv = same.angles(None, 1, 5, torch.device("cpu"), g1)
    assert pv is p
    a, _ = attn.angles(None, 1, 5, torch.device("cpu"), None)
    b, _ = attn.angles(None, 1, 5, torch.device("cpu"), None)
    assert not torch.equal(a, b)  # fresh draw per forward pass


def test_learned_angle_formula() -> None:
    cfg = tiny("learned-qk")
    attn = CausalSelfAttention(cfg)
    torch.nn.init.normal_(attn.angle_table, std=1.0)
    idx = torch.randint(0, cfg.vocab_size, (2, 9))
    psi, _ = attn.angles(idx, 2, 9, torch.device("cpu"))
    assert psi.shape == (2, cfg.n_head, 9, cfg.head_dim // 2)  # per-head tables by default
    for h in range(cfg.n_head):  # head h reads its own columns E[x_t, h·d/2 : (h+1)·d/2]
        cols = attn.angle_table[:, h * cfg.head_dim // 2: (h + 1) * cfg.head_dim // 2]
        theta = math.pi * torch.tanh(cols[idx].double()) - rope_frequencies(cfg.head_dim)
        expect = -torch.cumsum(theta, dim=1)  # ψ_t = -Φ_t
        torch.testing.assert_close(torch.cos(psi[:, h]), torch.cos(expect))
        torch.testing.assert_close(torch.sin(psi[:, h]), torch.sin(expect))
    expect = psi
    torch.testing.assert_close(torch.cos(psi), torch.cos(expect))
    torch.testing.assert_close(torch.sin(psi), torch.sin(expect))


@pytest.mark.parametrize("variant", VARIANTS)
def test_causality(variant: str) -> None:
    torch.manual_seed(0)
    model = GPT(tiny(variant)).eval()
    for name, p in model.named_parameters():
        if "angle_table" in name or "fox_w" in name:  # token-dependent angles / forget gates
            torch.nn.init.normal_(p, std=1.0)
    L, cut = 12, 7
    idx = torch.randint(0, 11, (2, L))
    idx2 = idx.clone()
    idx2[:, cut:] = (idx2[:, cut:] + 1 + torch.randint(0, 9, (2, L - cut))) % 11
    with torch.no_grad():
        a, _ = model(idx, generator=torch.Generator().manual_seed(5))
        b, _ = model(idx2, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(a[:, :cut], b[:, :cut], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, cut:], b[:, cut:])


def test_learned_qk_equals_rope_at_init() -> None:
    torch.manual_seed(0)
    model = GPT(tiny("learned-qk")).eval()
    idx = torch.randint(0, 11, (2, 40))  # beyond block_size too
    rope = GPT(tiny("rope")).eval()
    missing, unexpected = rope.load_state_dict(model.state_dict(), strict=False)
    assert not missing and all("angle_table" in k for k in unexpected)
    with torch.no_grad():
        got, _ = model(idx)
        want, _ = rope(idx)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", ["learned-qkv", "learned-qkv-alibi", "learned-qkv-fox"])
def test_learned_qkv_equals_rope_transport_at_init(variant: str) -> None:
    """At init the learned angle is RoPE's ψ_t = tω (up to a shift) on Q, K and V."""
    torch.manual_seed(0)
    model = GPT(tiny(variant)).eval()
    idx = torch.randint(0, 11, (2, 40))
    with torch.no_grad():
        got, _ = model(idx)
        omega = rope_frequencies(model.config.head_dim)
        psi = (torch.arange(40, dtype=torch.float64)[:, None] * omega)[None]
        for blk in model.blocks:
            blk.attn.angles = lambda *a, **k: (psi, psi)
        want, _ = model(idx)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_alibi_slopes() -> None:
    assert alibi_slopes(8) == pytest.approx([2.0 ** -k for k in range(1, 9)])
    s12 = alibi_slopes(12)
    expect = [2.0 ** -k for k in range(1, 9)] + [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5,
                                                   2.0 ** -3.5]
    assert s12 == pytest.approx(expect)
    assert alibi_slopes(4) == pytest.approx([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(variant="sinusoidal"), "variant"),
        (dict(variant="rope", n_embd=12, n_head=4), "head_dim"),
        (dict(variant="random-qk", n_embd=10, n_head=2), "head_dim"),
        (dict(variant="rope", n_embd=10, n_head=4), "n_embd"),
        (dict(variant="random-qkv", value_angles="other"), "value_angles"),
        (dict(variant="path", path_conv=7), "path_conv"),
        (dict(variant="rope", dropout=1.5), "dropout"),
    ],
)
def test_bad_config(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        GPTConfig(**kwargs)


def test_odd_head_dim_ok_without_rotation() -> None:
    GPTConfig(variant="nope", n_embd=12, n_head=4)
    GPTConfig(variant="alibi", n_embd=12, n_head=4)


# ---------------------------------------------------------------------------
# FoX forget gate
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["fox", "learned-qkv-fox"])
def test_fox_gate_at_init_is_alibi(variant: str) -> None:
    """With w = 0 the gate bias is exactly -(i-j)·softplus(-b_h): ALiBi with slope softplus(-b_h)."""
    torch.manual_seed(0)
    model = GPT(tiny(variant, n_head=4, n_embd=16))
    attn = model.blocks[0].attn
    assert torch.equal(attn.fox_w, torch.zeros_like(attn.fox_w))  # GPT's init leaves the gate alone
    assert torch.allclose(attn.fox_b, torch.tensor([3.0, 4.0, 5.0, 6.0]))
    L = 50
    x = torch.randn(2, L, 16)
    c = attn.log_gate_cumsum(x)  # [B, H, L]
    b = attn.fox_b.detach()
    slope = torch.nn.functional.softplus(-b.double())  # [H]
    slope32 = -torch.nn.functional.logsigmoid(b.float()).double()  # the per-step value, float32
    i = torch.arange(L, dtype=torch.float64)
    got = c[..., :, None] - c[..., None, :]  # [B, H, i, j]
    dist = (i[:, None] - i[None, :])
    # exact up to the float32 rounding of log f (the float64 cumsum adds ~1e-16 relative)
    torch.testing.assert_close(got, (-dist * slope32.view(-1, 1, 1)).expand_as(got), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(got, (-dist * slope.view(-1, 1, 1)).expand_as(got), atol=1e-12, rtol=2e-7)
    # and the attention itself equals ALiBi attention with those slopes
    q, k, v = torch.randn(3, 2, 4, L, 4).unbind(0)
    fox = biased_attention(q, k, v, log_gate_cum=c)
    ali = biased_attention(q, k, v, slopes=slope.float())
    torch.testing.assert_close(fox, ali, atol=1e-6, rtol=1e-5)


def test_fox_gate_chunks_and_long_lengths() -> None:
    """Query chunking (incl. the memory cap) does not change the result; the bias stays exact far out."""
    torch.manual_seed(0)
    B, H, L, d = 2, 3, 37, 4
    q, k, v = torch.randn(3, B, H, L, d).unbind(0)
    c = torch.cumsum(torch.nn.functional.logsigmoid(torch.randn(B, H, L)).double(), dim=-1)
    full = biased_attention(q, k, v, log_gate_cum=c, chunk=1024)
    for ch in (1, 5, 16):
        torch.testing.assert_close(biased_attention(q, k, v, log_gate_cum=c, chunk=ch), full,
                                   atol=1e-6, rtol=1e-5)
    # a huge accumulated offset (|c| ~ 1e4, as after many strongly forgetting steps) cancels
    torch.testing.assert_close(biased_attention(q, k, v, log_gate_cum=c - 1e4, chunk=8), full,
                               atol=1e-6, rtol=1e-5)


def test_fox_gate_is_trained_and_existing_variants_unchanged() -> None:
    torch.manual_seed(0)
    model = GPT(tiny("learned-qkv-fox"))
    idx = torch.randint(0, 11, (2, 9))
    _, loss = model(idx[:, :-1], idx[:, 1:])
    loss.backward()
    for blk in model.blocks:
        assert blk.attn.fox_w.grad.abs().sum() > 0 and blk.attn.fox_b.grad.abs().sum() > 0
    names = {n for n, _ in GPT(tiny("learned-qkv-alibi")).named_parameters()}
    assert not any("fox" in n for n in names)  # no new parameters (checkpoints still load)
    assert [VARIANT_SPECS[v].forget_gate for v in VARIANTS].count(True) == 2
