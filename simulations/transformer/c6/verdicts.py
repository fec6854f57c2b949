"""C6 verdicts: the paper's rows decided by a Welch t-test on the per-seed mean log-ratios.

Every variant is evaluated on the same validation windows (same end positions), so the
per-window log-ratio ``D_v[s, w] = loss_L(w) − loss_{L_train}(w)`` of seed ``s`` is on a common
footing across variants.  The unit of replication is the training seed: seed ``s`` of variant
``v`` gives one number, ``m_v[s] = mean_w D_v[s, w]`` (``PPL(L)/PPL(L_train) = e^{m_v[s]}``), and
the window effects shared by every variant stay inside the fixed window set (the verdict is
conditional on these windows).  A row "A > B" is decided by Welch's t-test
(``scipy.stats.ttest_ind(equal_var=False)``) of ``m_A`` against ``m_B``, two-sided at level
:data:`ALPHA` = 0.05:

* *agrees*: significant, with ``mean m_A > mean m_B`` (the side the paper reports);
* *contradicts*: significant the other way;
* *undecided*: not significant (or fewer than two seeds in an arm: no seed spread to test against).

Each row reports ``Δ = mean m_A − mean m_B`` with its Welch 95% interval (Welch–Satterthwaite
degrees of freedom) and the p-value.  ALiBi "flat": the one-sample t interval (95%) of
``mean m_alibi``, mapped by ``exp``, inside ``[1/1.25, 1.25]`` agrees, entirely outside it
contradicts, otherwise undecided.  Every row uses every seed it is given.  The C6 row holds when
no row contradicts.  The rule's level and power are measured in :mod:`.verdict_level`.  Beside each row's
verdict, :mod:`.magnitude` reads the same interval against the paper's own Δ at the same absolute length (*contradicts
the paper's magnitude* when it excludes it), with that verdict's level measured under the same null.

:func:`pooled_log_ratio` (the paired window-and-seed bootstrap the previous rule used) stays for
the far-context and combined-variant summaries, which report intervals, not verdicts.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["ALPHA", "PAPER_ROWS", "FLAT_BAND", "RULE", "pooled_log_ratio", "seed_means", "welch", "decide",
           "flat_interval", "decide_flat", "paper_verdicts"]

#: two-sided level of every row's test
ALPHA = 0.05
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
#: one line naming the rule (written into the comparison's parameters)
RULE = ("Welch t-test (two-sided, level 0.05) on the per-seed mean log-ratios, every seed of both variants; "
        "ALiBi flat: the 95% t interval of its per-seed mean log-ratio against [1/1.25, 1.25]")


def pooled_log_ratio(diffs: np.ndarray, widx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of ``mean_s mean_w D[s, w]`` for ``diffs`` [seeds, windows].

    ``widx`` [n_boot, windows] are the shared window resamples; seeds are resampled here.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    n_seeds = diffs.shape[0]
    sidx = rng.integers(0, n_seeds, size=(widx.shape[0], n_seeds))
    per_seed = diffs[:, widx].mean(axis=2)  # [seeds, n_boot]
    return np.take_along_axis(per_seed.T, sidx, axis=1).mean(axis=1)


def seed_means(diffs: np.ndarray) -> np.ndarray:
    """Per-seed means ``m[s] = mean_w D[s, w]`` of ``diffs`` [..., seeds, windows] (a 1-D array: one seed)."""
    d = np.asarray(diffs, dtype=float)
    return np.atleast_2d(d).mean(axis=-1) if d.ndim < 2 else d.mean(axis=-1)


def welch(ma: np.ndarray, mb: np.ndarray, alpha: float = ALPHA) -> dict[str, np.ndarray]:
    """Welch's two-sample t-test of per-seed means ``ma`` [..., n_a] against ``mb`` [..., n_b] (last axis: seeds).

    Parameters
    ----------
    ma, mb : ndarray
        Per-seed values of the two arms; leading axes are broadcast (replicates of a simulation).
    alpha : float
        Two-sided level; the interval is the ``1 − alpha`` Welch interval of the difference of means.

    Returns
    -------
    dict
        ``delta`` (mean A − mean B), ``ci_low``, ``ci_high``, ``p`` (two-sided, as
        ``scipy.stats.ttest_ind(equal_var=False)``), ``df`` (Welch–Satterthwaite), ``t``; NaN where an arm
        has fewer than two seeds or both arms have zero spread.
    """
    ma, mb = np.asarray(ma, dtype=float), np.asarray(mb, dtype=float)
    na, nb = ma.shape[-1], mb.shape[-1]
    delta = ma.mean(axis=-1) - mb.mean(axis=-1)
    if na < 2 or nb < 2:
        nan = np.full(np.shape(delta), np.nan)
        return {"delta": delta, "ci_low": nan, "ci_high": nan, "p": nan, "df": nan, "t": nan}
    qa, qb = ma.var(axis=-1, ddof=1) / na, mb.var(axis=-1, ddof=1) / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(qa + qb)
        df = (qa + qb) ** 2 / (qa**2 / (na - 1) + qb**2 / (nb - 1))
        t = delta / se
        p = 2 * stats.t.sf(np.abs(t), df)
        half = stats.t.ppf(1 - alpha / 2, df) * se
    return {"delta": delta, "ci_low": delta - half, "ci_high": delta + half, "p": p, "df": df, "t": t}


def decide(delta: np.ndarray, p: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """``"agrees"`` (significant, ``delta > 0``), ``"contradicts"`` (significant, ``delta < 0``) or ``"undecided"``."""
    delta, p = np.asarray(delta, dtype=float), np.asarray(p, dtype=float)
    sig = np.nan_to_num(p, nan=1.0) < alpha
    return np.where(sig & (delta > 0), "agrees", np.where(sig & (delta < 0), "contradicts", "undecided"))


def flat_interval(m: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """The ``1 − alpha`` one-sample t interval of the mean of ``m`` [..., seeds] (NaN with fewer than two seeds)."""
    m = np.asarray(m, dtype=float)
    n = m.shape[-1]
    mean = m.mean(axis=-1)
    if n < 2:
        nan = np.full(np.shape(mean), np.nan)
        return nan, nan
    half = stats.t.ppf(1 - alpha / 2, n - 1) * m.std(axis=-1, ddof=1) / np.sqrt(n)
    return mean - half, mean + half


def decide_flat(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The ALiBi-flat verdict of a log-ratio interval ``[lo, hi]`` against ``log FLAT_BAND``."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    blo, bhi = np.log(FLAT_BAND[0]), np.log(FLAT_BAND[1])
    inside = (lo >= blo) & (hi <= bhi)
    outside = (lo > bhi) | (hi < blo)
    return np.where(inside, "agrees", np.where(outside, "contradicts", "undecided"))


def verdict_row(a: str, b: str, ma: np.ndarray, mb: np.ndarray) -> dict:
    w = welch(ma, mb)
    return {"row": f"{a} > {b}", "a": a, "b": b, "seeds_a": int(ma.size), "seeds_b": int(mb.size),
            "ratio_a": float(np.exp(ma.mean())), "ratio_b": float(np.exp(mb.mean())),
            "per_seed_a": ma.tolist(), "per_seed_b": mb.tolist(),
            "sd_a": float(ma.std(ddof=1)) if ma.size > 1 else None,
            "sd_b": float(mb.std(ddof=1)) if mb.size > 1 else None,
            "delta_log": float(w["delta"]), "ci_low": float(w["ci_low"]), "ci_high": float(w["ci_high"]),
            "p": float(w["p"]), "df": float(w["df"]), "verdict": str(decide(w["delta"], w["p"]))}


def paper_verdicts(diffs: dict[str, np.ndarray], multiple: int) -> dict:
    """Decide every paper row at one length multiple (the rule in the module docstring).

    Parameters
    ----------
    diffs : dict
        variant -> per-window log-ratio array [seeds, windows] (the same windows for all).
    multiple : int
        The length multiple the rows refer to (reported back).

    Returns
    -------
    dict
        ``rows`` (one per comparison: A, B, seeds of each, per-seed mean log-ratios and their SDs, Δ with its
        Welch 95% interval, p, df, verdict; the ALiBi row its ratio's t interval), ``holds`` (no row
        contradicts; None when no row is decidable), ``multiple``, ``alpha``, ``rule``.
    """
    means = {v: seed_means(d) for v, d in diffs.items()}
    rows = []
    for a, b in PAPER_ROWS:
        if a not in means or b not in means:
            rows.append({"row": f"{a} > {b}", "a": a, "b": b, "verdict": "not run"})
            continue
        rows.append(verdict_row(a, b, means[a], means[b]))
    label = f"alibi flat (ratio in [{FLAT_BAND[0]:.2f}, {FLAT_BAND[1]:.2f}])"
    if "alibi" in means:
        m = means["alibi"]
        lo, hi = flat_interval(m)
        rows.append({"row": label, "a": "alibi", "b": None, "seeds_a": int(m.size), "per_seed_a": m.tolist(),
                     "sd_a": float(m.std(ddof=1)) if m.size > 1 else None, "ratio_a": float(np.exp(m.mean())),
                     "ci_low": float(np.exp(lo)), "ci_high": float(np.exp(hi)), "verdict": str(decide_flat(lo, hi))})
    else:
        rows.append({"row": "alibi flat", "a": "alibi", "b": None, "verdict": "not run"})
    decided = [r for r in rows if r["verdict"] in ("agrees", "contradicts", "undecided")]
    holds = None if not decided else not any(r["verdict"] == "contradicts" for r in decided)
    return {"rows": rows, "holds": holds, "multiple": multiple, "alpha": ALPHA, "rule": RULE}
