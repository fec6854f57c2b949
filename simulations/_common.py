"""Shared pieces of the experiments: family options, plotting style, figure saving."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stylized.families import FAMILY_NAMES, StepFamily, make_family
from stylized.options import Choice, Choices, Float, Int
from stylized.registry import Option

__all__ = ["errorbar_rows", "family_options", "family_from_params", "families_from_params", "save_figure", "new_figure", "caption"]


def family_options(family_default: str = "householder", d_default: int = 64, multi: bool = False) -> tuple[Option, ...]:
    """The options that pick a step family and its parameters."""
    fam_help = f"step family: {', '.join(FAMILY_NAMES)}" + (" (comma list, or 'all')" if multi else "")
    return (
        Option("family", family_default, fam_help, Choices(*FAMILY_NAMES, "all") if multi else Choice(*FAMILY_NAMES)),
        Option("d", d_default, "dimension d (even for SO(2) families)", Int(2, 4096, size=True)),
        Option("omega", 1.0, "so2-uniform: angle half-width ω in (0, π]", Float(0, np.pi, lo_open=True)),
        Option("sigma", 0.5, "so2-normal: angle standard deviation σ > 0 (μ = 0)", Float(0, 1e6, lo_open=True)),
        Option("p", 0.1, "lazy-haar: probability p ∈ (0, 1] of a Haar step", Float(0, 1, lo_open=True)),
        Option("base", 10000.0, "rope-random: RoPE base (ω_b = base^(−2b/d))", Float(1, 1e12, lo_open=True)),
    )


def family_from_params(params: dict, name: str | None = None) -> StepFamily:
    return make_family(name or params["family"], params["d"], omega=params["omega"], sigma=params["sigma"],
                       p=params["p"], base=params["base"])


def families_from_params(params: dict) -> list[StepFamily]:
    names = params["family"]
    names = [names] if isinstance(names, str) else list(names)
    if names == ["all"]:
        names = list(FAMILY_NAMES)
    return [family_from_params(params, n) for n in names]


def errorbar_rows(ax, x, rows: list[dict], floor: float | None = None, **kw):
    """Plot each row's ``estimate`` at ``x`` with its interval ``[ci_low, ci_high]`` as error bars.

    ``floor`` clips the estimate and the lower end from below (for log axes).
    """
    est = np.array([r["estimate"] for r in rows], dtype=float)
    lo = np.array([r["ci_low"] for r in rows], dtype=float)
    hi = np.array([r["ci_high"] for r in rows], dtype=float)
    if floor is not None:
        est, lo = np.maximum(est, floor), np.maximum(lo, floor)
    return ax.errorbar(x, est, yerr=[est - lo, hi - est], **kw)


def new_figure(ncols: int = 1, width: float = 6.0, height: float = 4.2):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, axes[0]


def caption(fig, text: str) -> None:
    fig.text(0.01, 0.005, text, fontsize=8, color="0.3", ha="left", va="bottom", wrap=True)


def save_figure(fig, outdir: Path, name: str) -> Path:
    """Save ``fig`` to ``outdir/name.png`` atomically and close it."""
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"{name}.png"
    tmp = outdir / f".{name}.tmp.png"
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(tmp, dpi=130)
    plt.close(fig)
    tmp.replace(path)
    return path


def finite(x) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in x], dtype=float)
