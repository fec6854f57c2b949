"""The premise of C2/C3, measured per law: every harmonic degree must mix, not only the first.

C2 claims that ``qᵀP_n k`` tends to the Haar-coordinate law (``(1+s)/2 ~ Beta((d−1)/2, (d−1)/2)``), or to
uniform phases for SO(2) planes.  The walk ``P_n`` tends to the Haar measure of the closed group its steps
generate, and that is the claim's law only if every degree ``ℓ ≥ 1`` mixes: the gap ``1 − ρ(E[π_ℓ(M)])`` on the
degree-ℓ harmonics (the complement of the Haar invariants) is positive.  Measured here (:func:`measure_premises`):

* ``γ₁ = 1 − ||E[M]||`` (ℓ = 1; the paper's ``γ``), exact or estimated (:attr:`StepLaw.gap_interval`);
* the gaps of degree 2 (``X ↦ E[M X Mᵀ]`` on symmetric traceless matrices) and 4: closed forms for reflections
  (characters), (lazy) Haar steps (``1 − ρ = p``) and laws that give their exact operator
  (``second_moment_operator`` / ``harmonic_spectrum``); otherwise Monte Carlo with a 95% interval
  (:mod:`stylized.theory.premise_estimates`), where the dimension allows;
* SO(2) planes (the claim is uniform phases): ``1 − max_b |E e^{ikθ_b}|`` for ``k = 1 … K`` (a finite proxy for all
  ``k ≠ 0``), exact from ``chi_harmonic`` or estimated from drawn angles (Hoeffding interval);
* periodicity: an eigenvalue ``−1`` (or ``|χ_b(k)| = 1`` with ``χ_b(k) ≠ 1``): the walk alternates between cosets.

A gap whose value is 0 (to rounding: an exact fixed point of the operator, closed form or Monte Carlo) fails the
premise; a gap whose interval lies above 0 holds it; otherwise it is undecided.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..core._broadcast import check_instance
from ..core.options import arg_int
from ..laws.law_type import StepLawType
from . import premise_estimates as pe

__all__ = ["Gap", "Premises", "measure_premises", "reflection_harmonic_eigenvalue", "ZERO"]

ZERO = 1e-12
"""A gap at most this is 0 (an exact fixed point to rounding): the premise fails."""


@dataclass(frozen=True)
class Gap:
    """One gap ``1 − ρ`` with its 95% interval, how it was obtained, and whether an eigenvalue ``−1`` was found."""

    name: str
    value: float | None
    low: float | None = None
    high: float | None = None
    kind: str = "closed form"
    periodic: bool | None = None
    note: str = ""

    @property
    def status(self) -> str:
        """``"holds"`` (interval above 0), ``"fails"`` (0 to rounding), ``"undecided"``, or ``"not measured"``."""
        if self.value is None:
            return "not measured"
        if self.value <= ZERO:
            return "fails"
        return "holds" if (self.low if self.low is not None else self.value) > ZERO else "undecided"


@dataclass(frozen=True)
class Premises:
    """The measured premises of C2/C3 for one law: ``claim`` is ``"haar"`` or ``"uniform-phase"``."""

    law: str
    d: int
    claim: str
    gaps: tuple[Gap, ...] = field(default_factory=tuple)

    @property
    def failures(self) -> list[str]:
        """One phrase per failed premise, e.g. ``"harmonic gap of degree 2 is 0"``."""
        return [f"{g.name.split(' (')[0]} is 0" + (" (period 2: eigenvalue −1)" if g.periodic else "")
                for g in self.gaps if g.status == "fails"]

    @property
    def holds(self) -> bool | None:
        """``False`` when a premise fails, ``True`` when every one that applies holds, else ``None`` (one not measured
        or undecided)."""
        st = [g.status for g in self.gaps if g.kind != "n/a"]
        return False if "fails" in st else (True if st and all(s == "holds" for s in st) else None)

    @property
    def periodic(self) -> bool:
        return any(bool(g.periodic) for g in self.gaps)

    def window(self, eps: float) -> float:
        """The slowest measured window ``max_ℓ ⌈ln ε / ln(1 − gap_ℓ)⌉`` over the gaps that hold (each at its 95% lower
        end): after it every measured harmonic is below ``ε`` (degree 2: ``E[s²]`` within ``ε`` of ``1/d``).  ``0`` when
        no gap holds (a failed premise refuses the claim on its own; see :attr:`holds`)."""
        out = 0.0
        for g in self.gaps:
            if g.status == "holds":
                low = min(g.low if g.low is not None else g.value, 1.0)
                out = max(out, 0.0 if low >= 1.0 else math.ceil(math.log(eps) / math.log1p(-low)))
        return out

    def note(self, claim: str = "C2") -> str:
        """``"premise fails: harmonic gap of degree 2 is 0 — C2 cannot hold"``, or ``""`` when none fails."""
        return f"premise fails: {'; '.join(self.failures)} — {claim} cannot hold" if self.failures else ""

    def as_dict(self) -> dict:
        return {"law": self.law, "d": self.d, "claim": self.claim, "holds": self.holds, "periodic": self.periodic,
                "gaps": [{**asdict(g), "status": g.status} for g in self.gaps]}


def reflection_harmonic_eigenvalue(d: int, ell: int) -> float:
    """``E[π_ℓ(M)]`` for a uniform reflection ``M = I − 2wwᵀ`` (isotropic: a scalar on ``H_ℓ``) by characters:
    ``(χ_{Sym^ℓ} − χ_{Sym^{ℓ−2}})/dim H_ℓ``, ``χ_{Sym^m}(M) = Σ_j (−1)^j C(m−j+d−2, d−2)`` (ℓ = 2: ``1 − 4/(d+2)``).

    (claim C2's premise, *derived*) ``d`` an integer in ``[2, 4096]``, ``ell`` (ℓ) an integer in ``[1, 64]``."""
    d = arg_int("d", d, 2, 4096)
    ell = arg_int("ell", ell, 1, 64)

    def sym(m: int) -> int:
        return sum((-1) ** j * math.comb(m - j + d - 2, d - 2) for j in range(m + 1)) if m >= 0 else 0
    return (sym(ell) - sym(ell - 2)) / pe.harmonic_dimension(d, ell)


def _first(law) -> Gap:
    lo, hi = law.gap_interval
    m = law.theory_mean()
    ev = np.linalg.eigvals(m)
    exact = law.has_exact_mean
    per = bool(np.min(np.abs(ev + 1.0)) <= (1e-12 if exact else max(law.mean_radius, 1e-9)))
    return Gap("first-moment gap γ₁ = 1 − ||E[M]||", float(law.spectral_gap), float(lo), float(hi),
               law.theory_kind, per)


def _closed_radius(law, ell: int):
    """``(ρ, eigenvalue −1?, kind)`` in closed form, or ``None``."""
    from ..laws.isotropic import Householder

    if hasattr(law, "harmonic_spectrum") and (ell != 2 or not hasattr(law, "second_moment_operator")):
        ev = np.asarray(law.harmonic_spectrum(ell), dtype=float)
        return float(np.max(np.abs(ev))), bool(np.any(np.abs(ev + 1) <= 1e-12)), "closed form (exact spectrum)"
    if ell == 2 and hasattr(law, "second_moment_operator"):
        ev = np.linalg.eigvals(pe.restricted_second_moment(law.second_moment_operator(), law.d))
        return float(np.max(np.abs(ev))), bool(np.any(np.abs(ev + 1) <= 1e-9)), "closed form (exact E[M ⊗ M])"
    p = law.haar_step_probability
    if p is not None:
        return 1.0 - float(p), False, "closed form (Haar step with probability p: 1 − p)"
    if type(law) is Householder:
        c = reflection_harmonic_eigenvalue(law.d, ell)
        return abs(c), bool(abs(c + 1) <= 1e-12), "closed form (reflection characters)"
    return None


def _degree(law, ell: int, samples: int, seed: int) -> Gap:
    name = f"harmonic gap of degree {ell}"
    if law.planes and law.d >= 4:
        return Gap(name, None, kind="n/a", note="SO(2) planes: C2's claim is uniform phases (the plane "
                   "projectors are invariant, so this gap is 0 by construction and not the claim's premise)")
    closed = _closed_radius(law, ell)
    if closed is not None:
        rho, per, kind = closed
        v = 1.0 - rho if 1.0 - rho > ZERO else 0.0  # an eigenvalue 1 to rounding
        return Gap(name, v, v, v, kind, per)
    if ell == 2 and law.d <= pe.MAX_D_DEGREE2:
        est = pe.estimate_degree2(law, samples, seed)
    elif pe.harmonic_dimension(law.d, ell) <= pe.MAX_DIM_ZONAL:
        est = pe.estimate_zonal(law, ell, max(1, samples // 2), seed)
    else:
        return Gap(name, None, kind="not measured", note=f"no closed form, and d = {law.d} is beyond the Monte Carlo "
                   f"operator (d ≤ {pe.MAX_D_DEGREE2} for ℓ = 2, dim H_ℓ ≤ {pe.MAX_DIM_ZONAL} otherwise)")
    lo, hi = est.gap_interval
    value = 1.0 - est.rho
    return Gap(name, value if value > ZERO else 0.0, lo, hi, f"estimated (Monte Carlo operator, n = {est.n})",
               est.minus_one)


def _phase_gaps(law, K: int, samples: int, seed: int) -> list[Gap]:
    ks = np.arange(1, K + 1)
    try:
        chi = np.asarray(law.chi_harmonic(ks), dtype=complex)
        r, kind = 0.0, "closed form"
    except NotImplementedError:
        from ..core.counter_rng import reference_seed

        th = np.asarray(law.sample(np.random.default_rng(reference_seed("prmk", seed)), (samples,), np), dtype=float)
        chi = np.exp(1j * ks[:, None, None] * th[None]).mean(1)
        r = math.sqrt(2.0) * math.sqrt(2.0 * math.log(4.0 * K * chi.shape[1] / 0.05) / samples)  # Hoeffding, Re and Im
        kind = f"estimated (n = {samples}, Hoeffding)"
    out = []
    for i, k in enumerate(ks):
        a = np.abs(chi[i])
        v = float(1.0 - a.max())
        per = bool(np.any((np.abs(a - 1) <= max(r, 1e-12)) & (np.abs(chi[i] - 1) > max(r, 1e-12))))
        out.append(Gap(f"SO(2) phase gap k = {k} (1 − max_b |E e^{{ikθ_b}}|)", v if v > ZERO else 0.0,
                       max(0.0, v - r), min(1.0, v + r), kind, per))
    return out


def measure_premises(law, *, seed: int = 0, K: int = 8, degrees: tuple[int, ...] = (2, 4),
                     samples: int = 4000) -> Premises:
    """The premises of C2/C3 for ``law`` (a :class:`~stylized.laws.base.StepLaw`): ``γ₁``, the harmonic gaps of
    ``degrees`` (a Haar claim), and for SO(2) planes the phase gaps ``k = 1 … K``; ``samples`` draws behind each
    Monte Carlo operator (on reference streams keyed by ``seed``, never a check's).

    (claim C2's premise, *derived*: a gap of ``E[M]`` alone is the degree-1 harmonic only.)  ``seed`` an integer
    ≥ 0, ``K`` in ``[1, 64]``, ``degrees`` a tuple of integers in ``[2, 8]``, ``samples`` in ``[100, 10⁶]``."""
    check_instance("law", law, StepLawType, "a step law (StepLaw, see make_family)")
    seed = arg_int("seed", seed, 0, 2**63 - 1)
    K = arg_int("K", K, 1, 64)
    samples = arg_int("samples", samples, 100, 10**6)
    if not isinstance(degrees, (tuple, list)) or not degrees:
        raise ValueError(f"degrees must be a non-empty tuple of integers in [2, 8], got {degrees!r}")
    degrees = tuple(arg_int("degrees", ell, 2, 8) for ell in degrees)
    gaps = [_first(law)] + [_degree(law, ell, samples, seed) for ell in degrees]
    if law.planes:
        gaps += _phase_gaps(law, K, max(samples, 20000), seed)
    return Premises(law.name, int(law.d), "uniform-phase" if law.planes else "haar", tuple(gaps))
