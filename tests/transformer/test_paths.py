"""Committed results are written only by a command's full default run (:mod:`simulations.transformer.paths`).

Part one parses every transformer command's default and exploratory forms with the real parser: a default form
differs in nothing, every exploratory form in at least one option.  Part two runs exploratory forms for real in a
git repository made of the committed results and figures (no checkpoints: a fresh clone's state) and asserts that
``git status --porcelain`` is empty afterwards and that the run's files lie under ``exploratory/<command>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")

from simulations.transformer.paths import DEFAULTS, deviations  # noqa: E402
from tests.transformer._faults import ROOT, _run  # noqa: E402

#: command -> (its default form, its exploratory forms): every sub-command that writes a committed file
FORMS: dict[str, tuple[list[str], list[list[str]]]] = {
    "compare": (["--preset", "cpu"], [["--preset", "cpu", "--variants", "rope"], ["--preset", "cpu", "--seeds", "0"],
                                      ["--preset", "cpu", "--extra-seeds", "0"], ["--preset", "cpu", "--steps", "5"],
                                      ["--preset", "cpu", "--data", "x.txt"], ["--preset", "cpu", "--bpe-vocab", "300"]]),
    "combined": ([], [["--variants", "fox"], ["--seeds", "0"], ["--steps", "5"]]),
    "recall": ([], [["--variants", "rope", "--seeds", "0", "--n-seqs", "4"], ["--seeds", "0"], ["--n-seqs", "8"]]),
    "recall-forecast": ([], [["--variants", "rope", "--seeds", "0", "--trials", "16"], ["--trials", "16"]]),
    "route-length": ([], []),  # --no-train: exploratory when a checkpoint is missing (part two)
    "long-eval": ([], [["--seed", "1"], ["--variants", "rope"], ["--multiples", "1,2"]]),
    "lr-sweep": ([], [["--mults", "1,3"], ["--variants", "learned-qk"]]),
    "far-context": ([], [["--variants", "rope"]]),
    "passkey": ([], [["--variants", "rope"], ["--trials", "2"], ["--fraction", "0.5"]]),
    "chi-markov": ([], []),  # exploratory when a checkpoint is missing
    "author-ab": ([], []),
    "lr-robustness": ([], []),  # --no-train refuses when anything is missing
    "bridge": ([], []),
    "value-probe": ([], [["--seeds", "1"], ["--windows", "2"], ["--lengths", "1,2"], ["--queries", "2"]]),
    "train": (["--variant", "rope"], [["--variant", "rope", "--steps", "5"], ["--variant", "rope", "--data", "x.txt"],
                                      ["--variant", "rope", "--tokenizer", "bpe"],
                                      ["--variant", "rope", "--bpe-vocab", "300"]]),
}
#: options that change no number, per command (scheduling; --no-train is judged by what is missing)
NEUTRAL_FORMS = {"compare": [["--preset", "cpu", "--workers", "2"], ["--preset", "cpu", "--threads", "1"]],
                 "route-length": [["--no-train"]], "long-eval": [["--no-train"], ["--threads", "2"]],
                 "bridge": [["--no-cache"], ["--threads", "2"]], "far-context": [["--workers", "2"]],
                 "lr-robustness": [["--no-train"], ["--workers", "2"]],
                 "train": [["--variant", "rope", "--seed", "1"], ["--variant", "rope", "--resume"]]}


def _parse(argv: list[str]):
    from simulations.transformer.cli import add_parser
    from stylized.core.options import OptionParser

    parser = OptionParser(prog="t")
    add_parser(parser.add_subparsers(dest="cmd"))
    return parser.parse_args(["transformer", *argv])


@pytest.mark.parametrize("command", sorted(FORMS))
def test_default_form_is_canonical_and_subsets_are_not(command):
    default, exploratory = FORMS[command]
    assert deviations(_parse([command, *default])) == []
    for form in NEUTRAL_FORMS.get(command, []):
        assert deviations(_parse([command, *form])) == [], form
    for form in exploratory:
        assert deviations(_parse([command, *form])), form


def test_settings_get_a_folder_each_and_subsets_share_one(tmp_path, monkeypatch):
    from simulations.transformer.paths import destination

    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path))
    subsets = ("variants", "seeds", "extra_seeds")

    def where(*argv):
        return destination("compare", _parse(["compare", "--preset", "cpu", *argv]), subsets=subsets, log=lambda _: None)

    a, b, c = where("--steps", "2"), where("--steps", "3", "--variants", "rope"), where("--steps", "2", "--seeds", "1")
    assert a.settings and b.settings and a.root != b.root and a.root == c.root  # subsets do not split a folder
    d = where("--variants", "rope")
    assert not d.settings and not d.canonical and d.root == tmp_path / "transformer" / "exploratory" / "compare"
    assert where().canonical
    long = where("--data", "x" * 500)
    assert len(long.root.name) <= 80 and long.root.parent == d.root


def test_every_subcommand_keeps_its_defaults():
    from simulations.transformer.cli import add_parser
    from stylized.core.options import OptionParser

    parser = OptionParser(prog="t")
    sub = parser.add_subparsers(dest="cmd")
    add_parser(sub)
    tsub = next(a for a in sub.choices["transformer"]._actions if hasattr(a, "choices") and a.choices)
    for name, sp in tsub.choices.items():
        assert isinstance(sp.get_default(DEFAULTS), dict), name
    writers = {n for n in tsub.choices if n not in ("eval", "probe")}  # these two write nothing
    assert writers <= set(FORMS), writers - set(FORMS)


# ---------------------------------------------------------------------------------------------------------
# part two: real runs in a repository of the committed results (no checkpoints, as a fresh clone)
# ---------------------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The committed transformer results, figures and .gitignore in a fresh repository (one commit)."""
    repo = tmp_path_factory.mktemp("clone")
    files = _git(ROOT, "ls-files", "-z", "simulations/results/transformer", "figures", ".gitignore").split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, repo / rel)
    shutil.copyfile(ROOT / ".gitignore", repo / ".gitignore")  # the working tree's (exploratory/ ignored)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "committed results")
    return repo


