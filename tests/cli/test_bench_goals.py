"""The rows of issue 38's speed goals in ``stylized bench``: start-up, ALiBi evaluation, the dense path's threads.

Contracts only (keys, goals attached, what is compared with what); the timings themselves are never asserted.
"""

from __future__ import annotations

import pytest

from benchmarks import startup

KEYS = {"name", "kind", "baseline", "seconds", "baseline_seconds", "ratio", "peak_mib", "goal", "goal_met"}


def test_startup_rows_state_their_goals(monkeypatch):
    monkeypatch.setattr(startup, "timed_pair", lambda ours, base, repeat: (0.25, 0.05))
    monkeypatch.setattr(startup, "list_imports_torch", lambda: False)
    rows = startup.bench_rows(repeat=1)
    assert [r["name"] for r in rows] == ["stylized --version", "stylized --help",
                                         "stylized check --list (torch imported: no)"]
    assert all(KEYS <= set(r) and r["goal_met"] for r in rows)
    monkeypatch.setattr(startup, "list_imports_torch", lambda: True)
    assert startup.bench_rows(repeat=1)[2]["goal_met"] is False  # torch imported: the goal is missed, however fast


def test_alibi_rows_compare_with_rope_and_the_3d_mask(monkeypatch):
    pytest.importorskip("torch")
    from benchmarks import alibi_eval

    monkeypatch.setattr(alibi_eval, "MULTIPLE", 2)  # 128 tokens: the contract, not the timing
    rows = alibi_eval.bench_rows(repeat=1)
    assert len(rows) == 2 and all(KEYS <= set(r) for r in rows)
    assert rows[0]["baseline"].startswith("RoPE") and rows[0]["goal"] == "≤ 1.3× RoPE per token"
    assert rows[0]["goal_met"] == (rows[0]["seconds"] / rows[0]["baseline_seconds"] <= 1.3)
    assert "3-D" in rows[1]["baseline"]


@pytest.mark.slow
def test_dense_rows_show_one_thread_and_many_beside_the_chosen():
    from benchmarks import laws

    names = [r["name"] for r in laws.bench_rows(repeat=1)]
    assert any("on 1 thread" in n for n in names) and any("threads (prange)" in n for n in names)
    assert any("chosen by measurement" in n for n in names)
