"""Every figure is drawn in one theme: ≤ 7 in wide at 150 dpi, PNG and PDF, no layout warnings, no overlapping labels.

Each registered check's plot runs on a small result (the check's ``reduced`` sizes, results and
figures in a temporary folder); matplotlib's tight/constrained-layout warnings and missing-glyph
warnings are errors.  Every figure must be made by :func:`stylized.harness.plotting.figure` (or ``mosaic``)
with the theme's rcParams in effect, its text within the theme's sizes, and saved by
:func:`stylized.harness.plotting.save` (a PDF beside every PNG).  The slower reduced runs are marked ``slow``;
the transformer figures are drawn from the committed results (no training, no checkpoint) and need torch.
"""

from __future__ import annotations

import json
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from stylized.harness import plotting as sp
from stylized.harness.registry import load_checks

CHECKS = {k: c for k, c in load_checks().items() if c.plot is not None}
ROOT = Path(__file__).resolve().parents[2]
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


#: the theme's rcParams that a figure drawn outside it would not have (checked where each figure is made)
THEME_KEYS = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize", "legend.fontsize",
              "mathtext.fontset", "axes.prop_cycle", "axes.grid", "axes.facecolor", "figure.dpi")
TEXT_POINTS = (5.5, 10.0)  # every text of a figure, in points: readable in print, not louder than the title size


def _theme_in_effect() -> list[str]:
    """The :data:`THEME_KEYS` whose current value differs from :func:`stylized.harness.plotting.rc_params`."""
    import matplotlib as mpl

    want = sp.rc_params()
    return [k for k in THEME_KEYS if mpl.rcParams[k] != mpl.rcParams.validate[k](want[k])]


def _text_sizes_off(fig) -> list[str]:
    """Visible texts of ``fig`` outside :data:`TEXT_POINTS`."""
    from matplotlib.text import Text

    lo, hi = TEXT_POINTS
    return [f"{t.get_text()[:30]!r} at {t.get_fontsize():g} pt" for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and not lo <= t.get_fontsize() <= hi]


@pytest.fixture()
def inspected(monkeypatch):
    """Wrap :func:`stylized.harness.plotting.figure`, ``mosaic`` and ``save``: record whether each figure was made with the
    theme in effect, and at save time its width, text sizes and any overlapping labels."""
    seen: list[dict] = []
    made: dict[int, list[str]] = {}
    real_save = sp.save

    def maker(real):
        def make(*a, **k):
            out = real(*a, **k)
            made[id(out[0])] = _theme_in_effect()
            return out
        return make

    def save(fig, path, **kw):
        seen.append({"path": Path(path), "width": float(fig.get_size_inches()[0]), "overlaps": overlapping_labels(fig),
                     "theme": made.get(id(fig), ["not made by stylized.harness.plotting.figure or mosaic"]),
                     "sizes": _text_sizes_off(fig)})
        return real_save(fig, path, **kw)

    monkeypatch.setattr(sp, "figure", maker(sp.figure))
    monkeypatch.setattr(sp, "mosaic", maker(sp.mosaic))
    monkeypatch.setattr(sp, "save", save)
    return seen


def assert_figures_ok(paths: list[Path], seen: list[dict]) -> None:
    from PIL import Image

    assert paths, "the plot wrote no figure"
    assert len(seen) == len(paths), "every figure must be written by stylized.harness.plotting.save"
    for s in seen:
        assert s["width"] <= sp.MAX_WIDTH + 1e-9, f"{s['path']}: {s['width']:.2f} in wide"
        assert not s["overlaps"], f"{s['path'].name}: overlapping labels {s['overlaps']}"
        assert not s["theme"], f"{s['path'].name}: drawn outside the theme ({s['theme']})"
        assert not s["sizes"], f"{s['path'].name}: text outside {TEXT_POINTS} pt: {s['sizes'][:3]}"
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


def _param(name: str):
    return pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])


@pytest.mark.parametrize("name", [_param(n) for n in CHECKS])
def test_check_figure_renders_from_a_reduced_run(name, tmp_results, inspected, check_runs):
    r = check_runs.reduced(name, seed=0)["result"]
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
    """Every transformer figure from the committed JSON alone (no checkpoint is read)."""
    pytest.importorskip("torch")
    from simulations.transformer.bridge.plot import plot_bridge
    from simulations.transformer.c6.lr_robustness import plot_robustness
    from simulations.transformer.c6.lr_sweep import plot_sweep
    from simulations.transformer.c6.plot import plot_compare
    from simulations.transformer.evaluate.far_context import plot_far_context
    from simulations.transformer.evaluate.passkey import plot_passkey
    from simulations.transformer.recall.report import plot_recall

    res = ROOT / "simulations" / "results" / "transformer"
    need = ("cpu_compare.json", "cpu_lr_sweep.json", "passkey_cpu.json", "far_context_cpu.json", "bridge_cpu.json",
            "cpu_lr_robustness.json", "recall_cpu.json")
    if not all((res / n).is_file() for n in need):
        pytest.skip("no committed transformer results")
    with strict_layout():
        paths = [plot_compare(res / "cpu_compare.json", tmp_path / "ppl.png"),
                 plot_sweep(res / "cpu_lr_sweep.json", tmp_path / "sweep.png"),
                 plot_passkey(res / "passkey_cpu.json", tmp_path / "passkey.png"),
                 plot_far_context(res / "far_context_cpu.json", tmp_path / "far.png"),
                 plot_bridge(json.loads((res / "bridge_cpu.json").read_text()), tmp_path / "bridge.png"),
                 plot_robustness(res / "cpu_lr_robustness.json", tmp_path / "robustness.png"),
                 plot_recall(res / "recall_cpu.json", tmp_path / "recall.png")]
    assert_figures_ok(paths, inspected)


