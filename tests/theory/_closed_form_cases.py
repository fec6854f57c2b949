"""The declared closed forms of :mod:`tests.theory.test_closed_form_inputs`: valid arguments and, per argument, its kind
and domain (one :class:`Case` per public function)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stylized import theory as th
from stylized.engine import attention, sampling
from stylized.laws.families import make_family
from stylized.theory import retrieval
from stylized.theory.growth import GrowthModel

FAM = make_family("householder", 8)
SO2 = make_family("so2-uniform", 8, omega=0.7)
HAAR = make_family("haar", 8)
Q = np.full(8, 8 ** -0.5)
B8 = np.arange(1.0, 9.0)
MODEL = GrowthModel(FAM, 2.0, 4)
CHAIN = th.IsotropicChain(FAM, 16, 8)
FAR = th.FarLaw(2.0, 8)
CTL = retrieval.RetrievalControl("alibi")
PTS, WTS = th.passkey_law(HAAR, Q, 3, h=0.01)
HAY = retrieval.haystack_log_laplace(CTL, 2.0, 8, 16)
SIG = np.array([0.1, 1.0])
HUGE = 10**400
TIMEOUT_S = 20


# ---------------------------------------------------------------------------------------
# argument kinds
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    """A numeric argument: ``shape`` ``scalar`` (one number), ``bc`` (a number that broadcasts over arrays),
    ``vec`` (a 1-D array of ``length`` numbers, any length if ``None``), ``arr`` (any array) or ``mat`` (2-D)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    shape: str = "scalar"
    length: int | None = None
    cplx: bool = False  # complex values are in the domain
    neg_inf: bool = False  # −inf is in the domain (a masked logit, an underflowed log)
    optional: bool = False  # None is in the domain
    example: Any = None  # a valid value other than None (an optional argument's template for its probes)


def R(lo=None, hi=None, lo_open=False, hi_open=False, **kw) -> Num:
    return Num(lo, hi, lo_open, hi_open, **kw)


def I(lo=None, hi=None, **kw) -> Num:  # noqa: E743 - an integer
    return Num(lo, hi, integer=True, **kw)


@dataclass(frozen=True)
class Obj:
    """A non-numeric argument (a law, a model, a callable, a choice); ``None`` valid if ``optional``."""

    optional: bool = False
    choice: bool = False  # a string (or list of strings) from a fixed set


@dataclass
class Case:
    fn: Any
    valid: dict
    kinds: dict
    post: Any = None  # result → the numbers to check (default: the result itself)
    extra: list = field(default_factory=list)  # (label, {arg: value}, expect, arg named)


def _mgf(law):
    return law.cdf(0.25), law.mgf(1.0)


