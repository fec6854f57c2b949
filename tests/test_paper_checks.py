"""paper_checks.md is generated: every registered check has a row, and the file is not stale."""

from __future__ import annotations

from stylized.registry import load_checks
from stylized.report import paper_checks_path, render_paper_checks
from stylized.results import code_hash, load_result, results_dir


def test_every_registered_check_has_a_result_and_a_row():
    text = paper_checks_path().read_text()
    for name, check in load_checks().items():
        assert load_result(name) is not None, f"{name}: no saved result; run `stylized check --all`"
        assert f"| {check.claim} | {name} |" in text, f"{name}: no row in paper_checks.md"
        assert "not run" not in [c.strip() for c in text.split("|")], "a check is marked not run"


def test_results_were_made_by_the_current_code():
    for name, check in load_checks().items():
        r = load_result(name)
        assert r["meta"]["code_hash"] == code_hash(check.module), (
            f"{name}: result is stale (code changed since it was computed); run `stylized check --all`")


def test_paper_checks_md_is_what_the_results_render_to():
    assert paper_checks_path().read_text() == render_paper_checks(results_dir()), (
        "paper_checks.md is stale; run `stylized check --all` (it regenerates the file)")


def test_every_markdown_table_row_renders():
    """Each table row has exactly as many cells as its header (unescaped ``|`` would split a cell)."""
    import re

    lines = paper_checks_path().read_text().splitlines()
    split = re.compile(r"(?<!\\)\|")
    header = None
    for line in lines:
        if not line.startswith("|"):
            header = None
            continue
        n = len(split.split(line.strip())) - 2
        if header is None:
            header = n
        assert n == header, f"row with {n} cells under a {header}-column header: {line[:120]}"
