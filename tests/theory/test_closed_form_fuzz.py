"""Fuzzed contract of the new closed forms (issue 35): ``markov_theory``, ``contraction_theory``, ``retrieval``.

Each call draws valid arguments (a random irreducible chain, its angle table, route lengths, a unit query, …)
and, half the time, replaces one or two of them by a hostile value (NaN, ±inf, ``None``, text, a bool, a
wrong shape, a negative entry, a matrix whose rows do not sum to 1, …).  Contract:

* every argument valid → an answer, finite and in its range (a probability in [0, 1], a characteristic
  value of modulus ≤ 1, a stochastic matrix, …), within 10 s;
* an argument hostile → ``ValueError`` (or ``TypeError``) whose message names a hostile argument.

Counts go to ``$STYLIZED_FUZZ_REPORT`` (``report_fuzz``); the slow test runs ``$STYLIZED_FUZZ_EXAMPLES`` calls.
"""

from __future__ import annotations

import collections
import math
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stylized.laws.families import make_family
from stylized.theory import contraction_theory as ct
from stylized.theory import markov_theory as mt
from stylized.theory import retrieval as rt
from tests._shared import report_fuzz

TRIED: collections.Counter = collections.Counter()
FAILED: collections.Counter = collections.Counter()
FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=int(os.environ.get("STYLIZED_FUZZ_EXAMPLES", 4_000)), deadline=None,
                suppress_health_check=list(HealthCheck))
TOL = 1e-9

SCALAR_BAD = [math.nan, math.inf, -math.inf, None, "x", True, [], [1.0, 2.0], 1 + 1j, object()]
INT_BAD = SCALAR_BAD + [-1, 1.5, -10**13]
UNIT_BAD = SCALAR_BAD + [0.0, 1.0, -0.5, 1.5]
LENGTHS_BAD = [x for x in INT_BAD if not isinstance(x, list)] + [[-1, 2], [0.5], [[math.nan]], ["x"]]


def _row_stochastic(draw, V: int) -> np.ndarray:
    raw = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=V * V, max_size=V * V))).reshape(V, V)
    if draw(st.booleans()):  # sticky chains too, as the markov-tokens check builds them
        pi = raw[0] / raw[0].sum()
        return mt.sticky_transition(pi, draw(st.floats(1e-3, 1.0)))
    return raw / raw.sum(axis=1, keepdims=True)


def _matrix_bad(V: int) -> list:
    rows = np.full((V, V), 1.0 / V)
    neg = rows.copy()
    neg[0, 0] = -0.5
    neg[0, -1] += 1.0 if V > 1 else 0.0
    nan = rows.copy()
    nan[0, 0] = math.nan
    return SCALAR_BAD + [rows * 2.0, neg, nan, np.ones((V, V + 1)), np.ones(V), np.zeros((0, 0)),
                         np.ones((3000, 3000)) / 3000]


def _law_bad(V: int) -> list:
    return SCALAR_BAD + [np.full(V, 2.0 / V), np.full(V + 1, 1.0 / (V + 1)), -np.full(V, 1.0 / V),
                         np.full(V, math.nan), np.full((V, 1), 1.0 / V)]


def _table_bad(V: int, B: int) -> list:
    return SCALAR_BAD + [np.zeros((V + 1, B)), np.zeros((V, 0)), np.full((V, B), math.nan), np.full((V, B), math.inf),
                         np.zeros(V)]


@st.composite
def markov_world(draw):
    V, B = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    t = _row_stochastic(draw, V)
    table = np.array(draw(st.lists(st.floats(-20, 20), min_size=V * B, max_size=V * B))).reshape(V, B)
    q = np.array(draw(st.lists(st.floats(-3, 3), min_size=2 * B, max_size=2 * B)))
    n = draw(st.one_of(st.integers(0, 10**6), st.lists(st.integers(0, 5000), min_size=0, max_size=80)))
    return {"V": V, "B": B, "t": t, "pi": mt.stationary_law(t), "table": table, "q": q, "n": n}


def _chi_ok(c) -> bool:
    return bool(np.all(np.isfinite(c)) and np.all(np.abs(c) <= 1 + 1e-7))


