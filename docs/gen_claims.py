"""Generate the user guide's claim pages and the experiments' API pages from the check registry.

Run by the docs build (``conf.py`` calls :func:`generate` before Sphinx reads any page), or by hand::

    python docs/gen_claims.py [OUT_DIR]      # default docs/_generated

Everything on these pages is read at build time, so none of it can go stale:

* the checks, their claims, statements, options and mutants from :func:`stylized.harness.registry.load_checks`
  (external checks included);
* the closed forms each check calls: the names of :data:`stylized.theory.CLAIMS` that occur as identifiers
  in the check's module (its code, not its docstrings or comments);
* the figures ``figures/NAME.png`` and ``figures/NAME-*.png`` (plus any ``*.png`` its plot function's
  docstring names), the committed headline ``simulations/results/NAME.json``, and the mutation table and
  false-rejection rates of ``stylized falsify`` (``simulations/results/falsify/*.json``);
* each claim's one-line summary from the "Claims, checks and figures" table of ``README.md``;
* one API page per experiment module named by :func:`simulations.check_modules`.

Files are rewritten only when their text changes, so an incremental build re-reads only what moved.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import textwrap
import tokenize
from collections import defaultdict
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

__all__ = ["generate", "gallery", "main"]


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    written.append(path)


def _heading(text: str, char: str, overline: bool = False) -> str:
    line = char * max(len(text), 3)
    return (f"{line}\n" if overline else "") + f"{text}\n{line}\n"


def _rst_literal(text: str) -> str:
    """``text`` as an inline literal (backquotes cannot occur inside one)."""
    text = str(text).replace("`", "'")
    return f"``{text}``" if text.strip() else "(empty)"


def _rst_text(text: str) -> str:
    """Plain prose from the registry (statements, descriptions) made safe for reST: markup characters escaped,
    ``code`` spans kept as literals."""
    parts = re.split(r"(`[^`]+`)", str(text))
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) > 2:
            out.append(_rst_literal(p[1:-1]))
        else:
            out.append(re.sub(r"([\\*_|`])", r"\\\1", p))
    return "".join(out)


def _md_inline_to_rst(text: str) -> str:
    """One README table cell (Markdown) as reST: ``code`` spans become literals, the rest is escaped."""
    return _rst_text(text.replace("**", ""))


def readme_rows(readme: Path) -> list[list[str]]:
    """The rows of README's "Claims, checks and figures" table (claim, what it says, module, check, figure)."""
    try:
        lines = readme.read_text().splitlines()
    except OSError:
        return []
    rows, inside = [], False
    for line in lines:
        if line.startswith("## "):
            inside = line.strip() == "## Claims, checks and figures"
        elif inside and line.startswith("|") and not set(line) <= set("|-: "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 4 and cells[0] != "claim":
                rows.append(cells)
    return rows


def readme_claims(readme: Path) -> dict[str, str]:
    """``{claim: what it says}`` from README's "Claims, checks and figures" table (empty when absent)."""
    return {cells[0]: cells[1] for cells in readme_rows(readme)}


def _code_names(module_name: str) -> set[str]:
    """Identifiers in the code of ``module_name`` (docstrings, strings and comments left out)."""
    import importlib.util

    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return set()
    src = Path(spec.origin).read_text()
    names = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.NAME:
                names.add(tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return names


def _figures(check, all_names: list[str]) -> list[Path]:
    """The committed figures of ``check``: ``figures/NAME.png``, ``figures/NAME-*.png`` (unless a longer check
    name claims the stem, as ``mixing-spectrum`` does from ``mixing``) and PNGs its plot's docstring names."""
    fig_dir = ROOT / "figures"
    longer = [n for n in all_names if n != check.name and n.startswith(check.name + "-")]
    found = []
    for p in sorted(fig_dir.glob(f"{check.name}*.png")):
        stem = p.stem
        if stem != check.name and not stem.startswith(check.name + "-"):
            continue
        if any(stem == n or stem.startswith(n + "-") for n in longer):
            continue
        found.append(p)
    found.sort(key=lambda p: (p.stem != check.name, p.name))  # the check's own figure first
    doc = getattr(check.plot, "__doc__", None) or ""
    for name in re.findall(r"([\w-]+\.png)", doc):
        p = fig_dir / name
        if p.exists() and p not in found:
            found.append(p)
    return found


def _load_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    return str(x)


def _list_table(header: list[str], rows: list[list[str]], widths: str | None = None) -> str:
    out = [".. list-table::", "   :header-rows: 1"]
    if widths:
        out.append(f"   :widths: {widths}")
    out.append("")
    for r in [header, *rows]:
        first = True
        for cell in r:
            cell = cell if cell.strip() else "\\ "
            lines = str(cell).splitlines() or [""]
            out.append(("   * - " if first else "     - ") + lines[0])
            out += ["       " + ln for ln in lines[1:]]
            first = False
    return "\n".join(out) + "\n"


def _producer(check) -> str:
    """The command that writes an external check's result, from its ``paper_checks.md`` row (else "another command")."""
    try:
        from stylized.harness.results import results_dir

        for row in check.table_rows(results_dir()) if check.table_rows else []:
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) > 3 and cells[3].startswith("`") and cells[3].endswith("`"):
                return _rst_literal(cells[3].strip("`"))
    except Exception:  # a missing or partial committed result: fall back to the words
        pass
    return "another command (see the module)"


def check_section(check, *, all_names, theory_claims, mutant_runs, false_rej, page_dir: Path,
                  readme: list[list[str]] = ()) -> str:
    """The reST section of one check: statement, command, module, theory, options, result, figure, mutants."""
    out = [f".. _check-{check.name}:", "", _heading(f"{check.name}", "-")]
    out += [_rst_text(check.statement), ""]
    for cells in readme:  # a README row of its own (C3+ far retrieval; the bridge; retrieval vs perplexity)
        if cells[0] == check.claim:
            continue
        if f"`{check.name}`" in cells[3]:
            out += [f"**README** ({_rst_text(cells[0])}): {_md_inline_to_rst(cells[1])}", ""]
        elif check.external and check.name.split("-")[-1] == cells[0]:  # transformer-bridge ↔ the "bridge" row
            out += [f"**README** ({_rst_text(cells[0])}): {_md_inline_to_rst(cells[1])}; "
                    f"command{'s' if ',' in cells[3] else ''}: {_md_inline_to_rst(cells[3])}.", ""]
    out += [f"* **Command:** ``stylized check {check.name}``"
            + (f" (an *external* check: it reads the result {_producer(check)} wrote)" if check.external
               else f" (Python: ``stylized.run(\"{check.name}\", ...)``)"),
            f"* **Module:** :mod:`{check.module}`" if check.module else "* **Module:** —",
            f"* **Backends:** {', '.join(check.backends)}"]
    if check.requires:
        out.append(f"* **Needs:** {', '.join(check.requires)}")
    names = _code_names(check.module) if check.module else set()
    used = [n for n in theory_claims if n in names]
    if used:
        refs = ", ".join(f":obj:`~stylized.theory.{n}` ({theory_claims[n][0]}, {theory_claims[n][1]})" for n in used)
        out.append(f"* **Theory** (closed forms of :mod:`stylized.theory` the check calls): {refs}")
    else:
        out.append("* **Theory:** no closed form of :mod:`stylized.theory` is called by the module itself "
                   "(the comparison is named in the headline below)")
    out.append("")

    res = _load_json(ROOT / "simulations" / "results" / f"{check.name}.json")
    head = res.get("headline") or {}
    if head:
        est = head.get("estimate")
        line = f"**Committed result** (``simulations/results/{check.name}.json``, the paper-scale defaults): "
        if isinstance(est, (int, float)):
            line += f"{_rst_text(head.get('quantity', ''))}: {_fmt(est)} [{_fmt(head.get('ci_low'))}, {_fmt(head.get('ci_high'))}]"
            if head.get("n_samples") is not None:
                line += f" (n = {_fmt(head['n_samples'])})"
            if head.get("theory") is not None:
                line += f"; theory {_fmt(head['theory'])} ({_rst_text(head.get('theory_kind', ''))})"
        line += f"; **{'holds' if res.get('holds') else 'does not hold'}**."
        out += [line, ""]
        if head.get("verdict"):
            out += [".. admonition:: Verdict", "", textwrap.indent(_rst_text(head["verdict"]), "   "), ""]

    figures = _figures(check, all_names)
    if not figures:
        out += ["*No committed figure*" + (f" (``stylized figures {check.name}`` draws it from the saved result)."
                                           if check.plot is not None else " (the check draws none)."), ""]
    for fig in figures:
        rel = Path(os.path.relpath(fig, page_dir)).as_posix()
        out += [f".. figure:: {rel}", "   :width: 100%", f"   :alt: {check.name}", "",
                f"   ``figures/{fig.name}`` (``stylized figures {check.name}`` redraws it from the saved result).", ""]

    if check.options:
        rows = [[f"``{o.flag}``", _rst_literal(repr(o.default)), _rst_text(o.allowed() or "—"), _rst_text(o.help)]
                for o in check.options]
        out += [f"**Options** (``stylized check {check.name} --help``; the same names as keyword arguments of "
                ":func:`stylized.run`):", "", _list_table(["option", "default", "allowed", "meaning"], rows, "15 15 20 50")]

    if check.mutants:
        runs = {m.get("mutant"): m for m in (mutant_runs.get(check.name) or {}).get("mutants", [])}
        rows = []
        for m in check.mutants:
            run = runs.get(m.name)
            flipped = "—" if run is None else ("flipped" if run.get("holds") is False else "**not flipped**")
            rows.append([f"``{m.name}``", _rst_text(m.description), flipped])
        out += [f"**Mutants** ({len(check.mutants)}; each must turn the verdict false at the reduced sizes "
                f"{_rst_literal(json.dumps(check.reduced, default=str))}; ``stylized falsify {check.name}``):", "",
                _list_table(["mutant", "what is wrong", "last run"], rows, "20 65 15")]
    power = []
    if runs_of_check := (mutant_runs.get(check.name) or {}).get("mutants"):
        flips = sum(r.get("holds") is False for r in runs_of_check)
        power.append(f"{flips}/{len(runs_of_check)} mutants flipped the check in the last ``stylized falsify``")
    if fr := false_rej.get(check.name):
        power.append(f"the unmutated check was rejected on {fr.get('rejections')}/{fr.get('n_seeds')} seeds = "
                     f"{_fmt(fr.get('rate'))} [{_fmt(fr.get('ci_low'))}, {_fmt(fr.get('ci_high'))}] "
                     "(false-rejection rate, nominal 5%, exact 95% Clopper–Pearson interval)")
    if power:
        out += [f"**Power and level** (``simulations/results/falsify/``, at the reduced sizes): {'; '.join(power)}.", ""]
    return "\n".join(out) + "\n"


def generate(out: Path | str | None = None) -> list[Path]:
    """Write the claim pages under ``out/claims/`` and the experiments' API pages under ``out/api/``, removing
    the pages there of modules and claims that are gone; returns the paths written (or left unchanged)."""
    out = Path(out or DOCS / "_generated")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import simulations
    from stylized import theory as th
    from stylized.harness.registry import load_checks

    checks = load_checks(external=True)
    names = list(checks)
    by_claim: dict[str, list] = defaultdict(list)
    for c in checks.values():
        by_claim[c.claim].append(c)
    summaries = readme_claims(ROOT / "README.md")
    rows_md = readme_rows(ROOT / "README.md")
    falsify = ROOT / "simulations" / "results" / "falsify"
    mutant_runs, false_rej = _load_json(falsify / "mutants.json"), _load_json(falsify / "false_rejections.json")
    written: list[Path] = []

    cdir = out / "claims"
    for claim, cs in sorted(by_claim.items()):
        title = f"{claim}: {', '.join(c.name for c in cs)}"
        text = [f".. _claim-{claim}:", "", _heading(title, "=", overline=True)]
        text.append(".. This page is generated by docs/gen_claims.py from the check registry; do not edit.\n")
        if claim in summaries:
            text += [f"**The claim** (README): {_md_inline_to_rst(summaries[claim])}", ""]
        text += [f"{len(cs)} check{'s' if len(cs) != 1 else ''} of claim {claim}. Each verdict is given by "
                 "``stylized check NAME``"
                 + (" and can fail: the mutants below each turn it false." if any(c.mutants for c in cs) else "."), ""]
        # no ``.. contents::``: Furo draws each page's table of contents itself and renders the directive as a
        # red error box ("Adding a table of contents in Furo-based documentation is unnecessary").
        for c in cs:
            text.append(check_section(c, all_names=names, theory_claims=th.CLAIMS, mutant_runs=mutant_runs,
                                      false_rej=false_rej, page_dir=cdir, readme=rows_md))
        _write(cdir / f"{claim}.rst", "\n".join(text), written)

    rows = [[f":ref:`{c.claim} <claim-{c.claim}>`", f":ref:`{c.name} <check-{c.name}>`", _rst_text(c.statement),
             f"``stylized check {c.name}``"] for c in checks.values()]
    index = [_heading("Claims and checks", "=", overline=True),
             ".. This page is generated by docs/gen_claims.py from the check registry; do not edit.\n",
             "One page per claim of the paper. Each check is read from the registry "
             "(:func:`stylized.harness.registry.load_checks`) when the documentation is built: its statement, command, "
             "options, the closed forms it compares with, its committed figure and result, and the mutants that "
             "must each flip it. ``paper_checks.md`` holds the verdicts of the last ``stylized check --all``.", "",
             _list_table(["claim", "check", "statement", "command"], rows, "8 17 55 20"),
             ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {claim}" for claim in sorted(by_claim)]
    _write(cdir / "index.rst", "\n".join(index) + "\n", written)

    _write(out / "gallery.rst", gallery(checks, out), written)

    adir = out / "api"
    _write(adir / "stylized_all.inc", top_level_table(), written)
    mods = list(simulations.check_modules())
    for m in mods:
        regs = [c.name for c in checks.values() if c.module == m]
        body = [_heading(f"``{m}``", "=")]
        if regs:
            body.append("Registers the check" + ("s " if len(regs) > 1 else " ")
                        + ", ".join(f":ref:`{n} <check-{n}>`" for n in regs) + ".\n")
        body += [f".. automodule:: {m}", "   :members:", ""]
        _write(adir / f"{m}.rst", "\n".join(body), written)
    idx = [_heading("Experiments (``simulations``)", "="), ".. automodule:: simulations", "   :members:", "",
           "One module per paper check (each registers its :class:`~stylized.harness.registry.Check` on import):", "",
           ".. toctree::", "   :maxdepth: 1", ""] + [f"   {m}" for m in mods]
    _write(adir / "simulations.rst", "\n".join(idx) + "\n", written)
    for folder in (cdir, adir):  # the page of a module or claim that is gone (renamed, moved) is not left behind
        for stale in set(folder.glob("*.rst")) - set(written):
            stale.unlink()
    return written


def gallery(checks: dict, out: Path) -> str:
    """A page of every committed figure (``figures/*.png``), each under the check that draws it (linked to its
    claim page), the rest (the transformer study's) at the end."""
    names = list(checks)
    lines = [_heading("Gallery of figures", "=", overline=True),
             ".. This page is generated by docs/gen_claims.py from figures/; do not edit.\n",
             "Every committed figure, drawn by ``stylized figures --all`` (the checks') and the transformer "
             "commands, in the shared theme: theory beside measurement with intervals, noise floors shaded.", ""]
    shown: set[Path] = set()
    for c in checks.values():
        figs = [f for f in _figures(c, names) if f not in shown]
        if not figs:
            continue
        lines += [_heading(c.name, "-"), f"Claim :ref:`{c.claim} <claim-{c.claim}>`, check :ref:`{c.name} <check-{c.name}>`.", ""]
        for fig in figs:
            shown.add(fig)
            rel = Path(os.path.relpath(fig, out)).as_posix()
            lines += [f".. figure:: {rel}", "   :width: 100%", f"   :alt: {fig.stem}", "", f"   ``figures/{fig.name}``", ""]
    rest = [f for f in sorted((ROOT / "figures").glob("*.png"))  # not a writer's hidden temporary file
            if f not in shown and not f.name.startswith(".")]
    if rest:
        lines += [_heading("The transformer study", "-"), "The trained models (:doc:`/guide/c6_study`).", ""]
        for fig in rest:
            rel = Path(os.path.relpath(fig, out)).as_posix()
            lines += [f".. figure:: {rel}", "   :width: 100%", f"   :alt: {fig.stem}", "", f"   ``figures/{fig.name}``", ""]
    return "\n".join(lines)


def _api_modules() -> list[str]:
    """The modules with a page under ``docs/api/`` (``stylized.harness.api.rst`` → ``stylized.harness.api``), in file order."""
    return sorted(p.stem for p in (DOCS / "api").glob("stylized.*.rst"))


def top_level_table() -> str:
    """An ``autosummary`` table of ``stylized.__all__``, each name at the documented module that defines it
    (else the first documented module that lists it in ``__all__``)."""
    import importlib

    import stylized

    mods = _api_modules()
    alls = {m: set(getattr(importlib.import_module(m), "__all__", ())) for m in mods}
    entries = []
    for name in stylized.__all__:
        obj = getattr(stylized, name)
        home = getattr(obj, "__module__", None) if callable(obj) or isinstance(obj, type) else None
        if home not in alls or name not in alls[home]:
            home = next((m for m in mods if name in alls[m]), None)
        entries.append(f"{home}.{name}" if home else f"stylized.{name}")
    return "\n".join([".. py:currentmodule:: None", "", ".. autosummary::", "   :nosignatures:", ""]
                     + [f"   ~{e}" for e in entries]) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    paths = generate(Path(argv[0]) if argv else None)
    print(f"gen_claims: {len(paths)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
