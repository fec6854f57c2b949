"""The bridge: predictor conventions, inputs only at L ≤ L_train, the PPL law's verdict, the controls' goal, end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import cli  # noqa: E402
from simulations.transformer.bridge import combined as bridge_combined  # noqa: E402
from simulations.transformer.bridge import ppl as bridge_ppl  # noqa: E402
from simulations.transformer.bridge import predict as bridge_predict  # noqa: E402
from simulations.transformer.bridge import report as bridge_report  # noqa: E402
from simulations.transformer.bridge import run as bridge_run  # noqa: E402
from simulations.transformer.evaluate.probe import full_scores, token_frequencies  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT  # noqa: E402

torch.set_num_threads(1)


def tiny(variant: str, **kw) -> GPTConfig:
    base = dict(vocab_size=11, block_size=16, n_layer=1, n_head=2, n_embd=8, dropout=0.0, variant=variant,
                path_chunk=4, rope_base=3.0)
    base.update(kw)
    return GPTConfig(**base)


def sharp_model(variant: str, std: float = 0.5) -> GPT:
    torch.manual_seed(0)
    m = GPT(tiny(variant)).eval()
    for p in m.parameters():
        torch.nn.init.normal_(p, std=std)
    return m


@pytest.mark.parametrize("variant", ["rope", "learned-qk", "random-qk"])
def test_relative_angle_convention_reconstructs_scores(variant: str) -> None:
    """s_ij = Σ_b Re(conj(z_q,i) z_k,j e^{iΔ_b}) / √d with Δ = ψ_j − ψ_i, and χ is the law of Δ's step."""
    m = sharp_model(variant)
    tokens = np.random.default_rng(0).integers(0, 11, 16)
    x = torch.from_numpy(tokens[None].astype(np.int64))
    with torch.no_grad():
        _, _, (inter,) = m(x, generator=torch.Generator().manual_seed(1), return_intermediates=True)
    attn = m.blocks[0].attn
    seen = dict(q0=inter.q0[0].numpy(), k0=inter.k0[0].numpy(), s=full_scores(attn, inter)[0].numpy(),
                psi=inter.psi.double().numpy(), attn=attn)
    B = 2
    zq = seen["q0"][..., :B] + 1j * seen["q0"][..., B:]
    zk = seen["k0"][..., :B] + 1j * seen["k0"][..., B:]
    psi = np.broadcast_to(seen["psi"][0], (2, 16, B))
    for h in range(2):
        for i, j in ((9, 2), (15, 0), (5, 5)):
            rec = (np.conj(zq[h, i]) * zk[h, j] * np.exp(1j * (psi[h, j] - psi[h, i]))).real.sum() / math.sqrt(4)
            assert rec == pytest.approx(seen["s"][h, i, j], abs=1e-5)
    chi = bridge_predict.relative_step_chi(seen["attn"], token_frequencies(tokens, 11))
    if variant == "rope":
        np.testing.assert_allclose(chi, np.exp(-1j * seen["attn"].omega.numpy())[None].repeat(2, 0), atol=1e-12)
    elif variant == "learned-qk":  # the per-step Δ_{t,t−1} = ψ_{t−1} − ψ_t averaged over the same tokens
        step = np.exp(1j * (psi[:, :-1] - psi[:, 1:]))
        direct = step.mean(axis=1)
        freq = token_frequencies(tokens[1:], 11)  # the steps' tokens are x_1..x_15
        chi_steps = bridge_predict.relative_step_chi(seen["attn"], freq)
        np.testing.assert_allclose(chi_steps, direct, atol=1e-9)
    else:
        np.testing.assert_allclose(chi.real, np.sinc(seen["attn"].omega.numpy() / np.pi)[None].repeat(2, 0), atol=1e-12)


@pytest.mark.parametrize("variant", ["alibi", "fox", "ssmax", "path", "learned-qkv"])
def test_in_sample_prediction_for_every_mechanism(variant: str) -> None:
    """At L = L_train the forecast reads the same windows as the measurement: they must agree."""
    m = sharp_model(variant, std=0.3)
    tokens = np.random.default_rng(3).integers(0, 11, 12_000)
    ends = np.arange(16, 12_000, 160)[:48]
    st = bridge_predict.train_length_stats(m, tokens, ends, D=4, keys_per_query=16)
    pred = bridge_predict.predict_rho(st, [16, 128], n_boot=100)[0]
    meas = bridge_predict.measure_rho(m, tokens, ends, 16, 4, n_last=1)["layers"][0]["rho"].mean(axis=(0, 2))
    np.testing.assert_allclose(pred["rho"][0], meas, atol=0.06)
    assert np.all((pred["rho"] >= 0) & (pred["rho"] <= 1))


