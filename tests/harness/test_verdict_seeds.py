"""A verdict that says how sure it is: the measured false-rejection rate in every check's output, and ``--seeds N``.

The rate is read from the committed ``stylized falsify`` result (never recomputed); the multi-seed rule's ``k`` is the
smallest count of failing seeds whose binomial tail at the measured rate's upper bound is ≤ 1%.
"""

from __future__ import annotations

import json
import math

import pytest

from stylized.cli.app import main
from stylized.cli.seeds import COMBINED_LEVEL, combine, combined_rule, false_rejection, frr_sentence

SMALL = ["--M", "100000", "--trials", "4", "--adversarial", "10"]  # far-mass-bound in about a second


def _tail(n, k, p):
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 30])
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.05, 0.1, 0.3])
def test_combined_rule_is_the_smallest_k_at_the_level(n, alpha):
    k, level = combined_rule(n, alpha)
    assert 1 <= k <= n and level == pytest.approx(_tail(n, k, alpha), abs=1e-6)
    if level <= COMBINED_LEVEL:
        assert k == 1 or _tail(n, k - 1, alpha) > COMBINED_LEVEL  # no smaller k reaches the level
    else:
        assert k == n  # too few seeds to reach 1%: all must fail, and the level says so


def test_false_rejection_reads_the_committed_falsify_result():
    from stylized.cli.seeds import _falsify_files

    path = _falsify_files()[0]
    committed = json.loads(path.read_text())["mixing"]
    frr = false_rejection("mixing")
    assert frr["n_seeds"] == committed["n_seeds"] and frr["rejections"] == committed["rejections"]
    assert frr["ci_low"] <= frr["rate"] <= frr["ci_high"]
    assert false_rejection("no-such-check") is None
    assert "not measured" in frr_sentence(None) and f"{frr['n_seeds']} seeds" in frr_sentence(frr)


def _fake(seed, holds):
    return {"params": {"seed": seed, "d": 8}, "holds": holds, "seconds": 1.0, "paper_claim": "C1"}


def test_combine_counts_failures_against_k():
    k, _ = combined_rule(5, false_rejection("mixing")["ci_high"])
    held = combine("mixing", [_fake(s, s >= k - 1) for s in range(5)])  # k − 1 failures: holds
    failed = combine("mixing", [_fake(s, s >= k) for s in range(5)])  # k failures: does not hold
    assert held["holds"] is True and failed["holds"] is False and failed["failed_seeds"] == list(range(k))
    assert combine("mixing", [_fake(0, None), _fake(1, True)])["holds"] is None  # a report has no verdict


def test_check_output_states_the_false_rejection_rate(tmp_results, capsys):
    assert main(["check", "far-mass-bound", *SMALL, "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("C4 far-mass-bound: HOLDS") and "false-rejection rate" in line
    assert main(["check", "far-mass-bound", *SMALL, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["false_rejection"]["n_seeds"] == false_rejection("far-mass-bound")["n_seeds"]


def test_seeds_gives_one_verdict_with_its_level(tmp_results, capsys):
    assert main(["check", "far-mass-bound", *SMALL, "--seeds", "3", "--seed", "5", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["holds"] is True and c["seeds"] == [5, 6, 7] and len(c["runs"]) == 3
    assert c["k"] == combined_rule(3, c["alpha"])[0] and "false-rejection rate of this rule" in c["rule"]
    assert main(["check", "far-mass-bound", *SMALL, "--seeds", "2"]) == 0
    text = capsys.readouterr().out
    assert "[2/2] seed 1" in text and "HOLDS over 2 seeds" in text and "Rule: does not hold when" in text


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--seeds", "1001"], ["--seeds", "2", "--save"],
                                  ["--seeds", "2", "--seed", str(2**32 - 1)]])
def test_seeds_bad_input_exits_2(tmp_results, argv, capsys):
    try:
        code = main(["check", "far-mass-bound", *SMALL, *argv])
    except SystemExit as e:  # argparse's own refusal of a value out of range
        code = e.code
    assert code == 2
    assert "--seeds" in capsys.readouterr().err
