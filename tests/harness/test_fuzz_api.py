"""Fuzzed Python API contract (issue 15): the public closed forms, families, attention and estimators.

Each function's arguments are declared with their valid range.  A hostile value is ``0``, ``−1``,
``1.5``, ``1e12``, ``1e23``, ``nan``, ``±inf``, ``None``, a string, a bool, a list, …  Contract:

* every argument valid → a finite answer (no NaN/inf anywhere in it), in bounded time;
* some argument *invalid* (wrong type, non-finite, below its range) → ``ValueError`` or ``TypeError``
  whose message names an invalid argument;
* an argument merely above the declared size range (e.g. ``d = 10¹²``) → either of the two.

Counts are printed at the end (``pytest -s``) and appended to ``$STYLIZED_FUZZ_REPORT`` when set.
"""

from __future__ import annotations

import collections
import math
import numbers
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stylized.core import estimators
from stylized.engine import attention, lse
from stylized.laws import families
from stylized.laws.families import make_family
from stylized.theory import bounds, score_laws, value_theory
from tests._shared import report_fuzz

TRIED: collections.Counter = collections.Counter()
FAILED: collections.Counter = collections.Counter()
HOSTILE = [0, -1, 1.5, 1e12, 1e23, math.nan, math.inf, -math.inf, None, "x", "", True, [], [math.nan], 1 + 1j, -0.0]
FAST = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=int(os.environ.get("STYLIZED_FUZZ_EXAMPLES", 12_000)), deadline=None, suppress_health_check=list(HealthCheck))
FAM = make_family("householder", 8)
FAM_SO2 = make_family("so2-uniform", 8)
B8 = np.arange(1.0, 9.0)


def I(lo, hi):  # noqa: E743 - an integer argument in [lo, hi]
    return ("int", lo, hi)


def R(lo=None, hi=None, lo_open=False, hi_open=False):  # a finite real in [lo, hi]
    return ("real", lo, hi, lo_open, hi_open)


def A(lo=None, hi=None, neg_inf=False):  # a real or a non-empty array of reals in [lo, hi]
    return ("reals", lo, hi, neg_inf)


# function → {argument: kind}; fixed arguments are given as ("fixed", value)
API = {
    "bounds.levy_tail": (bounds.levy_tail, {"t": A(-1e6, 1e6), "d": I(1, 10**6)}),
    "bounds.haar_coordinate_tail": (bounds.haar_coordinate_tail, {"t": A(-1, 1), "d": I(2, 10**6)}),
    "bounds.haar_coordinate_cdf": (bounds.haar_coordinate_cdf, {"s": A(-1, 1), "d": I(2, 10**6)}),
    "bounds.hoeffding_tail": (bounds.hoeffding_tail, {"t": A(-1e6, 1e6), "a": A(-1e6, 1e6)}),
    "bounds.mixing_window": (bounds.mixing_window, {"gamma": R(0, 1, hi_open=True), "eps": R(0, 1, True, True)}),
    "bounds.far_mass_lower_bound": (bounds.far_mass_lower_bound, {"K": R(0, 1e15), "M": R(0, 1e15), "lam": R(0, 700)}),
    "bounds.lambda_required": (bounds.lambda_required, {"K": R(0, 1e15, lo_open=True), "M": R(0, 1e15),
                                                        "eps": R(0, 1, True, True)}),
    "bounds.alibi_far_sum": (bounds.alibi_far_sum, {"lam": R(0, 700), "m": R(0, 10, lo_open=True), "D": I(0, 10**4)}),
    "score_laws.haar_mgf": (score_laws.haar_mgf, {"lam": R(-50, 50), "d": I(1, 10**4)}),
    "score_laws.haar_log_mgf": (score_laws.haar_log_mgf, {"lam": R(-1e8, 1e8), "d": I(1, 10**4)}),
    "score_laws.haar_expected_max": (score_laws.haar_expected_max, {"d": I(2, 10**4), "M": I(1, 10**6)}),
    "bounds.forget_gate_mean": (bounds.forget_gate_mean, {"gate": R(), "sd": R(0, 100)}),
    "value_theory.coherent_sum": (value_theory.coherent_sum, {"z": R(-1, 1), "M": I(1, 10**5)}),
    "value_theory.haar_tilt_floor": (value_theory.haar_tilt_floor, {"d": I(2, 10**4), "lam": R(0, 1e4)}),
    "value_theory.torus_tilt_floor": (value_theory.torus_tilt_floor, {"b": ("fixed", B8), "lam": R(0, 1e4)}),
    "value_theory.qk_interference_theory": (value_theory.qk_interference_theory,
                                            {"d": I(1, 10**4), "b": ("fixed", B8), "M": I(1, 10**9),
                                             "noise": R(0, 1e6)}),
    "estimators.mean_ci": (estimators.mean_ci, {"x": A(-1e100, 1e100), "level": R(0, 1, True, True)}),
    "estimators.proportion_ci": (estimators.proportion_ci, {"k": I(0, 0), "n": I(1, 10**12),
                                                            "level": R(0, 1, True, True)}),
    "estimators.bonferroni_level": (estimators.bonferroni_level, {"level": R(0, 1, True, True), "m": I(1, 10**6)}),
    "attention.softmax": (attention.softmax, {"logits": A(-1e300, 1e300, neg_inf=True)}),
    "attention.alibi_bias": (attention.alibi_bias, {"n": A(0, 1e6), "m": R(0, 1e3)}),
    "attention.StylizedAttention": (attention.StylizedAttention, {"family": ("fixed", FAM), "lam": R(0, 1e4),
                                                                  "D": I(0, 10**6), "alibi_m": R(0, 1e3)}),
    "lse.lse": (lse.lse, {"x": A(-1e300, 1e300, neg_inf=True)}),
    "families.make_family": (make_family, {"name": ("fixed", "householder"), "d": I(2, 4096)}),
    "families.SO2Uniform": (families.SO2Uniform, {"d": ("fixed", 8), "omega": R(0, math.pi, lo_open=True)}),
    "families.SO2Normal": (families.SO2Normal, {"d": ("fixed", 8), "sigma": R(0, 1e6, lo_open=True),
                                                "mu": R()}),
    "families.RopeRandom": (families.RopeRandom, {"d": ("fixed", 8), "base": R(1, 1e12, lo_open=True)}),
    "families.LazyHaar": (families.LazyHaar, {"d": I(2, 4096), "p": R(0, 1, lo_open=True)}),
    "families.Householder": (families.Householder, {"d": I(2, 4096)}),
}


