"""Saved results are validated before they are trusted (issue 35): schema, types, finite numbers where numbers
belong, booleans where verdicts belong.  A bad file is named in one line, moved aside and recomputed (a saved
result is a cache of a deterministic run), never copied into the CSV or ``paper_checks.md``."""

from __future__ import annotations

import collections
import copy
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stylized.cli import app as cli
from stylized.harness import report
from stylized.harness.registry import get_check, load_checks
from stylized.harness.result_schema import result_problem
from stylized.harness.results import code_hash, is_up_to_date, load_result, results_dir, to_jsonable
from tests._shared import report_fuzz

COMMITTED = Path(__file__).resolve().parents[2] / "simulations" / "results"
NAMES = ["far-mass-bound", "value-snr", "mixing", "markov-tokens"]
TRIED: collections.Counter = collections.Counter()
FAILED: collections.Counter = collections.Counter()
FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=int(os.environ.get("STYLIZED_FUZZ_EXAMPLES", 3_000)), deadline=None,
                suppress_health_check=list(HealthCheck))


def _real(name: str) -> dict:
    return json.loads((COMMITTED / f"{name}.json").read_text())


def _up_to_date_copy(name: str) -> dict:
    """A committed result made current (this code's hash), as ``check --all`` would leave it."""
    r = _real(name)
    r["meta"]["code_hash"] = code_hash(get_check(name).module)
    return r


def _write(name: str, text: str) -> Path:
    d = results_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", NAMES)
def test_every_committed_result_is_valid(name):
    assert result_problem(_real(name), name) is None


TAMPER = {
    "estimate NaN": lambda r: r["headline"].__setitem__("estimate", math.nan),
    "estimate Infinity": lambda r: r["headline"].__setitem__("estimate", math.inf),
    "estimate text": lambda r: r["headline"].__setitem__("estimate", "0.41"),
    'holds "yes"': lambda r: r.__setitem__("holds", "yes"),
    "holds 1": lambda r: r.__setitem__("holds", 1),
    "row estimate NaN": lambda r: r["rows"][0].__setitem__("estimate", math.nan),
    "row verdict text": lambda r: r["rows"][0].__setitem__(next(k for k in r["rows"][0] if isinstance(r["rows"][0][k], bool)), "true"),
    "rows an object": lambda r: r.__setitem__("rows", {"0": r["rows"][0]}),
    "a row a list": lambda r: r["rows"].__setitem__(0, [1, 2]),
    "seconds negative": lambda r: r.__setitem__("seconds", -1.0),
    "seconds text": lambda r: r.__setitem__("seconds", "3.2"),
    "params a list": lambda r: r.__setitem__("params", [1]),
    "seed text": lambda r: r["params"].__setitem__("seed", "0"),
    "seed bool": lambda r: r["params"].__setitem__("seed", False),
    "no meta": lambda r: r.pop("meta"),
    "code hash a number": lambda r: r["meta"].__setitem__("code_hash", 12),
    "another claim": lambda r: r.__setitem__("claim", "mixing"),
    "headline a list": lambda r: r.__setitem__("headline", []),
    "quantity a number": lambda r: r["headline"].__setitem__("quantity", 3),
    "deep extra NaN": lambda r: r.__setitem__("extra", {"a": [1, {"b": math.nan}]}),
}


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_a_tampered_result_is_named_moved_aside_and_not_trusted(tmp_results, capsys, how):
    r = _up_to_date_copy("far-mass-bound")
    TAMPER[how](r)
    path = _write("far-mass-bound", json.dumps(r))
    assert load_result("far-mass-bound") is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "recomputing" in err[0], err
    assert not path.exists() and path.with_name(path.name + ".corrupt").exists()


@pytest.mark.parametrize("text", ["", "null", "[]", '"x"', "{", "\x00\x01", "[" * 100_000 + "]" * 100_000,
                                  '{"claim": "far-mass-bound"}'])
def test_unreadable_files_are_named(tmp_results, capsys, text):
    path = _write("far-mass-bound", text)
    assert load_result("far-mass-bound") is None
    assert str(path) in capsys.readouterr().err


def test_invalid_bytes_and_a_folder_in_place_are_named(tmp_results, capsys):
    path = _write("far-mass-bound", "")
    path.write_bytes(b"\xff\xfe{")
    assert load_result("far-mass-bound") is None
    path.mkdir()
    assert load_result("far-mass-bound") is None
    assert capsys.readouterr().err.count(str(path)) == 2


def test_a_read_only_folder_leaves_the_file_and_still_refuses_it(tmp_results, capsys, monkeypatch):
    from stylized.harness import results

    r = _up_to_date_copy("far-mass-bound")
    r["holds"] = "yes"
    path = _write("far-mass-bound", json.dumps(r))

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(results.os, "replace", refuse)
    assert load_result("far-mass-bound") is None
    assert "left in place" in capsys.readouterr().err and path.exists()


