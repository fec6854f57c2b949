"""The score-side checks (C1–C3) at small parameters: JSON contract, verdicts that can fail, CLI, figures."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from stylized.cli.app import main
from stylized.harness.registry import get_check
from stylized.harness.results import run_check
from stylized.laws.families import StepLaw
from tests._shared import SCORE_SMALL, UserReflection

CONTRACT = {"claim", "params", "holds", "rows", "seconds", "headline"}
ROW_KEYS = {"estimate", "ci_low", "ci_high", "theory", "n_samples"}
HEAD_KEYS = {"quantity", "estimate", "ci_low", "ci_high", "n_samples", "theory", "verdict"}

# score-gap: ``trials`` counts contexts of max(M) transported far keys each (not far scores)
SMALL = {**SCORE_SMALL, "score-gap": {"d": [16, 64], "trials": 64, "trials_near": 1000, "M": [64, 4096]}}
CLAIMS = {"mixing": "C1", "mixing-spectrum": "C1", "haar-law": "C2", "score-gap": "C3", "transfer": "C3"}


def _contract(r: dict) -> None:
    assert CONTRACT <= set(r)
    assert HEAD_KEYS <= set(r["headline"]) and isinstance(r["headline"]["verdict"], str)
    assert r["rows"] and all(ROW_KEYS <= set(row) for row in r["rows"])
    json.dumps(r)


@pytest.mark.parametrize("name", list(SMALL))
def test_check_runs_small_and_holds(name, tmp_results):
    """Each claim holds at small parameters (fixed seed 0; each verdict is a joint-95% statement, so a
    wrong implementation fails it, a correct one fails only with the stated small probability)."""
    check = get_check(name)
    assert check.claim == CLAIMS[name]
    r = run_check(check, SMALL[name], seed=0, progress=False)
    _contract(r)
    assert r["holds"], r["headline"]["verdict"]
    paths = check.plot(r, tmp_results / "figures")
    assert all(p.exists() and p.stat().st_size > 10_000 for p in paths)


def test_mixing_window_same_at_every_L_and_op_norm():
    r = run_check(get_check("mixing"), SMALL["mixing"], seed=1, progress=False)
    wins = r["windows"]
    for fam in ("householder", "so2-uniform", "lazy-haar"):
        ws = [w for w in wins if w["family"] == fam]
        assert {w["L"] for w in ws} == {64, 2048}
        n_star = ws[0]["exact_crossing"]
        assert n_star <= ws[0]["W_bound"]  # the exact crossing never exceeds W(ε) = ⌈ln ε / ln(1 − γ)⌉
        for w in ws:
            assert w["window_low"] <= n_star <= w["window_high"]
    assert all(row["within_ci"] and row["theory"] <= row["bound"] + 1e-12 for row in r["op_norm"])


def test_haar_law_ks_distinguishes_mixed_from_unmixed():
    """Past the window (n = 150 ≫ W(0.01) = 35 at d = 16) KS does not reject; below it (n = 3) it must.

    Fixed seeds; thresholds 1e-3 vs 1e-8 leave a wide margin either side (at n = 3 the score is ≈ 0.67 on average,
    a KS distance ~0.8 from the Haar law with 2,000 samples).
    """
    check = get_check("haar-law")
    for fam in ("householder", "haar"):
        mixed = run_check(check, {**SMALL["haar-law"], "family": fam}, seed=3, progress=False)
        assert mixed["families"][0]["ks_pvalue"] > 1e-3 and mixed["holds"]
    unmixed = run_check(check, {**SMALL["haar-law"], "n": 3}, seed=3, progress=False)
    assert unmixed["families"][0]["ks_pvalue"] < 1e-8 and not unmixed["holds"]
    assert "not mixed" in unmixed["headline"]["verdict"]


def test_haar_law_so2_uses_exact_uniform_phase_law_and_lazy_mixture():
    check = get_check("haar-law")
    r = run_check(check, {"family": "so2-uniform", "d": 16, "n": 200, "trials": 2000}, seed=0, progress=False)
    assert r["families"][0]["law"] == "uniform-phase" and r["rows"][0]["theory_kind"] == "closed form" and r["holds"]
    rope = run_check(check, {"family": "rope-random", "d": 16, "n": 200, "trials": 2000}, seed=0, progress=False)
    assert not rope["holds"]  # random RoPE angles have planes that never mix: not the uniform-phase law
    lazy = run_check(check, {"family": "lazy-haar", "d": 16, "n": 5, "p": 0.1, "trials": 4000}, seed=0, progress=False)
    part = lazy["families"][0]
    assert part["unmixed_probability"] == pytest.approx(0.9**5) and lazy["holds"]  # exact mixture law
    assert part["unmixed_binom_pvalue"] > 1e-3


def test_haar_law_default_families_and_honest_rows():
    r = run_check(get_check("haar-law"), {"d": 16, "trials": 3000}, seed=1, progress=False)
    assert [p["family"] for p in r["families"]] == ["householder", "so2-uniform", "haar"]
    assert all(p["n"] == math.ceil(3 * p["W"]) for p in r["families"]) and r["holds"]
    for row in r["rows"]:
        assert row["theory_kind"] == "closed form" and row["bound_kind"].startswith("upper bound")
        assert row["theory"] <= row["bound"] + 1e-12  # the exact tail never exceeds its bound
        assert row["in_verdict"] == (min(row["theory"], 1 - row["theory"]) * row["n_samples"] >= 10)


def test_score_gap_far_keys_are_transported_and_fail_below_the_window():
    """Far keys k = q only decorrelate through transport: starting them at route length 2 (below W(0.01) = 35 at
    d = 16) must fail the check, and the nearest tail band (householder) then lies above the exact law, with
    tail rows among the failures (fixed seed)."""
    check = get_check("score-gap")
    small = {**SMALL["score-gap"], "d": [16], "M": [64, 1024]}
    ok = run_check(check, small, seed=2, progress=False)
    assert ok["holds"], ok["headline"]["verdict"]
    bad = run_check(check, {**small, "far_n": 2}, seed=2, progress=False)
    assert not bad["holds"]
    tails = [r for r in bad["rows"] if r["kind"] == "tail" and r["family"] == "householder"]
    assert all(r["estimate"] > r["theory"] for r in tails)
    assert any(f["kind"] == "tail" for f in bad["failed"])


def test_score_gap_tail_over_all_far_keys():
    """The tail over all M_max far keys: same theory as the nearest band, a narrower interval, in the verdict."""
    r = run_check(get_check("score-gap"), {**SMALL["score-gap"], "d": [16], "M": [64, 1024]}, seed=0, progress=False)
    band = {(x["family"], x["t"]): x for x in r["rows"] if x["kind"] == "tail"}
    every = {(x["family"], x["t"]): x for x in r["rows"] if x["kind"] == "tail-all"}
    assert band.keys() == every.keys()
    for k, x in every.items():
        assert x["theory"] == band[k]["theory"] and x["M"] == 1024 and x["passes"]
        assert x["ci_high"] - x["ci_low"] < band[k]["ci_high"] - band[k]["ci_low"]


def test_score_gap_rows_are_labelled_honestly():
    r = run_check(get_check("score-gap"), {**SMALL["score-gap"], "d": [16], "M": [64, 1024]}, seed=0, progress=False)
    for row in r["rows"]:
        if row["theory"] is not None:
            assert row["theory_kind"] == "closed form"
        if row["bound"] is not None:
            assert row["bound_kind"]
    gaps = [row for row in r["rows"] if row["kind"] == "gap"]
    assert gaps and all(g["theory"] is None and g["bound"] is not None for g in gaps)
    near = {(row["family"], row["n"]): row for row in r["rows"] if row["kind"] == "near"}
    assert near[("so2-uniform", 1)]["theory"] == pytest.approx(math.sin(1.0))  # qᵀE[M]q = sinc(1) = 0.84, not ≈ 1
    assert near[("householder", 1)]["theory"] == pytest.approx(1 - 2 / 16)
    assert r["headline"]["theory_kind"] == "closed form"
    assert all(row["far_n"] == math.ceil(3 * row["W"]) for row in r["rows"])


def test_transfer_reports_near_tests_and_far_mass():
    r = run_check(get_check("transfer"), SMALL["transfer"], seed=0, progress=False)
    t = r["tests"]
    assert {"ks_near_target", "ks_near_entropy", "chi2_runner_up_perm", "welch_far_mass"} <= set(t)
    fm = {row["L"]: row for row in r["rows"] if row["quantity"] == "far_mass"}
    assert fm[2048]["ci_low"] > fm[64]["ci_high"]  # the far mass grows with L
    assert all(row["estimate"] >= row["bound"] for row in fm.values())  # C4 lower bound (the `bound` column), on the side


@pytest.mark.parametrize("name", list(SMALL))
def test_cli_json_contract(name, capsys, tmp_results):
    args = ["check", name, "--json", "--no-progress"]
    for k, v in SMALL[name].items():
        args += ["--" + k.replace("_", "-"), ",".join(map(str, v)) if isinstance(v, list) else str(v)]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    _contract(out)
    assert out["claim"] == name and out["paper_claim"] == CLAIMS[name]


@pytest.mark.parametrize("args,word", [
    (["check", "haar-law", "--t", "0.1,1.5"], "--t: must be a comma list of numbers in [0, 1)"),
    (["check", "transfer", "--target-n", "20", "--D", "8"], "--target-n: must be < --D"),  # a limit between options
    (["check", "mixing", "--d-op", "64"], "--d-op: must be an integer in [2, 32]"),
    (["check", "mixing", "--eps", "2"], "--eps: must be a number in (0, 1)"),
    (["check", "score-gap", "--M", "0"], "--M: must be a comma list of integers in [1,"),
])
def test_bad_parameters_exit_2(args, word, capsys):
    assert main(args + ["--no-progress"]) == 2
    err = capsys.readouterr().err
    assert word in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------
# haar-law and score-gap on every O(d) law: odd d, cayley (estimated E[M]), a user's law (estimated post-mixing law)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Frozen(StepLaw):
    """A user's law that never mixes: ``M = I``."""

    d: int

    def sample(self, xrng, shape, xp=np):
        return xp.broadcast_to(xp.eye(self.d), tuple(shape) + (self.d, self.d)).copy()