# documented non-finite answers: (function, predicate on the arguments)
DOCUMENTED = {
    "bounds.mixing_window": lambda kw: kw["gamma"] < 1e-300,  # W(ε) = inf for γ = 0 (never mixes)
    "lse.lse": lambda kw: np.all(np.isneginf(np.asarray(kw["x"], dtype=float))),  # empty or all −inf: −inf
    "estimators.mean_ci": lambda kw: np.size(kw["x"]) == 1,  # one sample: interval (−inf, inf)
}


# documented refusals of in-range values: (function, predicate on the arguments)
REFUSALS = {
    "bounds.alibi_far_sum": lambda kw: kw["lam"] - kw["m"] * kw["D"] - math.log(-math.expm1(-kw["m"])) > 709,
    "attention.softmax": lambda kw: np.all(np.isneginf(np.asarray(kw["logits"], dtype=float))),  # all masked
    "estimators.mean_ci": lambda kw: kw["level"] > 1 - 1e-12,  # the t quantile is infinite
}


def _holds(table: dict, name: str, kwargs: dict) -> bool:
    """Whether ``table``'s predicate for ``name`` holds (False when absent or not evaluable)."""
    try:
        return bool(name in table and table[name](kwargs))
    except Exception:  # noqa: BLE001 - an invalid argument the predicate cannot read
        return False


def classify(kind, v) -> str:
    """``valid``, ``gray`` (finite, of the right type, above the declared size range) or ``invalid``."""
    tag = kind[0]
    if tag == "fixed":
        return "valid"
    if tag == "int":
        if isinstance(v, float) and math.isfinite(v) and v.is_integer() and v >= kind[1]:
            return "gray"  # an integer-valued float: accepted as the integer, or refused
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            return "invalid"
        return "valid" if kind[1] <= v <= kind[2] else ("gray" if v > kind[2] else "invalid")
    if tag == "real":
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            return "invalid"
        lo, hi, lo_open, hi_open = kind[1:]
        if lo is not None and lo < 0 and v < lo:
            return "gray"  # a negative lower bound is a magnitude cap, not the edge of the domain
        if lo is not None and (v < lo or (lo_open and v == lo)):
            return "invalid"
        if hi is not None and (v > hi or (hi_open and v == hi)):
            return "gray" if not hi_open and (hi is None or v > hi) and hi > 1 else "invalid"
        return "valid"
    # reals: a number or a non-empty list of numbers
    vals = v if isinstance(v, list) else [v]
    if any(isinstance(x, bool) or not isinstance(x, numbers.Real) for x in vals):
        return "invalid"
    lo, hi, neg_inf = kind[1:]
    worst = "valid"
    for x in vals:
        if math.isnan(x) or (math.isinf(x) and not (neg_inf and x < 0)):
            return "invalid"
        if math.isinf(x):
            continue
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            worst = "gray"
    return worst


