"""``paper_checks.md``: generated from the saved results, never written by hand.

One table row per registered check (grouped by paper claim C1–C6) with the claim in
a sentence, the command that checks it, the measured number with its 95% interval and
sample size, the theory value and the verdict; then one short section per check.
Rendering is a pure function of the registry and the result files, so a test can
regenerate it and compare (a stale file fails the test).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .registry import load_checks
from .results import atomic_write_text, code_hash, load_result, results_dir

__all__ = ["render_paper_checks", "write_paper_checks", "paper_checks_path", "fmt"]

_ROOT = Path(__file__).resolve().parent.parent


def paper_checks_path() -> Path:
    """``paper_checks.md`` at the repository root (``STYLIZED_PAPER_CHECKS`` overrides it)."""
    return Path(os.environ.get("STYLIZED_PAPER_CHECKS", _ROOT / "paper_checks.md"))


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


def _measured(h: dict) -> str:
    s = fmt(h.get("estimate"))
    if h.get("ci_low") is not None and h.get("ci_high") is not None:
        s += f" [{fmt(h['ci_low'])}, {fmt(h['ci_high'])}]"
    if h.get("n_samples") is not None:
        s += f" (n={fmt(h['n_samples'])})"
    return s


C6_STATEMENT = ("Trained past the training length, RoPE degrades far more than random accumulated Q/K rotations, "
                "which degrade more than Q/K/V; ALiBi stays flat.")


def _transformer_rows(directory: Path) -> list[str]:
    """The C6 row(s) of the main table: ratios at the largest evaluated multiple, ours and the paper's."""
    out = []
    for path in sorted((directory / "transformer").glob("*_compare.json")):
        r = json.loads(path.read_text())
        top = max(row["multiple"] for row in r["rows"])
        cells = {row["variant"]: row for row in r["rows"] if row["multiple"] == top}
        show = [v for v in ("rope", "random-qk", "random-qkv", "alibi") if v in cells]
        measured = "; ".join(f"{v} {fmt(cells[v]['estimate'], 3)} [{fmt(cells[v]['ci_low'], 3)}, "
                             f"{fmt(cells[v]['ci_high'], 3)}]" for v in show)
        theory = "; ".join(f"{v} {fmt(cells[v].get('theory'), 3)}" for v in show)
        preset = r.get("params", {}).get("preset", path.name.removesuffix("_compare.json"))
        verdict = "**holds**" if r.get("holds") else "**does not hold**"
        out.append(f"| C6 | transformer-compare ({preset}) | {C6_STATEMENT} | `stylized transformer compare --preset {preset}` "
                   f"| PPL({top:g}×L_train)/PPL(L_train): {measured} | paper at {top:g}×: {theory} | {verdict} |")
    return out


def _transformer_section(directory: Path) -> list[str]:
    lines = ["", "## C6 — the transformer comparison", ""]
    found = sorted((directory / "transformer").glob("*_compare.json"))
    if not found:
        return lines + ["No transformer results yet: run `stylized transformer compare --preset cpu`.", ""]
    for path in found:
        r = json.loads(path.read_text())
        p = r.get("params", {})
        lines += [f"Command: `stylized transformer compare --preset {p.get('preset', path.stem.split('_')[0])}` "
                  f"({r.get('seconds', 0):.0f} s). Verdict on the paper's ordering: "
                  f"**{'holds' if r.get('holds') else 'does not hold'}** at this scale.", ""]
        if r.get("ordering"):
            lines += ["Ordering components: " + ", ".join(f"{k} = {fmt(v)}" for k, v in r["ordering"].items()), ""]
        mults = sorted({row["multiple"] for row in r["rows"]})
        lines += ["PPL(L)/PPL(L_train), ours [95% CI] (paper's, trained at 512 on OpenWebText)", "",
                  "| variant | PPL(L_train) | " + " | ".join(f"{m:g}×" for m in mults) + " |",
                  "|---|---|" + "---|" * len(mults)]
        by = {}
        for row in r["rows"]:
            by.setdefault(row["variant"], {})[row["multiple"]] = row
        for v, cells in by.items():
            out = []
            for m in mults:
                c = cells.get(m)
                if c is None:
                    out.append("—")
                    continue
                s = f"{fmt(c['estimate'], 3)} [{fmt(c.get('ci_low'), 3)}, {fmt(c.get('ci_high'), 3)}]"
                if c.get("theory") is not None:
                    s += f" ({fmt(c['theory'], 3)})"
                out.append(s)
            base = cells.get(min(mults), {}).get("ppl")
            lines.append(f"| {v} | {fmt(base, 3)} | " + " | ".join(out) + " |")
        lines.append("")
    return lines