def test_every_committed_figure_has_its_pdf():
    """``figures/``: a PDF beside every PNG and a PNG beside every PDF."""
    figs = ROOT / "figures"
    pngs, pdfs = ({p.stem for p in figs.glob(f"*.{ext}")} for ext in ("png", "pdf"))
    assert pngs, "no committed figures"
    assert pngs == pdfs, f"PNG without PDF: {sorted(pngs - pdfs)}; PDF without PNG: {sorted(pdfs - pngs)}"


def test_no_second_plot_style_remains():
    """Every figure goes through stylized.harness.plotting: no module draws with its own style or saves by itself."""
    import simulations._common as common

    assert not {"new_figure", "save_figure", "caption"} & set(vars(common))
    offenders = []
    for f in sorted((ROOT / "simulations").rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if re.search(r"sns\.set_theme|matplotlib\.use\(|\.savefig\(|plt\.subplots\(", text):
            offenders.append(str(f.relative_to(ROOT)))
    assert offenders == [], f"draw or save outside stylized.harness.plotting: {offenders}"


class TestPlotting:
    def test_theme_is_scoped(self):
        import matplotlib as mpl

        before = dict(mpl.rcParams)
        with sp.theme():
            assert mpl.rcParams["savefig.dpi"] == sp.DPI
            assert mpl.rcParams["mathtext.fontset"] == "dejavusans"
            assert not _theme_in_effect()
        assert dict(mpl.rcParams) == before
        sp.themed(lambda: None)()
        assert dict(mpl.rcParams) == before

    def test_the_theme_detector_sees_a_figure_drawn_outside_it(self):
        import matplotlib as mpl

        with mpl.rc_context({"font.size": 12.0, "axes.grid": False}):
            assert {"font.size", "axes.grid"} <= set(_theme_in_effect())

    def test_save_writes_inside_the_theme_whoever_calls(self, tmp_path, monkeypatch):
        """Outside any theme, sp.save still writes with the theme's rcParams (the PDF with TrueType fonts)."""
        import matplotlib as mpl

        with sp.theme():
            fig, (ax,) = sp.figure(height=2.0)
            ax.set_title(r"$\alpha$")
        seen = []
        real = type(fig).savefig

        def savefig(self, *a, **k):
            seen.append((mpl.rcParams["pdf.fonttype"], mpl.rcParams["mathtext.fontset"]))
            return real(self, *a, **k)

        monkeypatch.setattr(type(fig), "savefig", savefig)
        sp.save(fig, tmp_path / "f")
        assert seen == [(42, "dejavusans")] * 2
        assert (tmp_path / "f.png").is_file() and (tmp_path / "f.pdf").is_file()

    def test_a_failed_save_leaves_no_temporary_file_and_closes_the_figure(self, tmp_path, monkeypatch):
        import errno

        import matplotlib.pyplot as plt

        with sp.theme():
            fig, _ = sp.figure(height=2.0)

        def fails_halfway(path, **kw):
            Path(path).write_bytes(b"\x89PNG partial")
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(fig, "savefig", fails_halfway)
        with pytest.raises(OSError):
            sp.save(fig, tmp_path / "fig")
        assert list(tmp_path.iterdir()) == [] and not plt.fignum_exists(fig.number)

    def test_variant_styles_are_distinct(self):
        names = ["rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk", "learned-qkv", "path"]
        styles = [sp.variant_style(v) for v in names]
        assert len({s["color"] for s in styles}) == len({s["marker"] for s in styles}) == len(names)

    def test_readable_log_axis_labels_1_2_5(self):
        import matplotlib.pyplot as plt

        with sp.theme():
            fig, (ax,) = sp.figure(height=2.0)
            ax.set_yscale("log")
            ax.set_ylim(0.8, 30)
            sp.readable_log_axis(ax.yaxis)
            fig.canvas.draw()
            labels = [t.get_text() for t in ax.get_yticklabels() if 0.8 <= t.get_position()[1] <= 30]
            plt.close(fig)
        assert labels == ["1", "2", "5", "10", "20"]

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