def value_strategy(kind) -> st.SearchStrategy:
    if kind[0] == "fixed":
        return st.just(kind[1])
    hostile = st.sampled_from(HOSTILE)
    if kind[0] == "int":
        valid = st.integers(kind[1], kind[2])
        return st.one_of(valid, hostile, st.integers(-10**13, 10**13))
    if kind[0] == "real":
        lo, hi, lo_open, hi_open = kind[1:]
        valid = st.floats(lo, hi, exclude_min=lo_open and lo is not None, exclude_max=hi_open and hi is not None,
                          allow_nan=False, allow_infinity=False)
        return st.one_of(valid, hostile, st.floats())
    lo, hi, _ = kind[1:]
    one = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return st.one_of(one, st.lists(one, min_size=1, max_size=5), hostile,
                     st.lists(st.one_of(st.floats(), st.sampled_from([math.nan, -math.inf])), max_size=4))


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _finite(x) -> bool:
    if isinstance(x, (bool, str)) or x is None:
        return True
    if isinstance(x, (tuple, list)):
        return all(_finite(v) for v in x)
    if hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic)):
        return all(_finite(v) for k, v in vars(x).items() if not k.startswith("_") and isinstance(v, (float, int)))
    try:
        return bool(np.all(np.isfinite(np.asarray(x, dtype=complex))))
    except (TypeError, ValueError):
        return True


def check_call(name: str, kwargs: dict) -> None:
    fn, kinds = API[name]
    classes = {a: classify(kinds[a], v) for a, v in kwargs.items()}
    if any(isinstance(v, list) and not v for v in kwargs.values()):  # an empty array broadcasts to an empty answer
        classes = {a: "gray" for a in classes}
    invalid = [a for a, c in classes.items() if c == "invalid"]
    gray = [a for a, c in classes.items() if c == "gray"]
    TRIED[name.split(".")[0]] += 1
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        out = fn(**kwargs)
    except (ValueError, TypeError) as e:
        msg = str(e)
        if _holds(REFUSALS, name, kwargs):
            return
        if not invalid and not gray:
            FAILED[name.split(".")[0]] += 1
            raise AssertionError(f"{name}({kwargs!r}) refused valid input: {type(e).__name__}: {msg}") from e
        named = [a for a in invalid + gray if a.split("_")[0].lower() in msg.lower()]
        if not named:
            FAILED[name.split(".")[0]] += 1
            raise AssertionError(f"{name}({kwargs!r}) error names no bad argument {invalid + gray}: {msg}") from e
        return
    except _Timeout:
        FAILED[name.split(".")[0]] += 1
        raise AssertionError(f"{name}({kwargs!r}) took more than 10 s") from None
    except Exception as e:  # noqa: BLE001
        FAILED[name.split(".")[0]] += 1
        raise AssertionError(f"{name}({kwargs!r}) raised {type(e).__name__}: {e}") from e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if invalid:
        FAILED[name.split(".")[0]] += 1
        raise AssertionError(f"{name}({kwargs!r}) accepted invalid {invalid} and returned {out!r:.200}")
    if not _finite(out) and not _holds(DOCUMENTED, name, kwargs):
        FAILED[name.split(".")[0]] += 1
        raise AssertionError(f"{name}({kwargs!r}) returned a non-finite answer {out!r:.200}")


@st.composite
def calls(draw):
    name = draw(st.sampled_from(sorted(API)))
    return name, {a: draw(value_strategy(k)) for a, k in API[name][1].items()}


@FAST
@given(call=calls())
def test_fuzz_api_fast(call):
    check_call(*call)


@pytest.mark.slow
@SLOW
@given(call=calls())
def test_fuzz_api_slow(call):
    check_call(*call)


@pytest.mark.parametrize("name,kwargs,word", [
    ("bounds.levy_tail", {"t": 0.5, "d": -3}, "d"),
    ("attention.softmax", {"logits": [-math.inf, -math.inf]}, "logits"),
    ("attention.StylizedAttention", {"family": FAM, "D": math.nan}, "D"),
])
def test_issue_examples_raise(name, kwargs, word):
    fn = API[name][0]
    with pytest.raises((ValueError, TypeError), match=word):
        fn(**kwargs)


def test_householder_spectral_gap_is_closed_form_and_instant():
    import time

    t0 = time.perf_counter()
    gap = make_family("householder", 2048).spectral_gap
    assert time.perf_counter() - t0 < 0.1 and gap == pytest.approx(2 / 2048)
    for name in families.FAMILY_NAMES:  # every family, at the largest d accepted: closed form, no dense SVD
        t0 = time.perf_counter()
        gap = make_family(name, families.MAX_DIM if hasattr(families, "MAX_DIM") else 65536).spectral_gap
        assert time.perf_counter() - t0 < 0.5 and 0 < gap <= 1 and math.isfinite(gap)


def teardown_module(module) -> None:
    report_fuzz("api", TRIED, FAILED)
