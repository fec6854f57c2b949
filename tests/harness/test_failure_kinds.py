"""Issue 23: three kinds of failure told apart, writes proven before the work, a tally that states every claim;
issue 24: packaging (licence, citation, changelog, one version, py.typed, Numba's cache, plug-ins advertised).

Exit status: 0 holds, 1 a claim does not hold, 2 bad input (``InvalidInput``: one line naming the option, before
any work or file), 3 an internal error (one line, the traceback in a file, never printed), 130 interrupted.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import stylized
from stylized import InvalidInput
from stylized.cli import app as cli
from stylized.harness import registry
from stylized.harness.registry import Check, Option
from stylized.harness.results import atomic_write, check_writable

ROOT = Path(__file__).resolve().parents[2]


def _err_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture()
def no_run(monkeypatch):
    """Record any call of the run (there must be none when the input is refused)."""
    calls: list = []
    monkeypatch.setattr(cli, "run_check", lambda *a, **k: calls.append(a))
    return calls


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "stylized"


# -- bad input: InvalidInput, exit 2, before any work ------------------------------------------------------------


def test_invalid_input_is_a_value_error_with_its_public_name():
    assert issubclass(InvalidInput, ValueError) and stylized.InvalidInput is InvalidInput
    assert InvalidInput.__module__ == "stylized"


def test_the_option_layer_raises_invalid_input():
    check = registry.get_check("mixing")
    for bad in ({"trials": "-1"}, {"nope": 1}, {"family": "so2-uniform", "d": 13}):
        with pytest.raises(InvalidInput):
            check.parse_params(bad)


@pytest.mark.parametrize("extra", [[], ["--dry-run"], ["--dry-run", "--json"]])
def test_a_family_limit_found_only_by_building_the_family_is_exit_2_naming_the_option(extra, no_run, tmp_results,
                                                                                      capsys):
    assert cli.main(["check", "mixing", "--family", "so2-uniform", "--d", "13", *extra]) == 2
    line = _err_line(capsys)
    assert line.startswith("stylized: error: --d: ") and "even" in line and "so2-uniform" in line
    assert no_run == [] and not (tmp_results / "results").exists()


def test_family_limits_over_lists_of_families_and_dimensions(capsys):
    assert cli.main(["check", "score-gap", "--family", "householder,so2-uniform", "--d", "16,13", "--dry-run"]) == 2
    assert "--d: " in _err_line(capsys)
    assert cli.main(["check", "far-retrieval", "--family", "householder,warp", "--dry-run"]) == 2
    assert "--family: " in _err_line(capsys)


def test_dry_run_applies_every_limit_the_cli_applies(tmp_path, capsys):
    assert cli.main(["check", "transformer-compare", "--save", "--dry-run"]) == 2
    assert "--save: " in _err_line(capsys)
    (tmp_path / "f").write_text("")
    assert cli.main(["check", "mixing", "--dry-run", "--out", str(tmp_path / "f")]) == 2
    assert "--out: " in _err_line(capsys)
    assert cli.main(["check", "--strict", "mixing"]) == 2
    assert "--strict: " in _err_line(capsys)
    assert cli.main(["sweep", "mixing", "--grid", "family=so2-uniform", "--grid", "d=13", "--dry-run"]) == 2
    assert "--d: " in _err_line(capsys)
    assert cli.main(["falsify", "no-such-check"]) == 2
    assert "NAME: " in _err_line(capsys)


def test_stylized_run_raises_invalid_input_named_in_python_before_any_work(monkeypatch):
    calls = []
    monkeypatch.setattr(stylized.harness.api, "run_check", lambda *a, **k: calls.append(a))
    with pytest.raises(InvalidInput, match=r"^d: d must be even"):
        stylized.run("mixing", family="so2-uniform", d=13)
    with pytest.raises(InvalidInput, match="trials_near"):
        stylized.run("score-gap", trials_near=-1)
    with pytest.raises(InvalidInput, match="name must be one of"):
        stylized.run("no-such-check")
    assert calls == []


def test_stylized_run_lets_an_error_of_the_run_propagate_unchanged(monkeypatch):
    def broken(*a, **k):
        raise ValueError("boom: a bug inside the run")

    monkeypatch.setattr(stylized.harness.api, "run_check", broken)
    with pytest.raises(ValueError, match="^boom: a bug inside the run$") as e:
        stylized.run("mixing", family="householder", d=8)
    assert type(e.value) is ValueError


def _toy(validate=None) -> Check:
    return Check(name="toy", claim="C0", statement="toy", options=(Option("a", 1, "a", int), Option("b", 2, "b", int)),
                 run=lambda p, **k: {"holds": True, "rows": []}, validate=validate)


def test_check_validate_and_add_validator_give_invalid_input(monkeypatch):
    def a_below_b(p):
        if p["a"] >= p["b"]:
            raise ValueError("--a: must lie below --b")

    assert _toy(a_below_b).parse_params({"a": "1"}) == {"a": 1, "b": 2}
    with pytest.raises(InvalidInput, match="--a: must lie below --b"):
        _toy(a_below_b).parse_params({"a": "5"})

    def hook(check, p):
        if check.name == "toy" and p["b"] > 10:
            raise InvalidInput("--b: must be at most 10")

    monkeypatch.setitem(registry._VALIDATORS, "tests.hook", hook)
    with pytest.raises(InvalidInput, match="--b"):
        _toy().parse_params({"b": "11"})


def test_a_bug_in_a_validator_is_not_bad_input():
    def buggy(p):
        raise TypeError("a bug")

    with pytest.raises(TypeError):
        _toy(buggy).parse_params({})


# -- internal errors: exit 3, one line, the traceback in a file ----------------------------------------------------


@pytest.mark.parametrize("exc", [ValueError("boom: a ValueError raised during the run"), KeyError("k"),
                                 OSError(errno.ENOENT, "No such file or directory")])
def test_anything_else_is_an_internal_error_with_its_traceback_in_a_file(exc, monkeypatch, cache, capsys):
    def broken(*a, **k):
        raise exc

    monkeypatch.setattr(cli, "run_check", broken)
    assert cli.main(["check", "mixing", "--family", "householder", "--d", "8", "--no-progress"]) == 3
    line = _err_line(capsys)
    m = re.fullmatch(r"stylized: internal error: (.+) \(full traceback in (.+)\)", line)
    assert m and m[1].startswith(type(exc).__name__), line
    path = Path(m[2])
    assert path.parent == cache / "errors"
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and type(exc).__name__ in text and "'check', 'mixing'" in text


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO])
def test_a_write_the_machine_refuses_mid_run_is_one_io_error_line_exit_74(code, monkeypatch, capsys):
    def full(*a, **k):
        raise OSError(code, os.strerror(code), "/some/results/mixing.json.tmp")

    monkeypatch.setattr(cli, "run_check", full)
    assert cli.main(["check", "mixing", "--family", "householder", "--d", "8", "--no-progress"]) == 74
    line = _err_line(capsys)
    assert line.startswith("stylized: I/O error: /some/results/mixing.json.tmp: " + os.strerror(code)), line


def test_the_traceback_goes_to_the_temp_folder_when_the_cache_cannot_be_written(tmp_path, monkeypatch, capsys):
    import tempfile

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    monkeypatch.setattr(cli, "run_check", lambda *a, **k: 1 / 0)
    assert cli.main(["check", "mixing", "--no-progress"]) == 3
    path = Path(re.search(r"full traceback in (.+)\)$", _err_line(capsys))[1])
    assert path.parent == Path(tempfile.gettempdir()) and "ZeroDivisionError" in path.read_text()
    path.unlink()


def test_an_interrupt_is_one_line_and_exit_130(monkeypatch, capsys):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_check", interrupted)
    assert cli.main(["check", "mixing", "--no-progress"]) == 130
    assert _err_line(capsys) == "stylized: interrupted"


# -- writes proven before the work -----------------------------------------------------------------------------


def _unwritable(tmp_path: Path) -> list[Path]:
    (tmp_path / "a-file").write_text("x")
    out = [tmp_path / "a-file", tmp_path / "a-file" / "below", tmp_path / ("n" * 300)]
    if Path("/proc/self").exists():
        out.append(Path("/proc/stylized-probe-test"))
    return out


def test_unwritable_destinations_are_refused_naming_the_option_and_leave_nothing(tmp_path):
    for dest in _unwritable(tmp_path):
        before = _files(tmp_path)
        with pytest.raises(InvalidInput, match=r"^--out: .* is not writable \(.+\)"):
            check_writable(dest)
        assert _files(tmp_path) == before, dest


def test_a_writable_destination_is_proven_without_leaving_anything(tmp_path):
    check_writable(tmp_path / "x" / "y" / "z")
    check_writable(tmp_path)
    assert _files(tmp_path) == set()


def test_cli_refuses_an_unwritable_out_before_any_work(tmp_path, no_run, capsys):
    for dest in _unwritable(tmp_path):
        before = _files(tmp_path)
        assert cli.main(["check", "haar-law", "--out", str(dest), "--quiet"]) == 2
        line = _err_line(capsys)
        assert line.startswith("stylized: error: --out: ") and "not writable" in line
        assert _files(tmp_path) == before and no_run == []


def test_an_unwritable_default_results_folder_is_refused_for_save_and_figures(tmp_path, monkeypatch, no_run, capsys):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path / "a-file" / "results"))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(tmp_path / "figures"))
    assert cli.main(["check", "mixing", "--save", "--no-progress"]) == 2
    assert "not writable" in _err_line(capsys)
    assert cli.main(["figures", "mixing", "--quiet"]) == 2
    assert "not writable" in _err_line(capsys) and no_run == []


def test_atomic_write_leaves_no_partial_temporary_file(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")

    def fails_halfway(tmp):
        Path(tmp).write_text("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        atomic_write(target, fails_halfway)
    assert target.read_text() == "old" and _files(tmp_path) == {"r.json"}
    atomic_write(target, lambda tmp: Path(tmp).write_text("new"))
    assert target.read_text() == "new" and _files(tmp_path) == {"r.json"}


# -- check --all: a tally that states every claim ------------------------------------------------------------------


def _tally(monkeypatch, tmp_results, capsys, external: dict, argv=()) -> tuple[int, str]:
    """``check --all`` with every stylized check holding and the external ones as ``external`` says (``True``,
    ``False``, ``None`` for reported, ``"missing"`` for no result); returns the exit status and the last line."""

    def fake(check, *a, **k):
        state = external.get(check.name, True)
        if state == "missing":
            raise ValueError("no result: run its command first")
        return {"claim": check.name, "paper_claim": check.claim, "params": {}, "holds": state, "rows": [],
                "seconds": 0.0, "headline": {}}

    monkeypatch.setattr(cli, "run_check", fake)
    monkeypatch.setattr(cli, "write_paper_checks", lambda: tmp_results / "pc.md")
    monkeypatch.setenv("STYLIZED_PAPER_CHECKS", str(tmp_results / "pc.md"))
    rc = cli.main(["check", "--all", "--force", *argv])
    return rc, capsys.readouterr().out.strip().splitlines()[-1]


@pytest.fixture()
def external_names():
    names = [k for k, c in registry.load_checks(external=True).items() if c.external]
    if len(names) < 2:
        pytest.skip("the external checks need torch (the 'transformer' extra)")
    return names


def test_the_tally_states_every_claim_and_strict_follows_them_all(monkeypatch, tmp_results, capsys, external_names):
    n = len(registry.load_checks())
    states = {external_names[0]: False, external_names[1]: None}
    for argv, want in (((), 0), (("--strict",), 1)):
        rc, last = _tally(monkeypatch, tmp_results, capsys, states, argv)
        parts = last.split(" · ")
        assert rc == want and parts[0] == f"{n}/{n} stylized checks hold"
        assert f"{external_names[0]} does not hold" in parts and f"{external_names[1]} reported" in parts
        assert len(parts) == 1 + len(external_names)


def test_strict_passes_when_every_verdict_holds_and_fails_on_a_missing_result(monkeypatch, tmp_results, capsys,
                                                                              external_names):
    assert _tally(monkeypatch, tmp_results, capsys, {external_names[-1]: None}, ("--strict",))[0] == 0
    rc, last = _tally(monkeypatch, tmp_results, capsys, {external_names[0]: "missing"}, ("--strict",))
    assert rc == 1 and f"{external_names[0]} not run (no result)" in last.split(" · ")
    assert _tally(monkeypatch, tmp_results, capsys, {external_names[0]: "missing"})[0] == 0


@pytest.mark.parametrize("holds,code,word", [(True, 0, "HOLDS"), (False, 1, "DOES NOT HOLD"), (None, 0, "REPORTED")])
def test_a_single_check_exit_status_follows_its_claim(holds, code, word, monkeypatch, capsys):
    result = {"claim": "mixing", "paper_claim": "C1", "params": {}, "holds": holds, "rows": [], "seconds": 0.0}
    monkeypatch.setattr(cli, "run_check", lambda *a, **k: result)
    assert cli.main(["check", "mixing", "--quiet"]) == code
    assert capsys.readouterr().out.startswith(f"C1 mixing: {word}")


def test_quiet_prints_only_the_tally(monkeypatch, tmp_results, capsys, external_names):
    rc, last = _tally(monkeypatch, tmp_results, capsys, {}, ("--quiet",))
    assert rc == 0 and last.startswith(f"{len(registry.load_checks())}/")


# -- packaging --------------------------------------------------------------------------------------------------


def test_licence_citation_changelog_and_one_version():
    version = stylized.__version__
    assert "MIT License" in (ROOT / "LICENSE").read_text() and "the stylized authors" in (ROOT / "LICENSE").read_text()
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(version)}$", cff, re.M) and "cff-version: 1.2.0" in cff
    assert "Why Do Accumulated Transformations Extrapolate?" in cff and "arXiv:2606.24975" in cff
    log = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in log and f"## [{version}]" in log
    tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "stylized.__version__"}
    assert project["project"]["license"] == "MIT"
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["stylized"]
    assert (ROOT / "stylized" / "py.typed").is_file()


def _python(code: str, env: dict) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300, check=True).stdout.strip()


def test_numba_caches_in_the_user_cache_folder_unless_told_otherwise(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    code = "import stylized, numba; print(numba.config.CACHE_DIR)"
    assert _python(code, {**env, "XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "stylized" / "numba")
    home = _python(code, {**env, "XDG_CACHE_HOME": "relative/ignored", "HOME": str(tmp_path / "h")})
    assert home == str(tmp_path / "h" / ".cache" / "stylized" / "numba")
    assert _python(code, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "mine")}) == str(tmp_path / "mine")


def test_a_plugin_command_whose_package_is_absent_is_not_advertised(monkeypatch, capsys):
    fake = {"bench": "no_such_package_xyz.runner:add_parser", "transformer": "simulations.transformer.cli:add_parser"}
    monkeypatch.setattr(cli, "plugins", lambda group: fake)
    text = cli.build_parser().format_help()
    assert "bench" not in text and "transformer" in text
    assert cli.main(["bench", "--repeat", "1"]) == 2
    assert _err_line(capsys).startswith("stylized: error: bench: needs a part that is not installed")
