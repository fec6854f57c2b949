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


C6_STATEMENT = ("Trained past the training length (the author's metric, at the longest length): RoPE degrades more than "
                "random accumulated Q/K rotations, which degrade more than Q/K/V; learned token-dependent rotations "
                "degrade less than RoPE, Q/K/V less than Q/K; ALiBi stays flat.")


def _verdict_word(holds) -> str:
    return "**holds**" if holds else "**undecided**" if holds is None else "**does not hold**"


def _transformer_rows(directory: Path) -> list[str]:
    """The C6 row of the main table: each paper row's verdict at the longest evaluated multiple."""
    out = []
    for path in sorted((directory / "transformer").glob("*_compare.json")):
        r = json.loads(path.read_text())
        v = r.get("verdicts", {}).get("all")
        if v is None:
            continue
        preset = r.get("params", {}).get("preset", path.name.removesuffix("_compare.json"))
        measured = "; ".join(f"{x['row']}: {x['verdict']}" for x in v["rows"])
        out.append(row("C6", f"transformer-compare ({preset})", C6_STATEMENT,
                       f"`stylized transformer compare --preset {preset}`",
                       f"paired bootstrap at {v['multiple']}×, seeds {r['params'].get('seeds')}: {measured}",
                       "paper's ratios (reported numbers)", _verdict_word(r.get("holds"))))
    return out


def _ratio_table(r: dict, metric: str) -> list[str]:
    rows = [x for x in r["rows"] if x["metric"] == metric]
    mults = sorted({x["multiple"] for x in rows})
    lines = ["| variant | seeds | PPL(L_train) | " + " | ".join(f"{m:g}×" for m in mults) + " |",
             "|---|---|---|" + "---|" * len(mults)]
    by: dict = {}
    for x in rows:
        by.setdefault(x["variant"], {})[x["multiple"]] = x
    for v, cells in by.items():
        out = []
        for m in mults:
            c = cells.get(m)
            if c is None:
                out.append("—")
                continue
            s = f"{fmt(c['estimate'], 3)} [{fmt(min(c['per_seed']), 3)}–{fmt(max(c['per_seed']), 3)}]"
            if metric == "all" and c.get("theory") is not None and m > 1:
                s += f" ({fmt(c['theory'], 3)})"
            out.append(s)
        base = cells.get(min(mults), {})
        lines.append(row(v, base.get("seeds"), fmt(base.get("ppl"), 3), *out))
    return lines


def _transformer_section(directory: Path) -> list[str]:
    lines = ["", "## C6 — the transformer comparison", ""]
    found = sorted((directory / "transformer").glob("*_compare.json"))
    if not found:
        return lines + ["No transformer results yet: run `stylized transformer compare --preset cpu`.", ""]
    for path in found:
        r = json.loads(path.read_text())
        p = r.get("params", {})
        if "verdicts" not in r:
            continue
        lines += [f"Command: `stylized transformer compare --preset {p.get('preset')}` ({r.get('seconds', 0):.0f} s; "
                  f"training and evaluation of every checkpoint in `params.timings`). Seeds {p.get('seeds')} for "
                  f"rope, random-*, learned-*; {p.get('extra_seeds')} for the others. Corpus: {p.get('corpus')}.", "",
                  f"Verdict per paper row ({r['params'].get('interval')}); the C6 row holds when no row contradicts: "
                  f"{_verdict_word(r.get('holds'))}.", "",
                  "| paper row | metric | ratio A | ratio B | Δ log-ratio [95% CI] | verdict |", "|---|---|---|---|---|---|"]
        for metric, v in r["verdicts"].items():
            for x in v["rows"]:
                if x["verdict"] == "not run":
                    lines.append(row(x["row"], metric, "—", "—", "—", "not run"))
                elif x.get("b") is None:
                    lines.append(row(x["row"], metric, fmt(x["ratio_a"], 3), "—",
                                     f"ratio CI [{fmt(x['ci_low'], 3)}, {fmt(x['ci_high'], 3)}]", x["verdict"]))
                else:
                    lines.append(row(x["row"], metric, fmt(x["ratio_a"], 3), fmt(x["ratio_b"], 3),
                                     f"{fmt(x['delta_log'], 3)} [{fmt(x['ci_low'], 3)}, {fmt(x['ci_high'], 3)}]",
                                     x["verdict"]))
        lines += ["", "PPL(L)/PPL(L_train), the author's metric (every position of the window): seed geometric mean "
                  "[seed range] (paper's ratio, trained at 512 on OpenWebText, in parentheses).", ""]
        lines += _ratio_table(r, "all")
        lines += ["", "The same with our metric (the last L_train positions: the same target tokens at every length).", ""]
        lines += _ratio_table(r, "target")
        lines.append("")
    lines += _lr_sweep_section(directory)
    bpe = directory / "transformer" / "runs" / "cpu-bpe" / "cpu_compare.json"
    if bpe.exists():
        r = json.loads(bpe.read_text())
        lines += ["### Byte-level BPE (cpu preset, one seed)", "",
                  f"Command: `stylized transformer compare --preset cpu --variants rope,learned-qk --seeds 0 --tokenizer bpe "
                  f"--bpe-vocab {r['params'].get('bpe_vocab')}` (an exploratory run: `simulations/results/transformer/runs/"
                  f"cpu-bpe/`). Corpus: {r['params'].get('corpus')}. PPL(L)/PPL(L_train), the author's metric; "
                  "L counts BPE tokens.", ""]
        lines += _ratio_table(r, "all") + [""]
    return lines