def _bridge_section(directory: Path) -> list[str]:
    """Beyond the paper: the stylized-to-transformer bridge and the combined variants (saved summaries)."""
    lines = []
    for path in sorted((directory / "transformer").glob("bridge_*.json")):
        r = json.loads(path.read_text())
        preset = r.get("params", {}).get("preset", path.stem.removeprefix("bridge_"))
        lines += ["", f"## Bridge — stylized prediction vs trained transformers ({preset})", "",
                  f"Command: `stylized transformer predict --preset {preset}`; figure `figures/transformer_bridge.png`; "
                  f"rows `simulations/results/transformer/{path.stem}.csv`.", "", r.get("summary", ""), ""]
    for path in sorted((directory / "transformer").glob("*_combined.json")):
        r = json.loads(path.read_text())
        g = r.get("goal", {})
        preset = r.get("params", {}).get("preset", path.stem.removesuffix("_combined"))
        lines += ["", f"## Rotation + far-mass control ({preset})", "",
                  f"Command: `stylized transformer combined --preset {preset}`. Goal: PPL ratio ≤ {g.get('target_ratio')} "
                  f"at {g.get('multiple')}× with PPL(L_train) no worse than the best rotation-only variant "
                  f"({g.get('best_rotation_only')}, {fmt(g.get('best_rotation_only_ppl_1x'), 3)}): "
                  f"**{'met' if g.get('met') else 'not met'}**.", "",
                  "| variant | ratio at goal multiple [95% CI] | PPL(L_train) | ratio ok | PPL ok |", "|---|---|---|---|---|"]
        for v, c in g.get("variants", {}).items():
            lines.append(f"| {v} | {fmt(c['ratio_max'], 3)} [{fmt(c['ci'][0], 3)}, {fmt(c['ci'][1], 3)}] | "
                         f"{fmt(c['ppl_1x'], 3)} | {fmt(c['ratio_ok'])} | {fmt(c['ppl_ok'])} |")
        for v in ("alibi", g.get("best_rotation_only")):  # the references, side by side
            ref = {row["multiple"]: row for row in r.get("reference_rows", []) if row["variant"] == v}
            if ref and g.get("multiple") in ref:
                c, base = ref[g["multiple"]], ref[min(ref)]
                lines.append(f"| {v} (reference) | {fmt(c['estimate'], 3)} [{fmt(c['ci_low'], 3)}, {fmt(c['ci_high'], 3)}] | "
                             f"{fmt(base.get('ppl'), 3)} | — | — |")
        lines.append("")
    return lines


def render_paper_checks(directory: Path | None = None) -> str:
    """The full text of ``paper_checks.md`` from the registry and the results in ``directory``."""
    directory = Path(directory or results_dir())
    checks = load_checks()
    lines = [
        "# Paper checks",
        "",
        "Generated by `stylized check --all` from `simulations/results/`; do not edit by hand.",
        "Each check runs at its built-in (paper-scale) defaults with seed 0. *measured* is the check's",
        "headline Monte Carlo number with its 95% interval and sample size; *theory* is the closed form",
        "it is compared with; the verdict is what the run measured (the section below each row says how).",
        "",
        "| claim | check | statement | command | measured [95% CI] (n) | theory | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    for check in checks.values():
        r = load_result(check.name, directory)
        cmd = f"`stylized check {check.name}`"
        if r is None:
            lines.append(f"| {check.claim} | {check.name} | {check.statement} | {cmd} | not run | — | **not run** |")
            continue
        h = r.get("headline", {})
        verdict = "**holds**" if r["holds"] else "**does not hold**"
        stale = r.get("meta", {}).get("code_hash") != code_hash(check.module)
        if stale:
            verdict += " (stale: code changed since this run)"
        lines.append(f"| {check.claim} | {check.name} | {check.statement} | {cmd} | "
                     f"{h.get('quantity', '')}: {_measured(h)} | {fmt(h.get('theory'))} | {verdict} |")
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        details += ["", f"### {check.claim} `{check.name}`", "",
                    f"{h.get('verdict', '')}", "",
                    f"Parameters: {params}. Rows: {len(r['rows'])}; wall time {r['seconds']:.1f} s; "
                    f"code {r.get('meta', {}).get('code_hash', '?')}; results `simulations/results/{check.name}.csv`."]
        if check.plot is not None:
            details += ["", f"Figure: `figures/{check.name}.png`."]
    lines += _transformer_rows(directory)
    tail = _transformer_section(directory) + _bridge_section(directory)
    return "\n".join(lines + ["", "## Details"] + details + tail) + "\n"


def write_paper_checks(directory: Path | None = None, path: Path | None = None) -> Path:
    path = Path(path or paper_checks_path())
    atomic_write_text(path, render_paper_checks(directory))
    return path
