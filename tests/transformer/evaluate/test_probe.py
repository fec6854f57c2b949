"""Probe (λ, ρ_D, χ_b of real attention weights): recomputed weights against the module's own forward."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.evaluate.probe import (  # noqa: E402
    attention_weights,
    head_stats,
    probe_checkpoint,
    probe_model,
    query_positions,
)
from simulations.transformer.model import rotation  # noqa: E402
from simulations.transformer.model.config import VARIANTS, GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT, CausalSelfAttention, rotate  # noqa: E402

torch.set_num_threads(1)


def tiny(variant: str, **kw) -> GPTConfig:
    base = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8, dropout=0.0,
                variant=variant, path_chunk=4, rope_base=3.0)
    base.update(kw)
    return GPTConfig(**base)


def sharpen(module: torch.nn.Module, std: float = 0.5) -> None:
    torch.manual_seed(0)
    for p in module.parameters():  # nonzero angle tables and larger weights: a sharper test
        torch.nn.init.normal_(p, std=std)


def cos_sin(psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos ψ, sin ψ in float32 ([B or 1, H or 1, L, d_h/2]), as the naive reference rotation takes them."""
    return torch.cos(psi).float(), torch.sin(psi).float()


def output_from_weights(attn: CausalSelfAttention, alpha: torch.Tensor, inter) -> torch.Tensor:
    """Module output [B, L, C] from weights: ``c_proj(R(−ψ^v_i) Σ_j α_ij V_{j→i} v_j)``."""
    y = alpha @ inter.v.float()
    if attn.rotate_v:
        cos_v, sin_v = cos_sin(inter.psi_v)
        y = rotate(y, cos_v, -sin_v)
    B, H, L, d = y.shape
    return attn.c_proj(y.transpose(1, 2).reshape(B, L, H * d))


@pytest.mark.parametrize("variant", ["rope", "alibi", "random-qkv", "learned-qk", "learned-qkv-alibi", "path", "ssmax",
                                     "learned-qkv-ssmax"])
def test_recomputed_weights_reproduce_module_output(variant: str) -> None:
    attn = CausalSelfAttention(tiny(variant)).eval()
    sharpen(attn)
    B, L = 2, 11  # L not a multiple of path_chunk=4: crosses PaTH chunks
    x = torch.randn(B, L, 8, generator=torch.Generator().manual_seed(1))
    idx = torch.randint(0, 11, (B, L), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():  # fixed angle draw for the random variants
        ref, inter = attn(x, idx, torch.Generator().manual_seed(3), return_intermediates=True)
        alpha = attention_weights(attn, inter)
        got = output_from_weights(attn, alpha, inter)
    torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-4)
    assert torch.allclose(alpha.sum(-1), torch.ones(()), atol=1e-5)
    assert (alpha.triu(1) == 0).all()  # causal
    # the weights are not trivial: uniform causal weights would give another output
    uniform = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1).view(-1, 1)
    with torch.no_grad():
        other = output_from_weights(attn, uniform.expand_as(alpha), inter)
    assert (other - ref).abs().max() > 1e-3


@pytest.mark.parametrize("variant", VARIANTS)
def test_intermediates_are_the_plain_forward(variant: str) -> None:
    """Asking for the intermediates leaves the logits bit for bit; q, k, v are the reference rotation of q0, k0, v0,
    in its layout (the probes' float64 products depend on the layout in the last bit)."""
    model = GPT(tiny(variant)).eval()
    sharpen(model, 0.3)
    idx = torch.randint(0, 11, (2, 13), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        ref, _ = model(idx, generator=torch.Generator().manual_seed(5))
        got, loss, inters = model(idx, generator=torch.Generator().manual_seed(5), return_intermediates=True)
    assert torch.equal(got, ref) and loss is None and len(inters) == 2
    for blk, inter in zip(model.blocks, inters):
        attn = blk.attn
        q, k, v = inter.q0, inter.k0, inter.v0
        if attn.angle_source is not None:
            cos, sin = cos_sin(inter.psi)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            if attn.rotate_v:
                v = rotate(v, *cos_sin(inter.psi_v))
        for got_t, want in ((inter.q, q), (inter.k, k), (inter.v, v)):
            assert torch.equal(got_t, want) and got_t.stride() == want.stride()
        assert (inter.q_scaled is inter.q) != attn.use_ssmax
        assert (inter.beta is not None) == attn.use_path and (inter.log_gate_cum is not None) == attn.use_fox


@pytest.mark.parametrize("variant, value_angles", [("rope", "independent"), ("random-qkv", "independent"),
                                                   ("random-qkv", "same"), ("learned-qk", "independent"),
                                                   ("learned-qkv-ssmax", "independent")])
def test_intermediates_do_not_depend_on_the_rotation_path(variant: str, value_angles: str, monkeypatch) -> None:
    """The fused rotation and the naive reference give the same logits and intermediates, values and layout."""
    model = GPT(tiny(variant, value_angles=value_angles)).eval()
    sharpen(model, 0.3)
    idx = torch.randint(0, 11, (2, 13), generator=torch.Generator().manual_seed(4))

    def run():
        with torch.no_grad():
            return model(idx, generator=torch.Generator().manual_seed(5), return_intermediates=True)

    fast = run()
    monkeypatch.setattr(rotation, "USE_FAST", False)
    naive = run()
    assert torch.equal(fast[0], naive[0])
    for a, b in zip(fast[2], naive[2]):
        for f in fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            assert (x is None and y is None) or (torch.equal(x, y) and x.stride() == y.stride()), f.name


@pytest.mark.parametrize("variant", ["rope", "alibi", "random-qk", "path"])
def test_head_stats_far_mass_and_lambda_match_full_weights(variant: str) -> None:
    attn = CausalSelfAttention(tiny(variant)).eval()
    sharpen(attn)
    B, L, D = 2, 23, 5
    x = torch.randn(B, L, 8, generator=torch.Generator().manual_seed(6))
    idx = torch.randint(0, 11, (B, L))
    queries = query_positions(L, D, 6)
    with torch.no_grad():
        _, inter = attn(x, idx, torch.Generator().manual_seed(7), return_intermediates=True)
        st = head_stats(attn, inter, D, queries, chunk=7)
        alpha = attention_weights(attn, inter)
    for n, i in enumerate(queries):
        far = alpha[:, :, i, : i - D + 1].sum(-1).double().numpy()
        np.testing.assert_allclose(st["rho"][:, :, n], far, atol=1e-5)
    assert np.all((st["rho"] >= 0) & (st["rho"] <= 1))
    if variant != "alibi":  # ρ_D ≥ M/(M + K e^{2λ}) on every query of a bias-free head
        assert np.all(st["rho"] >= st["bound"] * (1 - 1e-6))
    # λ = largest |logit| over all causal pairs (bias excluded), against explicit rotated scores
    if variant in ("rope", "random-qk"):
        q, k = inter.q, inter.k
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), 0.0)
        np.testing.assert_allclose(st["lam"], s.abs().amax(dim=(0, 2, 3)).double().numpy(), rtol=1e-6)


