"""``stylized.strategies`` and the pytest plugin (``stylized.pytest_plugin``), and the tutorial's example.

The strategies draw what they promise (valid laws, unit vectors, logits within ``±λ``, routes, contexts); a user's
law class goes through :func:`~stylized.strategies.laws`; ``import stylized`` does not import Hypothesis; the plugin
is registered (``pytest11``) and ``parametrize_with_law_checks`` gives one case per (law, contract item) named
``<law>-d<d>-<item>``; ``docs/examples/property_tests.py`` passes under pytest.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from stylized import strategies as sst
from stylized.laws.base import StepLaw
from stylized.laws.registry import make_family
from stylized.pytest_plugin import law_check_items, parametrize_with_law_checks

ROOT = Path(__file__).resolve().parents[2]
FEW = settings(max_examples=25, deadline=None, derandomize=True)


@dataclass(frozen=True)
class Flip(StepLaw):
    """A user's law: random coordinate sign flips (orthogonal, ``E[M] = 0``)."""

    d: int
    p: float = 0.5

    def sample(self, xrng, shape, xp=np):
        signs = xp.where(xrng.random(tuple(shape) + (self.d,)) < self.p, -1.0, 1.0)
        return signs[..., :, None] * xp.eye(self.d)


@FEW
@given(sst.laws(sst.LAW_PARAMS, max_d=10))
def test_laws_are_valid_built_ins(law):
    assert isinstance(law, StepLaw) and 2 <= law.d <= 10
    assert not law.planes or law.d % 2 == 0
    assert 0.0 <= law.spectral_gap <= 1.0


@FEW
@given(sst.laws([Flip], min_d=3, max_d=6, params={"p": st.floats(0.1, 0.9)}))
def test_laws_take_a_users_class(law):
    assert isinstance(law, Flip) and 3 <= law.d <= 6 and 0.1 <= law.p <= 0.9


def test_laws_refuse_what_is_not_a_law():
    with pytest.raises(TypeError, match="not a StepLaw"):
        find(sst.laws([lambda d: "no"]), lambda law: True)
    with pytest.raises(ValueError, match="family must be one of"):
        sst.laws(["no-such-law"])


@FEW
@given(sst.dimensions(2, 12, even=True).flatmap(sst.unit_vectors))
def test_unit_vectors(q):
    assert q.size % 2 == 0 and abs(np.linalg.norm(q) - 1) < 1e-12


@FEW
@given(sst.bounded_logits(lam=st.floats(0, 5), length=st.integers(1, 20)))
def test_bounded_logits_within_lambda(x):
    lam, s = x
    assert 1 <= s.size <= 20 and np.all(np.abs(s) <= lam)


@FEW
@given(sst.routes(max_length=6))
def test_routes_products_are_orthogonal(route):
    P = route.product()
    assert P.shape == (route.law.d, route.law.d)
    assert np.allclose(P.T @ P, np.eye(route.law.d), atol=1e-9)


@FEW
@given(sst.contexts(max_L=16))
def test_contexts(ctx):
    assert 1 <= ctx.D <= ctx.L <= 16 and ctx.K + ctx.M_L == ctx.L
    out = ctx.sample()
    assert out.logits.shape == (ctx.L,) and 0.0 <= out.far_mass <= 1.0


def test_import_stylized_does_not_import_hypothesis():
    code = "import sys, stylized; stylized.make_family('householder', 4); print('hypothesis' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr[-2000:]


def test_plugin_is_registered():  # as pytest finds plugins: every installed distribution's pytest11 group
    assert "stylized.pytest_plugin" in {ep.value for dist in distributions() for ep in dist.entry_points
                                        if ep.group == "pytest11"}


def test_parametrize_with_law_checks_ids():
    laws = [make_family("householder", 13), make_family("so2-uniform", 8)]
    mark = parametrize_with_law_checks(laws)
    items = law_check_items()
    assert mark.kwargs["ids"][0] == f"householder-d13-{items[0]}"
    assert "householder-d13-isotropic" in mark.kwargs["ids"] and len(mark.kwargs["ids"]) == 2 * len(items)


def test_plugin_fixtures_and_cases_in_a_users_test_file(tmp_path):
    (tmp_path / "test_user.py").write_text(
        "import pytest\n"
        "from stylized.laws.registry import make_family\n"
        "from stylized.pytest_plugin import parametrize_with_law_checks\n\n"
        "def test_rng(rng):\n    assert 0 <= rng.random() < 1\n\n"
        "@pytest.mark.law('so2-uniform', 6, omega=0.5)\n"
        "def test_marked(law):\n    assert law.name == 'so2-uniform' and law.d == 6\n\n"
        "def test_default(law, numba_warm):\n    assert law.name == 'householder' and numba_warm\n\n"
        "@parametrize_with_law_checks([make_family('householder', 5)])\n"
        "def test_contract(law, law_check):\n    law_check(law)\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "rng or marked or default or (gap and not oracle)",
                        "test_user.py", "-rA"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "test_contract[householder-d5-gap]" in r.stdout and "4 passed" in r.stdout


def test_tutorial_example_passes_under_pytest():
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "docs/examples/property_tests.py"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
