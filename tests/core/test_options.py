"""The declarative option layer: kinds, ranges, finiteness, lists, work caps, and the issue-15 CLI examples."""

from __future__ import annotations

import json
import math

import pytest

from stylized.cli import app as cli
from stylized.core.options import Bool, Choice, Choices, Float, FloatList, Int, IntList, Spec, check_work, spec_of
from stylized.harness.registry import int_list, load_checks


@pytest.mark.parametrize("spec,value,expected", [
    (Int(1, 10**7), "12", 12), (Int(1, 10**7), "1e3", 1000), (Int(0, 5), 3, 3), (Float(0, 1), "0.5", 0.5),
    (Float(0, 1, lo_open=True), 1, 1.0), (IntList(0, 10), "1, 2,3", [1, 2, 3]), (FloatList(-1, 1), [0.5], [0.5]),
    (Choice("a", "b"), " a ", "a"), (Choices("a", "b"), "a,b", ["a", "b"]), (Bool(), "yes", True),
    (Int(0, 9, optional=True), "none", None),
])
def test_valid_values_parse(spec, value, expected):
    assert spec(value) == expected


@pytest.mark.parametrize("spec,value", [
    (Int(1, 10**7), "1.5"), (Int(1, 10**7), "0"), (Int(1, 10**7), "1e12"), (Int(1, 10**7), "99999999999999999999999"),
    (Int(1, 10**7), "nan"), (Int(1, 10**7), "inf"), (Int(1, 10**7), ""), (Int(1, 10**7), True), (Int(1, 10**7), 2.5),
    (Float(0, 1), "nan"), (Float(0, 1), "-inf"), (Float(0, 1), "1e23"), (Float(0, 1, lo_open=True), "0"),
    (Float(), "inf"), (IntList(0, 10), ""), (IntList(0, 10), ","), (IntList(0, 10), "1,,2"), (IntList(0, 10), "1,11"),
    (FloatList(), "1,nan"), (IntList(0, 10, max_len=3), "1,2,3,4"), (Choice("a"), "b"), (Choices("a"), "a,"),
    (Choice("a"), "\udcff"), (Float(), b"\xff"), (Bool(), "maybe"),
])
def test_invalid_values_one_line_naming_the_range(spec, value):
    with pytest.raises(ValueError) as e:
        spec(value)
    msg = str(e.value)
    assert msg.startswith("must be ") and ", got " in msg and "\n" not in msg
    if spec.kind in ("int", "float", "int-list", "float-list") and spec.lo is not None:
        assert "[" in msg or "(" in msg  # the range is named


def test_describe_names_the_range():
    assert Int(1, 10**7).describe() == "an integer in [1, 10^7]"
    assert Float(0, 2, lo_open=True, hi_open=True).describe() == "a number in (0, 2)"
    assert "finite" in Float().describe()


def test_generic_specs_wrap_plain_types():
    assert spec_of(int, 3)("4") == 4
    assert spec_of(int_list, [1])("1,2") == [1, 2]
    with pytest.raises(ValueError):
        spec_of(float, 1.0)("nan")
    assert spec_of(int, None)("none") is None


def test_work_cap_is_relative_to_the_defaults():
    specs = {"trials": Int(1, 10**9, size=True), "d": Int(1, 10**6, size=True), "lam": Float(0, 10)}
    defaults = {"trials": 100, "d": 10, "lam": 1.0}
    check_work(specs, {**defaults, "trials": 100_000}, defaults, {k: "--" + k for k in specs})
    with pytest.raises(ValueError, match="--trials, --d"):
        check_work(specs, {**defaults, "trials": 100_000, "d": 11}, defaults, {k: "--" + k for k in specs})


def test_every_check_option_has_a_spec_and_defaults_reduced_and_mutants_validate():
    for c in load_checks().values():
        for o in c.options:
            assert isinstance(o.spec, Spec), (c.name, o.name)
            assert o.allowed(), (c.name, o.name)
        assert c.parse_params() == c.defaults()
        c.parse_params(c.reduced)
        for m in c.mutants:
            c.parse_params({**c.reduced, **m.params})


def _run(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err.strip()


# The issue's CLI examples, each now refused in one line naming the option and its range (exit 2).
ISSUE_EXAMPLES = [
    (["check", "far-mass-growth", "--control", "forget-gate", "--gate-sd", "inf"], "--gate-sd"),
    (["check", "haar-law", "--t", "nan"], "--t"),
    (["check", "far-mass-growth", "--horizon-lam", "inf"], "--horizon-lam"),
    (["check", "far-mass-bound", "--K", "1000000000000"], "--K"),
    (["check", "mixing", "--family", ""], "--family"),
    (["check", "haar-law", "--trials", "99999999999999999999999"], "--trials"),
    (["check", "--all", "--all-backend", "foo"], "--all-backend"),
    (["check", "haar-law", "--trials", "1.5"], "--trials"),
    (["check", "mixing", "--trials", "10000000", "--n", "1000000"], "work estimate"),
    (["sweep", "mixing", "--grid", "d=16,nan"], "--d"),
    (["sweep", "mixing", "--grid", "d=16", "--workers", "0"], "--workers"),
    (["falsify", "mixing", "--seeds", "0"], "--seeds"),
    (["bench", "--repeat", "-1"], "--repeat"),
    (["figures", "nonexistent"], "NAME"),
]


@pytest.mark.parametrize("argv,word", ISSUE_EXAMPLES)
def test_issue_examples_are_refused_in_one_line(argv, word, capsys, tmp_results):
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("stylized: error: ") and word in err, err
    assert "must be" in err or "exceeds" in err or "one of" in err
    assert not any(tmp_results.iterdir())  # nothing created


def test_dry_run_prints_the_validated_parameters(capsys, tmp_results):
    code, out, err = _run(["check", "haar-law", "--d", "8", "--t", "0.1,0.2", "--dry-run"], capsys)
    assert code == 0
    r = json.loads(out)
    assert r["params"]["d"] == 8 and r["params"]["t"] == [0.1, 0.2] and math.isfinite(r["params"]["trials"])
