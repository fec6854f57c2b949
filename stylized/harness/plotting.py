"""One plot theme for every figure: single-column widths, mathtext, PNG and PDF written atomically.

Every figure of the project (the stylized checks and the transformer) is drawn inside
:func:`theme` (or a function decorated with :func:`themed`), laid out by matplotlib's
constrained layout, and written by :func:`save`.  Nothing is changed globally at import.

The two recurring panel types have one helper each: :func:`theory_vs_measurement` draws Monte
Carlo estimates with their intervals beside the theory curve in the same colour, and
:func:`noise_floor` shades the region an estimate cannot resolve instead of drawing it as data.
"""

from __future__ import annotations

import functools
import os
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAX_WIDTH", "DPI", "rc_params", "theme", "themed", "figure", "mosaic", "caption", "save",
           "theory_vs_measurement", "noise_floor", "as_float", "QUALITATIVE", "MARKERS", "variant_style",
           "readable_log_axis", "reference_label"]

MAX_WIDTH = 7.0  # inches: one column of a page; at DPI that is 1,050 px
DPI = 150
CAPTION_SIZE = 7.0  # points


def rc_params() -> dict[str, Any]:
    """The theme: seaborn's ``whitegrid`` style at ``paper`` context, mathtext in the text font."""
    import seaborn as sns
    from cycler import cycler

    rc: dict[str, Any] = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper")}
    rc.update({
        "font.size": 8.5, "axes.titlesize": 9.0, "axes.labelsize": 8.5, "xtick.labelsize": 7.5,
        "ytick.labelsize": 7.5, "legend.fontsize": 7.0, "legend.title_fontsize": 7.0, "figure.titlesize": 10.0,
        "axes.titleweight": "normal", "legend.framealpha": 0.85, "legend.frameon": True,
        "legend.borderaxespad": 0.4, "legend.handlelength": 1.8, "lines.markersize": 4.0, "lines.linewidth": 1.3,
        "errorbar.capsize": 2.0, "mathtext.fontset": "dejavusans", "figure.dpi": DPI, "savefig.dpi": DPI,
        "figure.constrained_layout.use": True, "xtick.bottom": True, "ytick.left": True,
        "xtick.major.size": 3.0, "ytick.major.size": 3.0, "xtick.minor.size": 1.5, "ytick.minor.size": 1.5,
        "axes.prop_cycle": cycler(color=sns.color_palette("colorblind", 10)),
        "pdf.fonttype": 42, "svg.fonttype": "none",
    })
    return rc


@contextmanager
def theme() -> Iterator[None]:
    """Draw (and save) inside this context to get the project's theme; rcParams are restored on exit."""
    import matplotlib  # the backend is left alone: headless machines fall back to Agg by themselves

    with matplotlib.rc_context(rc_params()):
        yield


def themed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: run a plot function inside :func:`theme`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with theme():
            return fn(*args, **kwargs)

    return wrapper


def _check_width(width: float) -> float:
    if not 0 < width <= MAX_WIDTH:
        raise ValueError(f"width must be in (0, {MAX_WIDTH:g}] inches (one column), got {width!r}")
    return float(width)


def figure(nrows: int = 1, ncols: int = 1, *, width: float = MAX_WIDTH, height: float | None = None,
           **subplot_kw: Any):
    """A figure of ``nrows × ncols`` panels under constrained layout.

    Parameters
    ----------
    nrows, ncols : int
        Panel grid.
    width : float
        Figure width in inches, in ``(0, 7]`` (one column; ``ValueError`` otherwise).
    height : float, optional
        Figure height in inches; 2.6 in per row by default.  :func:`caption` adds its own height.
    **subplot_kw
        Passed to :func:`matplotlib.pyplot.subplots` (``sharex``, ``sharey``, ...).

    Returns
    -------
    fig, axes
        The figure and its axes as a flat array.
    """
    import matplotlib.pyplot as plt

    width = _check_width(width)
    height = 2.6 * nrows + 0.3 if height is None else float(height)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, layout="constrained",
                             **subplot_kw)
    return fig, axes.ravel()


