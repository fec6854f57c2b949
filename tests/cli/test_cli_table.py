"""The compact human output of ``stylized check NAME``: one screen, the disagreeing rows first, ``-v`` for all."""

from __future__ import annotations

from stylized.cli.table import MAX_ROWS, compact_table, table


def _rows(n: int = 100, failing: int = 97) -> list[dict]:
    return [{"family": "householder", "n": k, "estimate": 0.5 + k, "ci_low": 0.4 + k, "ci_high": 0.6 + k,
             "n_samples": 500, "theory": 0.5 + k, "theory_kind": "closed form (a long description of the theory)",
             "note": f"row {k} carries a long note that no screen needs to show",
             "extra_a": 1.0 * k, "extra_b": 2.0 * k, "extra_c": 3.0 * k, "agrees": k != failing} for k in range(n)]


def test_compact_table_fits_a_screen_and_shows_the_disagreeing_row_first():
    out = compact_table(_rows(), width=80).splitlines()
    assert out[0].startswith("every row: family = householder, n_samples = 500")
    body = [x for x in out if x.strip() and x.split()[0].isdigit()]
    assert len(body) == MAX_ROWS and body[0].split()[0] == "97"  # the failing row leads
    assert all(len(x) <= 80 for x in out)
    header = next(x for x in out if "estimate" in x)
    assert header.split()[-1] == "agrees"  # the verdict column kept, last
    assert "theory_kind = closed form" in " ".join(out[:2])  # a shared column said once
    assert " ".join(out[-2:]).startswith("… 80 more rows (the disagreeing ones shown first)") and "-v" in out[-2]


def test_verbose_table_has_every_row_and_column():
    rows = _rows(30)
    out = table(rows).splitlines()
    assert len(out) == 2 + 30 and "note" in out[0] and "extra_c" in out[0]


def test_small_results_are_shown_whole():
    rows = _rows(3, failing=-1)
    out = compact_table(rows, width=400)
    assert "more rows" not in out and out.splitlines()[-1].startswith("… 1 more column:")  # the long note
