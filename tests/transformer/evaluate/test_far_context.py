"""Far-context use: the truncated context equals the full one at L = L_train; the ratio and its interval."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import cli  # noqa: E402
from simulations.transformer.evaluate.far_context import (  # noqa: E402
    far_context_losses,
    n_targets_at,
    output_paths,
    sliding_losses,
    summarize_variant,
)
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT  # noqa: E402
from simulations.transformer.paths import results_root  # noqa: E402

torch.set_num_threads(1)
L_TRAIN = 16


def tiny(variant: str) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(variant=variant, n_layer=2, n_embd=32, n_head=2, block_size=L_TRAIN, dropout=0.0,
                         path_chunk=8)).eval()


@pytest.fixture(scope="module")
def tokens() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=3000)


def test_targets_see_at_least_l_train() -> None:
    assert n_targets_at(L_TRAIN, L_TRAIN) == 1
    assert n_targets_at(2 * L_TRAIN, L_TRAIN) == L_TRAIN  # default: C6's last L_train positions
    assert n_targets_at(2 * L_TRAIN, L_TRAIN, 256) == L_TRAIN + 1
    assert n_targets_at(64 * L_TRAIN, L_TRAIN, 256) == 256


@pytest.mark.parametrize("variant", ["rope", "nope", "alibi", "learned-qkv", "path"])
def test_truncated_equals_full_at_l_train(variant: str, tokens: np.ndarray) -> None:
    """At L = L_train the two contexts are the same tokens: the losses agree to rounding."""
    out = far_context_losses(tiny(variant), tokens, [1, 2, 4], n_windows=6, n_targets=40, device="cpu")
    np.testing.assert_allclose(out[1]["full"], out[1]["truncated"], rtol=1e-5, atol=1e-5)
    assert out[1]["n_targets"] == 1 and out[4]["n_targets"] == 40
    # beyond L_train the full context differs from the truncated one (random weights still read it)
    assert not np.allclose(out[4]["full"], out[4]["truncated"])


@torch.no_grad()
def test_sliding_pass_matches_one_long_pass(tokens: np.ndarray) -> None:
    """Each sliding window's last-position loss equals the same position in one pass over the window."""
    model = tiny("rope")
    ends = np.array([200, 900, 2500])
    w = 3 * L_TRAIN
    slide = sliding_losses(model, tokens, ends, 5, w, torch.Generator().manual_seed(0), device="cpu")
    for i, e in enumerate(ends):
        for j in range(5):
            p = e - 5 + j  # input position of target j
            x = torch.from_numpy(tokens[p - w + 1: p + 1].astype(np.int64))[None]
            logits, _ = model(x)
            ref = torch.nn.functional.cross_entropy(logits[0, -1:], torch.tensor([int(tokens[p + 1])]))
            assert slide[i, j] == pytest.approx(float(ref), rel=1e-5, abs=1e-6)


def _per_seed(delta: float, seeds=(0, 1, 2), n_windows: int = 40) -> dict:
    rng = np.random.default_rng(1)
    out = {}
    for s in seeds:
        trunc = rng.normal(2.0, 0.3, n_windows)
        out[s] = {m: {"truncated": trunc, "full": trunc + delta * (m > 1) + rng.normal(0, 0.01, n_windows),
                      "n_targets": 1 if m == 1 else 8} for m in (1, 2, 4)}
    return out


@pytest.mark.parametrize("delta,use", [(-0.1, "helps"), (0.1, "hurts"), (0.0, "ignored")])
def test_ratio_interval_and_use(delta: float, use: str) -> None:
    rows = summarize_variant("rope", _per_seed(delta), L_TRAIN, n_boot=500)
    r4 = rows[-1]
    assert r4["multiple"] == 4 and r4["seeds"] == 3 and len(r4["per_seed"]) == 3
    assert r4["ci_low"] <= r4["ratio"] <= r4["ci_high"]
    assert r4["use"] == use
    assert r4["ratio"] == pytest.approx(np.exp(delta), abs=0.01)


def test_outputs_canonical_only_for_cpu(tmp_path) -> None:
    assert output_paths("cpu", None)[3] is True
    root, stem, fig, canonical = output_paths("smoke", None)
    assert not canonical and root == results_root() / "runs" / "smoke" and fig.parent == root
    assert output_paths("cpu", tmp_path)[0] == tmp_path and not output_paths("cpu", tmp_path)[3]


