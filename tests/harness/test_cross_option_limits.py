"""Limits between options (each option in its range, together not): every one is bad input, refused by the check's
``validate`` before any work, so ``--dry-run``, a real run and ``stylized.run`` refuse it alike: exit 2, one stderr line
``stylized: error: --flag: …`` naming the flag(s) and their allowed values, no traceback, nothing written, no
traceback file (an internal error, exit 3, would leave one).

Each case once found its limit only inside the run (an internal error, exit 3, and ``--dry-run`` approved it).
"""

from __future__ import annotations

import json
import re

import pytest

import stylized
import stylized.harness.api  # noqa: F401  (monkeypatched below; not loaded by a bare `import stylized`)
from stylized import InvalidInput
from stylized.cli import app as cli
from stylized.harness.registry import get_check

# (check, arguments, the flags the one line must name: the first is the line's subject)
LIMITS = [
    # the default route length ⌈3·W(0.01)⌉ is a size too: over 10^5 steps it is refused
    ("haar-law", ["--family", "so2-uniform", "--omega", "0.001"], ["--n", "--omega"]),
    ("haar-law", ["--family", "householder,rope-random", "--d", "16"], ["--n"]),
    ("score-gap", ["--family", "so2-uniform", "--omega", "0.001"], ["--far-n", "--omega"]),
    ("score-gap", ["--family", "rope-random", "--d", "16"], ["--far-n"]),
    # the near target lies nearer the query than every far key
    ("score-gap", ["--target-n", "100", "--far-n", "10"], ["--target-n", "--far-n"]),
    ("score-gap", ["--far-n", "1"], ["--target-n", "--far-n"]),
    ("score-gap", ["--family", "householder", "--d", "16", "--target-n", "200"], ["--target-n", "--far-n"]),
    # (single-option ranges the run required: now in the option's range)
    ("score-gap", ["--lam", "0"], ["--lam"]),
    ("score-gap", ["--n-near", "0,1"], ["--n-near"]),
    # transfer: L > D (each), target_n < D, two distinct L to compare
    ("transfer", ["--L", "64,128", "--D", "128"], ["--L", "--D"]),
    ("transfer", ["--D", "1"], ["--target-n", "--D"]),
    ("transfer", ["--target-n", "20", "--D", "16"], ["--target-n", "--D"]),
    ("transfer", ["--L", "512"], ["--L"]),
    ("transfer", ["--L", "512,512"], ["--L"]),
    # value-snr: L > K
    ("value-snr", ["--L", "2,64", "--K", "4"], ["--L", "--K"]),
    ("value-snr", ["--L", "64", "--K", "64"], ["--L", "--K"]),
    # far-mass-growth: L in (D, 2^24], L_sim > D, at least two queries
    ("far-mass-growth", ["--L", "8,64", "--D", "16"], ["--L", "--D"]),
    ("far-mass-growth", ["--L", "512,33554432"], ["--L"]),
    ("far-mass-growth", ["--L-sim", "16", "--D", "16"], ["--L-sim", "--D"]),
    ("far-mass-growth", ["--trials", "1"], ["--trials"]),
    # mixing: at least two contexts of the longest L
    ("mixing", ["--window-steps", "8192"], ["--window-steps", "--L"]),
    ("mixing", ["--L", "4096", "--window-steps", "8191"], ["--window-steps", "--L"]),
    ("mixing", ["--n-op", "0,1"], ["--n-op"]),
    # mixing-spectrum: L_eval > L_train (it used to run and hold), SO(2) planes need an even d
    ("mixing-spectrum", ["--L-train", "512", "--L-eval", "256"], ["--L-eval", "--L-train"]),
    ("mixing-spectrum", ["--L-train", "65536", "--L-eval", "65536"], ["--L-eval", "--L-train"]),
    ("mixing-spectrum", ["--d", "63"], ["--d"]),
    # far-mass-bound: a softmax over at least one source
    ("far-mass-bound", ["--K", "0", "--M", "0"], ["--K", "--M"]),
    ("far-mass-bound", ["--M", "0", "--K", "0"], ["--K", "--M"]),
    # markov-tokens: the narrowest plane no wider than the widest; a switch that leaves T = I (reducible)
    ("markov-tokens", ["--omega-max", "0.0625"], ["--omega-min", "--omega-max"]),
    ("markov-tokens", ["--switch", "0.1,1e-320"], ["--switch", "--vocab", "--zipf"]),
    # far-retrieval: n ≤ M; M bounded (memory ∝ M) and under the work cap
    ("far-retrieval", ["--n", "1,2000", "--M", "1024"], ["--n", "--M"]),
    ("far-retrieval", ["--M", "1000000000000"], ["--M"]),
]

# just inside the same limits: accepted
INSIDE = [
    ("score-gap", ["--target-n", "9", "--far-n", "10"]),
    ("transfer", ["--L", "17,64", "--D", "16", "--target-n", "15"]),
    ("value-snr", ["--L", "5,64", "--K", "4"]),
    ("far-mass-growth", ["--L", "17,16777216", "--D", "16", "--L-sim", "17"]),
    ("mixing", ["--L", "4096", "--window-steps", "8192"]),
    ("mixing-spectrum", ["--L-train", "512", "--L-eval", "513"]),
    ("far-mass-bound", ["--K", "0", "--M", "1"]),
    ("far-retrieval", ["--n", "1,1024", "--M", "1024"]),
    ("haar-law", ["--family", "rope-random", "--n", "64"]),
]