def _stochastic_ok(m) -> bool:
    m = np.asarray(m)
    return bool(np.all(np.isfinite(m)) and np.all(m >= -TOL) and np.allclose(m.sum(axis=1), 1.0, atol=1e-7))


def _overlap_ok(x, q) -> bool:
    return bool(np.all(np.isfinite(x)) and np.all(np.abs(x) <= (1 + 1e-7) * float(q @ q) + TOL))


def _markov_calls(w):
    """function name → (callable, valid kwargs, {argument: hostile values}, check of the answer)."""
    V, B, t, pi, table, q, n = (w[k] for k in ("V", "B", "t", "pi", "table", "q", "n"))
    nmax = int(np.max(n)) % 20_000 if np.size(n) else 0
    char = mt.route_characteristic(t, table, np.atleast_1d(n)[:3] if np.size(n) else 1, pi)
    mod = np.abs(mt.route_characteristic_grid(t, table, min(nmax, 400), pi)[:, 0])
    mb, lb, tb = _matrix_bad(V), _law_bad(V), _table_bad(V, B)
    ob = [x for x in lb if x is not None]  # an optional law: None means "the chain's stationary law"
    return {
        "validate_transition": (mt.validate_transition, {"transition": t}, {"transition": mb}, _stochastic_ok),
        "stationary_law": (mt.stationary_law, {"transition": t}, {"transition": mb + [np.eye(max(V, 2))]},
                           lambda p: bool(np.all(p >= 0) and abs(p.sum() - 1) < 1e-9 and np.allclose(p @ t, p, atol=1e-8))),
        "time_reversal": (mt.time_reversal, {"transition": t, "pi": pi}, {"transition": mb, "pi": ob}, _stochastic_ok),
        "sticky_transition": (mt.sticky_transition, {"pi": pi, "switch": 0.5},
                              {"pi": [x for x in lb if np.size(x) != V + 1], "switch": [x for x in UNIT_BAD if x != 1.0]},
                              _stochastic_ok),
        "twisted_operator": (mt.twisted_operator, {"transition": t, "table": table}, {"transition": mb, "table": tb},
                             lambda o: _chi_ok(o) and o.shape == (B, V, V)),
        "route_characteristic": (mt.route_characteristic, {"transition": t, "table": table, "n": n, "pi": pi},
                                 {"transition": mb, "table": tb, "n": LENGTHS_BAD, "pi": ob},
                                 lambda c: _chi_ok(c) and c.shape == np.shape(n) + (B,)),
        "route_characteristic_grid": (mt.route_characteristic_grid, {"transition": t, "table": table, "nmax": nmax,
                                                                     "pi": pi},
                                      {"transition": mb, "table": tb, "nmax": INT_BAD + [10**12], "pi": ob},
                                      lambda c: _chi_ok(c) and c.shape == (nmax + 1, B)),
        "iid_characteristic": (mt.iid_characteristic, {"pi": pi, "table": table, "n": n},
                               {"pi": lb, "table": tb, "n": LENGTHS_BAD}, _chi_ok),
        "twisted_radius": (mt.twisted_radius, {"transition": t, "table": table}, {"transition": mb, "table": tb},
                           lambda r: bool(np.all(np.isfinite(r)) and np.all((r >= 0) & (r <= 1 + 1e-7)))),
        "overlap_from_characteristic": (mt.overlap_from_characteristic, {"q": q, "char": char},
                                        {"q": SCALAR_BAD + [np.zeros(2 * B + 1), np.full(2 * B, math.nan)],
                                         "char": SCALAR_BAD + [np.zeros((2, B + 1)), np.full((1, B), math.nan)]},
                                        lambda x: _overlap_ok(x, q)),
        "markov_overlap": (mt.markov_overlap, {"transition": t, "table": table, "q": q, "n": n, "pi": pi},
                           {"transition": mb, "table": tb, "q": SCALAR_BAD + [np.zeros(2 * B + 2)], "n": LENGTHS_BAD,
                            "pi": ob}, lambda x: _overlap_ok(x, q)),
        "iid_overlap": (mt.iid_overlap, {"pi": pi, "table": table, "q": q, "n": n},
                        {"pi": lb, "table": tb, "q": SCALAR_BAD + [np.zeros(1)], "n": LENGTHS_BAD},
                        lambda x: _overlap_ok(x, q)),
        "windows_from_rate": (mt.windows_from_rate, {"rate": mt.twisted_radius(t, table), "eps": 0.05},
                              {"rate": SCALAR_BAD[:3] + [None, "x", [-0.1]], "eps": UNIT_BAD},
                              lambda wv: bool(np.all(~np.isnan(wv)) and np.all(wv >= 1))),
        "sustained_crossing": (mt.sustained_crossing, {"mod": mod, "eps": 0.05},
                               {"mod": [None, "x", [math.nan], np.ones((2, 2)), [-1.0]], "eps": UNIT_BAD},
                               lambda k: k is None or (isinstance(k, int) and 0 <= k <= mod.size)),
    }


