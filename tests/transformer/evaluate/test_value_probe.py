"""The value probe (C5 in trained models): real attention rows, the exact plug-in, the value streams' χ_b."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from simulations.transformer.evaluate.probe import attention_weights
from simulations.transformer.evaluate.value_probe import head_rows, plane_sums, probe_values, value_chi
from simulations.transformer.evaluate.value_probe_run import summarize
from simulations.transformer.model.config import GPTConfig
from simulations.transformer.model.gpt import GPT
from stylized.theory.value_theory import quadratic_form


def _model(variant: str, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    m = GPT(GPTConfig(variant=variant, n_layer=2, n_head=2, n_embd=16, block_size=16)).eval()
    if variant.startswith("learned"):
        with torch.no_grad():
            for b in m.blocks:
                b.attn.angle_table.normal_(0.0, 0.5)  # a trained-looking table (zero is RoPE)
    return m


def test_plane_sums_is_the_library_quadratic_form_per_plane():
    rng = np.random.default_rng(0)
    a = rng.random((5, 40))
    a[:, :7] = 0.0
    z, w = np.array([0.9, 0.5 + 0.3j, -0.2]), np.array([0.2, 0.5, 0.3])
    assert np.allclose(plane_sums(a, z) @ w, quadratic_form(a, w, z))
    assert np.allclose(plane_sums(a, np.ones(3))[:, 0], a.sum(1) ** 2)  # χ = 1: coherent, ρ_D²


def test_value_chi_of_each_law():
    r = _model("random-qkv").blocks[0].attn
    omega = r.omega.double().numpy()
    assert np.allclose(value_chi(r, np.ones(256) / 256), np.sin(omega) / omega)
    learned = _model("learned-qkv").blocks[0].attn
    p = np.zeros(256)
    p[7] = 1.0  # one token: χ = e^{iθ_7}
    theta = math.pi * np.tanh(learned.angle_table.detach().double().numpy()[7]).reshape(-1, omega.size) - omega
    assert np.allclose(value_chi(learned, p), np.exp(1j * theta).reshape(2, -1) if theta.shape[0] == 2
                       else np.broadcast_to(np.exp(1j * theta), (2, omega.size)))
    assert value_chi(_model("nope").blocks[0].attn, p) is None


@pytest.mark.parametrize("variant", ["random-qk", "random-qkv", "learned-qk", "learned-qkv"])
def test_far_and_near_energy_are_those_of_the_real_attention(variant):
    """The probe's far/near split of Σ_j α_ij V_{j→i} v_j equals one from the full weights of the forward pass."""
    m = _model(variant)
    x = torch.from_numpy((np.arange(2 * 48) % 29).reshape(2, 48))
    D, queries = 8, np.array([10, 30, 47])
    got = []
    with torch.no_grad():
        _, _, inters = m(x, generator=torch.Generator().manual_seed(3), return_intermediates=True)
    for blk, inter in zip(m.blocks, inters):
        attn = blk.attn
        rows = head_rows(attn, inter, D, queries, value_chi(attn, np.ones(256) / 256))
        alpha, v = attention_weights(attn, inter), inter.v
        for n, i in enumerate(queries):
            far = (i - torch.arange(i + 1)) >= D
            a = alpha[:, :, i, : i + 1].double()
            F = torch.einsum("whj,whjd->whd", a * far, v[:, :, : i + 1].double())
            N = torch.einsum("whj,whjd->whd", a * ~far, v[:, :, : i + 1].double())
            assert np.allclose(rows["far"][:, :, n], (F ** 2).sum(-1).numpy(), rtol=1e-4, atol=1e-7)
            assert np.allclose(rows["near"][:, :, n], (N ** 2).sum(-1).numpy(), rtol=1e-4, atol=1e-7)
            assert np.allclose(rows["rho"][:, :, n], (a * far).sum(-1).numpy(), rtol=1e-5)
        got.append(rows)
    rows = got[0]
    assert np.allclose(rows["coherent"], rows["rho"] ** 2 * rows["b2"])  # the Q/K plug-in: ρ_D²‖b̂‖²
    qk, qkv = ("pred", "pred_swap") if "qkv" not in variant else ("pred_swap", "pred")
    assert np.all(rows[qkv] <= rows[qk] * (1 + 1e-9))  # |χ_b| ≤ 1: transport never adds coherent energy


