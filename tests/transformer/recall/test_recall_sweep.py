"""MQAR sweep (recall_sweep): a tiny run's row format, resume, and the JSON round trip."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.recall import sweep as rs  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny_run() -> dict:
    return rs.run_variant("rope", 0, distances=(16, 32), n_seqs=4, max_cpu_s=30.0, steps=20, log_every=10)


def test_tiny_run_row_format(tiny_run):
    r = tiny_run
    assert r["variant"] == "rope" and r["seed"] == 0
    t = r["train"]
    assert t["steps"] == 20 and t["cpu_s"] > 0 and isinstance(t["reached"], bool)
    assert len(t["curve"]) == 2 and len(t["curve"][0]) == len(t["curve_columns"])
    cells = [(row["distance"], row["n_pairs"]) for row in r["rows"]]
    assert cells == [(None, 8), (16, 8), (32, 8), (32, 2), (32, 4)]  # 1x, then n_pairs 2/4 at 32 only
    for row in r["rows"]:
        assert {"distance", "n_pairs", "length", "n_seqs", "n_queries", "acc", "lo", "hi", "chance", "guess",
                "cpu_s"} <= set(row)
        assert 0.0 <= row["lo"] <= row["acc"] <= row["hi"] <= 1.0
        assert row["n_seqs"] == (rs.N_SEQS_1X if row["distance"] is None else 4)
    assert r["settings"]["eval"]["distances"] == [16, 32]


def test_json_round_trip(tiny_run, tmp_path):
    path = tmp_path / "recall.json"
    rs.write_results([tiny_run], path, notes=["n"])
    data = json.loads(path.read_text())
    assert data["runs"][0] == json.loads(json.dumps(tiny_run))
    assert data["baselines"] == {"chance": 1 / 32, "value_guess_8_pairs": 1 / 8}
    assert len(data["rows"]) == len(tiny_run["rows"]) and data["rows"][0]["variant"] == "rope"
    assert data["train_summary"][0]["steps"] == 20 and "curve" not in data["train_summary"][0]
    assert rs.find_run(rs.load_results(path), "rope", 0, tiny_run["settings"]) == data["runs"][0]
    assert rs.find_run(rs.load_results(path), "rope", 1, tiny_run["settings"]) is None


def test_resume_skips_an_existing_entry(tiny_run, tmp_path, monkeypatch):
    path = tmp_path / "recall.json"
    same = rs.sweep_settings(rs.DEFAULT_DISTANCES, (8,), 64, 600.0, rs.LONG_N_SEQS)
    stored = {**tiny_run, "settings": same}
    rs.write_results([stored], path)
    calls: list[str] = []

    def fake(variant, seed, **kw):
        calls.append(variant)
        return {**tiny_run, "variant": variant, "seed": seed, "settings": same}

    monkeypatch.setattr(rs, "run_variant", fake)
    rs.run_sweep(["rope", "nope"], 0, out=path)
    assert calls == ["nope"]  # rope was stored with the same settings
    data = rs.load_results(path)
    assert [(r["variant"], r["seed"]) for r in data["runs"]] == [("rope", 0), ("nope", 0)]
    rs.run_sweep(["rope"], 0, out=path, max_cpu_s=100.0)  # other settings: rerun
    assert calls == ["nope", "rope"]
    assert [(r["variant"], r["seed"]) for r in rs.load_results(path)["runs"]] == [("nope", 0), ("rope", 0)]


def test_n_seqs_at():
    assert rs.n_seqs_at(None, 64, {1024: 32, 4096: 16}) == 64
    assert rs.n_seqs_at(512, 64, {1024: 32, 4096: 16}) == 64
    assert rs.n_seqs_at(2048, 64, {4096: 16, 1024: 32}) == 32
    assert rs.n_seqs_at(4096, 64, {1024: 32, 4096: 16}) == 16
    assert rs.eval_batch_size(64) == 50 and rs.eval_batch_size(4113) >= 1
