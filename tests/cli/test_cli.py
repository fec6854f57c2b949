"""The CLI: JSON contract, --list, --help, one-line errors with exit status 2, check --all, figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from stylized.cli.app import main

CONTRACT = {"claim", "params", "holds", "rows", "seconds"}
ROW_KEYS = {"estimate", "ci_low", "ci_high", "theory", "n_samples"}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stylized", *args], capture_output=True, text=True, timeout=600)


def test_mixing_json_contract_householder_d16():
    """The issue's acceptance example: estimates sit within their intervals of (1 − 2/16)^n."""
    p = run_cli("check", "mixing", "--family", "householder", "--d", "16", "--n", "1,5,20", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert CONTRACT <= set(out)
    assert [r["n"] for r in out["rows"][:3]] == [1, 5, 20]
    for r in out["rows"][:3]:
        assert ROW_KEYS <= set(r)
        assert r["ci_low"] <= (1 - 2 / 16) ** r["n"] <= r["ci_high"]
        assert r["theory"] == pytest.approx((1 - 2 / 16) ** r["n"])


@pytest.mark.parametrize(
    "args,word",
    [
        (("check", "mixing", "--family", "so2-uniform", "--d", "7"), "d must be even"),
        (("check", "mixing", "--family", "lazy-haar", "--p", "1.5"), "--p: must be a number in (0, 1]"),
        (("check", "mixing", "--family", "warp"), "--family: must be a comma list of"),
        (("check", "mixing", "--backend", "tpu"), "--backend: must be one of"),
        (("check", "mixing", "--n", "a,b"), "--n"),
        (("check", "nonexistent"), "invalid choice"),
    ],
)
def test_bad_parameter_exits_2_with_one_line(args, word, capsys):
    code = main(list(args)) if args[1] != "nonexistent" else None
    if code is None:
        with pytest.raises(SystemExit) as e:
            main(list(args))
        code = e.value.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and word in err and "Traceback" not in err


def test_list_and_help(capsys):
    assert main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    assert "mixing" in out and "--family" in out
    with pytest.raises(SystemExit) as e:
        main(["check", "mixing", "--help"])
    assert e.value.code == 0


def test_python_m_and_console_script_agree():
    p = run_cli("--version")
    assert p.returncode == 0 and "stylized" in p.stdout


def test_save_and_figure_from_saved_result(tmp_results):
    """A non-default --save is exploratory: it goes under results/runs/, never over the paper's result."""
    assert main(["check", "mixing", "--family", "haar,householder", "--d", "8", "--n", "0,1,4", "--trials", "200",
                 "--save", "--json", "--no-progress"]) == 0
    assert not (tmp_results / "results" / "mixing.json").exists()
    (run,) = (tmp_results / "results" / "runs").glob("mixing-*")
    assert (run / "mixing.csv").read_text().startswith("family,n,estimate")
    from stylized.harness.registry import get_check
    from stylized.harness.results import load_result

    (png,) = get_check("mixing").plot(load_result("mixing", run), tmp_results / "figures")
    assert png.stat().st_size > 10_000


def test_out_keeps_every_file_under_it(tmp_path, monkeypatch, capsys):
    """--out DIR: the result (and nothing else) goes under DIR; --quiet prints only the verdict line."""
    monkeypatch.chdir(tmp_path)
    code = main(["check", "haar-law", "--family", "householder", "--d", "16", "--trials", "500", "--out", "o", "--quiet"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code in (0, 1) and len(out) == 1 and out[0].startswith("C2 haar-law: ")
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files and all(f.startswith("o/results/runs/haar-law-") for f in files), files


def test_figures_out_runs_what_is_missing_into_out(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["figures", "haar-law", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert (tmp_path / "o" / "results" / "haar-law.json").exists()
    assert list((tmp_path / "o" / "figures").glob("haar-law*.png"))
    assert {p.name for p in tmp_path.iterdir()} == {"o"}


def test_out_that_cannot_be_written_is_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["check", "haar-law", "--out", str(blocker / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not writable" in err


def test_plugin_commands_are_listed_without_importing_them():
    p = run_cli("--help")
    assert p.returncode == 0 and "transformer" in p.stdout and "spot-check" in p.stdout


STYLIZED_WITHOUT_SIMULATIONS = """
import importlib, pkgutil, sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "simulations" or name.startswith("simulations."):
            raise ImportError("blocked: " + name)

sys.meta_path.insert(0, Block())
import stylized
for m in pkgutil.iter_modules(stylized.__path__):
    if m.name not in ("__main__",):
        importlib.import_module("stylized." + m.name)
from stylized.harness.registry import load_checks
from stylized.harness.report import render_paper_checks
assert load_checks(external=True) == {}
render_paper_checks()
assert not any(k == "simulations" or k.startswith("simulations.") for k in sys.modules)
print("ok")
"""


def test_the_library_never_imports_the_experiments():
    """Dependencies point one way: no ``stylized`` module names ``simulations`` in an import, and the
    whole library imports (and renders an empty report) with ``simulations`` unimportable."""
    import re
    from pathlib import Path

    import stylized

    pattern = re.compile(r"^\s*(from|import)\s+simulations\b|import_module\(\s*['\"]simulations", re.M)
    offenders = [p.name for p in Path(stylized.__file__).parent.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []
    p = subprocess.run([sys.executable, "-c", STYLIZED_WITHOUT_SIMULATIONS], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


def test_every_help_page_renders(capsys):
    """``--help`` of ``check`` and of every check exits 0 (help text is %-formatted by argparse)."""
    from stylized.cli.app import main
    from stylized.harness.registry import load_checks

    for argv in (["check", "--help"], *(["check", name, "--help"] for name in load_checks())):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0, argv
    capsys.readouterr()


def test_import_graph_points_one_way(capsys):
    """``scripts/import_graph.py``: no module imports a higher layer (stylized ← simulations ← benchmarks,
    lazy imports included) and the module-level imports inside ``stylized`` have no cycle."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([]) == 0, capsys.readouterr().out[-2000:]
    out = capsys.readouterr().out
    assert "upward imports (a lower layer importing a higher one): 0" in out


def test_no_module_is_over_450_lines():
    """One screen per idea: no Python file of the library, the experiments, the benchmarks, the scripts or the
    tests is over 450 lines."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    long = {str(p.relative_to(root)): n for d in ("stylized", "simulations", "benchmarks", "scripts", "tests")
            for p in (root / d).rglob("*.py") if (n := p.read_text().count("\n")) > 450}
    assert long == {}


def test_a_plugin_command_whose_module_is_missing_fails_in_one_line(monkeypatch, capsys):
    """An entry-point command whose package is not installed (torch for ``transformer``, the checkout's
    ``benchmarks/`` for ``bench``): any arguments give one line and exit 2, never argparse's complaint about its
    options or a traceback; a plugin never shadows a built-in command."""
    from stylized.cli import app as cli

    fake = {"transformer": "no_such_package_xyz.cli:add_parser", "check": "no_such_package_xyz:add_parser"}
    monkeypatch.setattr(cli, "plugins", lambda group: fake)
    assert cli.main(["transformer", "compare", "--preset", "cpu", "--workers", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stylized: error: transformer: needs a part that is not installed")
    with pytest.raises(SystemExit) as e:  # the built-in `check` still parses (a plugin named check is ignored)
        cli.main(["check", "--help"])
    assert e.value.code == 0


def test_version_and_help_start_without_scipy_numba_or_the_checks():
    """``stylized --version`` / ``--help`` build no per-check parser and import neither SciPy nor Numba
    (they took 9 s on a loaded machine when every check module was imported to build the parser)."""
    import subprocess
    import sys

    code = ("import sys\nfrom stylized.cli.app import main\n"
            "for argv in (['--version'], ['--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "heavy = sorted(m for m in ('scipy', 'numba', 'matplotlib', 'simulations') if m in sys.modules)\n"
            "print('HEAVY', heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out, out


@pytest.mark.parametrize("name", ["mixing-spectrum", "markov-tokens"])
def test_so2_only_checks_refuse_odd_d_in_one_line_before_any_work(name, capsys):
    """Their steps are SO(2) planes (RoPE angles, token-driven planes): an odd d is bad input, not a crash."""
    assert main(["check", name, "--d", "13", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stylized: error: --d: d must be even for SO(2) blocks"), err