@pytest.mark.parametrize("argv", [["far-context", "--workers", "0"], ["far-context", "--variants", "rope,bogus"],
                                  ["far-context", "--preset", "huge"], ["far-context", "--threads", "0"]])
def test_cli_rejects_bad_options(argv, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--results-dir", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert argv[1] in err
    assert not any(tmp_path.iterdir())


def test_cli_smoke_run(tmp_path, capsys) -> None:
    assert cli.main(["far-context", "--preset", "smoke", "--variants", "nope", "--results-dir", str(tmp_path)]) == 0
    assert (tmp_path / "far_context_smoke.json").exists() and (tmp_path / "transformer_far_context.png").exists()
    assert "far-context ratio" in capsys.readouterr().out


def test_retrieval_markdown_horizons_side_by_side(tmp_path) -> None:
    """The paper_checks section: perplexity horizon, far-context ratios, passkey accuracy, prediction."""
    import json

    from simulations.transformer.recall.retrieval_report import perplexity_horizon, retrieval_markdown

    compare = {"params": {"variants": ["rope", "alibi"], "model": {"block_size": 64}},
               "rows": [{"variant": v, "metric": "target", "multiple": m, "estimate": e}
                        for v, es in (("rope", (1.0, 1.2, 1.6)), ("alibi", (1.0, 0.95, 0.96)))
                        for m, e in zip((1, 2, 4), es)]}
    (tmp_path / "cpu_compare.json").write_text(json.dumps(compare))
    assert perplexity_horizon(compare, "rope") == "4× (256; 1.60)"
    assert perplexity_horizon(compare, "alibi").startswith("> 4×")
    far = {"params": {"variants": ["rope"], "n_targets": 256, "n_windows": 32, "L_train": 64},
           "rows": [{"variant": "rope", "multiple": 16, "ratio": 0.9, "ci_low": 0.85, "ci_high": 0.95, "use": "helps"}]}
    (tmp_path / "far_context_cpu.json").write_text(json.dumps(far))
    md = retrieval_markdown(tmp_path)
    assert md.startswith("## Retrieval vs perplexity")
    rope_row = next(line for line in md.splitlines() if line.startswith("| rope"))
    assert "4× (256; 1.60)" in rope_row and "0.900 [0.850, 0.950] helps" in rope_row and "not run" in rope_row
    assert "| alibi" in md and "e^{−slope·n}" in md
    assert "Not run" in retrieval_markdown(tmp_path / "missing")


def test_full_side_is_c6_same_target_loss(tokens: np.ndarray) -> None:
    """With T = L_train the full-context losses beyond 1x are C6's same-target per-window losses."""
    from simulations.transformer.evaluate.extrapolation import window_losses

    model = tiny("nope")
    c6 = window_losses(model, tokens, [1, 2, 4], 5, device="cpu")
    ours = far_context_losses(model, tokens, [1, 2, 4], n_windows=5, device="cpu")
    reused = far_context_losses(model, tokens, [1, 2, 4], n_windows=5, device="cpu",
                                full={m: c6[m]["target"] for m in (2, 4)})
    for m in (2, 4):
        assert ours[m]["n_targets"] == L_TRAIN
        np.testing.assert_allclose(ours[m]["full"], c6[m]["target"], rtol=1e-6)
        np.testing.assert_allclose(reused[m]["truncated"], ours[m]["truncated"], rtol=1e-6)


def test_loss_cache_round_trip_and_staleness(tmp_path) -> None:
    """One cache reader/writer for C6's and the far-context per-window losses: a stale key or a corrupt file
    reads as a miss; ``scalars`` stay scalars."""
    from simulations.transformer.evaluate.extrapolation import read_loss_cache, write_loss_cache

    path, key = tmp_path / "eval" / "cpu" / "rope_s0.json", {"step": 3, "weights": "ab"}
    losses = {2: {"all": np.array([1.5, 2.5]), "n_targets": 7}, 4: {"all": np.array([3.0]), "n_targets": 7}}
    assert read_loss_cache(path, key) is None
    path.parent.mkdir(parents=True)
    write_loss_cache(path, key, losses)
    got = read_loss_cache(path, key, scalars=("n_targets",))
    assert set(got) == {2, 4} and got[2]["n_targets"] == 7 and isinstance(got[2]["n_targets"], int)
    np.testing.assert_array_equal(got[2]["all"], losses[2]["all"])
    assert read_loss_cache(path, {**key, "weights": "cd"}) is None
    path.write_text("{not json")
    assert read_loss_cache(path, key) is None