def mosaic(layout: Sequence[Sequence[str]] | str, *, width: float = MAX_WIDTH, height: float | None = None,
           **kw: Any):
    """A figure from :meth:`matplotlib.figure.Figure.subplot_mosaic` (e.g. one wide panel over two)."""
    import matplotlib.pyplot as plt

    width = _check_width(width)
    nrows = len(layout) if not isinstance(layout, str) else layout.count(";") + 1
    height = 2.6 * nrows + 0.3 if height is None else float(height)
    return plt.subplot_mosaic(layout, figsize=(width, height), layout="constrained", **kw)


def caption(fig, text: str) -> None:
    """Add ``text`` below the panels: wrapped to the figure width, the figure grown to hold it.

    The panels keep their size; constrained layout works above the caption, so they never overlap.
    """
    w, h = fig.get_size_inches()
    chars = max(40, int(w * 72 / (0.6 * CAPTION_SIZE)))
    lines = [ln for para in text.split("\n") for ln in (textwrap.wrap(para, chars) or [""])]
    cap_h = (len(lines) * 1.3 * CAPTION_SIZE + 8) / 72
    fig.set_size_inches(w, h + cap_h)
    frac = cap_h / (h + cap_h)
    fig.get_layout_engine().set(rect=(0, frac, 1, 1 - frac))
    fig.text(0.01, 3 / 72 / (h + cap_h), "\n".join(lines), fontsize=CAPTION_SIZE, color="0.3", ha="left",
             va="bottom", linespacing=1.3)


def save(fig, path: str | os.PathLike, *, close: bool = True) -> Path:
    """Write ``fig`` to ``path`` as PNG (150 dpi) and PDF, each atomically, inside :func:`theme`; close it.

    ``path`` may end in ``.png``, ``.pdf`` or nothing.  Returns the PNG's path.  The files are written
    inside the theme whoever calls (the theme's rcParams that act at save time, e.g. ``mathtext.fontset``
    and the PDF font type, are those of every committed figure).  A failed write leaves no temporary
    file and the previous files untouched.  ``close=False`` keeps the figure open (for
    :meth:`stylized.harness.api.Result.plot`, which returns it).
    """
    import matplotlib.pyplot as plt

    _check_width(round(float(fig.get_size_inches()[0]), 6))
    path = Path(path)
    stem = path.with_suffix("") if path.suffix in (".png", ".pdf") else path
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    try:
        with theme():
            for ext, meta in (("png", {"Software": None}), ("pdf", {"CreationDate": None, "Producer": None})):
                target = stem.parent / f"{stem.name}.{ext}"
                tmp = stem.parent / f".{stem.name}.tmp.{ext}"
                try:
                    fig.savefig(tmp, dpi=DPI, format=ext, metadata=meta)
                    tmp.replace(target)
                except BaseException:
                    tmp.unlink(missing_ok=True)
                    raise
                out.append(target)
    finally:
        if close:
            plt.close(fig)
    return out[0]


QUALITATIVE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#17becf", "#bcbd22")
"""Ten distinct hues (matplotlib's ``tab10``, cyan before olive): one per series where series must be told apart."""
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "h", "<", ">")
"""Ten filled markers, paired with :data:`QUALITATIVE` so that a series is known by hue and by shape."""
_VARIANTS = ("rope", "nope", "alibi", "random-qk", "random-qkv", "learned-qk", "learned-qkv", "path")
_VARIANT_COLOR = dict(zip(_VARIANTS, (QUALITATIVE[0], QUALITATIVE[7], QUALITATIVE[2], QUALITATIVE[1],
                                      QUALITATIVE[3], QUALITATIVE[4], QUALITATIVE[8], QUALITATIVE[5])))


def variant_style(name: str, index: int = 0) -> dict[str, str]:
    """``{"color", "marker"}`` of a transformer variant, the same in every figure.

    The eight variants of the comparison (rope, nope, alibi, random-qk, random-qkv, learned-qk,
    learned-qkv, path) have fixed, distinct hues and markers; any other name gets the ``index``-th
    pair of :data:`QUALITATIVE` and :data:`MARKERS`.

    >>> variant_style("rope")
    {'color': '#1f77b4', 'marker': 'o'}
    """
    if name in _VARIANT_COLOR:
        return {"color": _VARIANT_COLOR[name], "marker": MARKERS[_VARIANTS.index(name)]}
    return {"color": QUALITATIVE[index % len(QUALITATIVE)], "marker": MARKERS[index % len(MARKERS)]}


