"""Every figure is drawn in one theme: ≤ 7 in wide at 150 dpi, PNG and PDF, no layout warnings, no overlapping labels.

Each registered check's plot runs on a small result (the check's ``reduced`` sizes, results and
figures in a temporary folder); matplotlib's tight/constrained-layout warnings and missing-glyph
warnings are errors.  The slower reduced runs are marked ``slow``; the transformer figures are
drawn from the committed results (no training) and need torch.
"""

from __future__ import annotations

import json
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from stylized import plotting as sp
from stylized.registry import load_checks

CHECKS = {k: c for k, c in load_checks().items() if c.plot is not None}
ROOT = Path(__file__).resolve().parents[1]
SLOW = {"mixing", "far-mass-growth", "score-gap", "transfer", "mixing-spectrum", "far-retrieval", "value-independent-stream"}
LAYOUT_WARNING = r"(?is).*(tight.?layout|constrained.?layout|not compatible with tight|axes sizes collapsed|Glyph .* missing)"


@contextmanager
def strict_layout():
    """matplotlib's layout and missing-glyph warnings raise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=LAYOUT_WARNING)
        yield


def _bbox_items(fig) -> list[tuple[str, object]]:
    """(kind, bbox) of every title, axis label, legend, tick label and figure text, in display units."""
    r = fig.canvas.get_renderer()
    items = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label):
            if t.get_visible() and t.get_text():
                items.append((f"ax{i}:text", t.get_window_extent(r)))
        leg = ax.get_legend()
        if leg is not None:
            items.append((f"ax{i}:legend", leg.get_window_extent(r)))
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis._update_ticks():  # the ticks actually drawn (inside the view limits)
                for t in (tick.label1, tick.label2):
                    if t.get_visible() and t.get_text():
                        items.append((f"ax{i}:tick", t.get_window_extent(r)))
    for t in fig.texts:
        if t.get_visible() and t.get_text():
            items.append(("fig:text", t.get_window_extent(r)))
    for leg in fig.legends:
        items.append(("fig:legend", leg.get_window_extent(r)))
    return items


def overlapping_labels(fig) -> list[str]:
    """Pairs of labels whose boxes overlap by more than 2 px each way (tick labels are only compared with the rest)."""
    fig.canvas.draw()
    items = _bbox_items(fig)
    bad = []
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            (ka, ba), (kb, bb) = items[a], items[b]
            if ka.endswith("tick") and kb.endswith("tick"):
                continue
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if w > 2 and h > 2:
                bad.append(f"{ka} × {kb}")
    return bad


@pytest.fixture()
def inspected(monkeypatch):
    """Wrap :func:`stylized.plotting.save`: record each figure's width and any overlapping labels."""
    seen: list[dict] = []
    real = sp.save

    def save(fig, path):
        seen.append({"path": Path(path), "width": float(fig.get_size_inches()[0]), "overlaps": overlapping_labels(fig)})
        return real(fig, path)

    monkeypatch.setattr(sp, "save", save)
    return seen


def assert_figures_ok(paths: list[Path], seen: list[dict]) -> None:
    from PIL import Image

    assert paths, "the plot wrote no figure"
    assert len(seen) == len(paths), "every figure must be written by stylized.plotting.save"
    for s in seen:
        assert s["width"] <= sp.MAX_WIDTH + 1e-9, f"{s['path']}: {s['width']:.2f} in wide"
        assert not s["overlaps"], f"{s['path'].name}: overlapping labels {s['overlaps']}"
    for p in paths:
        p = Path(p)
        assert p.suffix == ".png" and p.is_file()
        with Image.open(p) as im:
            assert im.size[0] <= round(sp.MAX_WIDTH * sp.DPI), f"{p.name}: {im.size[0]} px wide"
        pdf = p.with_suffix(".pdf")
        assert pdf.is_file(), f"{pdf.name} missing"
        box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf.read_bytes())
        assert box and float(box.group(1)) <= sp.MAX_WIDTH * 72 + 0.5
        assert not list(p.parent.glob(f".{p.stem}.tmp*")), "a temporary file was left behind"


# far-retrieval's figure module still draws through simulations._common (its owner moves it to
# stylized.plotting); the mark is not strict, so the test passes as soon as it does.
PENDING = {"far-retrieval": "draws through simulations._common, not yet stylized.plotting"}


