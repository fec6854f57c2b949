"""``compare`` without checkpoints: the committed evaluation caches rebuild the comparison (no retraining), a
cache that does not match the run (or caches from other model settings) is not used, and the cpu preset's
default seeds per variant."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.c6.compare import CPU_SEEDS, compare, seeds_of  # noqa: E402

torch.set_num_threads(1)


def test_default_seeds_per_variant():
    assert seeds_of("learned-qk", "cpu", None, None) == [0, 1, 2, 3, 4] == list(CPU_SEEDS["learned-qkv"])
    assert seeds_of("alibi", "cpu", None, None) == [0, 1, 2] == seeds_of("nope", "cpu", None, None)
    assert seeds_of("path", "cpu", None, None) == [0, 1, 2] and seeds_of("fox", "cpu", None, None) == [0]
    assert seeds_of("rope", "smoke", None, None) == [0, 1, 2] and seeds_of("alibi", "smoke", None, None) == [0]
    assert seeds_of("learned-qk", "cpu", [0, 1], None) == [0, 1] and seeds_of("nope", "cpu", None, [4]) == [4]


def test_compare_from_eval_caches_without_checkpoints(text_dir, tmp_path, capsys):
    kw = dict(steps=3, data=str(text_dir), progress=False, device="cpu", seeds=[0, 1], extra_seeds=[0])
    out = tmp_path / "res"
    first = compare("smoke", ["rope", "random-qk", "alibi"], results_dir=out, figure=tmp_path / "a.png", **kw)
    for ck in (out / "checkpoints" / "smoke").glob("*.pt"):
        ck.unlink()
    again = compare("smoke", ["rope", "random-qk", "alibi"], results_dir=out, figure=tmp_path / "b.png", **kw)
    assert not list((out / "checkpoints" / "smoke").glob("*.pt"))  # nothing retrained
    same = [json.dumps(x[k], sort_keys=True) for x in (first, again) for k in ("rows", "verdicts")]  # NaN-safe
    assert same[:2] == same[2:]
    assert [r["n_params"] for r in again["per_seed"]] == [r["n_params"] for r in first["per_seed"]]
    assert all(t["source"].startswith("committed eval cache") for t in again["params"]["timings"].values())
    # a cache whose key does not match the run (other steps) is not used: that job trains again
    cache = out / "eval" / "smoke" / "rope.json"
    saved = json.loads(cache.read_text())
    saved["key"]["step"] = 999
    cache.write_text(json.dumps(saved))
    third = compare("smoke", ["rope"], results_dir=out, figure=tmp_path / "c.png", **{**kw, "seeds": [0]})
    assert "source" not in third["params"]["timings"]["rope/s0"] and (out / "checkpoints" / "smoke" / "rope.pt").exists()
    assert "does not match this run" in capsys.readouterr().out
    # the last comparison there ran other model settings: no cache is trusted without its checkpoint
    (out / "checkpoints" / "smoke" / "rope.pt").unlink()
    res = json.loads((out / "smoke_compare.json").read_text())
    res["params"]["model"]["n_layer"] += 1
    (out / "smoke_compare.json").write_text(json.dumps(res))
    compare("smoke", ["random-qk"], results_dir=out, figure=tmp_path / "d.png", **{**kw, "seeds": [0]})
    assert (out / "checkpoints" / "smoke" / "random-qk.pt").exists() and "not reused" in capsys.readouterr().out


def test_compare_keeps_caches_of_variants_the_table_multiplier_does_not_reach(tmp_path):
    """A change of ``angle_lr_mult`` alone keeps rope's evaluation caches and retrains the learned variants."""
    from simulations.transformer.c6.compare import _same_preset
    from simulations.transformer.model.config import GPTConfig

    model = {"n_layer": 1, "n_embd": 32, "n_head": 2, "block_size": 16, "angle_lr_mult": 3.0}
    train = {"steps": 20}
    prev = tmp_path / "cpu-long_compare.json"
    prev.write_text(json.dumps({"params": {"model": model, "train": train}}))
    mcfg = GPTConfig(n_layer=1, n_embd=32, n_head=2, block_size=16, vocab_size=256)
    now = {**model, "angle_lr_mult": 1.0}
    assert _same_preset(prev, now, train, "rope", mcfg) and _same_preset(prev, now, train, "nope", mcfg)
    assert not _same_preset(prev, now, train, "learned-qk", mcfg)
    assert not _same_preset(prev, now, train)  # asked for no variant: the whole model must match
    assert not _same_preset(prev, {**now, "n_embd": 64}, train, "rope", mcfg)
    assert not _same_preset(prev, model, {"steps": 40}, "rope", mcfg)
    assert not _same_preset(tmp_path / "missing.json", model, train, "rope", mcfg)
