"""The gpu preset's report: the paper at equal absolute lengths, window-level differences, the paper_checks section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulations.transformer.c6.gpu_report import gpu_rows, paper_at_tokens, window_deltas
from simulations.transformer.c6.sections import gpu_section

ROOT = Path(__file__).resolve().parents[3]


def test_paper_at_tokens_reads_the_paper_by_absolute_length():
    assert paper_at_tokens("rope", 65_536) == 38.5 and paper_at_tokens("learned-qkv", 32_768) == 2.44
    assert paper_at_tokens("rope", 512) == 1.0
    assert paper_at_tokens("rope", 256) is None and paper_at_tokens("nope", 4096) is None


def test_window_deltas_zero_for_a_variant_against_itself_and_sign_follows_a_shift():
    rng = np.random.default_rng(0)
    a = {1: rng.normal(1.0, 0.1, 20), 8: rng.normal(1.5, 0.2, 20)}
    same = window_deltas(a, a, 8)
    assert same["delta"] == 0.0 and same["ci_low"] == 0.0 == same["ci_high"]
    worse = {1: a[1], 8: a[8] + 0.3}
    d = window_deltas(worse, a, 8)
    assert d["delta"] == pytest.approx(0.3) and d["ci_low"] > 0


def _fake_run(root: Path, variants: dict[str, float], seed: int = 0) -> None:
    """A gpu run in the committed layout: summary.json and per-window author-metric caches (seed k in seed<k>/)."""
    g = root / "transformer" / "gpu" / (f"seed{seed}" if seed else "")
    (g / "eval" / "gpu").mkdir(parents=True)
    rng = np.random.default_rng(1 + seed)
    rows = []
    for v, slope in variants.items():
        losses = {m: (1.0 + slope * np.log2(m) + rng.normal(0, 0.01, 20)) for m in (1, 32, 128)}
        (g / "eval" / "gpu" / f"{v}-author-windows.json").write_text(json.dumps(
            {"key": {}, "losses": {str(m): {"all": x.tolist(), "target": x.tolist()} for m, x in losses.items()}}))
        ev = []
        for m, x in losses.items():
            ratio = float(np.exp(x.mean() - losses[1].mean()))
            ev.append({"multiple": m, "L": 256 * m, "ppl": float(np.exp(x.mean())), "ratio_all": ratio,
                       "ci_low_all": ratio * 0.95, "ci_high_all": ratio * 1.05})
        rows.append({"variant": v, "steps": 100, "eval": ev, "eval_complete": True})
    (g / "summary.json").write_text(json.dumps({"preset": "gpu", "rows": rows}))


def test_gpu_rows_and_section_on_a_fabricated_run(tmp_path):
    assert gpu_rows(tmp_path) is None and gpu_section(tmp_path) == []
    _fake_run(tmp_path, {"rope": 0.5, "learned-qk": 0.1, "learned-qkv": 0.05})
    r = gpu_rows(tmp_path)
    assert r["L_train"] == 256
    row = {x["row"]: x for x in r["rows"]}
    assert row["rope > random-qk"]["verdict"] == "not run"
    qk = row["learned-qk > learned-qkv"]
    assert qk["verdict"] == "undecided (1 seed)" and [c["tokens"] for c in qk["cells"]] == [8192, 32768]
    assert all(c["ci_low"] > 0 for c in qk["cells"])  # qk's losses grow faster: Δ > 0
    text = "\n".join(gpu_section(tmp_path))
    assert "32,768 tok." in text and "(2.85)" in text  # learned-qk's paper ratio at 32K in parentheses
    from simulations.transformer.c6.gpu_report import plot_gpu

    png = plot_gpu(tmp_path, tmp_path / "gpu.png")
    assert png.exists() and png.with_suffix(".pdf").exists()


def test_a_second_seed_gives_the_welch_verdict(tmp_path):
    _fake_run(tmp_path, {"learned-qk": 0.1, "learned-qkv": 0.05})
    _fake_run(tmp_path, {"learned-qk": 0.101, "learned-qkv": 0.05}, seed=1)
    r = gpu_rows(tmp_path)
    qk = {x["row"]: x for x in r["rows"]}["learned-qk > learned-qkv"]
    assert [c["seeds_a"] for c in qk["welch"]] == [2, 2] and qk["verdict"].startswith("agrees")
    assert len(r["seed_runs"]) == 2 and "Welch" in "\n".join(gpu_section(tmp_path))


def test_committed_gpu_run_renders():
    if gpu_rows(ROOT / "simulations" / "results") is None:
        pytest.skip("no gpu run committed")
    text = "\n".join(gpu_section(ROOT / "simulations" / "results"))
    assert "65,536 tok." in text and "level (decided)" in text


def test_seed_numbers_come_from_the_folder_names(tmp_path):
    _fake_run(tmp_path, {"learned-qk": 0.1, "learned-qkv": 0.05})
    _fake_run(tmp_path, {"learned-qk": 0.1, "learned-qkv": 0.05}, seed=3)
    assert [k for k, _ in gpu_rows(tmp_path)["seed_runs"]] == [0, 3]
    assert "learned-qk 0, 3" in "\n".join(gpu_section(tmp_path))


def test_measure_level_under_the_null_of_fabricated_seeds(tmp_path):
    from simulations.transformer.c6.gpu_report import measure_level, seed_losses

    for k in range(3):
        _fake_run(tmp_path, {"rope": 0.5 + 0.01 * k, "random-qk": 0.2, "random-qkv": 0.21 - 0.01 * k}, seed=k)
    D = seed_losses(tmp_path, "rope", 128)
    assert D.shape == (3, 20)
    res = measure_level(tmp_path, reps=400)
    assert res["multiple"] == 128 and res["laws"] == {"random-qk": 3, "random-qkv": 3, "rope": 3}
    lv = res["level"]["3x3"]
    assert lv["reps"] == 1200 and 0.0 <= lv["decided_rate"] <= 0.15  # the Welch rule near its nominal 0.05
    (tmp_path / "transformer" / "gpu" / "verdict_level.json").write_text(json.dumps(res))
    cell = {x["row"]: x for x in gpu_rows(tmp_path)["rows"]}["rope > random-qk"]["welch"][-1]
    assert cell["level"]["reps"] == 1200


def test_gpu_summary_rebuilds_the_table_from_every_run_in_the_folder(tmp_path):
    from simulations.transformer.c6.gpu_summary import main, summarize_folder

    def run(v: str, ratio: float) -> dict:
        ev = [{"multiple": m, "L": 256 * m, "ppl": 3.0, "ratio_all": ratio ** (m > 1), "ci_low_all": 0.9,
               "ci_high_all": 1.1, "ratio": 1.0, "ci_low": 0.9, "ci_high": 1.1} for m in (1, 2)]
        return {"variant": v, "step": 2500, "seconds": 100.0, "history": [[2500, 1.0]], "eval": ev}

    (tmp_path / "rope.json").write_text(json.dumps(run("rope", 2.0)))
    summarize_folder(tmp_path, "gpu", ["rope", "nope"])  # a first call: rope ran, nope failed
    (tmp_path / "learned-qk.json").write_text(json.dumps(run("learned-qk", 1.2)))  # a second call, same folder
    out = summarize_folder(tmp_path, "gpu", ["learned-qk"])
    assert [r["variant"] for r in out["rows"]] == ["rope", "learned-qk"]
    md = (tmp_path / "summary.md").read_text()
    assert "| rope | 2500 |" in md and "2.00 [0.90, 1.10]" in md and "nope" not in md
    assert json.loads((tmp_path / "summary.json").read_text()) == out
    summarize_folder(tmp_path, "gpu", ["nope"])  # a named variant without its JSON is listed as failed
    assert "| nope | failed |" in (tmp_path / "summary.md").read_text()
    assert main([str(tmp_path / "missing"), "gpu"]) == 2

