"""The human output of ``stylized check NAME``: a table of a result's rows that fits one screen.

Compact (the default): the columns shared by every row are said once above the table
(``every row: n_samples = 500, theory_kind = closed form``), long text columns are left out,
the columns that remain are cut to the terminal's width, and at most :data:`MAX_ROWS` rows are
shown: every row that disagrees with its theory first, then the others in order.  ``-v``
(``verbose``) prints every row and every column, as before.
"""

from __future__ import annotations

import shutil
import textwrap

from ..harness.report import fmt

__all__ = ["MAX_ROWS", "table", "compact_table"]

MAX_ROWS = 20
_LONG = 24  # a text column whose cells are longer than this is left out of the compact table
_VERDICT_KEYS = ("agrees", "within_joint_ci", "consistent", "passes", "bound_holds", "in_verdict")


def _keys(rows: list[dict]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys and not isinstance(r[k], (list, dict))]
    return keys


def _render(rows: list[dict], keys: list[str]) -> list[str]:
    cells = [[fmt(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    out = ["  ".join(k.rjust(w) for k, w in zip(keys, widths)), "  ".join("-" * w for w in widths)]
    return out + ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]


def table(rows: list[dict]) -> str:
    """Every row and every scalar column."""
    return "\n".join(_render(rows, _keys(rows))) if rows else "(no rows)"


def _fails(r: dict) -> bool:
    return any(r.get(k) is False for k in _VERDICT_KEYS[:-1]) and r.get("in_verdict", True) is not False


def compact_table(rows: list[dict], width: int | None = None, max_rows: int = MAX_ROWS) -> str:
    """At most ``max_rows`` rows (disagreeing rows first) and the columns that fit in ``width`` characters
    (default: the terminal's width), with the columns every row shares said once above the table."""
    if not rows:
        return "(no rows)"
    width = width or shutil.get_terminal_size((120, 24)).columns
    keys = _keys(rows)
    shared = [k for k in keys if len(rows) > 1 and all(k in r for r in rows)
              and len({fmt(r[k]) for r in rows}) == 1 and k not in _VERDICT_KEYS]
    varying = [k for k in keys if k not in shared]
    long_ = [k for k in varying if any(isinstance(r.get(k), str) and len(r[k]) > _LONG for r in rows)]
    cols = [k for k in varying if k not in long_]
    verdict = [k for k in cols if k in _VERDICT_KEYS]
    cols = [k for k in cols if k not in _VERDICT_KEYS] + verdict  # the verdict columns always shown, last
    failing = [r for r in rows if _fails(r)]
    shown = (failing + [r for r in rows if not _fails(r)])[:max_rows] if failing else rows[:max_rows]
    kept = list(cols)
    while len(kept) > 1 and len(_render(shown, kept)[0]) > width:
        drop = next((k for k in reversed(kept) if k not in verdict), None)
        if drop is None:
            break
        kept.remove(drop)
    lines = []
    if shared:
        lines.append(textwrap.fill("every row: " + ", ".join(f"{k} = {fmt(rows[0][k])}" for k in shared), width))
    lines += _render(shown, kept)
    hidden_cols = len(cols) - len(kept) + len(long_)
    notes = []
    if len(shown) < len(rows):
        notes.append(f"{len(rows) - len(shown)} more rows" + (" (the disagreeing ones shown first)" if failing else ""))
    if hidden_cols:
        notes.append(f"{hidden_cols} more column{'s' if hidden_cols > 1 else ''}")
    if notes:
        lines.append(textwrap.fill(f"… {', '.join(notes)}: -v for all, --json for everything", width))
    return "\n".join(lines)