def _contraction_calls(draw):
    d = draw(st.integers(2, 10**5))
    beta = draw(st.floats(1e-6, 2.0, exclude_max=True))
    n = draw(st.one_of(st.integers(0, 10**9), st.lists(st.integers(0, 10**6), max_size=10)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    ns = np.array(draw(st.lists(st.integers(0, 300), max_size=6)), dtype=np.int64)
    dbad, bbad = INT_BAD + [1, 0], SCALAR_BAD + [0.0, 2.0, -1.0, 3.0]

    def moments_ok(mv):
        return bool(all(math.isfinite(x) for x in mv) and mv[0] <= 0 and mv[1] >= 0)

    method = draw(st.sampled_from(["quad", "series"] if beta * (2.0 - beta) < 0.999 else ["quad"]))
    return {
        "shrink_rate": (ct.shrink_rate, {"beta": beta}, {"beta": bbad}, lambda a: 0 < a <= 1),
        "increment_moments": (ct.increment_moments, {"d": d, "beta": beta, "method": method},
                              {"d": dbad, "beta": bbad, "method": [None, "simpson", 3, ["quad"]]}, moments_ok),
        "log_norm_moments": (ct.log_norm_moments, {"n": n, "d": d, "beta": beta},
                             {"n": LENGTHS_BAD, "d": dbad, "beta": bbad},
                             lambda mv: bool(np.all(np.isfinite(mv[0])) and np.all(mv[0] <= 0) and np.all(mv[1] >= 0))),
        "mean_square_norm": (ct.mean_square_norm, {"n": n, "d": d, "beta": beta},
                             {"n": LENGTHS_BAD, "d": dbad, "beta": bbad},
                             lambda m: bool(np.all((m >= 0) & (m <= 1)))),
        "sample_increments": (ct.sample_increments, {"rng": rng, "shape": (3, 4), "d": d, "beta": beta},
                              {"rng": [None, 3, "x"], "shape": [None, "x", (-1, 2), (1.5,), (10**6, 10**6), (math.nan,)],
                               "d": dbad, "beta": bbad},
                              lambda x: bool(np.all(np.isfinite(x)) and np.all(x <= 0))),
        "sample_log_norms": (ct.sample_log_norms, {"rng": rng, "ns": ns, "size": 5, "d": d, "beta": beta},
                             {"rng": [None, 3], "ns": [None, "x", [-1], [1.5], [[1]], [math.nan]],
                              "size": INT_BAD + [10**12], "d": dbad, "beta": bbad},
                             lambda x: bool(np.all(np.isfinite(x)) and np.all(x <= 0) and x.shape == (5, ns.size))),
    }


FAMILIES = [make_family("so2-uniform", 8, omega=1.0), make_family("householder", 8), make_family("rope-random", 8)]


def _retrieval_calls(draw):
    fam = draw(st.sampled_from(FAMILIES))
    q = np.array(draw(st.lists(st.floats(-1, 1), min_size=8, max_size=8))) + 1e-3
    q = q / np.linalg.norm(q)
    n = draw(st.integers(1, 64))
    M = draw(st.integers(n, 4096))
    lam = draw(st.floats(0.1, 12.0))
    control = rt.RetrievalControl(draw(st.sampled_from(rt.CONTROLS)))
    pts = np.sort(np.array(draw(st.lists(st.floats(-1, 1), min_size=1, max_size=20))))
    wts = np.array(draw(st.lists(st.floats(0.01, 1), min_size=pts.size, max_size=pts.size)))
    wts = wts / wts.sum()
    fam_bad = [None, "householder", 3, object()]
    q_bad = SCALAR_BAD + [np.ones(8), np.full(8, math.nan), np.ones(7) / 7**0.5]
    rule_bad = SCALAR_BAD + [np.full(pts.size, math.nan), np.ones(pts.size + 1), pts + 3.0]
    w_bad = rule_bad[:-1]
    ctl_bad = [None, "alibi", 3]

    def prob_ok(p):
        return isinstance(p, float) and 0.0 <= p <= 1.0

    def haystack():
        return rt.haystack_log_laplace(control, lam, 8, M)

    return {
        "expected_score": (rt.expected_score, {"family": fam, "q": q, "n": n, "lam": lam},
                           {"family": fam_bad, "q": q_bad, "n": LENGTHS_BAD, "lam": SCALAR_BAD},
                           lambda s: bool(np.all(np.isfinite(s)) and np.all(np.abs(s) <= lam * (1 + 1e-7)))),
        "nonmixing_share": (rt.nonmixing_share, {"family": fam, "q": q, "L": M, "eps": 0.05},
                            {"family": fam_bad, "q": q_bad, "L": INT_BAD, "eps": UNIT_BAD},
                            lambda r: 0 <= r[0] <= 1 + 1e-9 and r[1] >= 0),
        "nonmixing_floor": (rt.nonmixing_floor, {"family": fam, "q": q, "n": n, "L": M, "lam": lam},
                            {"family": fam_bad, "q": q_bad, "n": LENGTHS_BAD, "L": INT_BAD, "lam": SCALAR_BAD},
                            lambda s: bool(np.all(np.isfinite(s)) and np.all(np.abs(s) <= lam * (1 + 1e-7)))),
        "chance": (rt.chance, {"M": M}, {"M": [x for x in INT_BAD if not isinstance(x, list)] + [[-1, 2]]}, lambda p: 0 < p <= 1),
        "rank_one_probability": (rt.rank_one_probability, {"points": pts, "weights": wts, "d": 8, "M": M},
                                 {"points": rule_bad, "weights": w_bad, "d": INT_BAD + [1], "M": INT_BAD + [0]},
                                 prob_ok),
        "top_logit_probability": (rt.top_logit_probability, {"points": pts, "weights": wts, "d": 8, "M": M, "n": n,
                                                             "control": control, "lam": lam},
                                  {"points": rule_bad, "weights": w_bad, "d": INT_BAD, "M": INT_BAD + [0],
                                   "n": INT_BAD + [0, 10**7], "control": ctl_bad, "lam": SCALAR_BAD + [0.0]}, prob_ok),
        "expected_weight": (lambda **kw: rt.expected_weight(**kw, haystack=haystack()),
                            {"points": pts, "weights": wts, "n": n, "control": control, "lam": lam, "M": M},
                            {"points": rule_bad, "weights": w_bad, "n": INT_BAD + [0, 10**7], "control": ctl_bad,
                             "lam": SCALAR_BAD + [0.0], "M": INT_BAD + [0]}, prob_ok),
        "haystack_log_laplace": (rt.haystack_log_laplace, {"control": control, "lam": lam, "d": 8, "M": M},
                                 {"control": ctl_bad, "lam": SCALAR_BAD + [0.0], "d": INT_BAD + [1],
                                  "M": INT_BAD + [0] + ([] if control.r is None else [10**13]),
                                  "h_sigma": [x for x in UNIT_BAD if x != 1.0] + [2.0]},
                                 lambda h: bool(np.all(np.isfinite(h[0])) and math.isfinite(h[1]))),
        "skewness": (rt.skewness, {"m": np.array([0.5, 0.3, 0.2])},
                     {"m": [None, "x", [math.nan, 1, 1], [1.0], np.ones((2, 3))]}, lambda g: math.isfinite(g)),
        "RetrievalControl": (rt.RetrievalControl, {"name": control.name, "m": 0.1, "gate": 2.0, "L_train": 512},
                             {"name": [None, "relu", 3], "m": SCALAR_BAD + [0.0, -1.0], "gate": SCALAR_BAD,
                              "L_train": INT_BAD + [1]}, lambda c: c.r is None or 0 < c.r < 1),
    }


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _named(msg: str, bad: list[str]) -> bool:
    low = msg.lower()
    return any(b.lower() in low or b.split("_")[0].lower() in low for b in bad)


def run_call(module: str, name: str, fn, kwargs: dict, bad: list[str], ok) -> None:
    TRIED[module] += 1
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        out = fn(**kwargs)
    except (ValueError, TypeError) as e:
        if not bad or not _named(str(e), bad):
            FAILED[module] += 1
            raise AssertionError(f"{module}.{name}({kwargs!r:.300}) {'refused valid input' if not bad else 'names no bad argument ' + str(bad)}: "
                                 f"{type(e).__name__}: {e}") from e
        return
    except _Timeout:
        FAILED[module] += 1
        raise AssertionError(f"{module}.{name}({kwargs!r:.300}) took more than 10 s") from None
    except Exception as e:  # noqa: BLE001 - anything else is a hard failure
        FAILED[module] += 1
        raise AssertionError(f"{module}.{name}({kwargs!r:.300}) raised {type(e).__name__}: {e}") from e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if bad:
        FAILED[module] += 1
        raise AssertionError(f"{module}.{name}({kwargs!r:.300}) accepted hostile {bad} and returned {out!r:.200}")
    with np.errstate(all="ignore"):
        good = ok(out)
    if not good:
        FAILED[module] += 1
        raise AssertionError(f"{module}.{name}({kwargs!r:.300}) returned {out!r:.300}: not finite or out of range")


def _corrupt(draw, kwargs: dict, hostile: dict) -> tuple[dict, list[str]]:
    if not draw(st.booleans()):
        return kwargs, []
    names = draw(st.lists(st.sampled_from(sorted(hostile)), min_size=1, max_size=2, unique=True))
    kw = dict(kwargs)
    for a in names:
        kw[a] = draw(st.sampled_from(hostile[a]))
    return kw, names


@st.composite
def calls(draw, module: str):
    if module == "markov_theory":
        table = _markov_calls(draw(markov_world()))
    elif module == "contraction_theory":
        table = _contraction_calls(draw)
    else:
        table = _retrieval_calls(draw)
    name = draw(st.sampled_from(sorted(table)))
    fn, kwargs, hostile, ok = table[name]
    kw, bad = _corrupt(draw, kwargs, hostile)
    return module, name, fn, kw, bad, ok


MODULES = ["markov_theory", "contraction_theory", "retrieval"]


@pytest.mark.parametrize("module", MODULES)
def test_closed_form_fuzz(module):
    @FAST
    @given(call=calls(module))
    def run(call):
        run_call(*call)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_closed_form_fuzz_slow(module):
    @SLOW
    @given(call=calls(module))
    def run(call):
        run_call(*call)

    run()


@pytest.mark.parametrize("fn,kwargs,word", [
    (mt.iid_characteristic, {"pi": [0.5, 0.6], "table": [[0.1], [0.2]], "n": 3}, "pi"),
    (mt.iid_characteristic, {"pi": [0.5, 0.5], "table": [[0.1], [math.nan]], "n": 3}, "table"),
    (mt.iid_characteristic, {"pi": [0.5, 0.5], "table": [[0.1], [0.2]], "n": -1}, "n"),
    (mt.route_characteristic, {"transition": [[0.5, 0.6], [0.5, 0.5]], "table": [[0.1], [0.2]], "n": 3}, "transition"),
    (mt.windows_from_rate, {"rate": [math.nan], "eps": 0.05}, "rate"),
    (ct.log_norm_moments, {"n": -2, "d": 16, "beta": 1.0}, "n"),
])
def test_issue_examples_are_refused_naming_the_argument(fn, kwargs, word):
    with pytest.raises(ValueError, match=word):
        fn(**kwargs)


def teardown_module(module) -> None:
    report_fuzz("closed-forms", TRIED, FAILED)