def save_tiny_checkpoint(tmp_path, variant: str, step: int = 7):
    cfg = GPTConfig(variant=variant, n_layer=1, n_embd=32, n_head=2, block_size=16, vocab_size=256)
    model = GPT(cfg).eval()
    sharpen(model, 0.2)
    path = tmp_path / "checkpoints" / "smoke" / f"{variant}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "variant": variant, "step": step,
                "train_config": {"data": None, "max_bytes": 200_000}}, path)
    return path


def test_probe_checkpoint_structure(tmp_path) -> None:
    path = save_tiny_checkpoint(tmp_path, "random-qkv")
    tokens = np.random.default_rng(0).integers(0, 256, 3000)
    res = probe_checkpoint(path, [1, 2, 4], None, 2, 8, 0, tokens=tokens)
    assert res["lengths"] == [16, 32, 64] and res["D"] == 16 and res["step"] == 7
    lay = res["layers"][0]
    for L in (16, 32, 64):
        st = lay["lengths"][str(L)]
        assert len(st["lam"]) == 2 and all(x > 0 for x in st["lam"])
        if L == 16:  # no source is D = L_train away from any query at L = L_train
            assert st["n_queries"] == 0 and all(math.isnan(x) for x in st["rho"])
        else:
            assert all(0.0 <= x <= 1.0 for x in st["rho"] + st["rho_last"])
            assert st["bound_holds"] is True
    # far mass grows with L (more far sources, same per-token weights) on these random weights
    assert np.mean(lay["lengths"]["64"]["rho"]) > np.mean(lay["lengths"]["32"]["rho"])


def test_chi_random_is_sinc_and_learned_at_init_is_rope() -> None:
    tokens = np.random.default_rng(1).integers(0, 11, 400)
    m = GPT(tiny("random-qk", rope_base=10000.0)).eval()
    res = probe_model(m, tokens, [1], n_windows=1)
    omega = m.blocks[0].attn.omega.numpy()
    np.testing.assert_allclose(res["layers"][0]["chi"]["chi_abs"], np.sin(omega) / omega, rtol=1e-12)
    w = omega.min()  # γ = 1 − max_b sinc ω_b: the slowest plane sets the gap
    assert res["layers"][0]["chi"]["gap"] == pytest.approx(1 - math.sin(w) / w, rel=1e-9)
    learned = GPT(tiny("learned-qk", rope_base=10000.0)).eval()  # zero tables: θ = −ω, |χ| = 1
    lay = probe_model(learned, tokens, [1], n_windows=1)["layers"][0]["chi"]
    assert lay["gap"] == 0.0 and all(w is None for w in lay["windows"])
    heads = learned.config.n_head  # per-head tables: every head's planes, head by head
    np.testing.assert_allclose(lay["chi_arg"], -np.tile(omega, heads), atol=1e-12)
    # a nonzero table: χ_b = Σ_v p_v e^{iθ_{v,b}} with the token frequencies of the probed text
    torch.nn.init.normal_(learned.blocks[0].attn.angle_table, std=1.0)
    lay = probe_model(learned, tokens, [1], n_windows=1)["layers"][0]["chi"]
    theta = math.pi * np.tanh(learned.blocks[0].attn.angle_table.detach().double().numpy()) - np.tile(omega, heads)
    direct = np.exp(1j * theta[tokens]).mean(axis=0)  # average over the token stream itself
    np.testing.assert_allclose(lay["chi_abs"], np.abs(direct), atol=1e-12)
