"""User code contained: misbehaving laws (:mod:`tests._user_laws`, 150+) and malformed ``--family`` strings (70+)
through the command line (in process, ``stylized.cli.app.main``) and ``stylized.run``.

Hard failure: a traceback, exit 0 on an invalid law, exit 3 (an internal error), any exception from ``stylized.run``
that is not :class:`~stylized.InvalidInput` (``stylized.core.errors``), or a hang.  The goal, asserted: none.  Each
refusal is one line naming ``--family`` (``family`` from Python), exit 2, under ``--dry-run`` too.
"""

from __future__ import annotations

import pytest

import stylized
from stylized.cli.app import main
from stylized.core.errors import InvalidInput
from tests import _user_laws as U

SMALL = ["--d", "6", "--n", "0,1,2", "--trials", "64", "--L", "16", "--window-steps", "64", "--d-op", "4",
         "--n-op", "1,2", "--trials-op", "10"]
SMALL_API = dict(d=6, n=[0, 1, 2], trials=64, L=[16], window_steps=64, d_op=4, n_op=[1, 2], trials_op=10)
PROBE = [name for name, when in U.CASES if when == "probe"]
LATE = [name for name, when in U.CASES if when == "run"]


def _cli(capsys, family: str, *extra: str) -> tuple[int, str]:
    rc = main(["check", "mixing", f"--family={family}", *SMALL, "--no-progress", *extra])
    err = capsys.readouterr().err
    return rc, err


def _refused_in_one_line(rc: int, err: str, flag: str = "--family") -> None:
    assert rc == 2, (rc, err[-600:])
    assert "Traceback" not in err and err.count("\n") == 1 and flag in err, err[-600:]


@pytest.fixture(autouse=True)
def _fresh_counters():
    U.CALLS.clear()


@pytest.mark.parametrize("name", PROBE)
def test_cli_refuses_a_misbehaving_law_before_any_work(capsys, name):
    for extra in (("--dry-run",), ()):
        U.CALLS.clear()
        _refused_in_one_line(*_cli(capsys, f"tests._user_laws:{name}", *extra))


@pytest.mark.parametrize("name", LATE)
def test_cli_contains_a_law_that_fails_mid_run(capsys, name):
    rc, err = _cli(capsys, f"tests._user_laws:{name}", "--dry-run")
    assert rc == 0, err  # its first draws are valid: only a run sees it fail
    U.CALLS.clear()
    _refused_in_one_line(*_cli(capsys, f"tests._user_laws:{name}"))


@pytest.mark.parametrize("name", PROBE + LATE)
def test_api_raises_invalid_input_for_a_misbehaving_law(name):
    with pytest.raises(InvalidInput, match=r"^family: "):
        stylized.run("mixing", family=f"tests._user_laws:{name}", **SMALL_API)


def _instances():
    out = []
    for name, _ in U.CASES:
        obj = getattr(U, name)
        if isinstance(obj, type):
            try:
                out.append(pytest.param(obj(6), id=name))
            except BaseException:  # noqa: BLE001  (its constructor raises: tested by name above)
                continue
    return out


@pytest.mark.parametrize("law", _instances())
def test_api_raises_invalid_input_for_a_misbehaving_law_object(law):
    with pytest.raises(InvalidInput, match=r"^family: "):
        stylized.run("mixing", family=law, **{k: v for k, v in SMALL_API.items() if k != "d"})


@pytest.mark.parametrize("name", U.VALID)
def test_valid_user_laws_run(capsys, name):
    rc, err = _cli(capsys, f"tests._user_laws:{name}")
    assert rc in (0, 1) and "Traceback" not in err, err[-600:]


FAMILY_STRINGS = [
    "nosuch", "NoSuch", "householder2", "house holder", "householder,nosuch", ",", " , ", "all,householder", "ALL",
    "nosuch:Law", "nosuch.mod:Law", "tests._user_laws:", "tests._user_laws:Nope", ":Reflect", "tests._user_laws::Reflect",
    "tests._user_laws:Reflect.sub", "tests._user_laws:CASES", "tests._user_laws:CALLS", "tests._user_laws:np",
    "tests._user_laws:Custom", "tests._user_laws:_raiser", "tests._user_laws:_late", "tests:_user_laws",
    "tests._user_laws:Reflect:Reflect", "tests._user_laws.Reflect", "tests/_user_laws.py:Reflect",
    "../tests/_user_laws:Reflect", "/etc/passwd:x", "os:getcwd", "os:path", "os:sep", "os:abort", "os:_exit",
    "sys:exit", "builtins:exit", "builtins:quit", "builtins:int", "builtins:dict", "builtins:list", "builtins:print",
    "builtins:input", "builtins:open", "builtins:eval", "builtins:type", "builtins:object", "math:pi", "math:sqrt",
    "time:sleep", "signal:pause", "numpy:eye", "numpy:ones", "numpy:random", "collections:OrderedDict",
    "json:loads", "subprocess:run", "threading:Thread", "stylized:StepLaw", "stylized.laws.base:StepLaw",
    "stylized.laws.so2:SO2Family", "stylized:run", "stylized:InvalidInput", "stylized.laws.registry:make_family",
    "antigravity:fly", "this:s", "x" * 300, "a:" + "b" * 300, "é:ü", "householder;rm -rf /", "$(id)", "--d",
    "-1", "0", "1e9", "None", "null", "[householder]", "{'a': 1}", "householder:", "householder:Householder",
    "tests._user_laws:factory_raises_SystemExit0,householder", "householder,tests._user_laws:draws_nan_all",
    "tests._user_laws:init_raises_KeyboardInterrupt", "tests._user_laws:sample_raises_GeneratorExit",
]


@pytest.mark.parametrize("family", FAMILY_STRINGS)
def test_cli_refuses_a_malformed_family_string(capsys, family):
    for extra in (("--dry-run",), ()):
        _refused_in_one_line(*_cli(capsys, family, *extra))


@pytest.mark.parametrize("family", FAMILY_STRINGS)
def test_api_refuses_a_malformed_family_string(family):
    with pytest.raises(InvalidInput):
        stylized.run("mixing", family=family, **SMALL_API)


@pytest.mark.parametrize("family", ["--d", "tests._user_laws:factory_raises_SystemExit0",
                                    "tests._user_laws:sample_raises_KeyboardInterrupt", "tests._user_laws:draws_nan_one"])
def test_the_installed_command_refuses_in_one_line(family):
    """The real process (exit status, stderr), as a shell or CI sees it, under ``--dry-run``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "stylized", "check", "mixing", "--family", family, "--d", "6",
                        "--dry-run"], capture_output=True, text=True, env=env, timeout=300, cwd=root)
    _refused_in_one_line(r.returncode, r.stderr)


def test_the_fuzz_is_as_large_as_promised():
    assert len(PROBE) + len(LATE) >= 100 and len(FAMILY_STRINGS) >= 70
