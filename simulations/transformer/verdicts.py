"""C6 verdicts: the paper's rows decided by a paired bootstrap over windows and seeds.

Every variant is evaluated on the same validation windows (same end positions), so the
per-window log-ratio ``D_v[s, w] = loss_L(w) − loss_{L_train}(w)`` of seed ``s`` can be
paired across variants.  The variant's log ratio is ``r_v = mean_s mean_w D_v[s, w]``
(``PPL(L)/PPL(L_train) = e^{r_v}``).  One bootstrap resample draws the windows with
replacement (the same draw for every variant) and, independently per variant, its seeds
with replacement; the 95% percentile interval of ``r_A − r_B`` decides a row:

* *agrees*: the interval excludes 0 on the side the paper reports;
* *contradicts*: it excludes 0 on the other side;
* *undecided*: it contains 0 (no difference resolved at this size).

ALiBi "flat": the interval of ``e^{r_alibi}`` inside ``[1/1.25, 1.25]`` agrees, entirely
outside it contradicts, otherwise undecided.  The C6 row holds when no row contradicts.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PAPER_ROWS", "FLAT_BAND", "pooled_log_ratio", "paper_verdicts"]

#: (A, B): the paper reports PPL ratio of A above B at the longest length
PAPER_ROWS: tuple[tuple[str, str], ...] = (
    ("rope", "random-qk"),
    ("random-qk", "random-qkv"),
    ("rope", "learned-qk"),
    ("rope", "learned-qkv"),
    ("learned-qk", "learned-qkv"),
)
#: ALiBi is "flat" when its ratio's interval lies inside this band
FLAT_BAND = (1 / 1.25, 1.25)


def _boot_indices(n_windows: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, n_windows, size=(n_boot, n_windows))


def pooled_log_ratio(diffs: np.ndarray, widx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of ``mean_s mean_w D[s, w]`` for ``diffs`` [seeds, windows].

    ``widx`` [n_boot, windows] are the shared window resamples; seeds are resampled here.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    n_seeds = diffs.shape[0]
    sidx = rng.integers(0, n_seeds, size=(widx.shape[0], n_seeds))
    per_seed = diffs[:, widx].mean(axis=2)  # [seeds, n_boot]
    return np.take_along_axis(per_seed.T, sidx, axis=1).mean(axis=1)


def _decide(lo: float, hi: float) -> str:
    return "agrees" if lo > 0 else "contradicts" if hi < 0 else "undecided"


def paper_verdicts(diffs: dict[str, np.ndarray], multiple: int, n_boot: int = 4000, seed: int = 0) -> dict:
    """Decide every paper row at one length multiple.

    Parameters
    ----------
    diffs : dict
        variant -> per-window log-ratio array [seeds, windows] (the same windows for all).
    multiple : int
        The length multiple the rows refer to (reported back).

    Returns
    -------
    dict
        ``rows`` (one per comparison: A, B, seeds of each, Δ = r_A − r_B with its 95%
        interval, verdict), ``holds`` (no row contradicts; None when no row is decidable),
        ``n_boot``.
    """
    if not diffs:
        return {"rows": [], "holds": None, "n_boot": n_boot, "multiple": multiple}
    n_windows = next(iter(diffs.values())).shape[-1]
    rng = np.random.default_rng(seed)
    widx = _boot_indices(n_windows, n_boot, rng)
    draws = {v: pooled_log_ratio(d, widx, rng) for v, d in diffs.items()}
    point = {v: float(np.atleast_2d(d).mean()) for v, d in diffs.items()}
    rows = []
    for a, b in PAPER_ROWS:
        if a not in draws or b not in draws:
            rows.append({"row": f"{a} > {b}", "a": a, "b": b, "verdict": "not run"})
            continue
        delta = draws[a] - draws[b]
        lo, hi = np.percentile(delta, [2.5, 97.5])
        rows.append({"row": f"{a} > {b}", "a": a, "b": b,
                     "seeds_a": int(np.atleast_2d(diffs[a]).shape[0]), "seeds_b": int(np.atleast_2d(diffs[b]).shape[0]),
                     "ratio_a": float(np.exp(point[a])), "ratio_b": float(np.exp(point[b])),
                     "delta_log": point[a] - point[b], "ci_low": float(lo), "ci_high": float(hi),
                     "verdict": _decide(lo, hi)})
    if "alibi" in draws:
        lo, hi = np.exp(np.percentile(draws["alibi"], [2.5, 97.5]))
        inside = FLAT_BAND[0] <= lo and hi <= FLAT_BAND[1]
        outside = lo > FLAT_BAND[1] or hi < FLAT_BAND[0]
        rows.append({"row": f"alibi flat (ratio in [{FLAT_BAND[0]:.2f}, {FLAT_BAND[1]:.2f}])", "a": "alibi", "b": None,
                     "seeds_a": int(np.atleast_2d(diffs["alibi"]).shape[0]), "ratio_a": float(np.exp(point["alibi"])),
                     "ci_low": float(lo), "ci_high": float(hi),
                     "verdict": "agrees" if inside else "contradicts" if outside else "undecided"})
    else:
        rows.append({"row": "alibi flat", "a": "alibi", "b": None, "verdict": "not run"})
    decided = [r for r in rows if r["verdict"] in ("agrees", "contradicts", "undecided")]
    holds = None if not decided else not any(r["verdict"] == "contradicts" for r in decided)
    return {"rows": rows, "holds": holds, "n_boot": n_boot, "multiple": multiple}
