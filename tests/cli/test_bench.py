"""``stylized bench`` (the top-level ``benchmarks`` package, an entry-point command) in its small mode: every row
has the required keys (timings are never asserted), and the library never imports ``benchmarks``."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

import benchmarks.runner as bench
from benchmarks.runner import collect_rows, main

KEYS = {"name", "kind", "baseline", "seconds", "baseline_seconds", "ratio", "peak_mib"}


def test_bench_small_rows_have_required_keys(monkeypatch):
    monkeypatch.setattr(bench, "OTHER_MODULES", ("stylized.no_such_module",))
    res = collect_rows(repeat=1, small=True)
    assert res["rows"] and res["missing"] == ["stylized.no_such_module.bench_rows (ModuleNotFoundError)"]
    for r in res["rows"]:
        assert KEYS <= set(r), r
        assert r["kind"] in ("kernel", "sampler", "end-to-end")
        assert r["seconds"] > 0 and r["baseline_seconds"] > 0
        assert math.isclose(r["ratio"], r["baseline_seconds"] / r["seconds"])
    m = res["machine"]
    assert m["cores"] >= 1 and m["numba"] and m["numpy"]


def test_bench_json_is_one_object(monkeypatch, capsys):
    monkeypatch.setattr(bench, "OTHER_MODULES", ())
    assert main(repeat=1, as_json=True, small=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"machine", "rows", "missing", "repeat"} <= set(out)


@pytest.mark.slow
def test_score_bench_rows_contract(monkeypatch):
    from benchmarks import scores

    monkeypatch.setattr(scores, "_timed", lambda f, repeat: (1.0, 0.0))  # the contract, not the timings
    rows = scores.bench_rows(repeat=1)
    assert len(rows) == 3 and all(KEYS <= set(r) and r["baseline"] == "numpy" for r in rows)


def test_the_library_never_imports_benchmarks():
    """No ``stylized`` module imports ``benchmarks``, not even inside a function: ``stylized bench`` is a
    ``stylized.commands`` entry point that the benchmarks package provides."""
    for path in Path(__file__).resolve().parents[2].joinpath("stylized").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "benchmarks" for n in names), path


def test_transformer_bench_smoke(tmp_path):
    pytest.importorskip("torch")
    from benchmarks import transformer

    out = tmp_path / "bench.json"
    assert transformer.main(["--preset", "smoke", "--variants", "rope,path", "--reps", "1",
                             "--steps", "1", "--no-eval", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [r["variant"] for r in res["step"]] == ["rope", "path"]
    assert res["step"][0]["ratio_vs_rope"] == pytest.approx(1.0)


def test_stylized_bench_runs_the_benchmarks_package(monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "main", lambda **kw: calls.append(kw) or 0)
    from stylized.cli.app import main as cli_main

    assert cli_main(["bench", "--repeat", "2", "--json"]) == 0
    assert calls == [{"repeat": 2, "as_json": True, "with_check_all": False}]