def _lr_sweep_section(directory: Path) -> list[str]:
    path = directory / "transformer" / "cpu_lr_sweep.json"
    if not path.exists():
        return []
    r = json.loads(path.read_text())
    lines = ["### The learned tables' learning-rate budget (cpu preset)", "",
             f"Command: `stylized transformer lr-sweep`. Rule (fixed before extrapolation was looked at): {r['rule']}. "
             f"Chosen: **×{fmt(r['chosen'])}** (author's budget Σ lr ≈ {r['author_budget']}).", "",
             "| variant | multiplier | table Σ lr | val. PPL(L_train) [95% CI] | mean / max table move (rad) | "
             "planes mixing within L_train | active | ratio 16× | ratio 128× (author's metric) |",
             "|---|---|---|---|---|---|---|---|---|"]
    import math

    for x in r["rows"]:
        c = {int(k): v for k, v in x["curve_all"].items()}
        lines.append(row(x["variant"], f"×{fmt(x['mult'])}", fmt(x["lr_budget"], 3),
                         f"{fmt(x['ppl'], 4)} [{fmt(math.exp(x['val_ci_low']), 4)}, {fmt(math.exp(x['val_ci_high']), 4)}]",
                         f"{fmt(x['move_mean_rad'], 3)} / {fmt(x['move_max_rad'], 3)}",
                         f"{x['planes_mixing']}/{x['planes']}", fmt(x["active"]), fmt(c.get(16), 3),
                         fmt(c.get(max(c)), 3)))
    return lines + [""]


def _bridge_section(directory: Path) -> list[str]:
    """Beyond the paper: the stylized-to-transformer bridge and the combined variants (saved summaries)."""
    lines = []
    for path in sorted((directory / "transformer").glob("bridge_*.json")):
        r = json.loads(path.read_text())
        preset = r.get("params", {}).get("preset", path.stem.removeprefix("bridge_"))
        lines += ["", f"## Bridge — stylized prediction vs trained transformers ({preset})", "",
                  "**Stale:** computed on the C6 checkpoints before the faithful retraining (angle tables and random "
                  "streams shared by the heads, table lr ×0.1, evaluation to 64×); the checkpoints it describes are "
                  "gone. The bridge is to be rebuilt on the new checkpoints with a predictor that sees only "
                  "L ≤ L_train (open issue).", "",
                  f"Command: `stylized transformer predict --preset {preset}`; figure `figures/transformer_bridge.png`; "
                  f"rows `simulations/results/transformer/{path.stem}.csv`.", "", r.get("summary", ""), ""]
    for path in sorted((directory / "transformer").glob("*_combined.json")):
        r = json.loads(path.read_text())
        g = r.get("goal", {})
        preset = r.get("params", {}).get("preset", path.stem.removesuffix("_combined"))
        lines += ["", f"## Rotation + far-mass control ({preset})", "",
                  "**Stale:** trained before the faithful C6 settings (shared tables, table lr ×0.1); to be redone "
                  "with the bridge (open issue).", "",
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
    return lines + [""]


def render_paper_checks(directory: Path | None = None) -> str:
    """The full text of ``paper_checks.md`` from the registry and the results in ``directory``."""
    directory = Path(directory or results_dir())
    checks = load_checks()
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
    lines += _transformer_rows(directory)
    tail = _falsify_section(checks) + _transformer_section(directory) + _bridge_section(directory)
    return "\n".join(lines + ["", "## Details"] + details + tail) + "\n"


def write_paper_checks(directory: Path | None = None, path: Path | None = None) -> Path:
    path = Path(path or paper_checks_path())
    atomic_write_text(path, render_paper_checks(directory))
    return path