TINY = {"haar-law": {"trials": 200, "t": [0.1, 0.2]},
        "score-gap": {"trials": 4, "M": [16], "trials_near": 50, "t": [0.1], "n_near": [1, 2]}}


def _params(name: str, **kw) -> dict:
    return {**{o.name: o.default for o in get_check(name).options}, **kw}


@pytest.mark.parametrize("d", [3, 5, 13, 33])
@pytest.mark.parametrize("family", ["householder", "lazy-haar", "haar", "cayley"])
@pytest.mark.parametrize("name", ["haar-law", "score-gap"])
def test_odd_d_every_orthogonal_law(name, family, d):
    """Every O(d) law runs at odd d (it used to crash on the SO(2) plane pairing); the post-mixing law is the
    d-dimensional Haar coordinate, and its theory is labelled (cayley's E[M], hence its window, is estimated)."""
    r = run_check(get_check(name), {**TINY[name], "family": [family], "d": d if name == "haar-law" else [d]},
                  seed=0, progress=False)
    _contract(r)
    assert all(row["d"] == d and row["law"] == "haar" for row in r["rows"])
    assert all(math.isfinite(row["estimate"]) for row in r["rows"])
    est = family == "cayley"
    if name == "haar-law":
        part = r["families"][0]
        assert part["W_kind"].startswith("estimated") == est and part["law_kind"] == "closed form"
        assert all(row["theory_kind"] == "closed form" and row["bound"] is not None for row in r["rows"])
    else:
        near = [row for row in r["rows"] if row["kind"] == "near"]
        assert all(row["theory_kind"].startswith("estimated") == est for row in near)
        assert all(("theory_radius" in row) == est for row in near)


