"""One seed evaluated past a preset's multiples (``stylized transformer long-eval``): the paired difference, the
paper's ratio at equal absolute length, an end-to-end run on the smoke preset, its section and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simulations.transformer.evaluate import long_eval as le


def _losses(base: np.ndarray, slope: float) -> dict[int, dict]:
    return {m: {"all": base + slope * np.log2(m), "target": base + 0.5 * slope * np.log2(m)} for m in (1, 2, 4)}


def test_paired_delta_is_the_difference_of_log_ratios():
    base = np.random.default_rng(0).normal(2.0, 0.3, 32)  # window difficulty: cancels within each variant
    a, b = _losses(base, 0.2), _losses(base + 0.1, 0.15)
    d = le.paired_delta(a, b, 4, "all")
    assert d["delta_log"] == pytest.approx(2 * 0.05) and d["ci_low"] == pytest.approx(0.1)
    assert d["ci_high"] == pytest.approx(0.1) and d["n_windows"] == 32
    noisy = {m: {k: v + np.random.default_rng(m).normal(0, 0.05, 32) for k, v in x.items()} for m, x in a.items()}
    n = le.paired_delta(noisy, b, 4, "target")
    assert n["ci_low"] < n["delta_log"] < n["ci_high"]
    assert le.paired_delta(a, a, 2, "all")["delta_log"] == 0.0


def test_paper_ratio_at_equal_absolute_length():
    assert le.paper_at_tokens("learned-qk", 16_384) == 1.65  # the paper's 32× of 512
    assert le.paper_at_tokens("learned-qkv", 32_768) == 2.44
    assert le.paper_at_tokens("rope", 512) == 1.0
    assert le.paper_at_tokens("rope", 256) is None and le.paper_at_tokens("rope", 700) is None
    assert le.paper_at_tokens("nope", 1024) is None
    assert [le.paper_regime(t) for t in (8192, 16_384, 24_000, 32_768)] == [
        "tied (≤ 16K)", "tied (≤ 16K)", "between", "split (≥ 32K)"]


def test_end_to_end_on_the_smoke_preset(tmp_path):
    pytest.importorskip("torch")
    logs: list[str] = []
    res = le.run_long_eval(tmp_path, "smoke", 0, ("learned-qk", "learned-qkv"), (2, 8), log=logs.append)
    assert res["multiples"] == [1, 2, 8] and res["L_train"] == 16
    assert {r["variant"] for r in res["rows"]} == {"learned-qk", "learned-qkv"}
    one = [r for r in res["rows"] if r["multiple"] == 1]
    assert all(r["ratio"] == pytest.approx(1.0) and r["ratio_all"] == pytest.approx(1.0) for r in one)
    assert {(p["metric"], p["multiple"]) for p in res["pairs"]} == {(m, k) for m in ("all", "target") for k in (2, 8)}
    assert all(not x["same_run"] and x["comparison_weights"] is None for x in res["runs"].values())
    caches = sorted(p.name for p in (tmp_path / "runs" / "smoke" / "eval" / "smoke").glob("*.json"))
    assert caches == ["learned-qk-to8x.json", "learned-qkv-to8x.json"]  # never the comparison's cache names
    again = le.run_long_eval(tmp_path, "smoke", 0, ("learned-qk", "learned-qkv"), (2, 8), train_missing=False)
    assert again["rows"] == res["rows"]  # the caches, the same numbers
    elsewhere = le.run_long_eval(tmp_path, "smoke", 0, ("learned-qk",), (4,), train_missing=False,
                                 cache_dir=tmp_path / "exploratory" / "eval")  # an exploratory run's own caches
    assert [p.name for p in (tmp_path / "exploratory" / "eval").glob("*.json")] == ["learned-qk-to4x.json"]
    assert sorted(p.name for p in (tmp_path / "runs" / "smoke" / "eval" / "smoke").glob("*.json")) == caches
    assert {r["multiple"] for r in elsewhere["rows"]} == {1, 4}
    gone = le.run_long_eval(tmp_path, "smoke", 1, ("learned-qk",), (2,), train_missing=False, log=logs.append)
    assert gone["missing"] == ["learned-qk"] and gone["rows"] == [] and any("--no-train" in x for x in logs)
    out = le.result_path(tmp_path / "transformer", "smoke", 8)
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(res))
    text = "\n".join(le.long_eval_section(tmp_path, "smoke", 8))
    assert "### smoke to 8× (128 tokens), one seed" in text and "| learned-qk | author's |" in text
    assert "| all | 8× (128 tok.) | tied (≤ 16K) |" in text
    assert le.long_eval_section(tmp_path / "nowhere") == []
    assert le.plot_long_eval(res, tmp_path / "long.png").exists()


def test_cli_refuses_without_a_comparison(tmp_path, monkeypatch, capsys):
    from simulations.transformer.cli import main

    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path / "results"))
    for argv in (["long-eval", "--no-train"], ["long-eval", "--preset", "cpu"], ["long-eval", "--multiples", "0"],
                 ["long-eval", "--variants", "rope,bogus"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and "--" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*to*x*"))
