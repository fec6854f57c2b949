"""Far retrieval of a passkey (issue 17): the closed forms of :mod:`stylized.theory.retrieval` against Monte Carlo,
invalid input, reproducibility, and the registered check at its reduced sizes.

Monte Carlo comparisons use fixed seeds and 5-sigma (or exact-interval) tolerances: false-alarm rate < 1e-5 each.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from stylized import StepLaw
from stylized.engine.sampling import equal_energy_query, haar_coordinates
from stylized.engine.score_chains import score_chains
from stylized.laws.families import make_family
from stylized.theory import retrieval as rt
from stylized.theory.score_laws import UniformPhaseSum

FAMS = [("so2-uniform", {"omega": 1.0}), ("so2-uniform", {"omega": 0.3}), ("rope-random", {}), ("householder", {}),
        ("so2-normal", {"sigma": 0.4}), ("lazy-haar", {"p": 0.05})]


def _fam(name, d, kw):
    return make_family(name, d, **kw)


class TestPasskeyLaw:
    @pytest.mark.parametrize("name,kw", FAMS, ids=lambda x: str(x))
    @pytest.mark.parametrize("n", [1, 5, 30, 400])
    def test_law_matches_transported_scores(self, name, kw, n):
        d = 16
        fam, q = _fam(name, d, kw), equal_energy_query(d)
        s = score_chains(fam, n + 1, 6000, 11, q, q)[:, n]
        pts, w = rt.passkey_law(fam, q, n)
        assert abs(w.sum() - 1) < 1e-9
        mean = float(w @ pts)
        assert abs(mean - rt.expected_score(fam, q, n)) < 2e-3  # binning error O(h)
        assert abs(s.mean() - mean) < 5 * s.std() / math.sqrt(s.size) + 1e-3
        for t in (0.0, 0.3, 0.6):  # tail probabilities (smooth enough for the Householder quadrature rule)
            p = min(1.0, float(w @ (pts > t))) if name != "householder" else None  # a sum of weights can round past 1
            if p is not None:
                assert abs(np.mean(s > t) - p) < 5 * math.sqrt(p * (1 - p) / s.size) + 2e-3

    def test_mixed_so2_law_is_the_uniform_phase_law(self):
        d = 16
        q = equal_energy_query(d)
        pts, w = rt.mixed_law(make_family("so2-uniform", d), q)
        law = UniformPhaseSum(tuple(np.full(d // 2, 1.0 / (d // 2))))
        for x in (-0.4, 0.0, 0.25, 0.5):
            assert abs(float(w @ (pts <= x)) - float(law.cdf(x))) < 2e-3

    def test_irwin_hall_and_series_branches_agree(self):
        from stylized.theory import overlap_laws
        fam = make_family("so2-uniform", 4, omega=0.9)
        u = np.linspace(0, math.pi, 50)
        for n in (5, 16):
            a = fam.folded_phase_cdf(0, n, u)  # Irwin–Hall, wrapped
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(overlap_laws, "IH_MAX", 0)
                b = fam.folded_phase_cdf(0, n, u)  # Fourier series
            assert np.max(np.abs(a - b)) < 1e-8


class TestScoreAndPlanes:
    def test_expected_score_is_the_mean_overlap(self):
        for name, kw in FAMS:
            fam, q = _fam(name, 16, kw), equal_energy_query(16)
            ns = np.array([0, 1, 7, 100])
            assert np.allclose(rt.expected_score(fam, q, ns, lam=3.0), 3.0 * fam.mean_overlap(q, ns))

    def test_rope_random_d64_has_17_non_mixing_planes(self):
        fam, q = make_family("rope-random", 64), equal_energy_query(64)
        share, k = rt.nonmixing_share(fam, q, 65537, 0.05)
        assert k == 17 and share == pytest.approx(17 / 32)
        floor = rt.nonmixing_floor(fam, q, 65536, 65537, 1.0, 0.05)
        assert 0 < floor <= share and floor <= rt.expected_score(fam, q, 65536)
        assert rt.nonmixing_share(make_family("so2-uniform", 64), q, 65537) == (0.0, 0)


class TestRankAndWeight:
    def test_rank_one_of_the_haystack_law_is_chance(self):
        for M in (10, 1000):
            pts, w = rt.mixed_law(make_family("householder", 32), equal_energy_query(32))
            assert rt.rank_one_probability(pts, w, 32, M) == pytest.approx(rt.chance(M), rel=2e-3)

    @pytest.mark.parametrize("control", rt.CONTROLS)
    def test_rank_and_weight_match_monte_carlo(self, control):
        d, M, lam, n, T = 16, 200, 6.0, 6, 20000
        fam, q = make_family("so2-uniform", d, omega=0.5), equal_energy_query(d)
        ctrl = rt.RetrievalControl(control, m=0.2, gate=2.0, L_train=20)
        s = score_chains(fam, n + 1, T, 3, q, q)[:, n]
        xi = haar_coordinates(np.random.default_rng(4), (T, M + 1), d)
        xi[:, n] = -np.inf  # the passkey's slot
        pts, w = rt.passkey_law(fam, q, n)
        p1 = rt.rank_one_probability(pts, w, d, M)
        k = int(np.sum(s > xi.max(axis=1)))
        lo, hi = stats.binomtest(k, T).proportion_ci(0.99999)
        assert lo <= p1 <= hi
        lk, lc = ctrl.kappa(M) * lam, ctrl.log_factor(np.arange(M + 1))
        logits = np.c_[lk * s + lc[n], lk * xi + lc]
        alpha = np.exp(logits[:, 0] - np.logaddexp.reduce(logits, axis=1))
        th = rt.expected_weight(pts, w, n, ctrl, lam, M, rt.haystack_log_laplace(ctrl, lam, d, M))
        assert abs(alpha.mean() - th) < 5 * alpha.std() / math.sqrt(T) + 1e-4

    @pytest.mark.parametrize("control,n", [("alibi", 3), ("alibi", 20), ("forget-gate", 10), ("forget-gate", 60),
                                           ("none", 10), ("log-scaling", 10)])
    def test_top_logit_probability_matches_monte_carlo(self, control, n):
        d, M, lam, T = 16, 300, 6.0, 20000
        fam, q = make_family("so2-uniform", d, omega=0.5), equal_energy_query(d)
        ctrl = rt.RetrievalControl(control, m=0.2, gate=2.0, L_train=20)
        pts, w = rt.passkey_law(fam, q, n)
        th = rt.top_logit_probability(pts, w, d, M, n, ctrl, lam)
        s = score_chains(fam, n + 1, T, 3, q, q)[:, n]
        lk, lc = lam * ctrl.kappa(M), ctrl.log_factor(np.arange(M + 1))
        logits = lk * haar_coordinates(np.random.default_rng(4), (T, M + 1), d) + lc
        logits[:, n] = -np.inf
        k = int(np.sum(lk * s + lc[n] > logits.max(axis=1)))
        lo, hi = stats.binomtest(k, T).proportion_ci(0.99999)
        assert lo <= th <= hi
        if ctrl.r is not None:  # past n ≥ 2/a the passkey can never hold the top logit
            a = -math.log(ctrl.r) / lk
            assert rt.top_logit_probability(pts, w, d, M, math.ceil(2 / a), ctrl, lam) == 0.0

    @pytest.mark.parametrize("control", rt.CONTROLS)
    def test_haystack_laplace_is_the_sum_over_keys(self, control):
        ctrl = rt.RetrievalControl(control, m=0.07, gate=3.0, L_train=64)
        sig, h, lp, far = rt.haystack_log_laplace(ctrl, 8.0, 16, 3000)
        c = np.exp(ctrl.log_factor(np.arange(3001)))
        for i in range(0, sig.size, 41):
            assert lp[i] == pytest.approx(far.log_laplace(sig[i] * c).sum(), rel=1e-9, abs=1e-9)

    def test_alibi_suppresses_the_passkey_by_its_bias(self):
        """Once α ≪ 1: α_n ∝ e^{−mn} E[e^{λ s_n}] (the bias times the content's own change)."""
        fam, q = make_family("rope-random", 16), equal_energy_query(16)
        ctrl = rt.RetrievalControl("alibi", m=0.25)
        hay = rt.haystack_log_laplace(ctrl, 10.0, 16, 1000)
        laws = {n: rt.passkey_law(fam, q, n) for n in (60, 80)}
        w = {n: rt.expected_weight(*laws[n], n, ctrl, 10.0, 1000, hay) for n in laws}
        mgf = {n: float(laws[n][1] @ np.exp(10.0 * laws[n][0])) for n in laws}
        assert w[80] / w[60] == pytest.approx(math.exp(-0.25 * 20) * mgf[80] / mgf[60], rel=1e-2)


class TestInvalidInput:
    def test_library_errors_name_the_argument(self):
        fam, q = make_family("so2-uniform", 8), equal_energy_query(8)
        with pytest.raises(ValueError, match="q must"):
            rt.passkey_law(fam, 2 * q, 3)
        with pytest.raises(ValueError, match="n \\(route length\\)"):
            rt.passkey_law(fam, q, -1)
        with pytest.raises(ValueError, match="h \\(grid step\\)"):
            rt.passkey_law(fam, q, 3, h=0.0)
        with pytest.raises(ValueError, match="M must"):
            rt.rank_one_probability([0.0], [1.0], 8, 0)
        with pytest.raises(ValueError, match="control must"):
            rt.RetrievalControl("rope")
        with pytest.raises(ValueError, match="m \\(ALiBi slope\\)"):
            rt.RetrievalControl("alibi", m=-1.0)
        with pytest.raises(ValueError, match="eps must"):
            rt.nonmixing_share(fam, q, 100, eps=1.5)
        from stylized.laws.families import TokenAngles

        tok = TokenAngles(d=8, table=np.random.default_rng(0).uniform(-1, 1, (5, 4)))
        with pytest.raises(ValueError, match="no passkey law"):
            rt.passkey_law(tok, q, 2)  # token angles: no continuous folded law
        ctrl = rt.RetrievalControl("none")
        with pytest.raises(ValueError, match="n must lie"):
            rt.expected_weight([0.0], [1.0], 50, ctrl, 1.0, 10, rt.haystack_log_laplace(ctrl, 1.0, 8, 10))

    @pytest.mark.parametrize("args,word", [
        (["--n", "1,70000"], "--n: every passkey route length must lie in [1, --M] = [1, 65536]"),
        (["--n", "1,2000", "--M", "1024"], "--n: every passkey route length must lie in [1, --M] = [1, 1024]"),
        (["--lam", "0"], "--lam: must be a number in (0, 100]"),
        (["--control", "none,rope"], "--control: must be a comma list of none, alibi"),
        (["--family", "markov-tokens", "--d", "8"], "needs i.i.d. steps (iid=True)"),
        (["--family", "householder,contraction"], "needs orthogonal steps (orthogonal=True)"),
        (["--trials", "3"], "--trials: must be an integer in [10, 10^6]"),
        (["--eps", "1"], "--eps: must be a number in (0, 1)"),
        (["--M", "1e12"], "--M: must be an integer in [2, 10^7]"),  # memory ∝ M: a huge M is refused, not run
        # a gate near 1 (or a tiny ALiBi slope) decays too slowly for the theory's grids: it hung or ran out of memory
        (["--gate", "20"], "--gate: must be a number in [-100, 8]"),
        (["--m", "1e-9"], "--m: must be a number in [0.001, 100]"),
    ])
    def test_cli_bad_options_exit_2(self, args, word, capsys, tmp_results):
        from stylized.cli.app import main

        assert main(["check", "far-retrieval", *args, "--no-progress"]) == 2
        errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("stylized: error:")]
        assert len(errors) == 1 and word in errors[0]
        assert not (tmp_results / "results").exists()

    @pytest.mark.parametrize("family", ["lazy-haar", "haar", "cayley", "householder,lazy-haar"])
    def test_every_orthogonal_iid_law_is_accepted(self, family, capsys, tmp_results):
        """Every law is accepted by design (lazy-haar was once refused): any orthogonal i.i.d. law passes --dry-run."""
        from stylized.cli.app import main

        assert main(["check", "far-retrieval", "--family", family, "--dry-run"]) == 0
        assert json.loads(capsys.readouterr().out)["params"]["family"] == family.split(",")


