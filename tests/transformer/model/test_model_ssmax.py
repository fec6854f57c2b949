"""Scalable-Softmax variants: the query scale, the uniform limit, and untouched random streams."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.model.attention_bias import ssmax_query  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT, CausalSelfAttention  # noqa: E402

torch.set_num_threads(1)


def tiny(variant: str) -> GPTConfig:
    return GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8, variant=variant)


def test_ssmax_query_scales_by_log_visible_keys() -> None:
    q = torch.randn(1, 2, 5, 4)
    s = torch.tensor([0.5, 2.0])
    got = ssmax_query(q, s)
    for h in range(2):
        for i in range(5):
            torch.testing.assert_close(got[0, h, i], q[0, h, i] * s[h] * math.log(i + 1))


def test_zero_scale_is_uniform_attention() -> None:
    torch.manual_seed(0)
    attn = CausalSelfAttention(tiny("ssmax")).eval()
    with torch.no_grad():
        attn.ssmax_s.zero_()
    x = torch.randn(1, 6, 8)
    _, _, v = attn.qkv(x)
    uniform = torch.cumsum(v, dim=2) / torch.arange(1, 7).view(1, 1, -1, 1)  # mean of the visible values
    with torch.no_grad():
        ref = attn.c_proj(uniform.transpose(1, 2).reshape(1, 6, 8))
        torch.testing.assert_close(attn(x), ref, atol=1e-6, rtol=1e-5)
        attn.ssmax_s.fill_(1.0)  # a mutant scale must break the equality
        assert not torch.allclose(attn(x), ref, atol=1e-4)


@pytest.mark.parametrize("base, variant", [("nope", "ssmax"), ("learned-qkv", "learned-qkv-ssmax")])
def test_ssmax_draws_nothing_from_the_torch_stream(base: str, variant: str) -> None:
    torch.manual_seed(3)
    a = GPT(tiny(base))
    after_a = torch.rand(3)
    torch.manual_seed(3)
    b = GPT(tiny(variant))
    after_b = torch.rand(3)
    assert torch.equal(after_a, after_b)
    sa, sb = a.state_dict(), b.state_dict()
    extra = set(sb) - set(sa)
    assert extra and all(k.endswith("ssmax_s") for k in extra)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    init = b.blocks[0].attn.ssmax_s
    torch.testing.assert_close(init, torch.full((2,), 1.0 / math.log(8)))
