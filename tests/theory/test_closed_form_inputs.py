"""Bad input to every public closed form and helper (issue 23): a probe per function, argument and kind of bad value.

Every name of :data:`stylized.theory.__all__` (and the helpers ``mean_power``, ``rvs``, ``sample_overlaps``,
``far_mass``) is declared below with valid arguments and, per argument, its kind and domain.  Each argument in
turn gets each kind of bad value (complex, NaN, ±inf, bool, string, ``None``, a huge Python int, a value below or
above its range, a non-integer where an integer is required, an empty array, a wrong shape, an object) while the
other arguments stay valid, and each probe expects one of

* ``refuse``: a ``ValueError``/``TypeError`` whose message names the argument;
* ``same``: accepted like the Python scalar (a 0-d array, a NumPy scalar): the same result as the valid call;
* ``either``: a refusal naming the argument, or a finite result (a huge int, an integer-valued float, a list,
  an empty array);

and never a silent NaN, nor an ``OverflowError``/``IndexError``/``ZeroDivisionError``/… traceback.

``python tests/theory/test_closed_form_inputs.py`` prints the count of hard failures per function and kind.
"""

from __future__ import annotations

import collections
import math
import re
import signal
import sys
import warnings

import numpy as np
import pytest

from stylized import theory as th
from stylized.engine import attention, sampling
from tests.theory._closed_form_cases import (
    CASES,
    FAM,
    HUGE,
    SO2,
    TIMEOUT_S,
    Case,
    Num,
    Obj,
)


# ---------------------------------------------------------------------------------------
# the probes of one argument
# ---------------------------------------------------------------------------------------
def _first(v):
    """The first number of a valid value (a scalar, or the first element of an array)."""
    a = np.asarray(v)
    return a.ravel()[0].item() if a.size else 0.0


def _with_first(v, x):
    """The valid array ``v`` with its first element replaced by ``x`` (an object array if ``x`` is not a float)."""
    a = np.array(v, dtype=object if not isinstance(x, (float, complex, bool)) else None)
    if isinstance(x, complex):
        a = a.astype(complex)
    elif isinstance(x, bool):
        a = a.astype(bool)
    elif isinstance(x, float):
        a = a.astype(a.dtype if np.issubdtype(a.dtype, np.inexact) else float)
    a.flat[0] = x
    return a


def probes(case: Case, arg: str):
    """``(label, value, expect)`` for every bad value of ``arg``."""
    kind, v = case.kinds[arg], case.valid[arg]
    if v is None and isinstance(kind, Num):
        v = kind.example
    if isinstance(kind, Obj):
        yield "None", None, "either" if kind.optional else "refuse"
        yield "str", "bogus" if kind.choice else "x", "refuse"
        yield "float", 1.5, "refuse"
        yield "object", object(), "refuse"
        return
    scalar = kind.shape in ("scalar", "bc")
    x0 = v if scalar else _first(v)
    if scalar and isinstance(v, (int, float)) and not isinstance(v, bool):
        vals = {"complex": complex(v, 1.0), "complex-zero-imag": complex(v, 0.0), "nan": math.nan, "inf": math.inf,
                "-inf": -math.inf, "bool": True, "huge-int": HUGE}
    else:
        vals = {"complex": _with_first(v, complex(x0, 1.0)), "complex-zero-imag": np.asarray(v, dtype=complex),
                "nan": _with_first(v, math.nan), "inf": _with_first(v, math.inf), "-inf": _with_first(v, -math.inf),
                "bool": np.ones(np.shape(v), dtype=bool), "huge-int": _with_first(v, HUGE)}
    for label, x in vals.items():
        if label.startswith("complex"):
            expect = "either" if kind.cplx else "refuse"
        elif label == "-inf":
            expect = "either" if kind.neg_inf else "refuse"
        elif label == "huge-int":
            expect = "either"
        else:
            expect = "refuse"
        yield label, x, expect
    yield "str", "x", "refuse"
    yield "numeric-str", "1", "refuse"
    yield "None", None, "either" if kind.optional else "refuse"
    yield "object", object(), "refuse"
    if kind.lo is not None:
        below = kind.lo if kind.lo_open else kind.lo - max(1, abs(kind.lo))
        yield "below-range", below if scalar else _with_first(v, float(below)), "refuse"
        if kind.lo >= 0:
            yield "negative", -1 if scalar else _with_first(v, -1.0), "refuse"
    if kind.hi is not None:
        above = kind.hi if kind.hi_open else kind.hi + max(1, abs(kind.hi))
        yield "above-range", above if scalar else _with_first(v, float(above)), "refuse"
    if kind.integer:
        yield "non-integer", (x0 + 0.5) if scalar else _with_first(v, x0 + 0.5), "refuse"
        yield "integral-float", float(x0) if scalar else np.asarray(v, dtype=float), "either"
    if scalar:
        yield "0-d", np.array(v), "same"
        yield "np-scalar", (np.int64(v) if isinstance(v, int) else np.float64(v)), "same"
        if isinstance(v, float) and float(np.float32(v)) == v:
            yield "np-float32", np.float32(v), "same"
        yield "list", [v], "either"
        yield "empty", np.array([]), "either"
        yield "2-D", np.full((2, 3), v), "either"
    else:
        yield "0-d", np.array(x0), "either" if kind.shape == "arr" else "refuse"
        yield "empty", np.array([]), "either" if kind.shape == "arr" or kind.length is None else "refuse"
        if kind.shape in ("vec",):
            yield "2-D", np.tile(np.asarray(v), (2, 1)), "refuse"
        if kind.length is not None:
            yield "wrong-length", np.r_[np.asarray(v), np.asarray(v)[:1]], "refuse"
        if kind.shape == "mat":
            yield "1-D", np.asarray(v)[0], "either"
            yield "3-D", np.asarray(v)[None], "refuse"
        yield "ragged", [[x0], [x0, x0]], "refuse"