def readable_log_axis(axis, subs: Sequence[float] = (1.0, 2.0, 5.0)) -> None:
    """Label a log ``axis`` (``ax.xaxis``/``ax.yaxis``) at 1, 2, 5, 10, 20, 50, … in plain numbers (no 10ⁿ).

    ``subs`` are the labelled multiples of each decade; the other integer multiples get unlabelled minor ticks.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=tuple(subs)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(s for s in range(1, 10) if float(s) not in subs)))
    axis.set_minor_formatter(NullFormatter())


def as_float(values: Sequence[Any]) -> np.ndarray:
    """``values`` as floats with ``None`` → NaN."""
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)


def theory_vs_measurement(ax, x: Sequence[float], estimate: Sequence[float], low: Sequence[float],
                          high: Sequence[float], theory: Sequence[float] | None = None, *, color: Any = None,
                          label: str | None = None, theory_label: str | None = None, marker: str = "o",
                          theory_style: str = "--", floor: float | None = None, **kw: Any):
    """Measured estimates with their intervals (markers, bars) and the theory (a line) in one colour.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    x, estimate, low, high : sequence of float
        Abscissae, Monte Carlo estimates and their interval ends (``None`` allowed: not drawn).
    theory : sequence of float, optional
        The closed form (or bound) at ``x``, drawn as a ``theory_style`` line.
    floor : float, optional
        A noise floor (see :func:`noise_floor`): estimates at or below it, or whose interval reaches
        0, are not drawn as data; only the interval's upper end is shown, as a hollow downward triangle.
    **kw
        Passed to :meth:`matplotlib.axes.Axes.errorbar`.

    Returns
    -------
    colour
        The colour used (for matching curves drawn afterwards).
    """
    x, est, lo, hi = (as_float(v) for v in (x, estimate, low, high))
    ok = np.isfinite(est)
    below = np.zeros_like(ok) if floor is None else ok & ((est <= floor) | (lo <= 0))
    good = ok & ~below
    eb = ax.errorbar(x[good], est[good], yerr=[np.clip(est[good] - lo[good], 0, None), np.clip(hi[good] - est[good], 0, None)],
                     fmt=marker, color=color, label=label, zorder=3, **kw)
    color = eb[0].get_color()
    if below.any():
        ax.plot(x[below], np.maximum(hi[below], floor), "v", mfc="none", color=color, zorder=3)
    if theory is not None:
        th = as_float(theory)
        if np.isfinite(th).any():
            ax.plot(x, th, theory_style, color=color, lw=1.1, label=theory_label, zorder=2)
    return color


def reference_label(kinds: Sequence[str | None], noun: str = "law") -> str:
    """A theory's legend label from its rows' ``theory_kind``: ``"exact law"`` when every one is a closed form,
    ``"estimated (Monte Carlo) law"`` when none is, ``"exact or estimated (Monte Carlo) law"`` for a mix: a Monte Carlo
    reference is never labelled exact.

    >>> reference_label(["closed form", "estimated (Monte Carlo, n = 20000)"])
    'exact or estimated (Monte Carlo) law'
    """
    exact = [k is None or str(k) in ("closed form", "exact", "exact interval") for k in kinds]
    word = "exact" if all(exact) else "estimated (Monte Carlo)" if not any(exact) else "exact or estimated (Monte Carlo)"
    return f"{word} {noun}"


def noise_floor(ax, level: float, label: str | None = "noise floor", *, bottom: float | None = None,
                color: str = "0.88") -> None:
    """Shade ``[bottom, level]`` (default: from the axis' current lower limit) as the unresolvable band.

    Call it after the y limits are final; the limits are kept.
    """
    y0, y1 = ax.get_ylim()
    bottom = y0 if bottom is None else bottom
    ax.axhspan(bottom, level, color=color, lw=0, zorder=0, label=label)
    ax.set_ylim(y0, y1)
