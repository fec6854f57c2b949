"""ALiBi's mask on the efficient SDPA path: 4-D while evaluating, 3-D (bit-identical training) under autograd.

A 3-D float mask sends ``scaled_dot_product_attention`` to its math kernel; evaluation passes ``[1, H, n, b]``
instead.  The losses of both paths agree within float32 rounding, and training keeps the 3-D mask, so an ALiBi
checkpoint trains bit for bit as before.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from simulations.transformer.model import attention_bias  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT  # noqa: E402

torch.set_num_threads(1)


def _tiny(variant: str) -> tuple[GPT, torch.Tensor]:
    torch.manual_seed(0)
    cfg = GPTConfig(variant=variant, vocab_size=64, block_size=32, n_layer=2, n_head=4, n_embd=32, dropout=0.0)
    model = GPT(cfg).eval()
    idx = torch.randint(0, 64, (2, 97), generator=torch.Generator().manual_seed(1))
    return model, idx


def _mask_dims(monkeypatch) -> list[int]:
    dims: list[int] = []
    sdpa = F.scaled_dot_product_attention

    def spy(*a, **k):
        if k.get("attn_mask") is not None:
            dims.append(k["attn_mask"].dim())
        return sdpa(*a, **k)

    monkeypatch.setattr(attention_bias.F, "scaled_dot_product_attention", spy)
    return dims


@pytest.mark.parametrize("variant", ["alibi", "learned-qkv-alibi"])
def test_eval_mask_is_4d_and_losses_match_the_3d_path(variant, monkeypatch):
    model, idx = _tiny(variant)
    dims = _mask_dims(monkeypatch)
    with torch.no_grad():
        _, fast = model(idx[:, :-1], idx[:, 1:])  # evaluation: the 4-D mask
    assert dims and set(dims) == {4}
    dims.clear()
    _, slow = model(idx[:, :-1], idx[:, 1:])  # autograd on (the training path): the 3-D mask, math kernel
    assert dims and set(dims) == {3}
    assert float(fast) == pytest.approx(float(slow.detach()), rel=1e-6, abs=0)


def test_training_keeps_the_3d_mask(monkeypatch):
    model, idx = _tiny("alibi")
    model.train()
    dims = _mask_dims(monkeypatch)
    _, loss = model(idx[:, :-1], idx[:, 1:])
    loss.backward()
    assert dims and set(dims) == {3}


def test_chunked_eval_matches_one_chunk():
    """Chunking over queries (the long-length path) gives the same outputs with the 4-D mask."""
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 4, 70, 8) for _ in range(3))
    slopes = torch.tensor(attention_bias.alibi_slopes(4))
    with torch.no_grad():
        a = attention_bias.biased_attention(q, k, v, slopes=slopes, chunk=16)
        b = attention_bias.biased_attention(q, k, v, slopes=slopes, chunk=1024)
    assert torch.allclose(a, b, atol=1e-6, rtol=0)


def test_eval_mask_has_the_training_masks_values(monkeypatch):
    """The 4-D mask is built differently (a strided view of its diagonals, for the chunk's queries in reverse
    order) but holds exactly the 3-D mask's values, −inf included; the outputs agree to float32 rounding."""
    masks = []
    sdpa = F.scaled_dot_product_attention

    def spy(*a, **k):
        masks.append(k["attn_mask"].detach().clone())
        return sdpa(*a, **k)

    monkeypatch.setattr(attention_bias.F, "scaled_dot_product_attention", spy)
    slopes = torch.tensor(attention_bias.alibi_slopes(4))
    q, k, v = (torch.randn(1, 4, 50, 8) for _ in range(3))
    with torch.no_grad():
        fast = attention_bias.biased_attention(q, k, v, slopes=slopes, chunk=16)
    evaluation, masks[:] = list(masks), []
    slow = attention_bias.biased_attention(q.requires_grad_(), k, v, slopes=slopes, chunk=16)
    assert len(evaluation) == len(masks) == 4
    for m4, m3 in zip(evaluation, masks):
        assert m4.shape[0] == 1 and torch.equal(m4[0].flip(-2), m3)
    assert torch.allclose(fast, slow.detach(), atol=1e-6, rtol=0)
