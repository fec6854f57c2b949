"""The route-length view of C6: windows from the law, windows measured on a token stream, rows and section."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simulations.transformer.c6 import route_length as rl
from stylized.laws.families import RopeRandom


def test_random_windows_are_the_rope_random_law():
    fam = RopeRandom(d=32, base=10000.0)
    np.testing.assert_array_equal(rl.random_windows(fam.omegas, 0.05), fam.plane_windows(0.05))


def test_measured_windows_match_the_iid_token_law():
    """i.i.d. tokens: E e^{iA_n} = χⁿ with χ = E e^{iθ(x)}, so the window is ⌈ln ε/ln|χ|⌉ up to the grid step."""
    rng = np.random.default_rng(0)
    V, planes = 50, 4
    theta = rng.uniform(-1, 1, (V, planes)) * np.array([0.3, 0.6, 1.2, 2.0])
    tokens = rng.integers(0, V, 400_000)
    chi = np.abs(np.exp(1j * theta).mean(0))
    exact = np.ceil(math.log(0.05) / np.log(chi))
    w = rl.measured_windows(theta, tokens, 4096, starts=20_000)
    assert np.all(np.abs(w / exact - 1) <= 0.12), (w, exact)
    frozen = rl.measured_windows(np.zeros((V, 2)), tokens, 256)  # no rotation: never mixes
    assert np.all(np.isinf(frozen))
    with pytest.raises(ValueError, match="tokens"):
        rl.measured_windows(theta, tokens[:100], 4096)


def _compare(L_train=64):
    rows = [{"variant": v, "metric": m, "multiple": k, "estimate": 1.0 + 0.1 * k, "per_seed": [1.0 + 0.1 * k, 1.2]}
            for v in ("rope", "nope", "random-qk", "learned-qk") for m in ("all", "target") for k in (1, 32, 128)]
    return {"params": {"preset": "cpu", "model": {"block_size": L_train},
                       "seeds": {"rope": [0, 1], "random-qk": [0, 1], "learned-qk": [0, 1]}}, "rows": rows}


def test_rows_and_section(tmp_path):
    law = np.array([10.0, 100.0, 1e6, np.inf])
    windows = {"random-qk": {0: law, 1: law},
               "learned-qk": {0: np.array([10.0, 20.0, 30.0, 5000.0]), 1: np.array([10.0, 20.0, 3000.0, 5000.0])}}
    res = rl.route_length_result(_compare(), windows, {"random-qk": "closed form", "learned-qk": "measured"})
    by = {(r["variant"], r["multiple"]): r for r in res["rows"]}
    assert {v for v, _ in by} == {"rope", "random-qk", "learned-qk"}  # nope has no planes
    assert by[("rope", 128)]["share_mixed"] == 0.0
    assert by[("random-qk", 1)]["share_mixed"] == 0.25 and by[("random-qk", 128)]["share_mixed"] == 0.5
    assert by[("learned-qk", 32)]["share_per_seed"] == [0.75, 0.5] and by[("learned-qk", 128)]["share_mixed"] == 1.0
    assert res["variants"]["random-qk"]["planes_beyond_longest"] == 0.5
    one = rl.route_length_result(_compare(), {"learned-qk": {1: windows["learned-qk"][1]}}, {"learned-qk": "measured"})
    r1 = {(r["variant"], r["multiple"]): r for r in one["rows"]}[("learned-qk", 128)]
    assert r1["seeds"] == [1] and r1["ratio"] == pytest.approx(1.2)  # the ratio over the included seeds only
    (tmp_path / "transformer").mkdir()
    (tmp_path / "transformer" / "route_length_cpu.json").write_text(json.dumps(res))
    text = "\n".join(rl.route_length_section(tmp_path))
    assert "| learned-qk | measured | 0, 1 | 4 |" in text and "| random-qk | closed form | 0, 1 | 4 |" in text
    assert rl.route_length_section(tmp_path / "nowhere") == []
    path = rl.plot_route_length(res, tmp_path / "route.png")
    assert path.exists()


def test_other_presets_live_in_their_run_folder(tmp_path):
    res = rl.route_length_result(_compare(), {"learned-qk": {0: np.array([10.0, 20.0, 30.0, 5000.0])}},
                                 {"learned-qk": "measured"})
    res["missing"] = [{"variant": "learned-qk", "seed": 1}]
    assert rl.result_path(tmp_path, "cpu") == tmp_path / "route_length_cpu.json"
    path = rl.result_path(tmp_path / "transformer", "cpu-long")
    assert path == tmp_path / "transformer" / "runs" / "cpu-long" / "route_length_cpu-long.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(res))
    text = "\n".join(rl.route_length_section(tmp_path, "cpu-long"))
    assert "(cpu-long preset)" in text and "--preset cpu-long" in text and "learned-qk seed 1" in text
    assert rl.route_length_section(tmp_path, "cpu") == []


def test_cli_refuses_a_preset_without_a_comparison(tmp_path, monkeypatch, capsys):
    from simulations.transformer.cli import main

    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(tmp_path / "figures"))
    for argv in (["route-length", "--preset", "cpu-long", "--no-train"], ["route-length", "--preset", "paper"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and "--preset" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("route_length*"))
