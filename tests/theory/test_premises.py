"""C2's premise measured per law (stylized.theory.premises): closed forms, Monte Carlo operators, the CLI."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from stylized.cli.app import main
from stylized.laws.base import StepLaw
from stylized.laws.registry import make_family
from stylized.theory import premise_estimates as pe
from stylized.theory.premises import measure_premises, reflection_harmonic_eigenvalue
from tests._shared import UserReflection


@dataclass(frozen=True)
class DenseCoordReflection(StepLaw):
    """A user's coordinate reflection, dense: its degree-2 operator fixes the diagonal traceless matrices."""

    d: int

    def sample(self, xrng, shape, xp=np):
        k = xrng.integers(0, self.d, size=tuple(shape))
        return xp.eye(self.d) - 2.0 * (xp.arange(self.d) == k[..., None])[..., :, None] * np.eye(self.d)[k][..., None, :]


@pytest.mark.parametrize("d", [2, 3, 6, 17, 64])
def test_reflection_characters_match_the_closed_form_and_the_dimension(d):
    assert reflection_harmonic_eigenvalue(d, 1) == pytest.approx(1 - 2 / d)
    assert reflection_harmonic_eigenvalue(d, 2) == pytest.approx(1 - 4 / (d + 2))
    B = pe.sym_traceless_basis(d)
    assert B.shape == (d * d, pe.harmonic_dimension(d, 2)) and np.allclose(B.T @ B, np.eye(B.shape[1]))


def test_reflection_characters_match_an_exact_average_over_reflections():
    """d = 3: E[π_2(M)] from the exact law of w (Gauss quadrature on S²) restricted to symmetric traceless matrices."""
    d, rng = 3, np.random.default_rng(0)
    w = rng.standard_normal((200_000, d))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    m = np.eye(d) - 2 * w[:, :, None] * w[:, None, :]
    V = m.reshape(len(m), -1)
    T = (V.T @ V / len(m)).reshape(d, d, d, d).transpose(0, 2, 1, 3).reshape(d * d, d * d)
    ev = np.linalg.eigvals(pe.restricted_second_moment(T, d))
    assert np.allclose(ev.real, reflection_harmonic_eigenvalue(d, 2), atol=0.01)


def test_builtin_premises_closed_form():
    for name, d in (("householder", 64), ("haar", 8), ("lazy-haar", 8)):
        p = measure_premises(make_family(name, d))
        assert p.holds is True and p.claim == "haar" and all(g.kind.startswith("closed form") for g in p.gaps)
    for name in ("so2-uniform", "so2-normal", "rope-random"):
        p = measure_premises(make_family(name, 16))
        assert p.claim == "uniform-phase" and p.holds is True and not p.failures  # Haar degrees n/a for planes
        assert all(g.status == "holds" for g in p.gaps if g.name.startswith("SO(2)"))


def test_counterexamples_fail_their_premise_with_the_reason():
    p = measure_premises(make_family("coord-reflection", 16))
    assert p.holds is False and p.gaps[0].status == "holds"  # γ₁ = 2/d > 0 …
    assert "harmonic gap of degree 2 is 0" in p.note() and p.note().endswith("C2 cannot hold")  # … but ℓ = 2 does not mix
    q = measure_premises(make_family("lattice-angle", 16))
    assert q.holds is False and q.periodic and "SO(2) phase gap k = 2 is 0 (period 2" in q.note()


def test_estimated_premises_cover_the_closed_form_and_find_exact_fixed_points():
    """A dense user reflection (estimated) brackets the reflection's closed forms; a dense coordinate reflection's
    estimated degree-2 operator has an exact fixed point, so its premise fails without any closed form."""
    p = measure_premises(UserReflection(5))
    for g, ell in zip(p.gaps[1:], (2, 4)):
        exact = 1 - reflection_harmonic_eigenvalue(5, ell)
        assert g.kind.startswith("estimated") and g.low <= exact <= g.high, (g, exact)
    assert p.holds is True
    c = measure_premises(DenseCoordReflection(5))
    assert c.holds is False and c.gaps[1].status == "fails" and c.gaps[1].kind.startswith("estimated")


def test_bad_draws_are_refused():
    @dataclass(frozen=True)
    class Expanding(StepLaw):
        d: int

        def sample(self, xrng, shape, xp=np):
            return 2.0 * xp.broadcast_to(xp.eye(self.d), tuple(shape) + (self.d, self.d)).copy()

    with pytest.raises(ValueError, match="orthogonal"):
        measure_premises(Expanding(4))


def test_cli_premises(capsys):
    assert main(["premises", "--family", "coord-reflection", "--d", "8"]) == 1
    assert "premise fails: harmonic gap of degree 2 is 0" in capsys.readouterr().out
    assert main(["premises", "--family", "householder", "--d", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["holds"] is True and out["gaps"][1]["value"] == pytest.approx(0.4)
    assert main(["premises", "--family", "nope", "--d", "8"]) == 2
    assert "--family" in capsys.readouterr().err
    assert main(["premises", "--family", "contraction", "--d", "8"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["premises", "--family", "householder", "--d", "1"])
    assert e.value.code == 2 and "--d" in capsys.readouterr().err


def test_the_premise_window_is_the_slowest_measured_gap():
    hh = measure_premises(make_family("householder", 16))  # γ₁ = 2/d, degree 2: 4/(d+2), degree 4 faster still
    gaps = [g for g in hh.gaps if g.status == "holds"]
    slowest = min(g.low for g in gaps)
    assert hh.window(0.01) == math.ceil(math.log(0.01) / math.log1p(-slowest))
    assert measure_premises(make_family("haar", 8)).window(0.01) == 0  # every gap is 1: mixed after one step
    refl = measure_premises(make_family("coord-reflection", 8))  # the failed degree-2 gap sets no window
    assert refl.window(0.01) == math.ceil(math.log(0.01) / math.log1p(-2 / 8))
