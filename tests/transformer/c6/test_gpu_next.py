"""The next GPU step's driver: its plan, the gap trend from evaluation caches, GPU/CPU agreement in distribution.

The whole script runs on the CPU as a dry run: ``OUT=/tmp/x bash scripts/gpu_next.sh --tiny`` (smoke preset, 12 and
16 steps per run, every plumbing step of the device call but the CuPy checks; about 2 minutes on 2 busy cores).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from simulations.transformer.c6.gpu_next import BUDGETS, COMMITTED_STEPS, agreement, main, plan, trend


def test_every_budget_is_beyond_the_committed_runs_and_two_per_variant():
    for budgets in BUDGETS.values():
        assert len(budgets) >= 2 and min(budgets) > COMMITTED_STEPS
    runs = plan()
    assert len(runs) == 8 and runs[0][1] == max(s for _, s in runs)  # the slowest start first
    assert all(s < 100 for _, s in plan(tiny=True))


def _cache(path, shift, rng, mults=(1, 2, 4)):
    losses = {str(m): {"all": (1.0 + shift * np.log2(m) + rng.normal(0, 0.01, 8)).tolist()} for m in mults}
    path.write_text(json.dumps({"key": {}, "losses": losses}))


def test_trend_reads_each_budget_and_sees_a_planted_gap(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "eval").mkdir()
    for v, shift in (("random-qk", 0.3), ("random-qkv", 0.0), ("learned-qk", 0.0), ("learned-qkv", 0.0)):
        for s in (12, 16):
            _cache(tmp_path / "eval" / f"{v}-{s}.json", shift, rng)
            (tmp_path / f"{v}-{s}.json").write_text(json.dumps({"step": s, "eval": [{"L": 16, "multiple": 1}]}))
    t = trend(tmp_path)
    rand = t["rows"][0]["budgets"]
    assert [e["steps"] for e in rand] == [12, 16] and rand[0]["reached"] == {"random-qk": 12, "random-qkv": 12}
    c = rand[0]["cells"][-1]
    assert c["delta"] == pytest.approx(0.3 * 2, abs=0.05) and c["ci_low"] > 0  # the planted gap at 4×
    learned = t["rows"][1]["budgets"][0]["cells"][-1]
    assert learned["ci_low"] < 0 < learned["ci_high"]  # no gap planted: the interval holds 0


def _result(path, rows, holds=True):
    path.write_text(json.dumps({"holds": holds, "rows": rows}))


def test_agreement_flags_a_shifted_backend(tmp_path):
    cpu, gpu, out = tmp_path / "cpu", tmp_path / "gpu", tmp_path / "out"
    for d in (cpu, gpu, out):
        d.mkdir()
    rows = [{"quantity": "q", "estimate": 1.0, "ci_low": 0.9, "ci_high": 1.1} for _ in range(10)]
    _result(cpu / "a.json", rows)
    _result(gpu / "a.json", rows)
    _result(cpu / "b.json", rows)
    _result(gpu / "b.json", [{**r, "estimate": 1.5, "ci_low": 1.4, "ci_high": 1.6} for r in rows], holds=False)
    a = agreement(cpu, gpu)
    by = {c["check"]: c for c in a["checks"]}
    assert by["a"]["beyond_1.96"] == 0 and by["a"]["same_verdict"]
    assert by["b"]["beyond_1.96"] == 10 and not by["b"]["same_verdict"] and a["verdicts_match"] is False
    assert main(["agreement", str(cpu), str(gpu), str(out)]) == 0 and (out / "agreement.json").exists()
    with pytest.raises(SystemExit) as e:
        main(["agreement", str(cpu), str(tmp_path / "missing"), str(out)])
    assert e.value.code == 2