def test_learned_tables_take_the_training_streams_markov_chain() -> None:
    """With a training stream, a learned layer carries its bigram chain and the forecast uses m_b(n) from the twisted
    transfer operator: for i.i.d. training tokens that is χ_bⁿ (the unigram law); for a sticky chain it is not, and
    the long-length forecast moves; other variants carry no chain."""
    m = sharp_model("learned-qk", std=0.3)
    rng = np.random.default_rng(4)
    held = rng.integers(0, 11, 12_000)
    ends = np.arange(16, 12_000, 160)[:48]
    iid = rng.integers(0, 11, 200_000)
    st = bridge_predict.train_length_stats(m, held, ends, D=4, keys_per_query=8, train_tokens=iid)
    lay = st["layers"][0]
    assert lay["markov"]["table"].shape == (11, 4) and lay["markov"]["transition"].shape == (11, 11)
    route = bridge_predict.markov_route(lay["markov"], 64, lay["chi"].shape)
    chi = bridge_predict.relative_step_chi(m.blocks[0].attn, np.bincount(iid, minlength=11) / iid.size)
    np.testing.assert_allclose(route[5], chi ** 5, atol=0.01)  # i.i.d. up to the bigram counts' noise
    assert np.allclose(route[0], 1.0)
    sticky = np.repeat(rng.integers(0, 11, 20_000), 10)  # runs of 10: strongly Markov
    st2 = bridge_predict.train_length_stats(m, held, ends, D=4, keys_per_query=8, train_tokens=sticky)
    r2 = bridge_predict.markov_route(st2["layers"][0]["markov"], 64, lay["chi"].shape)
    assert np.max(np.abs(r2[5] - chi ** 5)) > 0.05
    a = bridge_predict.predict_rho(st, [32, 64], n_boot=20)[0]["rho"]
    b = bridge_predict.predict_rho(st2, [32, 64], n_boot=20)[0]["rho"]
    assert np.max(np.abs(a - b)) > 5e-4  # the forecast reads the chain (a small model: far mass moves little)
    st["layers"][0]["markov"] = None  # without the chain: the unigram χⁿ of the held-out windows
    c = bridge_predict.predict_rho(st, [32, 64], n_boot=20)[0]["rho"]
    assert np.max(np.abs(a - c)) > 0
    rope = bridge_predict.train_length_stats(sharp_model("rope"), held, ends, D=4, train_tokens=iid)
    assert rope["layers"][0]["markov"] is None


def test_prediction_matches_measurement_at_train_length_and_sees_only_train_length() -> None:
    m = sharp_model("rope", std=0.3)
    tokens = np.random.default_rng(2).integers(0, 11, 20_000)
    ends = np.arange(16, 20_000, 160)[:64]
    st = bridge_predict.train_length_stats(m, tokens, ends, D=4, keys_per_query=8)
    assert st["input_len"] == 16 == st["L_train"]
    pred = bridge_predict.predict_rho(st, [16, 64, 256], n_boot=200)[0]
    meas = bridge_predict.measure_rho(m, tokens, ends, 16, 4, n_last=1)["layers"][0]["rho"].mean(axis=(0, 2))
    np.testing.assert_allclose(pred["rho"][0], meas, atol=0.05)  # in sample: same windows, same query
    assert np.all(pred["lo"] <= pred["rho"] + 1e-12) and np.all(pred["rho"] <= pred["hi"] + 1e-12)
    assert np.all(np.diff(pred["rho"], axis=0) > 0)  # more far keys, more far mass
    # a mutant step law (no rotation at all) changes the long-length forecast
    st["layers"][0]["chi"] = np.ones_like(st["layers"][0]["chi"])
    assert not np.allclose(bridge_predict.predict_rho(st, [256], n_boot=10)[0]["rho"], pred["rho"][-1:], atol=1e-3)
    st["input_len"] = 32  # an input measured beyond L_train is refused
    with pytest.raises(AssertionError, match="beyond L_train"):
        bridge_predict.predict_rho(st, [64])
    with pytest.raises(ValueError, match="D="):
        bridge_predict.train_length_stats(m, tokens, ends, D=16)