def all_probes():
    out = []
    for name, case in CASES.items():
        for arg in case.kinds:
            for label, value, expect in probes(case, arg):
                out.append((name, arg, label, value, expect))
        bc = [a for a, k in case.kinds.items() if isinstance(k, Num) and k.shape == "bc"]
        if len(bc) >= 2:  # shapes that do not broadcast together
            out.append((name, bc[0], "mismatched-shapes", {bc[0]: np.full(2, case.valid[bc[0]]),
                                                           bc[1]: np.full(3, case.valid[bc[1]])}, "refuse"))
        for label, kw, expect, arg in case.extra:
            out.append((name, arg, label, kw, expect))
    return out


PROBES = all_probes()


# ---------------------------------------------------------------------------------------
# running one probe
# ---------------------------------------------------------------------------------------
class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _numbers(x) -> list[np.ndarray]:
    """Every numeric leaf of a result (tuples, lists, dicts; strings and None skipped)."""
    if x is None or isinstance(x, (str, bytes)):
        return []
    if isinstance(x, dict):
        return [a for v in x.values() for a in _numbers(v)]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _numbers(v)]
    a = np.asarray(x)
    if a.dtype == object:
        return [b for v in a.ravel() for b in _numbers(v)]
    return [a.astype(complex)] if a.dtype.kind in "biufc" else []


