"""Falsifiability of the checks: mutants that must flip a verdict, and false-rejection rates.

A verdict that cannot come out "does not hold" tests nothing.  Every registered check declares
``mutants`` (a wrong model or a wrong theory, as :class:`~stylized.harness.registry.Mutant`) and
``reduced`` option overrides at which the same test runs in seconds.  This module runs

* :func:`run_reduced`: the check at its reduced sizes, optionally under one mutant;
* :func:`mutation_table`: the unmutated check and every mutant at one seed (each mutant must
  give ``holds = False`` while the unmutated check holds);
* :func:`false_rejections`: the unmutated check over many seeds: the measured false-rejection
  rate with its exact (Clopper–Pearson) 95% interval.  The checks test at a nominal 5% level;
* :func:`sensitivity`: the power: for each theory a check names (:class:`~stylized.harness.registry.Theory`), the
  smallest relative error of each sign that turns ``holds`` false, at the reduced and at the default sizes.

Results are written under ``<results>/falsify/`` by ``stylized falsify`` and rendered into
``paper_checks.md``.
"""

from __future__ import annotations

import json
import time

from ..core.estimators import proportion_ci

__all__ = ["run_reduced", "mutation_table", "false_rejections", "sensitivity", "SENSITIVITY_GRID"]

SENSITIVITY_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
"""Relative theory errors tried in turn (each sign); the first that flips is refined by bisection."""


def run_reduced(check, *, seed: int = 0, mutant=None, backend: str = "numba", params: dict | None = None) -> dict:
    """Run ``check`` at its reduced sizes (``check.reduced``), under ``mutant`` if given.

    Returns ``{"holds", "seconds"}`` plus the full result under ``"result"``.
    """
    from .results import run_check

    p = {**check.reduced, **(mutant.params if mutant is not None else {}), **(params or {})}
    backend = check.backend_for(backend)
    t0 = time.perf_counter()
    ctx = mutant.patch() if mutant is not None else None
    if ctx is None:
        r = run_check(check, p, seed=seed, backend=backend, progress=False)
    else:
        with ctx:
            r = run_check(check, p, seed=seed, backend=backend, progress=False)
    return {"holds": bool(r["holds"]), "seconds": round(time.perf_counter() - t0, 3), "result": r}


def mutation_table(check, *, seed: int = 0, backend: str = "numba") -> dict:
    """The unmutated check and each mutant at ``seed``: ``{"check", "unmutated", "mutants": [...]}``.

    ``ok`` is true when the unmutated check holds and every mutant flips it.
    """
    base = run_reduced(check, seed=seed, backend=backend)
    rows = []
    for m in check.mutants:
        r = run_reduced(check, seed=seed, mutant=m, backend=backend)
        rows.append({"mutant": m.name, "description": m.description, "holds": r["holds"], "seconds": r["seconds"]})
    ok = base["holds"] and bool(rows) and not any(r["holds"] for r in rows)
    return {"check": check.name, "seed": seed, "unmutated_holds": base["holds"], "unmutated_seconds": base["seconds"],
            "mutants": rows, "ok": ok}


def false_rejections(check, seeds, *, backend: str = "numba", progress=None) -> dict:
    """Run the unmutated check at its reduced sizes for each seed in ``seeds``.

    Returns the count of seeds where it did not hold, the rate with its exact 95% interval,
    the failing seeds and the total time.
    """
    seeds = list(seeds)
    failed, t0 = [], time.perf_counter()
    for s in seeds:
        if not run_reduced(check, seed=int(s), backend=backend)["holds"]:
            failed.append(int(s))
        if progress is not None:
            progress(1)
    e = proportion_ci(len(failed), len(seeds), method="clopper-pearson")
    return {"check": check.name, "n_seeds": len(seeds), "rejections": len(failed), "rate": e.estimate,
            "ci_low": e.ci_low, "ci_high": e.ci_high, "failed_seeds": failed,
            "seconds": round(time.perf_counter() - t0, 1), "reduced": check.reduced}


