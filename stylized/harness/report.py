"""``paper_checks.md``: generated from the saved results, never written by hand.

One table row per registered check (grouped by paper claim C1–C6) with the claim in
a sentence, the command that checks it, the measured number with its 95% interval and
sample size, the theory value and the verdict; then one short section per check.  Checks
whose results another command writes (``Check.external``: C6, the bridge) render their own
rows and sections; this module knows no result format but the check contract.
Rendering is a pure function of the registry and the result files, so a test can
regenerate it and compare (a stale file fails the test).
"""

from __future__ import annotations

import os
from pathlib import Path

from .registry import load_checks
from .results import atomic_write_text, code_hash, load_result, output_root, results_dir

__all__ = ["render_paper_checks", "write_paper_checks", "paper_checks_path", "fmt", "row", "cell"]


def paper_checks_path() -> Path:
    """``paper_checks.md`` in :func:`~stylized.harness.results.output_root` (``--out``, the checkout's root, or the current
    directory); ``STYLIZED_PAPER_CHECKS`` overrides it unless ``--out`` is given."""
    if "STYLIZED_PAPER_CHECKS" in os.environ and not os.environ.get("STYLIZED_OUT"):
        return Path(os.environ["STYLIZED_PAPER_CHECKS"])
    return output_root() / "paper_checks.md"