@pytest.fixture
def in_clone(clone, monkeypatch) -> Path:
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(clone / "simulations" / "results"))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(clone / "figures"))
    monkeypatch.delenv("STYLIZED_OUT", raising=False)
    return clone


def _digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


#: command -> the committed files (under the checkout) its full run writes: an exploratory run leaves them alone
WRITES = {"train": [], "compare": ["cpu_compare.json", "cpu_compare.csv", "../../../figures/transformer_ppl_ratio.png"],
          "long-eval": ["runs/cpu-long/cpu-long_to128x.json", "runs/cpu-long/transformer_to128x.png"],
          "route-length": ["route_length_cpu.json", "../../../figures/transformer_route_length.png"],
          "combined": ["cpu_combined_seeds.json", "cpu_combined_seeds.csv"], "chi-markov": ["chi_markov.json"],
          "recall": ["recall_cpu.json", "../../../figures/transformer_recall.png"],
          "recall-forecast": ["recall_forecast.json", "../../../figures/transformer_recall_forecast.png"],
          "bridge": ["bridge_cpu.json", "bridge_cpu.csv", "../../../figures/transformer_bridge.png"]}


def _exploratory(repo: Path, command: str, argv: list[str], capsys, want_rc: int | None = 0) -> list[str]:
    """Run ``command`` in ``repo``; git sees nothing changed; the checkout's own results are untouched too."""
    before = _digest([ROOT / "simulations" / "results" / "transformer" / p for p in WRITES[command]])
    rc, err, out = _run(["transformer", command, *argv], capsys)
    assert rc == want_rc or (want_rc is None and rc in (0, 1)), (rc, err, out[-2000:])
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == "", out[-2000:]
    assert _digest([Path(p) for p in before]) == before
    where = repo / "simulations" / "results" / "transformer" / "exploratory" / command
    return sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file()) if where.exists() else []


def test_compare_subset_in_clone(in_clone, capsys):
    files = _exploratory(in_clone, "compare", ["--preset", "cpu", "--variants", "rope", "--seeds", "0"], capsys)
    assert "cpu_compare.json" in files and "transformer_ppl_ratio.png" in files


def test_long_eval_no_train_without_checkpoints_in_clone(in_clone, capsys):
    files = _exploratory(in_clone, "long-eval", ["--no-train"], capsys)
    assert "cpu-long_to128x.json" in files


def test_train_with_other_steps_keeps_its_checkpoint_apart(in_clone, capsys):
    files = _exploratory(in_clone, "train", ["--variant", "rope", "--preset", "smoke", "--steps", "1"], capsys)
    assert files == ["steps-1/checkpoints/smoke/rope.pt"]
    assert not (in_clone / "simulations" / "results" / "transformer" / "checkpoints").exists()


def test_recall_subset_reuses_committed_runs_in_clone(in_clone, capsys):
    files = _exploratory(in_clone, "recall", ["--variants", "rope", "--seeds", "0"], capsys)
    assert "recall_cpu.json" in files and "transformer_recall.png" in files


@pytest.mark.slow
def test_route_length_no_train_and_combined_subset_in_clone(in_clone, capsys):
    assert "route_length_cpu.json" in _exploratory(in_clone, "route-length", ["--no-train"], capsys)
    assert "cpu_combined_seeds.json" in _exploratory(in_clone, "combined", ["--variants", "fox", "--seeds", "0"],
                                                     capsys)
    assert _exploratory(in_clone, "chi-markov", [], capsys, want_rc=2) == []  # nothing on disk: refused


@pytest.mark.slow
def test_recall_forms_in_clone(in_clone, capsys, monkeypatch):
    """The two recall forms of the issue, with training cut to 20 steps (where the files go is what is tested)."""
    from functools import partial

    from simulations.transformer.recall import forecast_run as recall_forecast_run
    from simulations.transformer.recall import sweep as recall_sweep

    monkeypatch.setattr(recall_forecast_run, "MAX_STEPS", 20)
    monkeypatch.setattr(recall_sweep, "run_variant", partial(recall_sweep.run_variant, steps=20))
    assert "recall_forecast.json" in _exploratory(
        in_clone, "recall-forecast", ["--variants", "rope", "--seeds", "0", "--trials", "16"], capsys)
    assert "recall_cpu.json" in _exploratory(in_clone, "recall", ["--variants", "rope", "--seeds", "0", "--n-seqs",
                                                                  "4"], capsys)


@pytest.mark.slow
def test_bridge_that_would_lose_a_committed_prediction_in_clone(in_clone, capsys):
    """A prediction of the committed bridge that cannot be reused (its checkpoint gone, its digest not the evaluated
    weights') would be left out: the run is exploratory and the committed bridge stays as it is."""
    path = in_clone / "simulations" / "results" / "transformer" / "bridge_cpu.json"
    saved = json.loads(path.read_text())
    saved["predictions"]["rope/s1"]["digest"] = "0" * 16
    path.write_text(json.dumps(saved, indent=1) + "\n")
    _git(in_clone, "commit", "-qam", "a prediction of other weights")
    files = _exploratory(in_clone, "bridge", [], capsys, want_rc=None)
    assert "bridge_cpu.json" in files and "transformer_bridge.png" in files
