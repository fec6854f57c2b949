"""Fuzzed CLI contract (issue 15): every option of every command, hostile values.

Contract: exit 2 with one line ``stylized: error: …`` naming the option (and its range), or exit
0/1 with valid strict JSON of finite numbers on stdout; never a traceback, never a hang.

The targets are derived from the registry and the option specs, so a new check or option is
fuzzed automatically.  The bulk runs in-process (``stylized.cli.app.main``, output captured) on the
validation phase (``--dry-run``); a sample runs in a subprocess with a timeout, and the ``slow``
variant runs ≥ 10,000 inputs plus real runs at the boundary values of every option.
Counts of inputs tried and failures per category are printed at the end (``pytest -s``) and
written to ``$STYLIZED_FUZZ_REPORT`` when set.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stylized.cli import app as cli
from stylized.core.backend import BACKENDS
from stylized.core.options import Spec, one_line
from stylized.harness import registry
from stylized.harness.registry import load_checks
from tests._shared import report_fuzz

ROOT = Path(__file__).resolve().parents[2]
CHECKS = {k: c for k, c in load_checks().items() if not getattr(c, "external", False)}
HOSTILE = ["0", "-1", "1.5", "1e12", "1e23", "nan", "NaN", "inf", "-inf", "", ",", "1,,2", " ", "\udcff\udcfe",
           "none", "-0", "0x10", "1_000", "a", "9" * 30, "1e-320", "2.0", ",1", "1,", "1,2", "true", "\x00", "é"]
TRIED: collections.Counter = collections.Counter()
FAILED: collections.Counter = collections.Counter()
FAST = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=int(os.environ.get("STYLIZED_FUZZ_EXAMPLES", 10_000)), deadline=None, suppress_health_check=list(HealthCheck))


def hostile_values(spec=None) -> st.SearchStrategy[str]:
    """Hostile strings, random numbers and text, and in-range values of ``spec`` (so the accept path is hit)."""
    nums = st.one_of(st.integers(-10**25, 10**25).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))
    lists = st.lists(st.one_of(nums, st.sampled_from(["", "nan", "x"])), min_size=0, max_size=4).map(",".join)
    parts = [st.sampled_from(HOSTILE), nums, st.text(max_size=6), lists]
    if isinstance(spec, Spec):
        parts.append(valid_values(spec))
    return st.one_of(*parts)


def valid_values(spec: Spec) -> st.SearchStrategy[str]:
    """Values inside ``spec``'s range (as the user would type them)."""
    if spec.choices:
        one = st.sampled_from(spec.choices)
        return one if spec.kind == "choice" else st.lists(one, min_size=1, max_size=3).map(",".join)
    if spec.kind.startswith("int"):
        lo = int(spec.lo) if spec.lo is not None else -10**6
        hi = int(spec.hi) if spec.hi is not None else 10**6
        one = st.integers(lo, hi).map(str)
    elif spec.kind.startswith("float"):
        one = st.floats(spec.lo, spec.hi, allow_nan=False, allow_infinity=False, exclude_min=spec.lo_open,
                        exclude_max=spec.hi_open).map(repr)
    else:
        return st.text(min_size=1, max_size=6)
    return one if spec.kind in ("int", "float") else st.lists(one, min_size=1, max_size=3).map(",".join)


def targets() -> list[tuple[str, list[str], str, list[str], object]]:
    """``(category, argv before the value, flag, argv after, spec)`` for every option of every command."""
    out = []
    for c in CHECKS.values():
        for o in c.options:
            out.append(("check", ["check", c.name, o.flag], o.flag, ["--dry-run", "--json"], o.spec))
            out.append(("sweep", ["sweep", c.name, "--grid"], o.flag.lstrip("-"), ["--dry-run"], None))
        out.append(("check", ["check", c.name, "--seed"], "--seed", ["--dry-run", "--json"], cli.SEED))
        out.append(("check", ["check", c.name, "--backend"], "--backend", ["--dry-run", "--json"], None))
    name = next(iter(CHECKS))
    for flag in ("--workers", "--seed", "--backend"):
        out.append(("sweep", ["sweep", name, "--grid", "d=16", flag], flag, ["--dry-run"], None))
    out.append(("falsify", ["falsify", name, "--seeds"], "--seeds", ["--dry-run"], None))
    out.append(("falsify", ["falsify"], "NAME", ["--dry-run", "--no-frr"], None))
    return out


# commands whose valid values do real (slow) work: only refused values are sent
def _figure_names() -> set[str]:
    try:
        return set(load_checks(external=True)) | {"transformer"}
    except TypeError:  # a registry without external checks
        return set(CHECKS) | {"transformer"}