def test_a_head_without_transport_is_predicted_coherent_and_the_summary_has_intervals():
    m = _model("random-qk")
    res = probe_values(m, np.arange(3000) % 31, multiples=(1, 4), n_windows=3, n_queries=3)
    L = res["lengths"]["64"]["layers"][0]
    assert np.allclose(L["pred"], L["coherent"] + L["noise"])
    rows = summarize(res, rotate_v=False)
    pooled = [r for r in rows if r["head"] == "all"]
    assert {r["multiple"] for r in pooled} == {1, 4}
    for r in pooled:
        iv = r["far_over_pred"]
        assert iv["ci"][0] <= iv["estimate"] <= iv["ci"][1] and r["n_rows"] == 2 * 2 * 3 * 3
        assert r["suppression"]["estimate"] <= 1.0 + 1e-9


def test_variants_with_a_bias_are_refused():
    m = _model("alibi")
    x = torch.zeros((1, 32), dtype=torch.long)
    with torch.no_grad():
        _, _, inters = m(x, return_intermediates=True)
    for blk, inter in zip(m.blocks, inters):
        with pytest.raises(ValueError, match="bias-free"):
            head_rows(blk.attn, inter, 8, np.array([20]), None)


def _pooled_row(far_untransported, far_pred=(1.0, 0.9, 1.1)):
    iv = lambda e, lo, hi: {"estimate": e, "ci": [lo, hi]}  # noqa: E731
    return {"L": 4096, "multiple": 64, "head": "all", "layer": "all", "n_rows": 64, "sum_far": 1.0, "sum_pred": 1.0,
            "far_over_pred": iv(*far_pred), "coherent_share_of_pred": iv(0.5, 0.4, 0.6),
            "background_share": iv(0.2, 0.1, 0.3), "suppression": iv(0.5, 0.4, 0.6),
            "far_over_untransported": iv(*far_untransported), "far_over_near": iv(0.3, 0.2, 0.4)}


def _res(qkv_untransported):
    runs = []
    for v, row in (("learned-qk", _pooled_row((1.0, 0.9, 1.1))), ("learned-qkv", _pooled_row(qkv_untransported))):
        runs.append({"variant": v, "seed": 0, "digest": "a", "committed_digest": "b", "digest_matches": False,
                     "n_windows": 8, "n_queries": 8, "D": 32, "chi_abs": [None] * 4, "rows": [row]})
    return {"params": {"multiples": [64], "n_boot": 100}, "runs": runs, "seconds": 1.0}


def test_the_answer_follows_the_intervals():
    from simulations.transformer.evaluate.value_probe_report import answer, value_probe_section

    cells = {"learned-qk > learned-qkv": [{"tokens": 4096, "delta": 0.2, "ci_low": 0.1, "ci_high": 0.3,
                                           "verdict": "agrees", "paper_delta": 0.0, "magnitude": "x"}]}
    yes = answer(_res((0.3, 0.2, 0.4)), cells)
    assert "below it: transport does cancel" in yes and "C5 operates and points the row's way" in yes
    no = answer(_res((1.3, 1.2, 1.4)), cells)
    assert "no cancellation is seen" in no and "C5 predicts no Q/K/V advantage" in no  # the mutant flips the words
    cells["learned-qk > learned-qkv"][0]["verdict"] = "contradicts"
    assert "not decided the paper's way" in answer(_res((0.3, 0.2, 0.4)), cells)
    text = "\n".join(value_probe_section(_res((0.3, 0.2, 0.4)), cells))
    assert "**differs**" in text and "| learned-qkv | 0 | 64× (4,096) |" in text