def test_haar_law_and_score_gap_on_a_user_law_hold_against_the_claims_law():
    """A user's law (only d and sample, d = 5) is compared with the claim's law (the Haar coordinate), never its own
    Monte Carlo limit: the check holds, the rows are closed form with the Lévy bound, the self-consistency p-value is
    reported apart, the premise is measured (estimated degree-2 and degree-4 gaps above 0)."""
    law = UserReflection(5)
    r = get_check("haar-law").run(_params("haar-law", family=[law], d=5, trials=3000), seed=0, backend="numba",
                                  progress=False)
    assert r["holds"], r["headline"]["verdict"]
    part = r["families"][0]
    assert part["law"] == "haar" and part["W_kind"] == law.theory_kind and part["premise_holds"] is True
    assert part["self_consistency_ks_pvalue"] is not None and "not the verdict" in r["headline"]["verdict"]
    assert all(g["kind"].startswith("estimated") for g in part["premises"]["gaps"])
    for row in r["rows"]:
        assert row["theory_kind"] == "closed form" and row["bound"] is not None
    short = get_check("haar-law").run(_params("haar-law", family=[law], d=5, trials=3000, n=1), seed=0,
                                      backend="numba", progress=False)
    assert not short["holds"]  # one step is far from mixed: it can fail
    g = get_check("score-gap").run(_params("score-gap", family=[law], d=[5], trials=16, M=[64, 512], trials_near=1000),
                                   seed=0, backend="numba", progress=False)
    assert g["holds"], g["headline"]["verdict"]
    kinds = {row["kind"]: row for row in g["rows"]}
    assert kinds["near"]["theory_kind"] == law.theory_kind and kinds["near"]["theory_radius"] > 0
    assert "theory_ci" in kinds["suppression"] and kinds["tail"]["bound"] is not None
    assert kinds["tail"]["theory_kind"] == "closed form" and "conservative end" in kinds["gap"]["bound_kind"]
    assert g["headline"]["theory_kind"] != "closed form"