def _fake_run(calls: list):
    def run(check, params=None, *, seed=0, backend="numba", progress=True):
        if check.external:
            raise ValueError("not run here")
        calls.append(check.name)
        return {"claim": check.name, "params": {**to_jsonable(check.parse_params()), "seed": 0, "backend": backend},
                "holds": True, "rows": [{"estimate": 0.25, "passes": True}], "seconds": 0.5,
                "headline": {"quantity": "q", "estimate": 0.25, "verdict": "fake"}, "paper_claim": check.claim,
                "meta": {"code_hash": code_hash(check.module)}}
    return run


def test_check_all_recomputes_a_tampered_result_and_copies_nothing_of_it(tmp_results, monkeypatch, capsys):
    """``check --all`` with every result up to date but one whose estimate is NaN and whose verdict is "yes":
    exit 0, that one named once and recomputed, the others kept, no NaN in its CSV or paper_checks.md."""
    from stylized.harness.results import save_result

    checks = load_checks()
    seed: list[str] = []
    for check in checks.values():  # rows only where they are tampered: a check's own section reads its own rows
        save_result({**_fake_run(seed)(check), **({} if check.name == "far-mass-bound" else {"rows": []})})
    bad = results_dir() / "far-mass-bound.json"
    r = json.loads(bad.read_text())
    r["holds"], r["rows"][0]["estimate"] = "yes", math.nan
    bad.write_text(json.dumps(r))
    calls: list[str] = []
    monkeypatch.setattr(cli, "run_check", _fake_run(calls))
    paper = tmp_results / "paper_checks.md"
    monkeypatch.setattr(cli, "write_paper_checks", lambda: report.write_paper_checks(path=paper))
    assert cli.main(["check", "--all"]) == 0
    err = capsys.readouterr().err
    assert calls == ["far-mass-bound"] and err.count(str(bad)) == 1
    assert "nan" not in (results_dir() / "far-mass-bound.csv").read_text().lower()
    assert "nan" not in paper.read_text().lower()
    assert load_result("far-mass-bound")["holds"] is True


# -- fuzz: random corruptions of a real saved result -----------------------------------------------------------
HOSTILE = [math.nan, math.inf, -math.inf, None, "yes", "", "0.5", True, False, 0, -1, 1e308, 10**400, [], {},
           [math.nan], {"x": math.nan}, "∞", -0.0]


def _paths(x, here=()):
    yield here
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, here + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x[:8]):
            yield from _paths(v, here + (i,))


def _set(x, path, value):
    for p in path[:-1]:
        x = x[p]
    x[path[-1]] = value


def _delete(x, path):
    for p in path[:-1]:
        x = x[p]
    del x[path[-1]]


@st.composite
def corruptions(draw):
    name = draw(st.sampled_from(NAMES))
    r = _up_to_date_copy(name)
    kind = draw(st.sampled_from(["set", "set", "set", "delete", "truncate", "byte", "replace"]))
    paths = [p for p in _paths(r) if p]
    if kind in ("set", "delete"):
        for _ in range(draw(st.integers(1, 3))):
            paths = [p for p in _paths(r) if p]
            path = draw(st.sampled_from(paths))
            if kind == "set":
                _set(r, path, copy.deepcopy(draw(st.sampled_from(HOSTILE))))
            else:
                _delete(r, path)
        text = json.dumps(r)  # NaN/Infinity as JSON's non-standard constants, as a careless writer would
    else:
        text = json.dumps(r, indent=1)
        if kind == "truncate":
            text = text[:draw(st.integers(0, len(text) - 1))]
        elif kind == "byte":
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + draw(st.sampled_from(["\x00", "}", "]", '"', ",", "N", "\\", "é", "9e999"])) + text[i + 1:]
        else:
            text = json.dumps(draw(st.recursive(st.none() | st.booleans() | st.floats() | st.text(max_size=5),
                                                lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                                                max_leaves=10)))
    return name, kind, text


def check_corruption(name: str, kind: str, text: str, capsys) -> None:
    """Every corruption is either refused (named in one line on stderr) or schema-valid, and what is accepted
    renders and compares without an error."""
    TRIED[kind] += 1
    path = _write(name, text)
    for p in path.parent.glob("*.corrupt"):
        p.unlink()
    try:
        r = load_result(name)
        err = [e for e in capsys.readouterr().err.strip().splitlines() if "rewritten from it" not in e]  # its CSV
        if r is None:
            assert len(err) == 1 and str(path) in err[0] and "recomputing" in err[0], err
            return
        assert result_problem(r, name) is None and not err
        is_up_to_date(get_check(name), r)
        report.render_paper_checks(path.parent)
    except Exception:
        FAILED[kind] += 1
        raise


def test_corrupt_result_fuzz(tmp_results, capsys):
    @FAST
    @given(case=corruptions())
    def run(case):
        check_corruption(*case, capsys)

    run()


@pytest.mark.slow
def test_corrupt_result_fuzz_slow(tmp_results, capsys):
    @SLOW
    @given(case=corruptions())
    def run(case):
        check_corruption(*case, capsys)

    run()


def teardown_module(module) -> None:
    report_fuzz("saved-results", TRIED, FAILED)
