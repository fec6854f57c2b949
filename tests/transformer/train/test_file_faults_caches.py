"""Evaluation caches: a malformed cache is a miss (recomputed, one line), never a crash nor NaN printed.

Caches that are not objects or hold garbage losses, any text at all (Hypothesis), a stale key (a silent miss).
Helpers: ``_faults.py``; fixtures: ``conftest.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simulations.transformer.evaluate.extrapolation import (  # noqa: E402
    EVAL_FIELDS,
    cache_problem,
    eval_cache_path,
    load_window_losses,
    read_loss_cache,
)
from simulations.transformer.paths import checkpoint_path  # noqa: E402
from tests.transformer._faults import FAST, _one_line_refusal, _run  # noqa: E402


# ---------------------------------------------------------------------------------------------------------
# evaluation caches: a malformed cache is a miss (recomputed, one line), never a crash nor NaN printed
# ---------------------------------------------------------------------------------------------------------
def _good_cache(n: int = 4, mults=(1, 2, 4)) -> dict:
    rng = np.random.default_rng(0)
    return {"key": {"step": 1, "multiples": list(mults), "n_windows": n, "weights": "ab"},
            "losses": {str(m): {f: rng.uniform(1, 6, n).tolist() for f in EVAL_FIELDS} for m in mults}}


def _garbage(saved: dict, how: str):
    s = json.loads(json.dumps(saved))
    first = s["losses"]["1"]
    if how == "list":
        return [1]
    if how == "null":
        return None
    if how == "string":
        return "losses"
    if how == "no-losses":
        del s["losses"]
    elif how == "losses-list":
        s["losses"] = [1, 2]
    elif how == "strings":
        first["target"] = ["a"] * len(first["target"])
    elif how == "nan":
        first["all"][0] = float("nan")
    elif how == "inf":
        first["all"][0] = float("inf")
    elif how == "negative":
        first["target"][0] = -1.0
    elif how == "bool":
        first["target"][0] = True
    elif how == "short":
        first["target"] = first["target"][:1]
    elif how == "ragged":
        first["all"] = first["all"] + [1.0]
    elif how == "empty-array":
        first["target"] = []
    elif how == "missing-field":
        del first["beyond_n"]
    elif how == "missing-multiple":
        del s["losses"]["4"]
    elif how == "bad-multiple":
        s["losses"]["x"] = s["losses"].pop("2")
    elif how == "zero-multiple":
        s["losses"]["0"] = s["losses"].pop("2")
    elif how == "scalar-array":
        first["target"] = 3.0
    else:
        raise AssertionError(how)
    return s


GARBAGE = ("list", "null", "string", "no-losses", "losses-list", "strings", "nan", "inf", "negative", "bool", "short",
           "ragged", "empty-array", "missing-field", "missing-multiple", "bad-multiple", "zero-multiple",
           "scalar-array")


@pytest.mark.parametrize("how", GARBAGE)
def test_malformed_cache_is_a_logged_miss(how, tmp_path, capsys):
    saved = _good_cache()
    path = tmp_path / "c.json"
    path.write_text(json.dumps(saved))
    assert read_loss_cache(path, saved["key"], fields=EVAL_FIELDS) is not None
    capsys.readouterr()
    path.write_text(json.dumps(_garbage(saved, how)))
    assert read_loss_cache(path, saved["key"], fields=EVAL_FIELDS) is None
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "unusable cache" in err[0] and "recomputing" in err[0], err
    assert cache_problem(_garbage(saved, how), EVAL_FIELDS) is not None


@FAST
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_cache_text_is_a_hit_or_a_miss(text, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    got = read_loss_cache(path, _good_cache()["key"], fields=EVAL_FIELDS)
    assert got is None or all(np.isfinite(v).all() for d in got.values() for v in d.values())


def test_stale_cache_is_a_silent_miss(tmp_path, capsys):
    saved = _good_cache()
    path = tmp_path / "c.json"
    path.write_text(json.dumps(saved))
    capsys.readouterr()
    assert read_loss_cache(path, {**saved["key"], "weights": "cd"}, fields=EVAL_FIELDS) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("how", ["list", "nan", "short", "missing-field"])
def test_load_window_losses_refuses_a_malformed_cache(how, good, tmp_path):
    ck = checkpoint_path("smoke", "rope", 0, tmp_path)
    cpath = eval_cache_path(ck)
    cpath.parent.mkdir(parents=True)
    cpath.write_text(json.dumps(_garbage(_good_cache(), how)))
    _one_line_refusal(lambda: load_window_losses(ck), "--results-dir:", str(cpath))


@pytest.mark.parametrize("how", ["list", "nan", "missing-multiple"])
def test_eval_recomputes_over_a_malformed_cache(how, good, tmp_path, capsys):
    path = checkpoint_path("smoke", "rope", 0, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(good.read_bytes())
    argv = ["transformer", "eval", "--variant", "rope", "--results-dir", str(tmp_path), "--threads", "1", "--json"]
    rc, err, out = _run(argv, capsys)
    assert rc == 0 and not err, err
    rows = json.loads(out.splitlines()[-1])
    cpath = eval_cache_path(path)
    saved = json.loads(cpath.read_text())
    cpath.write_text(json.dumps(_garbage(saved, how), allow_nan=True))
    rc, err, out = _run(argv, capsys)
    assert rc == 0 and len(err) == 1 and "unusable cache" in err[0], err
    assert "nan" not in out.lower()
    assert json.loads(out.splitlines()[-1]) == rows  # recomputed: the same numbers
    assert cache_problem(json.loads(cpath.read_text()), EVAL_FIELDS) is None  # and rewritten whole