CASES: dict[str, Case] = {
    # -- bounds -------------------------------------------------------------------------------------
    "mixing_window": Case(th.mixing_window, {"gamma": 0.25, "eps": 0.25},
                          {"gamma": R(0, 1, shape="bc"), "eps": R(0, 1, True, True, shape="bc")}),
    "chi_power_correlation": Case(th.chi_power_correlation, {"chi": np.array([0.5 + 0.25j, 0.75]), "n": 3,
                                                             "weights": None},
                                  {"chi": R(shape="vec", cplx=True), "n": I(0, shape="arr"),
                                   "weights": R(0, shape="vec", length=2, optional=True,
                                                             example=np.array([0.5, 0.5]))}),
    "haar_coordinate_law": Case(th.haar_coordinate_law, {"d": 8}, {"d": I(2, shape="arr")},
                                post=lambda r: r.cdf(0.5)),
    "haar_coordinate_cdf": Case(th.haar_coordinate_cdf, {"s": 0.25, "d": 8},
                                {"s": R(shape="arr"), "d": I(2, shape="arr")}),
    "haar_coordinate_pdf": Case(th.haar_coordinate_pdf, {"s": 0.25, "d": 8},
                                {"s": R(shape="arr"), "d": I(2, shape="arr")}),
    "levy_tail": Case(th.levy_tail, {"t": 0.5, "d": 16}, {"t": R(shape="arr"), "d": I(1, shape="arr")}),
    "haar_coordinate_tail": Case(th.haar_coordinate_tail, {"t": 0.25, "d": 8},
                                 {"t": R(shape="arr"), "d": I(2, shape="arr")}),
    "hoeffding_tail": Case(th.hoeffding_tail, {"t": 0.5, "a": np.array([0.5, 0.25])},
                           {"t": R(shape="arr"), "a": R(shape="arr")}),
    "far_mass_lower_bound": Case(th.far_mass_lower_bound, {"K": 8, "M": 1000, "lam": 2.0},
                                 {"K": R(0, shape="bc"), "M": R(0, shape="bc"), "lam": R(0, shape="bc")}),
    "lambda_required": Case(th.lambda_required, {"K": 8, "M": 1000, "eps": 0.25},
                            {"K": R(0, lo_open=True, shape="bc"), "M": R(0, shape="bc"),
                             "eps": R(0, 1, True, True, shape="bc")}),
    "alibi_far_sum": Case(th.alibi_far_sum, {"lam": 2.0, "m": 0.5, "D": 4},
                          {"lam": R(0, shape="bc"), "m": R(0, lo_open=True, shape="bc"), "D": I(0, shape="bc")}),
    "alibi_far_mass_bound": Case(th.alibi_far_mass_bound, {"lam": 2.0, "m": 0.5, "D": 4},
                                 {"lam": R(0, shape="bc"), "m": R(0, lo_open=True, shape="bc"),
                                  "D": I(0, shape="bc")}),
    "horizon_prediction": Case(th.horizon_prediction, {"Z_N": 10.0, "mu": 1.5, "D": 4},
                               {"Z_N": R(0, shape="bc"), "mu": R(0, lo_open=True, shape="bc"),
                                "D": I(0, shape="bc")}),
    # -- score laws ---------------------------------------------------------------------------------
    "haar_mgf": Case(th.haar_mgf, {"lam": 1.0, "d": 8}, {"lam": R(-1e8, 1e8, shape="bc"), "d": I(1, shape="bc")}),
    "haar_log_mgf": Case(th.haar_log_mgf, {"lam": 1.0, "d": 8},
                         {"lam": R(-1e8, 1e8, shape="bc"), "d": I(1, shape="bc")}),
    "uniform_phase_mgf": Case(th.uniform_phase_mgf, {"lam": 1.0, "a": np.array([0.5, 0.25])},
                              {"lam": R(-1e8, 1e8, shape="bc"), "a": R(shape="arr")}),
    "uniform_phase_log_mgf": Case(th.uniform_phase_log_mgf, {"lam": 1.0, "a": np.array([0.5, 0.25])},
                                  {"lam": R(-1e8, 1e8, shape="bc"), "a": R(shape="arr")}),
    "max_mgf_bound": Case(th.max_mgf_bound, {"M": 16, "log_mgf": lambda b: th.haar_log_mgf(b, 8)},
                          {"M": I(1, shape="bc"), "log_mgf": Obj()},
                          extra=[("nan-callable", {"log_mgf": lambda b: math.nan}, "refuse", "log_mgf")]),
    "haar_expected_max": Case(th.haar_expected_max, {"d": 8, "M": 16}, {"d": I(2, shape="bc"), "M": I(1, shape="bc")}),
    "jacobi_nodes": Case(th.jacobi_nodes, {"n": 8, "alpha": 0.5}, {"n": I(1), "alpha": R(-1, lo_open=True)}),
    "gil_pelaez_cdf": Case(th.gil_pelaez_cdf, {"x": 0.25, "a": np.array([0.25, 0.5, 0.5, 0.75]), "tol": 1e-5},
                           {"x": R(shape="bc"), "a": R(shape="arr"), "tol": R(0, 1, lo_open=True)}),
    "HaarCoordinate": Case(th.HaarCoordinate, {"d": 8, "scale": 1.0}, {"d": I(2), "scale": R(0, lo_open=True)},
                           post=_mgf),
    "UniformPhaseSum": Case(th.UniformPhaseSum, {"a": (0.5, 0.25, 0.125, 0.125), "tol": 1e-10},
                            {"a": R(shape="arr"), "tol": R(0, 1, lo_open=True)}, post=_mgf),
    "measure_premises": Case(th.measure_premises, {"law": FAM, "seed": 0, "K": 2, "degrees": (2,), "samples": 200},
                             {"law": Obj(), "seed": I(0), "K": I(1, 64), "degrees": Obj(), "samples": I(100, 10**6)},
                             post=lambda p: [g.value for g in p.gaps]),
    "reflection_harmonic_eigenvalue": Case(th.reflection_harmonic_eigenvalue, {"d": 8, "ell": 2},
                                           {"d": I(2, 4096), "ell": I(1, 64)}),
    "far_score_law": Case(th.far_score_law, {"family": FAM, "q": Q, "k": Q},
                          {"family": Obj(), "q": R(shape="vec", length=8), "k": R(shape="vec", length=8)},
                          post=_mgf),
    # -- weight laws --------------------------------------------------------------------------------
    "FarLaw": Case(th.FarLaw, {"lam": 2.0, "d": 8, "scale": 1.0, "n_quad": 64},
                   {"lam": R(-1e8, 1e8), "d": I(2), "scale": R(0, lo_open=True), "n_quad": I(1)},
                   post=lambda f: (f.mean, f.second_moment, f.log_laplace(1.0))),
    "IsotropicChain": Case(th.IsotropicChain, {"family": FAM, "n_nodes": 16, "n_quad": 8, "batch": None},
                           {"family": Obj(), "n_nodes": I(2), "n_quad": I(1), "batch": I(0, 9, optional=True, example=0)},
                           post=lambda c: c.mgf(1.0, 3)),
    "so2_overlap_mgf": Case(th.so2_overlap_mgf, {"family": SO2, "n": 3, "lam": 1.0, "q": Q},
                            {"family": Obj(), "n": I(0), "lam": R(-1e4, 1e4), "q": R(shape="vec", length=8)}),
    "far_laplace_sum": Case(th.far_laplace_sum, {"far": FAR, "c": np.array([1.0, 0.5]), "sig": SIG},
                            {"far": Obj(), "c": R(0, shape="vec"), "sig": R(0, shape="vec")}),
    "laplace_ratio_mean": Case(th.laplace_ratio_mean,
                               {"log_psi_far": np.array([[-0.1, -1.0]]), "tilt_far": np.array([[1.0, 0.5]]),
                                "log_psi_near": np.array([-0.2, -2.0]), "sig": SIG, "h": 0.1},
                               {"log_psi_far": R(shape="arr", neg_inf=True), "tilt_far": R(shape="arr"),
                                "log_psi_near": R(shape="arr", neg_inf=True),
                                "sig": R(0, lo_open=True, shape="vec", length=2), "h": R(0, lo_open=True)}),
    # -- growth -------------------------------------------------------------------------------------
    "wald_horizon": Case(th.wald_horizon, {"mean_near": 10.0, "far": FAR, "D": 4},
                         {"mean_near": R(0), "far": Obj(), "D": I(0)}),
    "wald_horizon_bounds": Case(th.wald_horizon_bounds, {"mean_near": 10.0, "far": FAR, "D": 4},
                                {"mean_near": R(0), "far": Obj(), "D": I(0)}),
    "horizon_crossing": Case(th.horizon_crossing, {"model": MODEL, "far_law": th.FarLaw, "chain": None, "h": 0.1},
                             {"model": Obj(), "far_law": Obj(), "chain": Obj(optional=True), "h": R(0, 1, lo_open=True)}),
    "forget_gate_mean": Case(th.forget_gate_mean, {"gate": 1.0, "sd": 0.5},
                             {"gate": R(shape="bc"), "sd": R(0, shape="bc")}),
    "mean_near_sum": Case(th.mean_near_sum, {"model": MODEL, "lam": 2.0, "r": None, "chain": CHAIN, "far": FAR},
                          {"model": Obj(), "lam": R(), "r": R(0, 1, lo_open=True, optional=True, example=0.5), "chain": Obj(),
                           "far": Obj()}),
    "predict_growth": Case(th.predict_growth, {"model": MODEL, "Ls": [8, 64], "controls": ["none", "alibi"],
                                               "far_law": th.FarLaw, "chain": CHAIN, "h": 0.1},
                           {"model": Obj(), "Ls": I(5, shape="vec"), "controls": Obj(choice=True),
                            "far_law": Obj(), "chain": Obj(optional=True), "h": R(0, 1, lo_open=True)},
                           post=lambda r: [v[0] for v in r.values()]),
    "ratio_of_means": Case(th.ratio_of_means, {"model": MODEL, "Ls": [8, 64], "control": "none",
                                               "far_law": th.FarLaw, "chain": CHAIN},
                           {"model": Obj(), "Ls": I(5, shape="vec"), "control": Obj(choice=True),
                            "far_law": Obj(), "chain": Obj(optional=True)}),
    "predict_transfer": Case(th.predict_transfer, {"family": FAM, "lam": 2.0, "D": 4, "target_n": 1, "Ls": [8, 64],
                                                   "q": Q, "far_law": th.FarLaw, "h": 0.1, "chain": None},
                             {"family": Obj(), "lam": R(0), "D": I(1), "target_n": I(0, 3), "Ls": I(5, shape="vec"),
                              "q": R(shape="vec", length=8), "far_law": Obj(), "h": R(0, 1, lo_open=True),
                              "chain": Obj(optional=True)},
                             post=lambda r: [r[k] for k in ("rho", "alpha_target", "alpha_renorm", "mean_near")]),
    # -- value theory -------------------------------------------------------------------------------
    "correlation_pairs": Case(th.correlation_pairs, {"family": SO2, "b": B8},
                              {"family": Obj(), "b": R(shape="vec", length=8)}),
    "coherent_sum": Case(th.coherent_sum, {"z": 0.5, "M": 16}, {"z": R(shape="arr", cplx=True), "M": I(1, 10**7)}),
    "qkv_interference_theory": Case(th.qkv_interference_theory, {"family": SO2, "b": B8, "M": 16, "noise": 0.1},
                                    {"family": Obj(), "b": R(shape="vec", length=8), "M": I(1, 10**7, shape="bc"),
                                     "noise": R(0, shape="bc")}),
    "qkv_asymptote": Case(th.qkv_asymptote, {"family": SO2, "b": B8, "M": 16, "noise": 0.1},
                          {"family": Obj(), "b": R(shape="vec", length=8), "M": I(1), "noise": R(0)}),
    "qk_interference_theory": Case(th.qk_interference_theory, {"d": 8, "b": B8, "M": 16, "noise": 0.1},
                                   {"d": I(1, shape="bc"), "b": R(shape="vec"), "M": I(1, shape="bc"),
                                    "noise": R(0, 1e100, shape="bc")}),
    "quadratic_form": Case(th.quadratic_form, {"a": np.full((2, 4), 0.25), "w": np.array([0.5, 0.5]),
                                               "z": np.array([0.25 + 0.125j, 0.5])},
                           {"a": R(shape="mat"), "w": R(shape="vec", length=2),
                            "z": R(shape="vec", length=2, cplx=True)}),
    "haar_tilt_floor": Case(th.haar_tilt_floor, {"d": 8, "lam": 2.0}, {"d": I(2, shape="bc"), "lam": R(0, 1e8, shape="bc")}),
    "torus_tilt_floor": Case(th.torus_tilt_floor, {"b": B8, "lam": 2.0},
                             {"b": R(shape="vec"), "lam": R(0, 1e8, shape="bc")}),
    "tilt_floor": Case(th.tilt_floor, {"family": SO2, "b": B8, "lam": 2.0},
                       {"family": Obj(), "b": R(shape="vec", length=8), "lam": R(0, 1e8)}),
    "haar_tilt_energy": Case(th.haar_tilt_energy, {"d": 8, "lam": 2.0, "M": 16, "nodes": 64},
                             {"d": I(2, shape="bc"), "lam": R(0, 700, shape="bc"), "M": I(1, shape="bc"),
                              "nodes": I(2)}),
    # -- retrieval ----------------------------------------------------------------------------------
    "expected_score": Case(th.expected_score, {"family": SO2, "q": Q, "n": 3, "lam": 1.0, "chi_scale": 1.0,
                                               "exponent": None},
                           {"family": Obj(), "q": R(shape="vec", length=8), "n": I(0, shape="arr"), "lam": R(),
                            "chi_scale": R(0), "exponent": R(0, shape="arr", optional=True, example=3.0)}),
    "nonmixing_share": Case(th.nonmixing_share, {"family": SO2, "q": Q, "L": 16, "eps": 0.05},
                            {"family": Obj(), "q": R(shape="vec", length=8), "L": I(0), "eps": R(0, 1, True, True)}),
    "nonmixing_floor": Case(th.nonmixing_floor, {"family": SO2, "q": Q, "n": 3, "L": 16, "lam": 1.0, "eps": 0.05},
                            {"family": Obj(), "q": R(shape="vec", length=8), "n": I(0, shape="arr"), "L": I(0),
                             "lam": R(), "eps": R(0, 1, True, True)}),
    "passkey_law": Case(th.passkey_law, {"family": SO2, "q": Q, "n": 3, "h": 0.01},
                        {"family": Obj(), "q": R(shape="vec", length=8), "n": I(0), "h": R(0, 0.1, lo_open=True)}),
    "rank_one_probability": Case(th.rank_one_probability, {"points": PTS, "weights": WTS, "d": 8, "M": 16},
                                 {"points": R(shape="vec", length=PTS.size), "weights": R(shape="vec", length=PTS.size),
                                  "d": I(2), "M": I(1)}),
    "chance": Case(th.chance, {"M": 16}, {"M": I(0, shape="bc")}),
    "expected_weight": Case(th.expected_weight, {"points": PTS, "weights": WTS, "n": 3, "control": CTL, "lam": 2.0,
                                                 "M": 16, "haystack": HAY},
                            {"points": R(shape="vec", length=PTS.size), "weights": R(shape="vec", length=PTS.size),
                             "n": I(1, 16), "control": Obj(), "lam": R(0, lo_open=True), "M": I(3),
                             "haystack": Obj()}),
    "top_logit_probability": Case(th.top_logit_probability, {"points": PTS, "weights": WTS, "d": 8, "M": 16, "n": 3,
                                                             "control": CTL, "lam": 2.0, "oversample": 8},
                                  {"points": R(shape="vec", length=PTS.size),
                                   "weights": R(shape="vec", length=PTS.size), "d": I(2), "M": I(3), "n": I(1, 16),
                                   "control": Obj(), "lam": R(0, lo_open=True), "oversample": I(1)}),
    # -- helpers ------------------------------------------------------------------------------------
    "mean_power[householder]": Case(FAM.mean_power, {"n": 3}, {"n": I(0)}),
    "mean_power[so2-uniform]": Case(SO2.mean_power, {"n": 3}, {"n": I(0)}),
    "mean_power[cayley]": Case(make_family("cayley", 5).mean_power, {"n": 3}, {"n": I(0)}),
    "mean_power[markov-tokens]": Case(make_family("markov-tokens", 8).mean_power, {"n": 3}, {"n": I(0)}),
    "rvs[householder]": Case(FAM.rvs, {"size": 3, "random_state": 0}, {"size": I(0)}),
    "rvs[so2-uniform]": Case(SO2.rvs, {"size": 3, "random_state": 0}, {"size": I(0)}),
    "sample_overlaps": Case(sampling.sample_overlaps, {"family": FAM, "ns": [0, 1, 3], "size": 4, "random_state": 0,
                                                       "backend": "numpy", "q": None},
                            {"family": Obj(), "ns": I(0, shape="vec"), "size": I(0), "backend": Obj(choice=True),
                             "q": R(shape="vec", length=8, optional=True, example=Q)}),
    "far_mass": Case(attention.far_mass, {"logits": np.array([0.0, 1.0, 2.0]), "D": 1},
                     {"logits": R(shape="arr", neg_inf=True), "D": I(0)},
                     extra=[("all-masked", {"logits": np.full(3, -np.inf)}, "refuse", "logits"),
                            ("all-masked-row", {"logits": np.array([[0.0, 1.0, 2.0], [-np.inf] * 3])}, "refuse",
                             "logits"),
                            ("far-masked", {"logits": np.array([0.0, -np.inf, -np.inf])}, "either", "logits")]),
}