def _flips(check, theory, factor: float, params: dict, seeds, backend: str) -> bool:
    """Whether ``check`` with ``theory`` times ``factor`` does not hold at every seed of ``seeds``."""
    for seed in seeds:
        with theory.perturb(factor):
            if run_reduced(check, seed=int(seed), backend=backend, params=params)["holds"]:
                return False
    return True


def sensitivity(check, *, sizes: str = "reduced", seeds=(0, 1, 2), backend: str = "numba",
                grid=SENSITIVITY_GRID, refine: int = 3, fallback: int = 10) -> dict:
    """The power of ``check``: for each of its :attr:`~stylized.harness.registry.Check.theories` and each sign, the
    smallest relative error ``e`` of the theory (it is multiplied by ``1 ± e``) that turns ``holds`` false at
    every seed of ``seeds``.

    The errors of ``grid`` are tried in turn; the first that flips is refined by ``refine`` geometric
    bisections against the last that did not, so the answer is a bracket ``[holds_at, flips_at]``
    (``flips_at = None``: no error of the grid flips it).  ``sizes``: ``"reduced"`` (``check.reduced``) or
    ``"default"`` (the check's defaults), each with the theory's own ``params`` on top.  A theory whose
    unmutated check does not hold at every seed is reported as such (``unmutated_holds = False``), not searched;
    with a single seed (the default sizes) a false rejection there would hide the power, so the next seeds, up to
    ``fallback`` of them, are tried in order and the first at which the unmutated check holds is used (recorded in
    the row's ``seeds``: a power measured from a holding base, chosen before any perturbation is tried).
    A sign outside the theory's ``sides`` (a bound loosened) is not searched: ``by_construction = True``; the
    searched side of a one-sided bound (``bound = True``) measures how loose the bound is (its slack), not the
    check's power, and is not held to the goal.
    Assumes that a larger error flips at least as surely as a smaller one.
    """
    if sizes not in ("reduced", "default"):
        raise ValueError(f"sizes must be 'reduced' or 'default', got {sizes!r}")
    t0, rows = time.perf_counter(), []
    for th in check.theories:
        params = {**(check.reduced if sizes == "reduced" else check.defaults()), **th.params}
        use = tuple(int(x) for x in seeds)
        held = all(run_reduced(check, seed=x, backend=backend, params=params)["holds"] for x in use)
        for nxt in (range(use[0] + 1, use[0] + 1 + fallback) if not held and len(use) == 1 else ()):
            if run_reduced(check, seed=nxt, backend=backend, params=params)["holds"]:
                use, held = (nxt,), True
                break
        for sign in (-1, +1):
            if sign not in th.sides:
                rows.append({"theory": th.name, "description": th.description, "sign": sign, "unmutated_holds": held,
                             "holds_at": None, "flips_at": None, "by_construction": True, "seeds": list(use)})
                continue
            lo, hi = 0.0, None
            for e in (grid if held else ()):
                if _flips(check, th, 1.0 + sign * e, params, use, backend):
                    hi = e
                    break
                lo = e
            for _ in range(refine if hi is not None else 0):
                mid = (lo * hi) ** 0.5 if lo > 0 else hi / 3.0
                if _flips(check, th, 1.0 + sign * mid, params, use, backend):
                    hi = mid
                else:
                    lo = mid
            rows.append({"theory": th.name, "description": th.description, "sign": sign, "unmutated_holds": held,
                         "holds_at": lo, "flips_at": hi, "seeds": list(use), "bound": len(th.sides) == 1})
    return {"check": check.name, "sizes": sizes, "seeds": [int(x) for x in seeds], "rows": rows,
            "seconds": round(time.perf_counter() - t0, 1)}


def falsify_dir():
    from .results import results_dir

    return results_dir() / "falsify"


def _merge_write(name: str, entries: dict) -> None:
    import json

    from .results import atomic_write_text, to_jsonable

    path = falsify_dir() / name
    old = json.loads(path.read_text()) if path.exists() else {}
    old.update(to_jsonable(entries))
    atomic_write_text(path, json.dumps(dict(sorted(old.items())), indent=1) + "\n")


