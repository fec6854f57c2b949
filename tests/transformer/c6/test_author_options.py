"""The author's model points as options (README "C6: the author's model"): each one does what it says, and
the defaults are the previous model exactly."""

import numpy as np
import pytest
import torch

from simulations.transformer.evaluate.extrapolation import author_window_ends, window_losses
from simulations.transformer.model.gpt import GPT
from simulations.transformer.model.presets import Preset


def _attn(cfg_kw: dict):
    mcfg = Preset.from_name("smoke", variant="learned-qk", **cfg_kw).model
    torch.manual_seed(0)
    model = GPT(mcfg)
    attn = model.blocks[0].attn
    with torch.no_grad():
        attn.angle_table.normal_(0.0, 1.0)
    return model, attn


def test_key_route_accumulates_tokens_j_to_i_minus_1():
    """``angle_tokens="key"``: ψ_j − ψ_i = Σ_{s=j}^{i−1} θ(x_s) (the author's); ``"query"``: Σ_{s=j+1}^{i} θ(x_s)."""
    idx = torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(1))
    for tokens, lo, hi in (("query", 1, 1), ("key", 0, 0)):
        model, attn = _attn({"angle_tokens": tokens})
        psi, _ = attn.angles(idx, 1, 12, torch.device("cpu"))
        omega = attn.omega.double()
        table = attn.angle_table.double().view(256, attn.angle_heads, -1)
        theta = torch.pi * torch.tanh(table[idx[0]]) - omega  # [L, H, d/2]
        i, j = 9, 3
        want = theta[j + lo: i + hi].sum(dim=0)  # [H, d/2]
        got = (psi[0, :, j] - psi[0, :, i])
        assert torch.allclose(torch.remainder(got - want + torch.pi, 2 * torch.pi) - torch.pi,
                              torch.zeros_like(want), atol=1e-9), tokens


def test_defaults_are_the_previous_model():
    mcfg = Preset.from_name("cpu", variant="learned-qk").model
    assert (mcfg.angle_tokens, mcfg.lm_head, mcfg.init) == ("query", "tied", "nanogpt")
    model = GPT(mcfg)
    assert model.lm_head.weight is model.wte.weight and model.lm_head.bias is None


def test_untied_head_has_its_own_weights_and_a_bias_and_torch_init_is_default_init():
    mcfg = Preset.from_name("smoke", variant="rope", lm_head="untied", init="torch").model
    model = GPT(mcfg)
    assert model.lm_head.weight is not model.wte.weight and model.lm_head.bias is not None
    assert model.wte.weight.std().item() > 0.5  # nn.Embedding's default N(0, 1), not nanoGPT's 0.02


def test_paper_preset_uses_the_author_points():
    config = Preset.from_name("paper", variant="learned-qk")
    mcfg, ecfg = config.model, config.eval
    assert (mcfg.angle_tokens, mcfg.lm_head, mcfg.init, ecfg.windows, ecfg.n_windows) == ("key", "untied", "torch",
                                                                                        "author", 20)


def test_author_windows_lie_in_the_last_tenth_and_follow_seed_42_plus_L():
    ends = author_window_ends(100_000, 512, 20)
    assert ends.shape == (20,) and (ends - 512 >= 90_000).all() and (ends <= 99_999).all()
    assert np.array_equal(ends, author_window_ends(100_000, 512, 20))
    assert not np.array_equal(ends, author_window_ends(100_000, 1024, 20))


@pytest.mark.parametrize("bad", ["random", ""])
def test_bad_choices_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="angle_tokens"):
        Preset.from_name("smoke", variant="learned-qk", angle_tokens=bad)
    with pytest.raises(ValueError, match="windows"):
        model = GPT(Preset.from_name("smoke", variant="rope").model)
        window_losses(model, np.zeros(5000, dtype=np.int64), [1], 2, windows=bad)
