"""How sure a verdict is: each check's measured false-rejection rate, and the multi-seed verdict of ``--seeds N``.

The false-rejection rate (FRR) of a check is the share of seeds at which the unmutated check does not hold on
correct theory, measured by ``stylized falsify`` and committed in ``simulations/results/falsify/
false_rejections.json`` (read here, never recomputed; measured at the check's reduced sizes).

``--seeds N`` runs seeds ``s, s+1, …, s+N−1`` and decides by counting: the claim does not hold when at least ``k``
of the ``N`` runs do not hold, ``k`` the smallest count whose probability under a correct claim is at most
:data:`COMBINED_LEVEL`, ``P(Binomial(N, α) ≥ k) ≤ 1%``, with ``α`` the upper end of the FRR's 95% interval (the
check's nominal 5% when none was measured).  Seeds draw independent streams, so the runs are independent; the level
achieved is stated with the verdict (with ``N`` too small to reach 1%, ``k = N`` and its level is stated).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["COMBINED_LEVEL", "NOMINAL_RATE", "false_rejection", "frr_sentence", "combined_rule", "combine",
           "check_seeds"]

COMBINED_LEVEL = 0.01
"""Largest false-rejection rate allowed to the multi-seed rule (when ``N`` allows it)."""

NOMINAL_RATE = 0.05
"""A check's single-seed false-rejection rate when none was measured: its joint level's complement, 5%."""


def _falsify_files() -> list[Path]:
    """The committed ``false_rejections.json`` first (the source checkout's), then the results folder's."""
    from ..harness.results import _ROOT, in_source_checkout, results_dir

    files = [_ROOT / "simulations" / "results" / "falsify" / "false_rejections.json"] if in_source_checkout() else []
    return files + [results_dir() / "falsify" / "false_rejections.json"]


def false_rejection(name: str) -> dict | None:
    """The measured FRR of check ``name``: ``{"rate", "ci_low", "ci_high", "n_seeds", "rejections", "source"}``,
    or ``None`` where it was never measured (or the file is unreadable: nothing is guessed)."""
    for path in _falsify_files():
        try:
            entry = json.loads(path.read_text()).get(name)
            n, k = int(entry["n_seeds"]), int(entry["rejections"])
            lo, hi = float(entry["ci_low"]), float(entry["ci_high"])
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
        if 0 <= k <= n and n > 0 and 0.0 <= lo <= k / n <= hi <= 1.0:
            return {"rate": k / n, "ci_low": lo, "ci_high": hi, "n_seeds": n, "rejections": k, "source": str(path)}
    return None


def frr_sentence(frr: dict | None) -> str:
    """One line: the measured rate, its interval and sample size, and what a single failure means."""
    if frr is None:
        return ("False-rejection rate: not measured for this check (stylized falsify); a correct claim fails a "
                "single run at about its nominal 5%. Use --seeds N for a verdict over N seeds.")
    meaning = (f"a correct claim fails about 1 run in {round(1 / frr['rate'])}, so one failure is weak evidence"
               if frr["rate"] > 0 else "no seed failed")
    return (f"False-rejection rate: {100 * frr['rate']:.1f}% [{100 * frr['ci_low']:.1f}%, {100 * frr['ci_high']:.1f}%] "
            f"(95%; {frr['rejections']} of {frr['n_seeds']} seeds at reduced sizes, stylized falsify): {meaning}; "
            "--seeds N gives one verdict over N seeds.")


def _tail(n: int, k: int, p: float) -> float:
    """``P(Binomial(n, p) ≥ k)``."""
    return float(sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1)))


def combined_rule(n: int, alpha: float, level: float = COMBINED_LEVEL) -> tuple[int, float]:
    """``(k, level achieved)``: the claim does not hold when ``≥ k`` of ``n`` runs do not; ``k`` the smallest
    count with ``P(Binomial(n, α) ≥ k) ≤ level`` (``k = n`` when none reaches it).

    >>> combined_rule(5, 0.1)
    (3, 0.00856)
    >>> combined_rule(1, 0.05)
    (1, 0.05)
    """
    for k in range(1, n + 1):
        if (lv := _tail(n, k, alpha)) <= level:
            return k, round(lv, 6)
    return n, round(_tail(n, n, alpha), 6)


def combine(name: str, results: list[dict]) -> dict:
    """The multi-seed verdict over ``results`` (one per seed, in seed order): ``holds``, the rule and its level.

    A reported measurement (``holds`` ``None``) has no verdict to combine: the combined ``holds`` is ``None``.
    """
    frr = false_rejection(name)
    alpha, basis = ((frr["ci_high"], f"the upper 95% end of the measured single-seed rate ({frr['rejections']} of "
                     f"{frr['n_seeds']} seeds)") if frr else (NOMINAL_RATE, "the nominal single-seed rate 5% (not measured)"))
    n = len(results)
    k, level = combined_rule(n, alpha)
    failed = [r["params"]["seed"] for r in results if r["holds"] is False]
    reported = any(r["holds"] is None for r in results)
    holds = None if reported else len(failed) < k
    rule = (f"does not hold when ≥ {k} of {n} seeds do not hold; false-rejection rate of this rule ≤ "
            f"{100 * level:.3g}% (binomial tail at α = {100 * alpha:.3g}%, {basis})")
    return {"claim": name, "holds": holds, "n_seeds": n, "k": k, "level": level, "alpha": alpha, "rule": rule,
            "seeds": [r["params"]["seed"] for r in results], "failed_seeds": failed, "false_rejection": frr,
            "runs": [{"seed": r["params"]["seed"], "holds": r["holds"], "seconds": r["seconds"],
                      "verdict": r.get("headline", {}).get("verdict")} for r in results],
            "seconds": round(sum(r["seconds"] for r in results), 3), "paper_claim": results[0]["paper_claim"],
            "params": {k_: v for k_, v in results[0]["params"].items() if k_ != "seed"}}


def check_seeds(name: str, seeds: range, args, verdict_line: Callable[[dict], str],
                run_one: Callable[[int], dict]) -> int:
    """``stylized check NAME --seeds N``: one run per seed (a line each), then one verdict over them
    (:func:`combine`: its rule and level); ``--json`` prints the combined object only, ``--quiet`` its line only."""
    results = []
    for i, seed in enumerate(seeds, 1):
        results.append(r := run_one(seed))
        if not (args.quiet or args.json):
            print(f"[{i}/{len(seeds)}] seed {seed}: " + verdict_line(r).split(": ", 1)[1], flush=True)
    c = combine(name, results)
    state = "REPORTED (a measurement, no verdict)" if c["holds"] is None else "HOLDS" if c["holds"] else "DOES NOT HOLD"
    if args.json:
        json.dump(c, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(f"{c['paper_claim']} {c['claim']}: {state} over {c['n_seeds']} seeds ({len(c['failed_seeds'])} do not "
              f"hold)   ({c['seconds']:.2f} s)")
        if not args.quiet:
            print(f"Rule: {c['rule']}.")
    return 0 if c["holds"] or c["holds"] is None else 1
