"""The step-law contract (:func:`stylized.harness.testing.check_law`) on every registered law, even and odd ``d``, and
on every step family of :data:`tests._shared.FAMILY_CASES` (parameters that keep each law non-degenerate at small
``d``): one pytest case per law and item, ``householder-d13-orthogonal``, so ``pytest -k "householder and orthogonal"``
runs one.

A new law registered with :func:`stylized.laws.families.register_law` is tested here without editing this file.
Mutant laws (a wrong ``mean()``, a non-orthogonal step, a transport that drops steps) must fail it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from stylized import StepLaw
from stylized.harness.testing import check_law
from stylized.laws.families import Householder, law_names, make_family
from stylized.pytest_plugin import law_id, parametrize_with_law_checks
from tests._shared import FAMILY_CASES, build_family


def _laws(ds=(3, 6, 13)) -> tuple[list[StepLaw], list[str]]:
    """Every registered law at each ``d`` it accepts (SO(2) planes: even ``d`` only), then every family case at
    ``d = 6`` not among them (a rotation part ``mu``, the token table, other parameters), with their case ids."""
    laws = []
    for name in law_names():
        for d in ds:
            try:
                laws.append(make_family(name, d))
            except ValueError as e:
                if not (d % 2 and "even" in str(e)):
                    raise
    ids = [law_id(law) for law in laws]
    for name, kw in FAMILY_CASES:
        if kw or name not in law_names():  # householder and haar at d = 6 are above already
            laws.append(build_family(name, 6, **kw))
            ids.append(name + (f"({', '.join(f'{k}={v}' for k, v in kw.items())})" if kw else "") + "-d6")
    return laws, ids


LAWS, LAW_IDS = _laws()


def test_every_registered_law_is_under_contract():
    assert {law.name for law in LAWS} >= set(law_names())


@parametrize_with_law_checks(LAWS, ids=LAW_IDS)
def test_every_registered_law_keeps_the_contract(law, law_check):
    law_check(law)


@dataclass(frozen=True)
class Cayley(StepLaw):
    """A user's law in the fewest lines: only ``d`` and ``sample``."""

    d: int

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d, self.d))
        a = (g - xp.swapaxes(g, -1, -2)) / (2 * self.d ** 0.5)
        eye = xp.eye(self.d)
        return xp.linalg.solve(eye + a, eye - a)


def test_a_users_law_with_only_sample_keeps_the_contract():
    law = Cayley(d=7)
    res = check_law(law)
    assert law.theory_kind.startswith("estimated (Monte Carlo, n = ")
    assert {c.name for c in res} >= {"mean", "dense-oracle", "walk-vs-mean", "orthogonal"}


@dataclass(frozen=True)
class _MeanOff(Householder):
    def mean(self):
        return 0.97 * Householder.mean(self)


@dataclass(frozen=True)
class _NotOrthogonal(StepLaw):
    d: int

    def sample(self, xrng, shape, xp=np):
        return 1.01 * xp.broadcast_to(xp.eye(self.d), tuple(shape) + (self.d, self.d)).copy()


@dataclass(frozen=True)
class _DropsSteps(Householder):
    def route_queries(self, steps, q, *, xrng=None, prepared=None):
        out = Householder.route_queries(self, steps, q)
        out[..., 3:, :] = out[..., 2:-1, :]  # one step skipped
        return out


@pytest.mark.parametrize("law, item", [(_MeanOff(d=6), "mean"), (_NotOrthogonal(d=4), "orthogonal"),
                                       (_DropsSteps(d=5), "dense-oracle")])
def test_mutant_laws_fail_the_contract(law, item):
    res = {c.name: c for c in check_law(law, raise_on_fail=False)}
    assert not res[item].passed, res[item].detail
    with pytest.raises(AssertionError, match=item):
        check_law(law)


_USER_MODULE = '''
from dataclasses import dataclass
import numpy as np
from stylized import StepLaw

@dataclass(frozen=True)
class Reflect(StepLaw):
    """Householder reflections as dense matrices: a user's law with only sample."""
    d: int
    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d,))
        w = g / xp.sqrt((g * g).sum(-1, keepdims=True))
        return xp.eye(self.d) - 2.0 * w[..., :, None] * w[..., None, :]
'''


def test_command_line_takes_a_users_law_by_module_path(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "mylaws.py").write_text(_USER_MODULE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    base = [sys.executable, "-m", "stylized", "check", "mixing", "--family", "mylaws:Reflect", "--d", "5",
            "--trials", "400", "--L", "64", "--window-steps", "4096", "--trials-op", "50", "--out", str(tmp_path / "o")]
    r = subprocess.run(base, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    bad = subprocess.run(base[:6] + ["mylaws:Nope", "--d", "5"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--family" in bad.stderr and "Traceback" not in bad.stderr