REFUSE_ONLY = [("figures", ["figures"], "NAME", [], _figure_names()),
               ("bench", ["bench", "--repeat"], "--repeat", [], None),
               ("check --all", ["check", "--all", "--all-backend"], "--all-backend", [], set(BACKENDS))]
if importlib.util.find_spec("torch") is not None:  # the transformer commands (optional extra)
    from stylized.core.options import Int

    _t = ["transformer", "train", "--variant", "rope"]
    REFUSE_ONLY += [("transformer", [*_t, "--steps"], "--steps", [], Int(1, 10**7)),
                    ("transformer", [*_t, "--seed"], "--seed", [], Int(0, 2**32 - 1)),
                    ("transformer", [*_t, "--threads"], "--threads", [], Int(1, 256)),
                    ("transformer", [*_t, "--bpe-vocab"], "--bpe-vocab", [], Int(257, 10**6)),
                    ("transformer", ["transformer", "train", "--variant"], "--variant", [], None),
                    ("transformer", ["transformer", "compare", "--workers"], "--workers", [], Int(1, 64)),
                    ("transformer", ["transformer", "compare", "--preset"], "--preset", [], None)]


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """``stylized.cli.app.main(argv)`` in-process: (exit status, stdout, stderr); a traceback is a failure."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except BaseException as e:  # noqa: BLE001 - any escape is a contract failure
            raise AssertionError(f"traceback for {argv!r}: {type(e).__name__}: {e}") from e
    return code, out.getvalue(), err.getvalue()


def _no_nan(token: str):
    raise ValueError(f"non-finite JSON token {token}")


def assert_contract(argv: list[str], code: int, out: str, err: str, words: list[str], spec=None) -> None:
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("stylized: error: "), (argv, err)
        named = any(w in lines[0] for w in words)
        # a token argparse takes for an unknown flag ('-1e+16' as a positional NAME) is named itself
        named = named or any(f"unrecognized arguments: {one_line(a)}" in lines[0] for a in argv if a.startswith("-"))
        assert named, (argv, lines[0], words)
        if isinstance(spec, Spec) and spec.range_text() and "work estimate" not in lines[0] and words[0] in lines[0]:
            # a built-in law's parameter: any finite number when parsed, the law's own range on a run of that law
            ranges = [spec.range_text()] + ([spec.strict.range_text()] if getattr(spec, "strict", None) else [])
            assert any(r in lines[0] for r in ranges), (argv, lines[0])
        return
    if "--json" in argv or "--dry-run" in argv:
        obj = json.loads(out.strip().splitlines()[-1], parse_constant=_no_nan)
        _finite(obj)


def _finite(x) -> None:
    if isinstance(x, float):
        assert math.isfinite(x)
    elif isinstance(x, dict):
        for v in x.values():
            _finite(v)
    elif isinstance(x, list):
        for v in x:
            _finite(v)


def _one(category: str, argv: list[str], words: list[str], spec=None) -> None:
    TRIED[category] += 1
    try:
        assert_contract(argv, *invoke(argv), words, spec)
    except AssertionError:
        FAILED[category] += 1
        raise


TARGETS = targets()
_PARSERS: dict = {}
_build_parser = cli.build_parser


def _cached_parser(*args, **kwargs):
    """One parser per set of arguments (argparse parsers are reusable; building one costs ~0.1 s)."""
    key = repr((args, sorted(kwargs.items())))
    if key not in _PARSERS:
        _PARSERS[key] = _build_parser(*args, **kwargs)
    return _PARSERS[key]


_plugins = functools.lru_cache(maxsize=None)(registry.plugins)  # entry points scanned once per process


@pytest.fixture(autouse=True)
def _fast_parser(monkeypatch):
    monkeypatch.setattr(cli, "build_parser", _cached_parser)
    monkeypatch.setattr(registry, "plugins", _plugins)


def _case(data, target) -> None:
    category, before, flag, after, spec = target
    value = data.draw(hostile_values(spec))
    if category == "sweep" and before[-1] == "--grid":
        value = f"{flag.replace('-', '_')}={value}"
        words = ["--" + flag, flag, "--grid"]
    else:
        words = [flag, flag.lstrip("-")]
    _one(category, [*before, value, *after], words, spec)


def _refused_case(data, target) -> None:
    category, before, flag, after, valid = target
    value = data.draw(hostile_values())
    if isinstance(valid, Spec):
        try:
            valid(value)
            return  # accepted: it would run the command
        except ValueError:
            pass
    elif valid is not None and value in valid:
        return
    elif category == "transformer":  # a name (--variant, --preset): only clearly invalid ones
        if value.strip().replace("-", "").isalnum():
            return
    elif valid is None:  # an integer option: skip in-range values (they would run the command)
        try:
            if 1 <= int(value) <= 1000:
                return
        except ValueError:
            pass
    _one(category, [*before, value, *after], [flag])


@FAST
@given(data=st.data(), target=st.sampled_from(TARGETS))
def test_fuzz_every_option_fast(data, target, tmp_results):
    _case(data, target)


@settings(FAST, max_examples=100)
@given(data=st.data(), target=st.sampled_from(REFUSE_ONLY))
def test_fuzz_other_commands_refuse_fast(data, target, tmp_results):
    _refused_case(data, target)


@pytest.mark.parametrize("flag,value", [("--trials", b"\xff\xfe"), ("--t", b"1,,2"), ("--family", b"")])
def test_fuzz_subprocess_sample(flag, value, tmp_path):
    """Real argv bytes (non-UTF-8 included) in a fresh process, with a timeout."""
    TRIED["subprocess"] += 1
    env = {**os.environ, "STYLIZED_RESULTS_DIR": str(tmp_path / "r"), "STYLIZED_FIGURES_DIR": str(tmp_path / "f")}
    p = subprocess.run([sys.executable, "-m", "stylized", "check", "haar-law", flag.encode(), value, "--json"],
                       capture_output=True, timeout=120, env=env, cwd=ROOT)
    err = p.stderr.decode("utf-8", "replace")
    assert_contract(["--json"], p.returncode, p.stdout.decode(), err, [flag])
    assert p.returncode == 2 and not (tmp_path / "r").exists()


@pytest.mark.slow
@SLOW
@given(data=st.data(), target=st.sampled_from(TARGETS))
def test_fuzz_every_option_slow(data, target, tmp_results):
    _case(data, target)


@pytest.mark.slow
@settings(SLOW, max_examples=500)
@given(data=st.data(), target=st.sampled_from(REFUSE_ONLY))
def test_fuzz_other_commands_refuse_slow(data, target, tmp_results):
    _refused_case(data, target)


def _boundary_cases() -> list[tuple[str, str, str]]:
    """(check, flag, value) at the ends of every numeric option's range (sizes: the small end only; real runs)."""
    cases = []
    uses = {"omega": "so2-uniform", "sigma": "so2-normal", "p": "lazy-haar", "base": "rope-random"}
    for c in CHECKS.values():
        fams = c.defaults().get("family", "")
        fams = [fams] if isinstance(fams, str) else list(fams)
        for o in c.options:
            s = o.spec
            if not isinstance(s, Spec) or s.kind not in ("int", "float", "int-list", "float-list"):
                continue
            if o.name in uses and uses[o.name] not in fams and "all" not in fams:
                continue  # a parameter of a family this check does not run
            for end, is_open in ((s.lo, s.lo_open), (s.hi, s.hi_open)):
                if end is None or (s.size and end == s.hi):  # a size: only its small end (the large one is capped)
                    continue
                v = end if not is_open else (end + 1e-3 if end == s.lo else end - 1e-3)
                v = int(v) if s.kind.startswith("int") else float(v)
                cases.append((c.name, o.flag, str(v)))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("name,flag,value", _boundary_cases())
