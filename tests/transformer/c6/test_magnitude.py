"""The C6 magnitude verdict: the interval against the paper's own Δ at the same absolute length."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulations.transformer.c6.magnitude import (
    CONSISTENT,
    CONTRADICTS,
    decide_magnitude,
    length_cells,
    magnitude_rate,
    paper_delta,
    row_pattern,
)
from simulations.transformer.evaluate.extrapolation import PAPER_RATIOS


def test_paper_delta_reads_the_paper_ratios_at_absolute_length():
    want = math.log(PAPER_RATIOS["random-qk"][128]) - math.log(PAPER_RATIOS["random-qkv"][128])
    assert paper_delta("random-qk", "random-qkv", 65_536) == pytest.approx(want)
    assert paper_delta("random-qk", "random-qkv", 1000) is None  # not a multiple of the paper's 512
    assert paper_delta("rope", "nope", 8192) is None  # the paper reports no NoPE ratio


def test_decide_magnitude_flips_when_the_interval_moves_over_the_paper():
    assert decide_magnitude(-0.3, 0.02, 1.55) == CONTRADICTS
    assert decide_magnitude(1.0, 2.0, 1.55) == CONSISTENT
    assert decide_magnitude(1.6, 2.0, 1.55) == CONTRADICTS  # mutant: the interval shifted past the paper's Δ
    assert decide_magnitude(float("nan"), float("nan"), 1.55) == "no interval"
    assert decide_magnitude(0.0, 1.0, None) == "no paper value"


def _law(rng, seeds=5, windows=24):
    return rng.normal(0.0, 0.2, (seeds, 1)) + rng.normal(0.5, 0.3, (1, windows)) + rng.normal(0, 0.4, (seeds, windows))


def test_magnitude_level_is_near_nominal_and_translation_invariant():
    rng = np.random.default_rng(3)
    laws = {"a": _law(rng), "b": _law(rng)}
    r0 = magnitude_rate(laws, 0.0, 3, 3, reps=3000)
    r1 = magnitude_rate(laws, 1.55, 3, 3, reps=3000)
    assert r0["excluded"] == r1["excluded"]  # the Welch interval moves with the shift
    assert r0["ci"][0] <= 0.05 + 0.02 and r0["ci"][1] >= 0.05 - 0.03


def test_length_cells_and_pattern_from_a_comparison():
    rng = np.random.default_rng(0)
    rows = []
    for v, shift in (("random-qk", 0.0), ("random-qkv", 0.0)):
        for m in (1, 16, 128):
            per = np.exp(rng.normal(shift + 0.1 * (m > 1), 0.05, 3))
            rows.append({"variant": v, "metric": "all", "multiple": m, "per_seed": per.tolist()})
    cells = length_cells({"params": {"model": {"block_size": 64}}, "rows": rows})
    c = cells["random-qk > random-qkv"]
    assert [x["tokens"] for x in c] == [1024, 8192]  # 1× (64 tokens) is below the paper's shortest length
    assert c[-1]["paper_delta"] == pytest.approx(paper_delta("random-qk", "random-qkv", 8192))
    assert c[-1]["magnitude"] == CONTRADICTS  # a tie near 0 excludes the paper's +0.44 at 8K
    assert "8K" in row_pattern("random-qk > random-qkv", c)


def test_the_committed_c6_rows_state_their_pattern_against_the_paper():
    """Rendered from the committed comparison and gpu runs (no number hard-coded: the words come from the cells)."""
    from pathlib import Path

    from simulations.transformer.c6 import checks as tc
    from simulations.transformer.c6.magnitude import gpu_cells

    root = Path(__file__).resolve().parents[3] / "simulations" / "results"
    if not (root / "transformer" / "cpu_compare.json").exists():
        pytest.skip("no committed cpu comparison")
    top = "\n".join(tc._c6_table_rows(root))
    assert "random-qk > random-qkv: ties at" in top and "the paper's Δ over" in top
    gpu = gpu_cells(root)
    if gpu:
        last = gpu["random-qk > random-qkv"][-1]
        assert "65K" in top and last["magnitude"] in top
    section = "\n".join(tc._c6_section(root))
    assert "| paper's Δ (same length) | magnitude verdict (level) |" in section
