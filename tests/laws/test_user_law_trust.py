"""A user's law is tested, never trusted: ``check_law`` refuses false declarations item by item, every check
validates a law's draws before and while it uses them, a law object's result saves, ``--law-param`` reaches the
law's factory, and a built-in law's ranges do not constrain a user's law."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass

import numpy as np
import pytest

import stylized
from stylized import StepLaw
from stylized.cli.app import main
from stylized.core.errors import InvalidInput, InvalidLaw
from stylized.core.key_values import KeyValues
from stylized.harness.plotting import reference_label
from stylized.harness.testing import LAW_CHECKS, check_law, check_law_isotropic
from stylized.laws.families import Householder, make_family
from stylized.laws.trust import guarded, validate_law
from tests import _user_laws as U

SMALL_API = dict(n=[0, 1, 2], trials=64, L=[16], window_steps=64, d_op=4, n_op=[1, 2], trials_op=10)
SMALL = ["--d", "6", "--n", "0,1,2", "--trials", "64", "--L", "16", "--window-steps", "64", "--d-op", "4",
         "--n-op", "1,2", "--trials-op", "10", "--no-progress"]


@dataclass(frozen=True)
class CoordReflection(StepLaw):
    """``M = I − 2 e_k e_kᵀ``, ``k`` uniform: orthogonal with ``E[M] = (1 − 2/d) I``, but not isotropic."""

    d: int

    def sample(self, xrng, shape, xp=np):
        k = xrng.integers(0, self.d, size=tuple(shape))
        return np.eye(self.d) - 2.0 * (np.arange(self.d) == k[..., None])[..., :, None] * np.eye(self.d)[k][..., None, :]


@dataclass(frozen=True)
class FalselyIsotropic(CoordReflection):
    isotropic = True


@dataclass(frozen=True)
class FalselyPlanar(Householder):
    planes = True


@dataclass(frozen=True)
class Complex(StepLaw):
    d: int

    def sample(self, xrng, shape, xp=np):
        return Householder(self.d).dense(Householder(self.d).sample(xrng, shape).reshape(-1, self.d)).reshape(
            tuple(shape) + (self.d, self.d)) * np.exp(0.3j)


@dataclass(frozen=True)
class Expanding(StepLaw):
    d: int
    orthogonal = False

    def sample(self, xrng, shape, xp=np):
        return 1.02 * np.broadcast_to(np.eye(self.d), tuple(shape) + (self.d, self.d)).copy()


@dataclass(frozen=True)
class WrongD(StepLaw):
    d: int

    def sample(self, xrng, shape, xp=np):
        return U.Reflect(self.d - 1).sample(xrng, shape)


@pytest.mark.parametrize("law, item", [
    (FalselyIsotropic(8), "isotropic"), (FalselyIsotropic(16), "isotropic"), (FalselyPlanar(6), "planes"),
    (Complex(4), "dtype"), (U.draws_scaled_up(5), "orthogonal"), (Expanding(4), "orthogonal"), (WrongD(6), "shape"),
    (U.draws_nan_one(4), "dtype")], ids=lambda x: x if isinstance(x, str) else f"{type(x).__name__}-d{x.d}")
def test_check_law_refuses_a_false_declaration(law, item):
    res = {c.name: c for c in check_law(law, raise_on_fail=False)}
    assert not res[item].passed, res[item].detail
    with pytest.raises(AssertionError, match=item):
        check_law(law)


def test_a_valid_law_that_is_not_isotropic_keeps_the_contract():
    """The coordinate reflection is a valid law (it only fails C2's premise): it declares nothing false."""
    assert all(c.passed for c in check_law(CoordReflection(8)))


@pytest.mark.parametrize("item", list(LAW_CHECKS))
def test_each_item_runs_alone(item):
    (c,) = check_law(make_family("householder", 6), items=(item,))
    assert c.name == item and c.passed, c.detail


def test_items_are_named_functions():
    c = check_law_isotropic(make_family("haar", 5), seed=3)
    assert c.passed and "Beta((d−1)/2, (d−1)/2)" in c.detail and "conjugation" in c.detail
    with pytest.raises(ValueError, match="items must be among"):
        check_law(make_family("haar", 5), items=("nope",))


def test_isotropy_is_not_tested_when_not_declared():
    assert "not declared" in check_law_isotropic(CoordReflection(6)).detail


@pytest.mark.parametrize("law, words", [
    (Complex(4), "complex"), (U.draws_nan_all(4), "not finite"), (U.draws_scaled_up(4), "not orthogonal"),
    (Expanding(4), "expand"), (WrongD(6), "shape"), (U.draws_python_list(4), "not a NumPy array"),
    (U.structured_apply_wrong(4), "apply"), (U.mean_nan(4), "mean()"), (U.sample_raises_SystemExit0(4), "SystemExit"),
    (U.sample_raises_KeyboardInterrupt(4), "KeyboardInterrupt"), (U.declares_step_ndim_int_3(4), "step_ndim")],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_validate_law_names_the_property(law, words):
    with pytest.raises(InvalidLaw, match="family") as e:
        validate_law(law, law.d)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_validate_law_refuses_another_d():
    with pytest.raises(InvalidLaw, match="d = 7 when d = 6"):
        validate_law(U.Reflect(7), 6)


def test_the_refusal_is_bad_input():
    assert issubclass(InvalidLaw, InvalidInput) and issubclass(InvalidLaw, ValueError)


def test_a_guarded_law_keeps_its_identity_and_pickles():
    law = guarded(U.Reflect(5))
    assert law.name == "reflect" and isinstance(law, U.Reflect) and law.d == 5
    back = pickle.loads(pickle.dumps(law))
    assert back.name == law.name and getattr(type(back), "_stylized_guarded", False)
    assert np.array_equal(back.sample(np.random.default_rng(1), (2,)), law.sample(np.random.default_rng(1), (2,)))


def test_a_guarded_law_refuses_a_bad_draw_mid_run():
    U.CALLS.clear()
    law = guarded(U.late_draws_nan_all(4))
    for _ in range(2):
        law.sample(np.random.default_rng(0), (3,))
    with pytest.raises(InvalidLaw, match="not finite"):
        law.sample(np.random.default_rng(0), (3,))


def test_the_json_reports_the_laws_d_and_a_law_object_saves(tmp_path):
    r = stylized.run("mixing", family=U.Reflect(5), **SMALL_API)
    data = json.loads(r.to_json())
    assert data["params"]["d"] == 5
    assert data["params"]["family"][0]["class"] == "tests._user_laws:Reflect"
    path = r.save(tmp_path)
    assert json.loads(path.read_text())["params"]["family"][0]["d"] == 5


def test_law_param_reaches_the_factory(capsys, tmp_path):
    rc = main(["check", "mixing", "--family", "tests._user_laws:Reflect", *SMALL, "--law-param", "d=3", "--dry-run"])
    assert rc == 2 and "--law-param" in capsys.readouterr().err
    rc = main(["check", "mixing", "--family", "stylized.laws.isotropic:LazyHaar", *SMALL, "--law-param", "p=0.3",
               "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc in (0, 1) and out["params"]["law_param"] == {"p": 0.3}
    rc = main(["check", "mixing", "--family", "tests._user_laws:Reflect", *SMALL, "--law-param", "beta=2", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and "--law-param: unknown key 'beta'" in err and err.count("\n") == 1


def test_law_param_values_are_parsed_and_validated():
    assert KeyValues()(["a=1", "b=2.5", "c=[1, 2]", "e=true", "f=text"]) == {"a": 1, "b": 2.5, "c": [1, 2], "e": True,
                                                                            "f": "text"}
    for bad in (["a"], ["1a=2"], ["a=inf"], ["a=[1, NaN]"], ["a=1", "a=2"], ["d=4"]):
        with pytest.raises(InvalidInput):
            KeyValues()(bad)


def test_a_builtin_laws_range_does_not_constrain_a_users_law(capsys):
    rc = main(["check", "mixing", "--family", "tests._user_laws:Reflect", *SMALL, "--omega", "4", "--p", "3",
               "--dry-run"])
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    rc = main(["check", "mixing", "--family", "so2-uniform", *SMALL, "--omega", "4", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("stylized: error: --omega: must be a number in (0, π]")


def test_an_estimated_reference_is_never_labelled_exact():
    assert reference_label(["closed form"]) == "exact law"
    assert reference_label(["estimated (Monte Carlo, n = 20000)"]) == "estimated (Monte Carlo) law"
    r = stylized.run("mixing", family=U.Reflect(6), **SMALL_API)
    fig = r.plot()
    texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    texts += [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert any("estimated (Monte Carlo)" in t for t in texts) and not any("exact" in t for t in texts), texts


def test_the_theory_exponent_does_not_depend_on_the_measurement():
    from simulations.value.incoherence import fit_exponent

    M = np.array([16.0, 64, 256, 1024])
    th = 1 / M + 1 / M**2
    est = th * np.array([1.01, 0.99, 1.0, 1.02])
    a = fit_exponent(M, est, est * 0.9, est * 1.1, th)
    b = fit_exponent(M, est, est * np.array([0.5, 0.99, 0.99, 0.99]), est * np.array([1.5, 1.01, 1.01, 1.01]), th)
    assert a[3] == b[3] and a[0] == b[0] and a[2] - a[1] != b[2] - b[1]
