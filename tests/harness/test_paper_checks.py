"""paper_checks.md is generated: every registered check has a row, and the file is not stale."""

from __future__ import annotations

from stylized.harness.registry import load_checks
from stylized.harness.report import paper_checks_path, render_paper_checks
from stylized.harness.results import code_hash, load_result, results_dir


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


def test_external_checks_render_their_own_rows_and_sections(tmp_path, monkeypatch):
    """The report knows no result format: a check that reads another command's result renders its row and section."""
    from stylized.harness import registry
    from stylized.harness.registry import Check

    fake = Check(name="fake-external", claim="C9", statement="a plugged check", options=(),
                 run=lambda p, **k: {"holds": True, "rows": []}, module="tests.fake", external=True,
                 table_rows=lambda d: ["| C9 | fake-external | x | x | x | x | **holds** |"],
                 section=lambda d: ["", "## Fake section", "", f"from {d.name}", ""])
    monkeypatch.setitem(registry._REGISTRY, fake.name, fake)
    text = render_paper_checks(tmp_path)
    table = text.split("## Details")[0]
    assert "| C9 | fake-external |" in table
    assert text.rstrip().endswith(f"## Fake section\n\nfrom {tmp_path.name}")
    assert "fake-external" not in load_checks()  # not a computed check: check --all and falsify skip it
    assert "fake-external" in load_checks(external=True)


def test_c6_and_bridge_are_registered_checks_when_torch_is_installed():
    import importlib.util

    import pytest

    if importlib.util.find_spec("torch") is None:
        pytest.skip("the transformer checks need torch")
    checks = load_checks(external=True)
    assert {"transformer-compare", "transformer-bridge"} <= set(checks)
    assert all(checks[n].external and "torch" in checks[n].requires for n in ("transformer-compare", "transformer-bridge"))