class TestCheck:
    def test_reduced_check_holds_and_is_reproducible(self):
        from stylized.harness.falsify import run_reduced
        from stylized.harness.registry import get_check

        c = get_check("far-retrieval")
        a, b = run_reduced(c, seed=3), run_reduced(c, seed=3)
        assert a["holds"]
        ra, rb = a["result"]["rows"], b["result"]["rows"]
        assert [r["estimate"] for r in ra] == [r["estimate"] for r in rb]
        fams = {f["family"]: f for f in a["result"]["families"]}
        assert fams["rope-random"]["nonmixing_share"] > 0 and fams["so2-uniform"]["nonmixing_share"] == 0
        assert all(r.get("at_chance", True) for r in ra) and any(r.get("above_chance") for r in ra)
        for r in ra:
            assert {"estimate", "ci_low", "ci_high", "theory", "n_samples"} <= set(r)
        c2 = run_reduced(c, seed=4)["result"]["rows"]
        assert [r["estimate"] for r in c2] != [r["estimate"] for r in ra]


# ---------------------------------------------------------------------------------------
# any orthogonal i.i.d. law: odd d, cayley (estimated E[M]), a user's law, refusals
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GivensLaw(StepLaw):
    """A user's law: a rotation by ``θ ~ U(−π, π)`` in a uniformly chosen coordinate plane (orthogonal, i.i.d.,
    not isotropic, no closed forms declared: every theory of the check is estimated)."""

    d: int

    def sample(self, xrng, shape, xp=np):
        shape = tuple(shape)
        n = int(np.prod(shape)) if shape else 1
        out = np.broadcast_to(np.eye(self.d), (n, self.d, self.d)).copy()
        ij = np.argsort(xrng.random((n, self.d)), axis=1)[:, :2]
        th = xrng.uniform(-np.pi, np.pi, n)
        r = np.arange(n)
        i, j = ij[:, 0], ij[:, 1]
        out[r, i, i], out[r, j, j] = np.cos(th), np.cos(th)
        out[r, i, j], out[r, j, i] = -np.sin(th), np.sin(th)
        return out.reshape(shape + (self.d, self.d))


