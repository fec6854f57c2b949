"""Damaged result JSON on the transformer side: named in one line, refused (exit 2) or recomputed, never copied on.

:mod:`simulations.transformer.train.readers` on every kind of damage, then the commands that read a committed result
before any work (route-length reads the comparison, recall and recall-forecast the recall measurement, the
long-eval section its own result), each with the file damaged in a temporary results folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulations.transformer.train.readers import read_cache, read_json, saved_key, write_cache
from stylized.core.errors import InvalidInput
from tests.transformer._faults import ROOT, _assert_refused, _run

DAMAGE = {
    "empty": b"",
    "truncated": b'{"runs": [{"variant": "rope", ',
    "not utf-8": b'{"runs": "\xff\xfe"}',
    "not json": b"Expecting value: this is text",
    "NaN literal": b'{"runs": [], "x": NaN}',
    "Infinity literal": b'{"runs": [], "x": -Infinity}',
    "a list": b"[1, 2, 3]",
    "a string": b'"runs"',
    "no runs entry": b'{"rows": []}',
    "deeply nested": b"[" * 100_000 + b"]" * 100_000,
}
COMMITTED = ROOT / "simulations" / "results" / "transformer"


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_read_json_names_the_file(case, tmp_path):
    p = tmp_path / "recall_cpu.json"
    p.write_bytes(DAMAGE[case])
    with pytest.raises(InvalidInput) as e:
        read_json(p, "recall", need=("runs",))
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and msg.startswith("recall: "), msg


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_read_cache_names_the_file_and_recomputes(case, tmp_path, capsys):
    p = tmp_path / "cache.json"
    p.write_bytes(DAMAGE[case])
    assert read_cache(p, "t", need=("runs",)) is None
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and str(p) in err[0] and "recomputing" in err[0], err


def test_intact_and_missing(tmp_path, capsys):
    p = tmp_path / "ok.json"
    p.write_text(json.dumps({"runs": [1]}))
    assert read_json(p, "x", need=("runs",)) == {"runs": [1]}
    assert read_cache(tmp_path / "absent.json", "t") is None
    assert capsys.readouterr().err == ""


def test_settings_keyed_cache(tmp_path, capsys):
    """Written whole as one line, a hit under its key, a silent miss under another, keyless or damaged: one line."""
    p, key = tmp_path / "c.json", {"step": 3, "weights": "ab"}
    write_cache(p, key, rows=[{"a": 1}])
    assert p.read_text() == json.dumps({"key": key, "rows": [{"a": 1}]})  # the committed caches' format
    assert read_cache(p, "t", key=key) == {"key": key, "rows": [{"a": 1}]} and saved_key(p) == key
    assert read_cache(p, "t", key={**key, "weights": "cd"}) is None and capsys.readouterr().err == ""
    p.write_text(json.dumps({"key": [1], "rows": []}))
    assert read_cache(p, "t", key=key) is None and saved_key(p) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and str(p) in err[0] and "no 'key' object" in err[0], err
    write_cache(p, key, rows=[])
    assert read_cache(p, "t", key=key, check=lambda d: None if d["rows"] else "no rows") is None
    assert "no rows" in capsys.readouterr().err


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """A results folder holding copies of the committed comparison and recall measurement."""
    root = tmp_path / "results"
    t = root / "transformer"
    t.mkdir(parents=True)
    for name in ("cpu_compare.json", "recall_cpu.json"):
        shutil.copyfile(COMMITTED / name, t / name)
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(root))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.delenv("STYLIZED_OUT", raising=False)
    return t


@pytest.mark.parametrize("case", ["empty", "not json", "a list", "no runs entry", "NaN literal"])
@pytest.mark.parametrize("argv, name", [(["route-length"], "cpu_compare.json"),
                                        (["recall-forecast"], "recall_cpu.json"),
                                        (["recall", "--variants", "rope", "--seeds", "0"], "recall_cpu.json")])
def test_commands_refuse_a_damaged_result(argv, name, case, results, capsys):
    if name == "recall_cpu.json" and argv[0] == "recall":  # the exploratory run's own resume file
        target = results / "exploratory" / "recall" / name
        target.parent.mkdir(parents=True)
    else:
        target = results / name
    body = DAMAGE[case] if not (case == "no runs entry" and name == "cpu_compare.json") else b'{"runs": []}'
    target.write_bytes(body)
    rc, err, _ = _run(["transformer", *argv], capsys)
    _assert_refused(rc, err, str(target))
    assert not (results.parent.parent / "figures").exists()  # refused before any work


def test_long_eval_section_refuses_a_damaged_result(tmp_path):
    from simulations.transformer.evaluate.long_eval import long_eval_section, result_path

    p = result_path(tmp_path / "transformer", "cpu-long", 128)
    p.parent.mkdir(parents=True)
    p.write_text('{"multiples": [1, 2]}')
    with pytest.raises(InvalidInput, match=str(p)):
        long_eval_section(tmp_path, "cpu-long", 128)


#: a damaged bridge prediction (reused when its checkpoint is gone): each is named and left out, never copied on
PREDICTION_DAMAGE = {
    "not an object": lambda p: 3,
    "rho text": lambda p: {**p, "rho": "x"},
    "rho ragged": lambda p: {**p, "rho": [[1.0], [1.0, 2.0]]},
    "rho other lengths": lambda p: {**p, "rho": [r[:-1] for r in p["rho"]]},
    "lo overflow": lambda p: {**p, "lo": [[[x if k else "1e999" for k, x in enumerate(r)] for r in lay]
                                          for lay in p["lo"]]},  # 1e999 parses as an infinite float
    "lam null": lambda p: {**p, "lam": [[None] * len(p["lam"][0])] * len(p["lam"])},
    "no input_len": lambda p: {k: v for k, v in p.items() if k != "input_len"},
    "input_len negative": lambda p: {**p, "input_len": -5},
}


@pytest.mark.parametrize("case", sorted(PREDICTION_DAMAGE))
def test_bridge_drops_a_damaged_prediction(case, tmp_path, capsys):
    from simulations.transformer.bridge.run import _previous

    saved = json.loads((COMMITTED / "bridge_cpu.json").read_text())
    name = next(iter(saved["predictions"]))
    saved["predictions"][name] = PREDICTION_DAMAGE[case](saved["predictions"][name])
    p = tmp_path / "bridge_cpu.json"
    p.write_text(json.dumps(saved).replace('"1e999"', "1e999"))
    n = len(saved["params"]["multiples"])
    capsys.readouterr()
    old = _previous(p, n)
    out = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert name not in old["predictions"] and len(old["predictions"]) == len(saved["predictions"]) - 1
    assert len(out) == 1 and str(p) in out[0] and name in out[0], out


def test_bridge_keeps_the_committed_predictions(capsys):
    from simulations.transformer.bridge.run import _previous

    saved = json.loads((COMMITTED / "bridge_cpu.json").read_text())
    old = _previous(COMMITTED / "bridge_cpu.json", len(saved["params"]["multiples"]))
    assert old["predictions"].keys() == saved["predictions"].keys()
    assert old["measured"].keys() == saved["measured"].keys()
    assert capsys.readouterr().out == ""