def fmt(x, digits: int = 4) -> str:
    """Compact number formatting for tables (``—`` for missing)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) >= 1e5 or abs(x) < 1e-3:
            return f"{x:.{digits - 1}e}"
        return f"{x:.{digits}g}"
    return str(x)


def cell(x) -> str:
    """A markdown table cell: ``|`` escaped so the row renders (``|logits|`` → ``\\|logits\\|``)."""
    return str(x).replace("\\|", "|").replace("|", "\\|").replace("\n", " ")


def row(*cells) -> str:
    """One markdown table row from ``cells`` (each escaped)."""
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def _theory(h: dict) -> str:
    """The theory value with its kind (closed form, bound, simulated reference, fit, approximation)."""
    t = fmt(h.get("theory"))
    kind = h.get("theory_kind")
    if h.get("theory") is None:
        return "—" if not h.get("bound") else f"bound {fmt(h.get('bound'))}"
    return f"{t} ({kind})" if kind else t


def _measured(h: dict) -> str:
    s = fmt(h.get("estimate"))
    if h.get("ci_low") is not None and h.get("ci_high") is not None:
        s += f" [{fmt(h['ci_low'])}, {fmt(h['ci_high'])}]"
    if h.get("n_samples") is not None:
        s += f" (n={fmt(h['n_samples'])})"
    return s


def _falsify_section(checks) -> list[str]:
    """Mutants and false-rejection rates from ``stylized falsify`` (results/falsify/)."""
    from .falsify import load_falsify

    mut, frr = load_falsify("mutants.json"), load_falsify("false_rejections.json")
    lines = ["", "## Falsifiability", "",
             "Command: `stylized falsify` (the checks at their reduced sizes, `Check.reduced`). A mutant is a",
             "deliberately wrong model or theory; each must turn `holds` false while the unmutated check holds.",
             "The false-rejection rate is the fraction of seeds on which the unmutated check does not hold",
             "(nominal level 5%; exact 95% Clopper–Pearson interval).", "",
             "| check | unmutated | mutant: verdict under it | false rejections [95% CI] | reduced-size time |",
             "|---|---|---|---|---|"]
    for name in checks:
        m, f = mut.get(name), frr.get(name)
        if m is None and f is None:
            lines.append(row(name, "not run", "—", "—", "—"))
            continue
        ms = "; ".join(f"{x['mutant']} ({x['description']}): {'holds' if x['holds'] else 'flipped'}"
                       for x in (m or {}).get("mutants", [])) or "—"
        fr = (f"{f['rejections']}/{f['n_seeds']} = {f['rate']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}]"
              if f else "—")
        t = f"{m['unmutated_seconds']:.1f} s" if m else "—"
        lines.append(row(name, "holds" if m and m["unmutated_holds"] else "—" if m is None else "DOES NOT HOLD",
                         ms, fr, t))
    return lines + _power_section(checks)


def _pct(e) -> str:
    return "none ≤ 100%" if e is None else f"{100 * e:.2g}%" if e < 1 else f"{100 * e:.0f}%"


def _power_section(checks) -> list[str]:
    """The power of each check from ``stylized falsify --sensitivity`` (results/falsify/sensitivity.json)."""
    from .falsify import load_falsify

    sens = load_falsify("sensitivity.json")
    lines = ["", "### Power: the smallest theory error that flips each verdict", "",
             "Command: `stylized falsify --no-mutants --no-frr --sensitivity reduced,default`. Each theory a check",
             "names is multiplied by `1 − e` and by `1 + e`; the table gives the smallest `e` (bracketed by three",
             "bisections after a grid 0.3%, 1%, 3%, 10%, 30%, 100%) at which `holds` is false at every seed tried",
             "(reduced sizes: seeds 0, 1, 2; default sizes: seed 0, or the first later seed at which the unmutated check",
             "holds, named in the cell, so that one false rejection does not hide the power). Goal: ≤ 10% at the reduced sizes, ≤ 3% at the",
             "defaults. *n/a (bound)*: a one-sided bound loosened, which cannot flip it by construction; *(slack)*: the",
             "same bound tightened until the measured quantity crosses it, i.e. how loose the bound is (an inequality,",
             "not a prediction: not held to the goal).", "",
             "| check | theory | reduced: −e / +e | default: −e / +e |", "|---|---|---|---|"]
    for name in checks:
        entry = sens.get(name)
        if not entry:
            lines.append(row(name, "not measured", "—", "—"))
            continue
        by_theory: dict[str, dict] = {}
        declared = {t.name: t for t in getattr(checks[name], "theories", ())}
        one_sided = {n for n, t in declared.items() if len(t.sides) == 1}
        for sz in ("reduced", "default"):
            for x in entry.get(sz, {}).get("rows", []):
                # the theory's description as the check declares it now (the measurement's own copy if it is gone)
                th = declared.get(x["theory"])
                cell = by_theory.setdefault(x["theory"], {"description": th.description if th else x["description"]})
                flag = "" if x.get("unmutated_holds", True) else " (unmutated fails)"
                if x.get("seeds") and x["seeds"] != entry[sz].get("seeds"):
                    flag += f" (seed {', '.join(map(str, x['seeds']))})"
                pct = "n/a (bound)" if x.get("by_construction") else _pct(x["flips_at"]) + (
                    " (slack)" if x["theory"] in one_sided else "")
                cell.setdefault(sz, {})[x["sign"]] = pct + flag
        for th, cell in by_theory.items():
            def both(sz, cell=cell):
                c = cell.get(sz)
                return "not measured" if c is None else f"{c.get(-1, '—')} / {c.get(1, '—')}"
            lines.append(row(name, f"{th} ({cell['description']})", both("reduced"), both("default")))
    return lines + [""]


def render_paper_checks(directory: Path | None = None) -> str:
    """The full text of ``paper_checks.md`` from the registry and the results in ``directory``."""
    directory = Path(directory or results_dir())
    checks = load_checks()
    external = [c for c in load_checks(external=True).values() if c.external]
    lines = [
        "# Paper checks",
        "",
        "Generated by `stylized check --all` from `simulations/results/`; do not edit by hand.",
        "Each check runs at its built-in (paper-scale) defaults with seed 0. *measured* is the check's",
        "headline Monte Carlo number with its 95% interval and sample size; *theory* is what it is compared",
        "with, labelled by kind (closed form, bound, simulated reference, fit, approximation); the verdict is",
        "what the run measured (the section below each row says how). Every verdict can fail: the",
        "*Falsifiability* section lists, per check, mutants of the model or the theory that each turn it",
        "false, and its false-rejection rate measured over seeds.",
        "",
        "| claim | check | statement | command | measured [95% CI] (n) | theory (kind) | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    for check in checks.values():
        r = load_result(check.name, directory)
        cmd = f"`stylized check {check.name}`"
        if r is None:
            lines.append(row(check.claim, check.name, check.statement, cmd, "not run", "—", "**not run**"))
            continue
        h = r.get("headline", {})
        verdict = "**holds**" if r["holds"] else "**does not hold**"
        stale = r.get("meta", {}).get("code_hash") != code_hash(check.module)
        if stale:
            verdict += " (stale: code changed since this run)"
        lines.append(row(check.claim, check.name, check.statement, cmd, f"{h.get('quantity', '')}: {_measured(h)}",
                         _theory(h), verdict))
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        details += ["", f"### {check.claim} `{check.name}`", "",
                    f"{h.get('verdict', '')}", "",
                    f"Parameters: {params}. Rows: {len(r['rows'])}; wall time {r['seconds']:.1f} s; "
                    f"code {r.get('meta', {}).get('code_hash', '?')}; results `simulations/results/{check.name}.csv`."]
        if check.plot is not None:
            details += ["", f"Figure: `figures/{check.name}.png`."]
    for check in external:  # checks whose results another command writes render their own rows and sections
        lines += check.table_rows(directory) if check.table_rows else []
    tail = _falsify_section(checks)
    for check in checks.values():  # a check run here may render a section of its own (c2-counterexamples)
        tail += check.section(directory) if check.section else []
    for check in external:
        tail += check.section(directory) if check.section else []
    return "\n".join(lines + ["", "## Details"] + details + tail) + "\n"


def write_paper_checks(directory: Path | None = None, path: Path | None = None) -> Path:
    path = Path(path or paper_checks_path())
    atomic_write_text(path, render_paper_checks(directory))
    return path
