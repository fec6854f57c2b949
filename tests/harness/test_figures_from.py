"""``stylized figures NAME --from RESULT.json`` and ``Result.plot(path)``: exploratory redraws, in the theme.

``--from`` redraws one check's figure from a result JSON (as ``stylized check NAME --out DIR`` saves it) beside
that JSON (or under ``--out DIR/figures``), never over the committed figure; a file that is missing, not JSON,
not a result, or a result of a check without a figure is refused in one line with exit status 2.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from stylized.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "simulations" / "results" / "far-mass-bound.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"


@pytest.fixture()
def exploratory(tmp_path) -> Path:
    """A far-mass-bound result at other parameters, saved where an exploratory run saves it."""
    r = json.loads(COMMITTED.read_text())
    r["params"] = {**r["params"], "K": 4}
    path = tmp_path / "results" / "runs" / "far-mass-bound-x" / "far-mass-bound.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(r))
    return path


def test_from_redraws_beside_the_result_and_leaves_the_committed_figure(exploratory, capsys):
    committed = ROOT / "figures" / "far-mass-bound.png"
    before = _digest(committed)
    assert main(["figures", "far-mass-bound", "--from", str(exploratory)]) == 0
    assert (exploratory.parent / "far-mass-bound.png").is_file() and (exploratory.parent / "far-mass-bound.pdf").is_file()
    assert _digest(committed) == before
    assert "wrote" in capsys.readouterr().err


def test_from_names_its_check_and_follows_out(exploratory, tmp_path):
    assert main(["figures", "--from", str(exploratory), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert {p.name for p in (tmp_path / "o" / "figures").iterdir()} == {"far-mass-bound.png", "far-mass-bound.pdf"}


@pytest.mark.parametrize(("content", "argv", "message"), [
    (None, [], "does not exist"),
    ("{not json", [], "not a readable JSON result"),
    ("[1, 2]", [], "not a check result"),
    ('{"claim": "no-such-check", "params": {}, "rows": []}', [], "not a check with a figure"),
    ("EXPLORATORY", ["mixing"], "does not match the result's claim"),
    ("EXPLORATORY", ["mixing", "haar-law"], "give one NAME"),
])
def test_from_refuses_a_bad_file_in_one_line(tmp_path, exploratory, capsys, content, argv, message):
    path = exploratory if content == "EXPLORATORY" else tmp_path / "r.json"
    if content not in (None, "EXPLORATORY"):
        path.write_text(content)
    assert main(["figures", *argv, "--from", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stylized: error: ") and message in err
    assert not list(path.parent.glob("*.png"))


def test_result_plot_saves_png_and_pdf_in_the_theme(tmp_path, monkeypatch):
    import matplotlib as mpl
    from matplotlib.figure import Figure

    from stylized.harness.api import Result

    data = json.loads(COMMITTED.read_text())
    r = Result(name=data["claim"], claim=data["paper_claim"], holds=bool(data["holds"]), rows=data["rows"],
               headline=data["headline"], params=data["params"], seconds=data["seconds"], data=data)
    seen = []
    real = Figure.savefig

    def savefig(self, *a, **k):
        seen.append(mpl.rcParams["font.size"])
        return real(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", savefig)
    with mpl.rc_context({"font.size": 15.0}):  # a user's own style must not leak into the saved figure
        fig = r.plot(tmp_path / "mine.png")
    assert isinstance(fig, Figure)
    assert (tmp_path / "mine.png").is_file() and (tmp_path / "mine.pdf").is_file()
    from stylized.harness.plotting import rc_params

    assert len(seen) >= 2 and set(seen) == {rc_params()["font.size"]}  # the check's own save, then ours
    assert all(t.get_fontsize() <= 10 for t in fig.findobj(mpl.text.Text) if t.get_text())