_IDS = [f"{c} {' '.join(a)}" for c, a, _ in LIMITS]


@pytest.fixture()
def isolated(tmp_path, monkeypatch):
    """Results, figures and the traceback folder under ``tmp_path``; ``run_check`` spied on (called through)."""
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list = []
    real = cli.run_check

    def spy(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(cli, "run_check", spy)
    return tmp_path, calls


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1, captured.err
    return lines[0]


def _names(line: str, flag: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", line) is not None


def _assert_refused(line: str, flags: list[str]) -> None:
    assert line.startswith(f"stylized: error: {flags[0]}"), line
    for flag in flags:
        assert _names(line, flag), (flag, line)


@pytest.mark.parametrize("name,args,flags", LIMITS, ids=_IDS)
def test_dry_run_refuses_the_limit(name, args, flags, isolated, capsys):
    tmp, calls = isolated
    assert cli.main(["check", name, *args, "--dry-run"]) == 2
    _assert_refused(_one_error_line(capsys), flags)
    assert calls == [] and not any(tmp.iterdir())


@pytest.mark.parametrize("name,args,flags", LIMITS, ids=_IDS)
def test_a_real_run_refuses_it_alike_before_any_work(name, args, flags, isolated, capsys):
    tmp, calls = isolated
    assert cli.main(["check", name, *args, "--save", "--json", "--no-progress"]) == 2
    captured_line = _one_error_line(capsys)
    _assert_refused(captured_line, flags)
    assert calls == [], "the run was started"
    assert not any(tmp.iterdir()), sorted(p.name for p in tmp.rglob("*"))  # no result, figure or traceback file


@pytest.mark.parametrize("name,args,flags", LIMITS, ids=_IDS)
def test_stylized_run_raises_invalid_input_naming_the_keyword(name, args, flags, monkeypatch):
    calls = []
    monkeypatch.setattr(stylized.harness.api, "run_check", lambda *a, **k: calls.append(a))
    given = {args[i].removeprefix("--").replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
    with pytest.raises(InvalidInput) as e:
        stylized.run(name, **given)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(flags[0].removeprefix("--").replace("-", "_") + ":"), msg
    assert calls == []


@pytest.mark.parametrize("name,args,flags", LIMITS, ids=_IDS)
def test_the_refusal_gives_the_allowed_values_of_every_flag_it_names(name, args, flags):
    """As a range refusal does: each flag the line names comes with its allowed values."""
    check = get_check(name)
    given = {args[i].removeprefix("--").replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
    with pytest.raises(InvalidInput) as e:
        check.parse_params(given)
    msg = str(e.value)
    for o in check.options:
        if _names(msg, o.flag):
            assert o.spec.range_text() in msg, (o.flag, msg)


@pytest.mark.parametrize("name,args", INSIDE, ids=[f"{c} {' '.join(a)}" for c, a in INSIDE])
def test_just_inside_the_limits_is_accepted(name, args, isolated, capsys):
    assert cli.main(["check", name, *args, "--dry-run"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["claim"] == name


def test_far_retrieval_sizes_enter_the_work_cap(isolated, capsys):
    """far-retrieval's sizes were plain integers (no range, no work estimate): a huge run was accepted."""
    assert cli.main(["check", "far-retrieval", "--M", "10000000", "--trials", "1000000", "--dry-run"]) == 2
    line = _one_error_line(capsys)
    assert "work estimate" in line and _names(line, "--M") and _names(line, "--trials")


def test_haar_law_and_score_gap_check_every_family_and_dimension():
    """The default route length is checked for each (family, d), not only the first."""
    with pytest.raises(InvalidInput, match=r"^--far-n: .* so2-uniform \(--omega 0.001\), d=16"):
        get_check("score-gap").parse_params({"family": "householder,so2-uniform", "d": "16,64", "omega": 0.001})
    with pytest.raises(InvalidInput, match=r"^--target-n: must be < the default --far-n .* = 3 for haar, d=16"):
        get_check("score-gap").parse_params({"family": "householder,haar", "d": "16", "target_n": 5})
    with pytest.raises(InvalidInput, match=r"^--n: .* rope-random \(--base 10000\) exceeds 10\^5"):
        get_check("haar-law").parse_params({"family": "householder,so2-uniform,rope-random", "d": 16})


def test_the_run_keeps_its_own_checks_for_callers_that_skip_parse_params():
    """``run`` still refuses what ``validate`` refuses (the same functions compute the values it uses)."""
    from simulations import mixing_spectrum, transfer

    p = transfer.CHECK.parse_params() | {"target_n": 99}
    with pytest.raises(ValueError, match="^--target-n: must be < --D"):
        transfer.CHECK.run(p, seed=0, backend="numpy", progress=False)
    p = mixing_spectrum.CHECK.parse_params() | {"L_eval": 256}
    with pytest.raises(ValueError, match="^--L-eval: must be > --L-train"):
        mixing_spectrum.CHECK.run(p, seed=0, backend="numpy", progress=False)