def _samples(betas: dict[str, tuple[float, float]], seeds=(0, 1)) -> list[dict]:
    rng = np.random.default_rng(0)
    ms = [1, 2, 4, 8, 16, 32, 64]
    out = []
    for v, beta in betas.items():
        for s in seeds:
            x = np.array([[0.0, 0.0]] + [[rng.uniform(0, 0.5), rng.uniform(0, 1.5)] for _ in ms[1:]])
            x = np.cumsum(x, axis=0)
            out.append({"variant": v, "seed": s, "multiples": ms, "x": x, "log_ratio": x @ np.array(beta)})
    return out


def test_ppl_law_leave_one_variant_out_and_its_verdict_can_fail() -> None:
    good = _samples({v: (0.4, 0.3) for v in ("a", "b", "c", "d")})
    lovo = bridge_ppl.leave_one_variant_out(good)
    np.testing.assert_allclose(lovo["beta_all"], [0.4, 0.3], atol=1e-9)
    v = bridge_ppl.verdict(lovo)
    assert v["holds"] is True and v["n_ok"] == 4
    bad = _samples({"a": (0.4, 0.3), "b": (0.4, 0.3), "c": (0.4, 0.3), "d": (2.0, 0.0)})  # one variant off the law
    vb = bridge_ppl.verdict(bridge_ppl.leave_one_variant_out(bad))
    assert vb["holds"] is False and not vb["variants"]["d"]["ok"]
    with pytest.raises(ValueError, match="tolerance"):
        bridge_ppl.verdict(lovo, tolerance=1.5)
    with pytest.raises(ValueError, match="≥ 3 variants"):
        bridge_ppl.leave_one_variant_out(good[:2])
    assert bridge_ppl.crossing([1, 2, 4], [1.0, 1.2, 1.8], 1.5) == pytest.approx(2 * 2 ** 0.5)
    assert math.isinf(bridge_ppl.crossing([1, 2, 4], [1.0, 1.2, 1.4], 1.5))


