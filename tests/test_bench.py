"""``stylized bench`` in its small mode: every row has the required keys (timings are never asserted)."""

from __future__ import annotations

import json
import math

from stylized.bench import collect_rows, main

KEYS = {"name", "kind", "baseline", "seconds", "baseline_seconds", "ratio", "peak_mib"}


def test_bench_small_rows_have_required_keys(monkeypatch):
    import stylized.bench as bench

    monkeypatch.setattr(bench, "OTHER_MODULES", ("no_such_module",))
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
    import stylized.bench as bench

    monkeypatch.setattr(bench, "OTHER_MODULES", ())
    assert main(repeat=1, as_json=True, small=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"machine", "rows", "missing", "repeat"} <= set(out)