def load_falsify(name: str) -> dict:
    """``mutants.json``, ``false_rejections.json`` or ``sensitivity.json`` under the results directory ({} if absent)."""
    import json

    path = falsify_dir() / name
    return json.loads(path.read_text()) if path.exists() else {}


def main(names: list[str], *, seeds: int = 100, mutants: bool = True, frr: bool = True, backend: str = "numba",
         dry_run: bool = False, sensitivity_sizes: tuple[str, ...] = ()) -> int:
    """``stylized falsify``: mutation table and false-rejection rates; exit 1 if a mutant survives or FRR > 7.5%."""
    import sys

    from tqdm import tqdm

    from .registry import load_checks

    checks = load_checks()
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise ValueError(f"NAME: must be one of {', '.join(checks)}; got {str(unknown[0])[:40]!r}")
    if not isinstance(seeds, int) or not 1 <= seeds <= 10_000:
        raise ValueError(f"--seeds: must be an integer in [1, 10^4], got {seeds!r}")
    chosen = [checks[n] for n in (names or list(checks))]
    if dry_run:  # validated; list what would run
        print(json.dumps({"checks": [c.name for c in chosen], "seeds": seeds, "mutants": mutants, "frr": frr,
                          "sensitivity": list(sensitivity_sizes)}))
        return 0
    bad = 0
    for c in chosen:
        if not c.mutants or not c.reduced:
            print(f"{c.name}: no mutants declared (a verdict that cannot fail tests nothing)", flush=True)
            bad += 1
            continue
        if mutants:
            t = mutation_table(c, backend=backend)
            _merge_write("mutants.json", {c.name: t})
            flips = sum(not m["holds"] for m in t["mutants"])
            print(f"{c.name}: unmutated {'holds' if t['unmutated_holds'] else 'DOES NOT HOLD'}; "
                  f"{flips}/{len(t['mutants'])} mutants flip it", flush=True)
            bad += not t["ok"]
        if frr:
            with tqdm(total=seeds, desc=f"{c.name} false rejections", file=sys.stderr, leave=False,
                      disable=not sys.stderr.isatty()) as bar:  # no bar in a log file
                f = false_rejections(c, range(seeds), backend=backend, progress=bar.update)
            _merge_write("false_rejections.json", {c.name: f})
            print(f"{c.name}: false rejections {f['rejections']}/{f['n_seeds']} "
                  f"(95% CI [{f['ci_low']:.3f}, {f['ci_high']:.3f}]) in {f['seconds']:.0f} s", flush=True)
            bad += f["rate"] > 0.075
        for sz in sensitivity_sizes:
            if not c.theories:
                print(f"{c.name}: no theories declared for its power (Check.theories)", flush=True)
                bad += 1
                continue
            r = sensitivity(c, sizes=sz, seeds=(0, 1, 2) if sz == "reduced" else (0,), backend=backend)
            old = load_falsify("sensitivity.json").get(c.name, {})
            _merge_write("sensitivity.json", {c.name: {**old, sz: r}})
            goal = 0.10 if sz == "reduced" else 0.03
            missed = [x for x in r["rows"] if not x.get("by_construction") and not x.get("bound")
                      and (x["flips_at"] is None or x["flips_at"] > goal)]
            print(f"{c.name} ({sz} sizes): " + "; ".join(
                f"{x['theory']} {'−' if x['sign'] < 0 else '+'}"
                + ("n/a (holds by construction)" if x.get("by_construction") else _pct(x["flips_at"])
                   + (" (slack)" if x.get("bound") else "")) for x in r["rows"])
                + f" (goal ≤ {goal:.0%}: {'met' if not missed else f'{len(missed)} missed'}) in {r['seconds']:.0f} s",
                flush=True)
    return 0 if bad == 0 else 1


def _pct(e) -> str:
    return "none ≤ 100%" if e is None else f"{100 * e:.2g}%" if e < 1 else f"{100 * e:.0f}%"