def _losses(base: float, ratio_log: float, n_seeds: int = 3, n_windows: int = 32, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for s in range(n_seeds):
        one = base + 0.05 * rng.standard_normal(n_windows)
        top = one + ratio_log + 0.01 * rng.standard_normal(n_windows)
        out[s] = {1: {"all": one, "target": one}, 128: {"all": top, "target": top}}
    return out


def test_combined_goal_paired_bootstrap_and_mutants() -> None:
    ref = {"rope": _losses(1.60, 1.2, seed=1), "learned-qkv": _losses(1.62, 0.9, seed=2)}
    ok = bridge_combined.combined_table({**ref, "learned-qkv-ssmax": _losses(1.60, 0.0, seed=3)})
    assert ok["goal"]["best_rotation_only"] == "rope" and ok["goal"]["met"] is True
    assert ok["goal"]["met_by"] == ["learned-qkv-ssmax"]
    row = ok["rows"][0]
    assert row["ratio_ci"][0] <= row["ratio"] <= row["ratio_ci"][1] and row["seeds"] == [0, 1, 2]
    far = bridge_combined.combined_table({**ref, "learned-qkv-ssmax": _losses(1.60, math.log(1.2), seed=3)})
    assert far["goal"]["met"] is False  # ratio 1.2 > 1.05
    worse = bridge_combined.combined_table({**ref, "learned-qkv-ssmax": _losses(1.80, 0.0, seed=3)})
    assert worse["goal"]["met"] is False and worse["rows"][0]["ppl_ok"] is False  # PPL(L_train) resolved worse
    with pytest.raises(ValueError, match="metric"):
        bridge_combined.combined_table(ref, metric="mean")


def test_bridge_end_to_end_on_smoke_checkpoints(tmp_path, monkeypatch) -> None:
    from simulations.transformer.data import corpus as data
    from simulations.transformer.evaluate.extrapolation import evaluate_checkpoint
    from simulations.transformer.model.presets import Preset
    from simulations.transformer.paths import checkpoint_path
    from simulations.transformer.train.loop import train

    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "def", "return", "(x)", "\n", "=", "1"]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(8):
        (folder / f"f{i}.txt").write_text(" ".join(rng.choice(words, 600)))
    corpus = data.load_path(folder)
    monkeypatch.setattr(data, "load_corpus", lambda *a, **k: corpus)
    out = tmp_path / "res"
    for v in ("nope", "rope", "alibi", "ssmax", "learned-qk"):
        path = checkpoint_path("smoke", v, 0, out)
        train(Preset.from_name("smoke", variant=v, steps=3), ckpt=path, corpus=corpus, progress=False, device="cpu")
        evaluate_checkpoint(path, Preset.from_name("smoke", variant=v).eval, corpus, 0, "cpu")
    fig = tmp_path / "bridge.png"
    rc = cli.main(["bridge", "--preset", "smoke", "--results-dir", str(out), "--figure", str(fig)])
    res = json.loads((out / "bridge_smoke.json").read_text())
    assert rc == (0 if res["holds"] else 1)
    assert res["params"]["inputs_max_length"] == res["params"]["L_train"] == 16
    assert {r["variant"] for r in res["lovo"]["rows"]} == {"nope", "rope", "alibi", "ssmax", "learned-qk"}
    assert res["predictions"]["learned-qk/s0"]["key"]["token_process"] == bridge_run.TOKEN_PROCESS
    assert "token_process" not in res["predictions"]["rope/s0"]["key"]
    assert fig.exists() and fig.with_suffix(".pdf").exists()
    md = bridge_report.bridge_markdown(res)
    assert "leave" in md.lower() or "left-out" in md and "Verdict" in md
    assert "| ssmax |" in md and "| alibi |" in md
    stamp = (out / "bridge_smoke.json").stat().st_mtime_ns
    assert cli.main(["bridge", "--preset", "smoke", "--results-dir", str(out), "--figure", str(fig)]) == rc
    again = json.loads((out / "bridge_smoke.json").read_text())
    assert again["predictions"] == res["predictions"]  # cached by weights digest
    assert (out / "bridge_smoke.json").stat().st_mtime_ns >= stamp
    # a checkpoint gone: its previous prediction enters when the weights and settings are today's ...
    checkpoint_path("smoke", "rope", 0, out).unlink()
    cli.main(["bridge", "--preset", "smoke", "--results-dir", str(out), "--figure", str(fig)])
    gone = json.loads((out / "bridge_smoke.json").read_text())
    assert gone["params"]["reused_without_checkpoint"] == ["rope/s0"]
    assert gone["predictions"]["rope/s0"] == res["predictions"]["rope/s0"] and gone["lovo"] == again["lovo"]
    # ... a learned table's too, prediction and measurement under their own keys ...
    checkpoint_path("smoke", "learned-qk", 0, out).unlink()
    cli.main(["bridge", "--preset", "smoke", "--results-dir", str(out), "--figure", str(fig)])
    both = json.loads((out / "bridge_smoke.json").read_text())
    assert both["params"]["reused_without_checkpoint"] == ["rope/s0", "learned-qk/s0"]
    assert both["predictions"]["learned-qk/s0"] == res["predictions"]["learned-qk/s0"]
    # ... and a learned table's unigram-era prediction never does (its key lacks the token process)
    saved = json.loads((out / "bridge_smoke.json").read_text())
    saved["predictions"]["learned-qk/s0"]["key"].pop("token_process")
    (out / "bridge_smoke.json").write_text(json.dumps(saved))
    cli.main(["bridge", "--preset", "smoke", "--results-dir", str(out), "--figure", str(fig)])
    left = json.loads((out / "bridge_smoke.json").read_text())
    assert "learned-qk/s0" not in left["predictions"] and left["params"]["reused_without_checkpoint"] == ["rope/s0"]
    with pytest.raises(SystemExit) as e:
        cli.main(["bridge", "--preset", "smoke", "--results-dir", str(tmp_path / "empty")])
    assert e.value.code == 2


def test_bridge_modules_never_import_the_cli_and_stay_small() -> None:
    import ast
    from pathlib import Path

    folder = Path(bridge_run.__file__).parents[1]
    for f in sorted((folder / "bridge").glob("*.py")) + [folder / n for n in (
            "model/gpt.py", "model/config.py", "model/attention_bias.py", "model/path_attention.py",
            "evaluate/probe.py", "c6/compare.py")]:
        src = f.read_text()
        assert src.count("\n") <= 450, f"{f.name} has more than 450 lines"
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("cli", "simulations.transformer.cli"), f"{f.name} imports the CLI"
    probe_src = (folder / "evaluate" / "probe.py").read_text()
    assert "solve_triangular" not in probe_src  # PaTH's chunk algebra is imported, not copied