@pytest.mark.parametrize("name", ["haar-law", "score-gap"])
def test_cayley_mutant_sizes_hold_unmutated(name):
    """The cayley mutants flip a verdict that holds: at their sizes the unmutated check holds on cayley."""
    import importlib

    from stylized.harness.falsify import run_reduced

    check = get_check(name)
    sizes = importlib.import_module(check.module).CAYLEY
    r = run_reduced(check, seed=0, params=sizes)
    assert r["holds"], r["result"]["headline"]["verdict"]
    assert {m.name for m in check.mutants} >= {"coord-reflection-even-n", "coord-reflection-odd-n",
                                               "lattice-angle-even-n", "lattice-angle-odd-n"}


@pytest.mark.parametrize("name", ["haar-law", "score-gap"])
def test_a_law_that_never_mixes_is_refused_before_any_work(name):
    p = (_params(name, family=[Frozen(4)], d=4) if name == "haar-law"
         else _params(name, family=[Frozen(4)], d=[4]))
    with pytest.raises(ValueError, match="never mixes") as e:
        get_check(name).run(p, seed=0, backend="numba", progress=False)
    assert len(str(e.value).splitlines()) == 1
    r = get_check(name).run({**p, "n": 10, "far_n": 10, "trials": 200 if name == "haar-law" else 8}, seed=0,
                            backend="numba", progress=False)  # given a route length: refused, with the premise
    assert not r["holds"] and "premise fails: first-moment gap γ₁ = 1 − ||E[M]|| is 0" in r["headline"]["verdict"]
    from stylized.laws.contraction import Contraction

    with pytest.raises(ValueError, match=r"family contraction: this check needs orthogonal steps \(orthogonal=True\)"):
        get_check(name).run({**p, "family": [Contraction(4)]}, seed=0, backend="numba", progress=False)