@dataclass(frozen=True)
class ShrinkLaw(StepLaw):
    """A contraction ``M = I/2``: not orthogonal."""

    d: int
    orthogonal: ClassVar[bool] = False

    def sample(self, xrng, shape, xp=np):
        return np.broadcast_to(np.eye(self.d) / 2, tuple(shape) + (self.d, self.d)).copy()


TINY = {"M": 256, "n": [1, 3, 256], "trials": 40}


def _run(law, seed=0, **over):
    from simulations import far_retrieval as fr

    params = fr.CHECK.parse_params({"family": law, **TINY, **over})
    return fr.CHECK.run(params, seed=seed, backend="numba", progress=False)


def _assert_well_formed(r, law):
    assert r["holds"], r["failed"]
    rows = r["rows"]
    assert {x["family"] for x in rows} == {law.name} and {x["d"] for x in rows} == {law.d}
    for x in rows:
        assert math.isfinite(x["theory"]) and x["joint_low"] <= x["joint_high"]
        assert ("theory_radius" in x) == x["theory_kind"].startswith("estimated")


class TestLaws:
    @pytest.mark.parametrize("d", [3, 5, 13, 33])
    @pytest.mark.parametrize("name", ["householder", "lazy-haar", "haar", "cayley"])
    def test_odd_d_o_d_laws(self, name, d):
        law = make_family(name, d)
        r = _run(law)
        _assert_well_formed(r, law)
        kinds = {x["n"]: x["theory_kind"] for x in r["rows"] if x["kind"] == "rank1" and x["control"] is None}
        assert kinds[256] == "closed form"  # past 3W: the Haar coordinate of an isotropic law
        if name == "cayley":  # no closed-form E[M]: the score and the unmixed rank theories are estimated
            assert all(x["theory_kind"].startswith("estimated") for x in r["rows"] if x["kind"] == "score")
            assert kinds[1].startswith("estimated")

    def test_cayley_and_the_user_law(self):
        for law in (make_family("cayley", 8), GivensLaw(5)):
            r = _run(law, M=128, n=[1, 2, 8, 128], trials=200)
            _assert_well_formed(r, law)
            est = [x for x in r["rows"] if "theory_radius" in x]
            assert est and all(x["theory_radius"] > 0 for x in est)
            fam = r["families"][0]  # cayley declares its post-mixing law (isotropic); the user's law does not
            assert ("mixed_rank1_radius" in fam) == isinstance(law, GivensLaw) and fam["W"] < 128 / 3

    def test_estimated_rule_matches_the_closed_form(self):
        """The estimated path (reference chains) against the closed form on a law that has both (so2-uniform)."""
        from stylized.theory.overlap_laws import estimated_rule, reference_draws

        fam, d, M = make_family("so2-uniform", 8), 8, 256
        q = equal_energy_query(d)
        rule = estimated_rule(reference_draws(fam, q, [3])[:, 0])
        pts, w = rt.passkey_law(fam, q, 3)
        from simulations._far_retrieval_theory import rank_probability

        p_est, rad = rank_probability(rule, d, M)
        assert abs(p_est - rt.rank_one_probability(pts, w, d, M)) < 2.5 * rad

    def test_token_planes_without_a_phase_law_are_estimated(self):
        from stylized.laws.families import TokenAngles

        tok = TokenAngles(d=8, table=np.random.default_rng(0).uniform(-1.5, 1.5, (7, 4)))
        r = _run(tok, M=64, n=[1, 4, 64], trials=100)
        assert r["holds"], r["failed"]
        assert all(x["theory_kind"].startswith("estimated") for x in r["rows"] if x["kind"] == "rank1")

    def test_refusals_name_the_missing_property(self):
        from simulations import far_retrieval as fr

        with pytest.raises(ValueError, match=r"needs orthogonal steps \(orthogonal=True\)"):
            fr.CHECK.parse_params({"family": ShrinkLaw(4), **TINY})
        with pytest.raises(ValueError, match=r"needs orthogonal steps"):
            fr.run_laws([ShrinkLaw(4)], fr.CHECK.parse_params(TINY), seed=0, backend="numba")
        with pytest.raises(ValueError, match=r"needs i\.i\.d\. steps \(iid=True\)"):
            fr.CHECK.parse_params({"family": "markov-tokens", "d": 8, **TINY})

    def test_estimated_mean_mutant_run_holds_unmutated(self):
        """The cayley mutant's sizes: the unmutated check holds there (so its flip is the mutation's)."""
        from simulations import far_retrieval as fr
        from stylized.harness.falsify import run_reduced

        m = next(x for x in fr.MUTANTS if x.name == "estimated-mean-3pct-low")
        assert run_reduced(fr.CHECK, seed=0, params=m.params)["holds"]
