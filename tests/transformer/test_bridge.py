"""Probe (λ, ρ_D, χ_b of real attention weights) and the stylized horizon prediction."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import bridge  # noqa: E402
from simulations.transformer.model import GPT, CausalSelfAttention, GPTConfig  # noqa: E402
from simulations.transformer.probe import (  # noqa: E402
    attention_weights,
    forward_with_probe,
    head_stats,
    output_from_weights,
    probe_checkpoint,
    probe_model,
    query_positions,
    rotated_qkv,
)
from stylized.families import SO2Uniform  # noqa: E402
from stylized.farmass import GrowthModel, haar_mgf, horizon_trial  # noqa: E402

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


@pytest.mark.parametrize("variant", ["rope", "alibi", "random-qkv", "learned-qk", "learned-qkv-alibi", "path"])
def test_recomputed_weights_reproduce_module_output(variant: str) -> None:
    attn = CausalSelfAttention(tiny(variant)).eval()
    sharpen(attn)
    B, L = 2, 11  # L not a multiple of path_chunk=4: crosses PaTH chunks
    x = torch.randn(B, L, 8, generator=torch.Generator().manual_seed(1))
    idx = torch.randint(0, 11, (B, L), generator=torch.Generator().manual_seed(2))
    psi = psi_v = None
    if attn.angle_source is not None:  # fixed angle draw for the random variants
        psi, psi_v = attn.angles(idx, B, L, x.device, torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = attn(x, idx, psi=psi, psi_v=psi_v)
        alpha, v = attention_weights(attn, x, psi, psi_v)
        got = output_from_weights(attn, alpha, v, psi_v)
    torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-4)
    assert torch.allclose(alpha.sum(-1), torch.ones(()), atol=1e-5)
    assert (alpha.triu(1) == 0).all()  # causal
    # the weights are not trivial: uniform causal weights would give another output
    uniform = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1).view(-1, 1)
    with torch.no_grad():
        other = output_from_weights(attn, uniform.expand_as(alpha), v, psi_v)
    assert (other - ref).abs().max() > 1e-3


@pytest.mark.parametrize("variant", ["random-qkv", "learned-qkv", "alibi"])
def test_forward_with_probe_is_the_model_forward(variant: str) -> None:
    model = GPT(tiny(variant)).eval()
    sharpen(model, 0.3)
    idx = torch.randint(0, 11, (2, 13), generator=torch.Generator().manual_seed(4))
    seen = []
    with torch.no_grad():
        ref, _ = model(idx, generator=torch.Generator().manual_seed(5))
    got = forward_with_probe(model, idx, torch.Generator().manual_seed(5), lambda *a: seen.append(a[0]))
    assert torch.equal(got, ref)
    assert seen == [0, 1]


@pytest.mark.parametrize("variant", ["rope", "alibi", "random-qk", "path"])
def test_head_stats_far_mass_and_lambda_match_full_weights(variant: str) -> None:
    attn = CausalSelfAttention(tiny(variant)).eval()
    sharpen(attn)
    B, L, D = 2, 23, 5
    x = torch.randn(B, L, 8, generator=torch.Generator().manual_seed(6))
    idx = torch.randint(0, 11, (B, L))
    psi = psi_v = None
    if attn.angle_source is not None:
        psi, psi_v = attn.angles(idx, B, L, x.device, torch.Generator().manual_seed(7))
    queries = query_positions(L, D, 6)
    with torch.no_grad():
        st = head_stats(attn, x, psi, psi_v, D, queries, chunk=7)
        alpha, _ = attention_weights(attn, x, psi, psi_v)
    for n, i in enumerate(queries):
        far = alpha[:, :, i, : i - D + 1].sum(-1).double().numpy()
        np.testing.assert_allclose(st["rho"][:, :, n], far, atol=1e-5)
    assert np.all((st["rho"] >= 0) & (st["rho"] <= 1))
    if variant != "alibi":  # ρ_D ≥ M/(M + K e^{2λ}) on every query of a bias-free head
        assert np.all(st["rho"] >= st["bound"] * (1 - 1e-6))
    # λ = largest |logit| over all causal pairs (bias excluded), against explicit rotated scores
    if variant in ("rope", "random-qk"):
        with torch.no_grad():
            q, k, _ = rotated_qkv(attn, x, psi, psi_v)
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


def test_prediction_matches_direct_stylized_monte_carlo() -> None:
    """``L_{1/2} = D + E[Z_N]/μ`` against farmass.horizon_trial (literal near routes, streamed Haar far scores).

    Wald's identity for the first passage N of Σ e^{λξ} over Z: Z ≤ μ E[N | Z] ≤ Z + e^{λ} (overshoot ≤ max
    term), so E[L*] − D lies in [E Z/μ, (E Z + e^λ)/μ].  Tolerances: 4 standard errors of the trial means
    (seeded), added to that band.
    """
    d, D, lam = 8, 16, 3.0
    fam = SO2Uniform(d=d, omega=(1.0, 0.6, 0.3, 0.1))
    rng = np.random.default_rng(11)
    trials = [horizon_trial(GrowthModel(fam, lam, D, near="all"), rng, backend="numpy", chunk=2048)
              for _ in range(300)]
    Z, Ls = np.array([t[0] for t in trials]), np.array([t[1] for t in trials])
    mu = haar_mgf(lam, d)
    pred = bridge.predict_horizon(lam, d, D, fam, trials=2000, seed=3)
    # near part: E[Z_N] by the two independent Monte Carlos
    ez_pred = math.exp(pred["log_Z"])
    se = math.hypot(Z.std(ddof=1) / math.sqrt(Z.size), ez_pred * pred["log_Z_rel_se"])
    assert abs(ez_pred - Z.mean()) <= 4 * se
    # whole horizon
    se_L = Ls.std(ddof=1) / math.sqrt(Ls.size) + se / mu
    lo, hi = D + ez_pred / mu - 4 * se_L, D + (ez_pred + math.exp(lam)) / mu + 4 * se_L
    assert lo <= Ls.mean() <= hi
    assert pred["L_half"] == pytest.approx(D + ez_pred / mu)
    # the rotation matters: near keys that never decorrelate (D e^λ) are rejected by the same test
    naive = D + D * math.exp(lam) / mu
    assert not (lo <= naive <= hi + math.exp(lam) / mu)


def test_alibi_crossing_closed_form() -> None:
    lam, d, D = 2.0, 16, 8
    mu = haar_mgf(lam, d)
    for m in (0.5, 0.01, 1e-3):
        p = bridge.predict_horizon(lam, d, D, None, slope=m, trials=1)
        limit = mu * math.exp(-m * D) / -math.expm1(-m)  # Σ_{n≥D} μ e^{−mn}
        if limit < math.exp(p["log_Z"]):
            assert math.isinf(p["L_half"])
        else:
            L = p["L_half"]
            S = mu * sum(math.exp(-m * n) for n in range(D, int(math.floor(L))))
            S2 = S + mu * math.exp(-m * math.floor(L))
            assert S <= math.exp(p["log_Z"]) <= S2  # the discrete crossing lies at ⌈L⌉
            assert bridge.predicted_rho(L, p["log_Z"], mu, D, m) == pytest.approx(0.5, abs=1e-9)
    assert math.isinf(bridge.predict_horizon(lam, d, D, None, slope=0.5)["L_half"])
    with pytest.raises(ValueError, match="lam"):
        bridge.predict_horizon(float("nan"), d, D)


def test_crossings_and_log_rows() -> None:
    assert bridge.crossing([1, 2, 4], [1.0, 1.2, 1.8], 1.5) == pytest.approx(2 * 2 ** 0.5)
    assert math.isinf(bridge.crossing([1, 2, 4], [1.0, 1.2, 1.4], 1.5))
    assert bridge.crossing([1, 2], [2.0, 3.0], 1.5) == 1
    rows = bridge.rows_from_log("x\r[compare] rope: ppl@1x=3.606 ratios=1x:1.00 2x:1.38 4x:3.34 (train 1s)\n")
    hz = bridge.ppl_horizons(rows)
    assert [r["multiple"] for r in rows] == [1, 2, 4]
    assert 2 < hz["rope"]["multiple"] < 4


def test_cli_probe_and_predict_end_to_end(tmp_path, capsys) -> None:
    path = save_tiny_checkpoint(tmp_path, "learned-qk")
    save_tiny_checkpoint(tmp_path, "alibi")
    assert bridge.main(["probe", str(path), "--lengths", "1,2", "--windows", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["variant"] == "learned-qk" and len(out["layers"]) == 1
    (tmp_path / "smoke_compare.json").write_text(json.dumps({"rows": [
        {"variant": "alibi", "multiple": m, "estimate": r, "ppl": 5.0} for m, r in ((1, 1.0), (2, 1.1), (4, 1.2))]}))
    fig = tmp_path / "b.png"
    rc = bridge.main(["predict", "--preset", "smoke", "--lengths", "1,2,4", "--windows", "1", "--trials", "16",
                      "--results-dir", str(tmp_path), "--figure", str(fig)])
    assert rc == 0 and fig.stat().st_size > 10_000
    res = json.loads((tmp_path / "bridge_smoke.json").read_text())
    assert {r["variant"] for r in res["rows"]} == {"alibi", "learned-qk"}
    alibi = next(r for r in res["rows"] if r["variant"] == "alibi")
    assert alibi["measured_ppl_multiple"] == "inf" and isinstance(res["summary"], str)
    assert (tmp_path / "bridge_smoke.csv").read_text().count("\n") == 3
    with pytest.raises(SystemExit) as e:
        bridge.main(["probe", str(tmp_path / "missing.pt")])
    assert e.value.code == 2


def test_combined_goal() -> None:
    def rows(v, ppl, r64):
        return [{"variant": v, "multiple": 1, "estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0, "ppl": ppl},
                {"variant": v, "multiple": 64, "estimate": r64, "ci_low": r64, "ci_high": r64, "ppl": ppl * r64}]

    ref = rows("rope", 4.3, 4.9) + rows("random-qkv", 6.0, 1.3) + rows("alibi", 5.0, 0.96)
    g = bridge.combined_goal(rows("random-qkv-alibi", 4.2, 1.01) + rows("learned-qkv-alibi", 4.5, 0.99), ref)
    assert g["best_rotation_only"] == "rope" and g["met"] is True
    assert g["variants"]["random-qkv-alibi"]["ratio_ok"] and g["variants"]["random-qkv-alibi"]["ppl_ok"]
    assert not g["variants"]["learned-qkv-alibi"]["ppl_ok"]
    assert bridge.combined_goal(rows("random-qkv-alibi", 4.2, 1.2), ref)["met"] is False


def test_combined_trains_missing_skips_existing_and_predict_skips_fox(tmp_path, monkeypatch) -> None:
    from simulations.transformer import data

    text = tmp_path / "corpus"
    text.mkdir()
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "def", "return", "(x)", "\n", "=", "1"]
    for i in range(8):
        (text / f"f{i}.txt").write_text(" ".join(rng.choice(words, 400)))
    corpus = data.load_path(text)
    monkeypatch.setattr(data, "load_corpus", lambda *a, **k: corpus)
    out = tmp_path / "res"
    variants = ("fox", "learned-qkv-fox")
    assert set(variants) <= set(bridge.COMBINED)
    res = bridge.combined("smoke", results_dir=out, variants=variants, steps=3, progress=False)
    assert set(res["goal"]["variants"]) == set(variants)
    assert {r["variant"] for r in res["rows"]} == set(variants)
    assert (out / "smoke_combined.json").exists() and (out / "smoke_combined.csv").exists()
    ck = out / "checkpoints" / "smoke" / "fox.pt"
    stamp = ck.stat().st_mtime_ns
    again = bridge.combined("smoke", results_dir=out, variants=variants, steps=3, progress=False)
    assert ck.stat().st_mtime_ns == stamp  # a complete checkpoint is not retrained
    assert [r["ppl"] for r in again["rows"]] == [r["ppl"] for r in res["rows"]]
    # the probe does not model the forget gate: predict leaves FoX checkpoints out
    with pytest.raises(ValueError, match="no checkpoints"):
        bridge.predict("smoke", results_dir=out, multiples=[1, 2], n_windows=1, trials=4)
