"""Every verdict can fail: each registered check holds at its reduced sizes, and each of its mutants flips it.

The mutants (a wrong model or a wrong theory, declared beside each check as ``Check.mutants``) are run at
the check's reduced sizes (``Check.reduced``), seed 0, numba backend — the same test as the paper-scale
run, smaller.  Each run comes from the session cache ``check_runs`` (``tests/_check_runs.py``), which the other
test files that run a check at its reduced sizes share.  ``stylized falsify`` runs the same table and the false-rejection rates for paper_checks.md.
"""

from __future__ import annotations

import pytest

from stylized.harness.registry import load_checks

CHECKS = load_checks()
MUTANTS = [(name, m) for name, c in CHECKS.items() for m in c.mutants]


@pytest.mark.parametrize("name", list(CHECKS))
def test_every_check_declares_mutants_and_reduced_sizes(name):
    c = CHECKS[name]
    assert c.reduced, f"{name}: no reduced sizes"
    assert len(c.mutants) >= 2, f"{name}: fewer than two mutants"
    assert len({m.name for m in c.mutants}) == len(c.mutants)


@pytest.mark.parametrize("name", list(CHECKS))
def test_unmutated_check_holds_at_reduced_sizes(name, check_runs):
    r = check_runs.reduced(name, seed=0)
    assert r["holds"], f"{name}: the unmutated check does not hold at its reduced sizes"


@pytest.mark.parametrize("name,mutant", MUTANTS, ids=[f"{n}:{m.name}" for n, m in MUTANTS])
def test_mutant_flips_the_verdict(name, mutant, check_runs):
    r = check_runs.reduced(name, seed=0, mutant=mutant.name)
    assert not r["holds"], f"{name}: mutant {mutant.name!r} ({mutant.description}) still holds"


def test_falsify_command_writes_both_tables(tmp_results, capsys):
    from stylized.cli.app import main
    from stylized.harness.falsify import load_falsify

    assert main(["falsify", "far-mass-bound", "--seeds", "3"]) == 0
    m, f = load_falsify("mutants.json")["far-mass-bound"], load_falsify("false_rejections.json")["far-mass-bound"]
    assert m["ok"] and f["n_seeds"] == 3 and 0 <= f["rejections"] <= 3
    assert "mutants flip it" in capsys.readouterr().out
    assert main(["falsify", "no-such-check"]) == 2