def _names(msg: str, arg: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", msg) is not None


def call(case: Case, kwargs: dict):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = case.fn(**kwargs)
            return _numbers(case.post(out) if case.post else out)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_BASE: dict[tuple, list] = {}


def baseline(name: str, arg: str | None = None) -> list:
    """The valid call's numbers (with ``arg``'s example value when its valid value is ``None``)."""
    case = CASES[name]
    kind = case.kinds.get(arg)
    swap = arg is not None and case.valid[arg] is None and isinstance(kind, Num) and kind.example is not None
    key = (name, arg if swap else None)
    if key not in _BASE:
        _BASE[key] = call(case, {**case.valid, **({arg: kind.example} if swap else {})})
    return _BASE[key]


def run_probe(name: str, arg: str, label: str, value, expect: str) -> str | None:
    """``None`` if the probe's contract holds, else what went wrong (one line)."""
    case = CASES[name]
    kwargs = dict(case.valid)
    kwargs.update(value if isinstance(value, dict) else {arg: value})
    names = list(value) if isinstance(value, dict) else [arg]
    try:
        got = call(case, kwargs)
    except (ValueError, TypeError) as e:
        msg = str(e)
        if expect == "same":
            return f"refused a value equal to a valid one: {type(e).__name__}: {msg}"
        if not any(_names(msg, a) for a in names):
            return f"message names no argument {names}: {type(e).__name__}: {msg}"
        return None
    except _Timeout:
        return f"took more than {TIMEOUT_S} s"
    except Exception as e:  # noqa: BLE001 - any other exception is a failure
        return f"raised {type(e).__name__}: {e}"
    if expect == "refuse":
        return f"accepted it, returned {got!r:.120}"
    if not all(np.all(np.isfinite(a)) for a in got):
        return f"returned a non-finite answer {got!r:.120}"
    if expect == "same":
        base = baseline(name, arg)
        if len(base) != len(got) or not all(np.shape(a) == np.shape(b) and np.array_equal(a, b)
                                            for a, b in zip(base, got)):
            return f"differs from the valid call: {got!r:.120} vs {base!r:.120}"
    return None


def test_every_public_closed_form_is_probed():
    names = {n for n in th.__all__ if n != "CLAIMS"}
    assert names <= set(CASES), sorted(names - set(CASES))
    for name, case in CASES.items():
        assert set(case.kinds) <= set(case.valid), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_call_is_finite(name):
    assert all(np.all(np.isfinite(a)) for a in baseline(name)), name


@pytest.mark.parametrize("name,arg,label,value,expect", PROBES,
                         ids=[f"{p[0]}-{p[1]}-{p[2]}" for p in PROBES])
def test_bad_input(name, arg, label, value, expect):
    why = run_probe(name, arg, label, value, expect)
    assert why is None, f"{name}({arg}={label}): {why}"


# ---------------------------------------------------------------------------------------
# the review's examples (issue 23), one by one
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,word", [
    (lambda: th.levy_tail(np.array([0.5 + 1j]), 16), "t"),  # was 0.135: the real part, silently
    (lambda: th.far_mass_lower_bound(10**400, 10, 1.0), "K"),  # was OverflowError
    (lambda: th.alibi_far_sum(1.0, 0.5, 10**400), "D"),
    (lambda: th.horizon_prediction(math.nan, 1.0, 4), "Z_N"),  # was nan
    (lambda: th.horizon_prediction(10.0, 0.0, 4), "mu"),  # was ZeroDivisionError
    (lambda: th.chance(-1), "M"),  # was ZeroDivisionError
    (lambda: th.chance(math.nan), "M"),  # was nan
    (lambda: th.uniform_phase_mgf(math.nan, [0.5]), "lam"),  # was nan
    (lambda: th.uniform_phase_mgf(1e4, [0.5] * 4), "lam"),  # was inf
    (lambda: th.chi_power_correlation([0.5], 1 + 1j), "n"),  # complex n
    (lambda: th.chi_power_correlation([math.nan], 2), "chi"),
    (lambda: SO2.mean_power(1.5), "n"),  # was E[M]^1
    (lambda: FAM.rvs(size=1.5), "size"),
    (lambda: sampling.sample_overlaps(FAM, [0, 1], 4, 0, backend="numpy", q=np.full(8, math.nan)), "q"),  # was nan
    (lambda: attention.far_mass(np.full((2, 4), -np.inf), 1), "mask"),  # was nan: every key masked
    (lambda: th.mixing_window(True, 0.1), "gamma"),
])
def test_issue_examples_are_refused_naming_the_argument(call, word):
    with pytest.raises(ValueError, match=rf"(?<![A-Za-z_]){word}(?![A-Za-z_])"):
        call()


def test_wrong_types_are_both_type_and_value_errors():
    from stylized.core._broadcast import ArgumentTypeError

    for call in (lambda: th.haar_mgf("x", 8), lambda: th.far_mass_lower_bound(None, 1, 1), lambda: FAM.rvs(True)):
        with pytest.raises(ArgumentTypeError) as e:
            call()
        assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)


def test_zero_d_arrays_and_numpy_scalars_are_the_python_scalars():
    assert th.levy_tail(np.array(0.5), np.array(16)) == th.levy_tail(0.5, 16)
    assert th.far_mass_lower_bound(np.array(8), np.int64(1000), np.float32(2.0)) == th.far_mass_lower_bound(8, 1000, 2.0)
    assert th.chance(np.int64(16)) == th.chance(16) == 1 / 17
    assert np.array_equal(SO2.mean_power(np.array(3)), SO2.mean_power(3))


def main() -> int:
    """Count the hard failures per function and per kind of bad value."""
    by_fn, by_kind, lines = collections.Counter(), collections.Counter(), []
    for name, arg, label, value, expect in PROBES:
        why = run_probe(name, arg, label, value, expect)
        if why is not None:
            by_fn[name] += 1
            by_kind[label] += 1
            lines.append(f"{name}({arg}={label}): {why}")
    print("\n".join(lines))
    print(f"\nprobes {len(PROBES)}, hard failures {sum(by_fn.values())}")
    print("by function:", dict(by_fn.most_common()))
    print("by kind:", dict(by_kind.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