def test_real_run_at_range_ends(name, flag, value, tmp_path):
    """A real run (reduced sizes) at each end of each option's range: exit 2 naming an option, or 0/1 with
    finite numbers and a non-null headline; under a timeout, in a subprocess."""
    TRIED["real runs"] += 1
    c = CHECKS[name]
    argv = ["check", name]
    for k, v in c.reduced.items():
        o = next(o for o in c.options if o.name == k)
        if o.flag != flag:
            argv += [o.flag, ",".join(map(str, v)) if isinstance(v, list) else str(v)]
    argv += [flag, value, "--json", "--no-progress"]
    env = {**os.environ, "STYLIZED_RESULTS_DIR": str(tmp_path / "r"), "STYLIZED_FIGURES_DIR": str(tmp_path / "f"),
           "NUMBA_NUM_THREADS": "1"}
    try:
        p = subprocess.run([sys.executable, "-m", "stylized", *argv], capture_output=True, timeout=300, env=env,
                           cwd=ROOT, text=True)
    except subprocess.TimeoutExpired:
        FAILED["real runs"] += 1
        raise AssertionError(f"hang: {argv}") from None
    try:
        assert_contract(argv, p.returncode, p.stdout, p.stderr, [o.flag for o in c.options] + [o.name for o in c.options])
        if p.returncode in (0, 1):
            r = json.loads(p.stdout)
            h = r.get("headline") or {}
            assert all(h.get(k) is not None for k in ("estimate", "ci_low", "ci_high")), (argv, h)
    except AssertionError:
        FAILED["real runs"] += 1
        raise


def teardown_module(module) -> None:
    report_fuzz("cli", TRIED, FAILED)