def _param(name: str):
    marks = [pytest.mark.slow] if name in SLOW else []
    if name in PENDING:
        marks.append(pytest.mark.xfail(reason=PENDING[name], strict=False))
    return pytest.param(name, marks=marks)


@pytest.mark.parametrize("name", [_param(n) for n in CHECKS])
def test_check_figure_renders_from_a_reduced_run(name, tmp_results, inspected):
    from stylized.falsify import run_reduced

    r = run_reduced(CHECKS[name], seed=0)["result"]
    with strict_layout():
        paths = CHECKS[name].plot(r, tmp_results / "figures")
    assert_figures_ok(paths, inspected)


@pytest.mark.slow
@pytest.mark.parametrize("name", [_param(n) for n in CHECKS if (ROOT / "simulations" / "results" / f"{n}.json").is_file()])
def test_committed_figure_renders_from_the_committed_result(name, tmp_path, inspected):
    r = json.loads((ROOT / "simulations" / "results" / f"{name}.json").read_text())
    with strict_layout():
        paths = CHECKS[name].plot(r, tmp_path)
    assert_figures_ok(paths, inspected)


def test_transformer_figures_render_from_the_committed_results(tmp_path, inspected):
    pytest.importorskip("torch")
    from simulations.transformer.compare import plot_compare
    from simulations.transformer.lr_sweep import plot_sweep

    res = ROOT / "simulations" / "results" / "transformer"
    if not (res / "cpu_compare.json").is_file() or not (res / "cpu_lr_sweep.json").is_file():
        pytest.skip("no committed transformer results")
    with strict_layout():
        paths = [plot_compare(res / "cpu_compare.json", tmp_path / "ppl.png"),
                 plot_sweep(res / "cpu_lr_sweep.json", tmp_path / "sweep.png")]
    assert_figures_ok(paths, inspected)


class TestPlotting:
    def test_theme_is_scoped(self):
        import matplotlib as mpl

        before = dict(mpl.rcParams)
        with sp.theme():
            assert mpl.rcParams["savefig.dpi"] == sp.DPI
            assert mpl.rcParams["mathtext.fontset"] == "dejavusans"
        assert dict(mpl.rcParams) == before
        sp.themed(lambda: None)()
        assert dict(mpl.rcParams) == before

    def test_width_above_one_column_is_refused(self):
        with sp.theme(), pytest.raises(ValueError, match="width"):
            sp.figure(width=7.5)

    def test_save_writes_png_and_pdf_atomically(self, tmp_path, inspected):
        with sp.theme(), strict_layout():
            fig, (ax,) = sp.figure(height=2.0)
            ax.plot([1, 2], [1, 2], label=r"$e^{2\lambda}$")
            ax.legend()
            sp.caption(fig, "a caption long enough to wrap " * 12)
            out = sp.save(fig, tmp_path / "sub" / "f.png")
        assert out == tmp_path / "sub" / "f.png"
        assert_figures_ok([out], inspected)

    def test_caption_grows_the_figure_not_the_panels(self):
        import matplotlib.pyplot as plt

        with sp.theme():
            fig, (ax,) = sp.figure(height=2.0)
            ax.set_title("title")
            sp.caption(fig, "word " * 200)
            assert fig.get_size_inches()[1] > 2.3
            assert not overlapping_labels(fig)
            plt.close(fig)

    def test_measurement_below_the_floor_is_not_drawn_as_data(self):
        import matplotlib.pyplot as plt

        with sp.theme():
            fig, (ax,) = sp.figure(height=2.0)
            sp.theory_vs_measurement(ax, [1, 2, 3], [0.5, 1e-5, None], [0.4, -1e-3, None], [0.6, 1e-3, None],
                                     theory=[0.5, 0.1, 0.01], floor=1e-4, label="m")
            ax.set_yscale("log")
            ax.set_ylim(1e-6, 1)
            sp.noise_floor(ax, 1e-4)
            assert ax.get_ylim() == pytest.approx((1e-6, 1))
            data = ax.containers[0].lines[0].get_xydata()  # the error-bar markers: only the resolved point
            assert np.array_equal(data, [[1.0, 0.5]])
            plt.close(fig)

    def test_overlap_detector_sees_colliding_titles(self):
        import matplotlib.pyplot as plt

        with sp.theme():
            fig, axes = sp.figure(1, 3, width=4.0, height=2.0)
            for ax in axes:
                ax.set_title("a title far too long for a third of four inches")
            assert overlapping_labels(fig)
            plt.close(fig)
