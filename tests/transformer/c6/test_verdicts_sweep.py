"""C6 verdicts (Welch on per-seed means; the pooled bootstrap kept for summaries) and the table-lr sweep."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.c6.lr_sweep import choose, table_activity, validation_loss  # noqa: E402
from simulations.transformer.c6.verdicts import paper_verdicts, pooled_log_ratio  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT  # noqa: E402


def _diffs(mean: float, seeds: int = 3, windows: int = 32, sd: float = 0.05, seed: int = 0) -> np.ndarray:
    return mean + sd * np.random.default_rng(seed).standard_normal((seeds, windows))


def test_verdicts_agree_contradict_and_undecided():
    d = {"rope": _diffs(1.5, seed=1), "random-qk": _diffs(0.5, seed=2), "random-qkv": _diffs(0.5, seed=3),
         "learned-qk": _diffs(2.0, seed=4), "alibi": _diffs(0.0, seed=5)}
    rows = {r["row"].split(" (")[0]: r for r in paper_verdicts(d, 128)["rows"]}
    assert rows["rope > random-qk"]["verdict"] == "agrees"
    assert rows["rope > learned-qk"]["verdict"] == "contradicts"
    assert rows["random-qk > random-qkv"]["verdict"] == "undecided"  # no difference resolved
    assert rows["rope > learned-qkv"]["verdict"] == "not run"
    assert rows["alibi flat"]["verdict"] == "agrees"
    assert paper_verdicts(d, 128)["holds"] is False  # one row contradicts


def test_alibi_growing_contradicts_flat():
    rows = paper_verdicts({"alibi": _diffs(np.log(2.0))}, 128)["rows"]
    assert rows[-1]["verdict"] == "contradicts"


def test_pooled_bootstrap_centres_on_the_seed_window_mean():
    d = _diffs(0.3, seeds=4, sd=0.2)
    rng = np.random.default_rng(0)
    draws = pooled_log_ratio(d, rng.integers(0, 32, (2000, 32)), rng)
    assert abs(draws.mean() - d.mean()) < 0.01 and 0.01 < draws.std() < 0.1


def test_rule_picks_smallest_active_within_best_interval():
    rows = [{"variant": "learned-qk", "mult": m, "val_loss": v, "val_ci_high": v + 0.01, "active": a}
            for m, v, a in ((1, 1.640, False), (3, 1.645, True), (10, 1.680, True), (30, 1.730, True))]
    assert choose(rows) == 3
    rows[1]["val_loss"] = 1.66  # outside the best's interval: the next active one is worse too
    assert choose(rows) is None


def test_table_activity_at_init_and_after_a_move():
    cfg = GPTConfig(variant="learned-qk", vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)
    m = GPT(cfg)
    probs = np.full(11, 1 / 11)
    a = table_activity(m, probs, 8)
    assert a == {"move_mean_rad": 0.0, "move_max_rad": 0.0, "planes_mixing": 0, "planes": 2 * 2 * 2}
    with torch.no_grad():
        m.blocks[0].attn.angle_table.normal_(std=0.8)  # θ spread over the circle: planes mix at once
    a = table_activity(m, probs, 8)
    assert a["move_mean_rad"] > 0.5 and a["planes_mixing"] >= 2, a


def test_validation_loss_interval_contains_its_mean():
    cfg = GPTConfig(variant="rope", vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    loss, lo, hi = validation_loss(GPT(cfg), np.random.default_rng(0).integers(0, 11, 2000))
    assert lo < loss < hi and abs(loss - np.log(11)) < 0.2


def test_sweep_checkpoints_and_results_are_per_preset(tmp_path):
    from simulations.transformer.c6.lr_sweep import sweep_checkpoint, sweep_result_path
    from simulations.transformer.model.presets import CPU_ANGLE_LR_MULT
    from simulations.transformer.paths import checkpoint_path

    # the cpu preset's own multiplier is the comparison's run; every other (preset, multiplier) has its own file
    assert sweep_checkpoint("learned-qk", CPU_ANGLE_LR_MULT, 0, tmp_path) == checkpoint_path("cpu", "learned-qk", 0, tmp_path)
    long3 = sweep_checkpoint("learned-qk", CPU_ANGLE_LR_MULT, 0, tmp_path, "cpu-long")
    assert long3.parent.name == "cpu-long-lr-sweep" and long3.name == "learned-qk-x3-s0.pt"
    assert sweep_result_path("cpu", tmp_path).name == "cpu_lr_sweep.json"
    assert sweep_result_path("cpu-long", tmp_path).name == "cpu-long_lr_sweep.json"


def test_lr_sweep_refuses_a_sweep_without_learned_qk():
    from stylized.cli.app import main

    for argv in (["--variants", "learned-qkv"], ["--preset", "gpu"]):
        with pytest.raises(SystemExit) as e:
            main(["transformer", "lr-sweep", *argv])
        assert e.value.code == 2


def test_plot_sweep_draws_one_panel_per_swept_variant(tmp_path):
    """A sweep of learned-qk alone (what the rule reads, the cpu-long sweep) draws one panel."""
    import json
    from pathlib import Path

    from simulations.transformer.c6.lr_sweep import plot_sweep

    committed = json.loads((Path(__file__).resolve().parents[3] / "simulations" / "results" / "transformer"
                            / "cpu_lr_sweep.json").read_text())
    one = {**committed, "rows": [r for r in committed["rows"] if r["variant"] == "learned-qk"], "preset": "cpu-long",
           "L_train": 256}
    (tmp_path / "s.json").write_text(json.dumps(one))
    png = plot_sweep(tmp_path / "s.json", tmp_path / "s.png")
    assert png.exists() and png.with_suffix(".pdf").exists()
