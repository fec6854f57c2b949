"""The README stays a short front page (issue 38): at most 200 lines, the two commands first, every relative link
to a file that exists, the claim table the docs' claim pages read, and the exit-status contract."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1).splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "all"], ["make", "test"]]
    # CI runs the README's test command verbatim
    assert first_block[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_links_resolve():
    text = README.read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "the README links its docs pages"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_readme_claim_table_covers_every_claim():
    from stylized.harness.registry import load_checks

    rows = [line for line in README.read_text().split("## Claims, checks and figures", 1)[1].splitlines()
            if line.startswith("| ") and not line.startswith("| claim")]
    claims = {row.split("|")[1].strip() for row in rows}
    for check in load_checks(external=True).values():
        assert check.claim in claims, check.claim


def test_readme_states_the_exit_status_contract():
    text = README.read_text()
    for status in ("0 when the claim holds", "1 when it does not", "2 on bad input", "3 on an internal error", "74"):
        assert status in text, status
