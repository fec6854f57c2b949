"""Value side (claim C5): the closed forms of the far interference energy.

Far values share a background ``v_j = b + ξ_j`` (``ξ_j ~ N(0, σ²I_d)``); with far weights
``ᾱ_j = α_j/ρ_D`` the measured quantity is ``r = E||F||²/(ρ_D²||b||²)``, ``F`` the far output.

* :func:`qkv_interference_theory` — weights independent of the steps *(derived)*: for ``j < k``,
  ``P_{j→i} = P_{k→i}P_{j→k}`` with ``P_{k→i}`` orthogonal, so ``E[(P_{j→i}b)ᵀ(P_{k→i}b)] =
  bᵀE[M]^{|j−k|}b`` (no commutativity needed); equal weights give
  ``r_QKV(M) = (1/M²) Σ_{j,k} bᵀE[M]^{|j−k|}b/||b||² + σ²d/(M||b||²)``.
* :func:`tilt_floor` — softmax weights ``∝ e^{λ b̂ᵀP_n b̂}`` (query and keys ``= b̂``) select routes
  that keep ``b̂``: as ``M → ∞`` the far output tends to ``E_π[u e^{λ b̂ᵀu}]/E_π[e^{λ b̂ᵀu}]`` with ``π``
  the stationary law of ``u = P_n b̂`` *(derived)*.  Uniform on ``S^{d−1}`` (Haar, lazy Haar,
  Householder): ``r → (I_{d/2}(λ)/I_{d/2−1}(λ))²``; uniform on the torus of SO(2) planes:
  ``r → Σ_p w_p (I_1(λw_p)/I_0(λw_p))²`` with ``w_p = ||b̂_p||²`` (coordinate-weighted by plane).
* :func:`haar_tilt_energy` — the exact finite-``M`` value of that tilted energy when the route
  directions ``u_n`` are i.i.d. uniform (Haar steps) *(derived)*, from ``1/S² = ∫_0^∞ t e^{−tS} dt``:
  ``r(M) = ∫_0^∞ t [M g₂(t) φ(t)^{M−1} + M(M−1) g₁(t)² φ(t)^{M−2}] dt`` with ``x = b̂ᵀu``, ``w = e^{λx}``,
  ``φ = E e^{−tw}``, ``g₂ = E w²e^{−tw}``, ``g₁ = E w x e^{−tw}`` (``x`` has density ``∝ (1−x²)^{(d−3)/2}``);
  the first term alone is ``E[Σ ᾱ_n²]``, the plug-in of weights independent of the transport.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate
from scipy.special import ive

from ..core._broadcast import broadcasting, check, check_instance
from ..core.backend import namespace_of
from ..core.options import arg_int, arg_real
from ..laws.law_type import StepLawType
from .score_laws import jacobi_nodes

__all__ = [
    "correlation_pairs",
    "has_correlation_pairs",
    "lag_correlations",
    "lag_radius",
    "toeplitz_form",
    "qkv_interference_radius",
    "coherent_sum",
    "qkv_interference_theory",
    "qkv_asymptote",
    "qk_interference_theory",
    "quadratic_form",
    "haar_tilt_floor",
    "torus_tilt_floor",
    "tilt_floor",
    "haar_tilt_energy",
]


def _iid(family: StepLawType) -> bool:
    """Whether the steps are i.i.d. (a law with dependent steps, e.g. a Markov token chain, declares ``iid = False``)."""
    return bool(family.iid)


def _law(family) -> StepLawType:
    return check_instance("family", family, StepLawType, "a step law (StepLaw, see make_family)")


def _background(b, d: int | None = None) -> np.ndarray:
    """``b`` a non-zero finite 1-D vector (of length ``d`` when given)."""
    b = check("b (the shared background)", b, ndim=1, size=d)
    if not np.any(b):
        raise ValueError("b (the shared background) must be non-zero")
    with np.errstate(over="ignore"):
        if not np.isfinite(float(b @ b)):
            raise ValueError("b (the shared background): ||b||² overflows float64")
    return b


def _unit(b: np.ndarray) -> np.ndarray:
    b = np.asarray(b, dtype=float)
    nb = float(b @ b)
    if nb <= 0:
        raise ValueError("b (the shared background) must be non-zero")
    return b / np.sqrt(nb)


def _scalar_mean(family: StepLawType) -> float | None:
    """``c`` when the theory's ``E[M]`` (:meth:`StepLaw.theory_mean`, exact or estimated) is ``c·I``, else ``None``."""
    mean = family.theory_mean()
    c = float(mean[0, 0])
    return c if np.allclose(mean, c * np.eye(family.d)) else None


def has_correlation_pairs(family: StepLawType) -> bool:
    """Whether ``b̂ᵀE[P_m]b̂`` is a short sum ``Σ_r w_r Re z_r^m`` (:func:`correlation_pairs`): i.i.d. steps with
    commuting planes (``planes``: ``z_r = χ_b``) or a scalar mean ``E[M] = c·I``."""
    return _iid(family) and (family.planes or family.isotropic or _scalar_mean(family) is not None)


def correlation_pairs(family: StepLawType, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(claim C5, *quoted*: ``Σ_b ||b_b||² Re χ_b^m`` for SO(2)) Weights ``w`` and ratios ``z`` with ``bᵀE[M]^m b / ||b||² = Σ_r w_r Re z_r^m``.

    Commuting planes (``planes``): ``w_b = ||b_b||²/||b||²`` and ``z_b = χ_b`` per plane (equal ``χ`` merged).
    A scalar mean ``E[M] = c I`` (isotropic laws; exact or estimated, :meth:`StepLaw.theory_mean`): one pair
    ``(1, c)``.  Other laws (and dependent steps) have no pairs: :func:`lag_correlations` is their form.
    """
    b = _background(b, _law(family).d)
    nb = float(b @ b)
    if nb <= 0:
        raise ValueError("b (the shared background) must be non-zero")
    if not _iid(family):
        raise ValueError(f"family {family.name!r}: its steps are not i.i.d. (E[P_m] ≠ E[M]^m); use lag_correlations")
    if family.planes:
        w = (b[0::2] ** 2 + b[1::2] ** 2) / nb
        z, inv = np.unique(np.round(family.chi(), 15), return_inverse=True)
        return np.bincount(inv.ravel(), weights=w, minlength=z.size), z.astype(complex)
    c = _scalar_mean(family)
    if c is None:
        raise ValueError(f"family {family.name!r}: E[M] is not a multiple of I; use lag_correlations")
    return np.ones(1), np.array([c], dtype=complex)


def lag_correlations(family: StepLawType, b: np.ndarray, M: int) -> np.ndarray:
    """(claim C5, *derived*) ``c_m = b̂ᵀE[P_m]b̂`` for ``m = 0 … M−1`` from the law's :meth:`StepLaw.mean_overlap`
    (exact where the law knows ``E[P_m]``, from the estimated ``E[M]`` otherwise): the form of every law."""
    return np.asarray(family.mean_overlap(_unit(b), np.arange(int(M))), dtype=float).reshape(int(M))


def lag_radius(family: StepLawType, b: np.ndarray, M: int) -> np.ndarray:
    """95% bounds on the errors of :func:`lag_correlations` from an estimated ``E[M]``
    (:meth:`StepLaw.mean_overlap_radius`; ``0`` at lag 0 and for a closed form)."""
    r = np.asarray(family.mean_overlap_radius(_unit(b), np.arange(int(M))), dtype=float).reshape(int(M)).copy()
    r[:1] = 0.0
    return r


def toeplitz_form(a, c: np.ndarray):
    """``Σ_{j,k} a_j a_k c_{|j−k|}`` for each row of ``a`` (``(T, M)``): the plug-in ``ᾱᵀCᾱ`` of any law,
    ``O(T·M²)`` (array-namespace generic: ``c`` is moved to the device of ``a``)."""
    xp = namespace_of(a)
    M = a.shape[-1]
    lag = np.abs(np.subtract.outer(np.arange(M), np.arange(M)))
    C = xp.asarray(np.asarray(c, dtype=float)[lag])
    return xp.einsum("tj,tj->t", a @ C, a)


def _coherent_lags(c: np.ndarray, M: int) -> float:
    """``(1/M²) Σ_{j,k<M} c_{|j−k|}`` = ``(M c_0 + 2 Σ_{m≥1} (M − m) c_m)/M²``."""
    m = np.arange(1, M)
    return float(M * c[0] + 2.0 * (c[1:M] @ (M - m).astype(float))) / M**2


def coherent_sum(z: complex | np.ndarray, M: int) -> np.ndarray:
    """Coherent pair sum (claim C5, *derived here*): ``S(z, M) = Σ_{j,k=0}^{M−1} z^{|j−k|} = M + 2 Σ_{m=1}^{M−1} (M − m) z^m``.

    Exact direct sum; broadcasts over ``z``.

    Closed form ``M(1+z)/(1−z) − 2z(1−z^M)/(1−z)²`` for ``z ≠ 1``; ``S(1, M) = M²``.
    """
    M = arg_int("M", M, 1, 10**7)
    z = check("z", z, complex_ok=True, abs_max=1 + 1e-12)
    m = np.arange(1, M)
    return M + 2.0 * (np.power.outer(z, m) @ (M - m).astype(float))


@broadcasting("M", "noise")
def qkv_interference_theory(family: StepLawType, b: np.ndarray, M: int, noise: float = 0.0) -> float:
    """Finite-``M`` far interference of QKV (claim C5, *derived*): exact ``E||F_QKV||²/(ρ_D²||b||²)`` for ``M``
    equal-weight far sources (i.i.d. steps); broadcasts over ``M`` and ``noise``.

    ``(1/M²) Σ_r w_r Re S(z_r, M) + σ² d / (M ||b||²)``; see the module docstring.  Laws without
    :func:`correlation_pairs`: ``(1/M²) Σ_{j,k} c_{|j−k|}`` over :func:`lag_correlations` (exact for dependent
    stationary steps too, ``c_m = b̂ᵀE[P_m]b̂``).  With an estimated ``E[M]`` the value is estimated;
    :func:`qkv_interference_radius` is its 95% radius.  ``M`` an integer in ``[1, 10⁷]``, ``noise ≥ 0``.
    """
    b = _background(b, _law(family).d)
    M = arg_int("M", M, 1, 10**7)
    noise = arg_real("noise", noise, 0, 1e100)
    if has_correlation_pairs(family):
        w, z = correlation_pairs(family, b)
        coh = float(np.real(coherent_sum(z, M)) @ w) / M**2
    else:
        coh = _coherent_lags(lag_correlations(family, b, M), M)
    return coh + noise**2 * family.d / (M * float(np.dot(b, b)))


def qkv_interference_radius(family: StepLawType, b: np.ndarray, M: int) -> float:
    """95% radius of :func:`qkv_interference_theory` from an estimated ``E[M]``: ``(2/M²) Σ_{m≥1} (M − m) r_m``
    with ``r_m`` the lag bounds of :func:`lag_radius` (``0`` for a closed form)."""
    M = int(M)
    if family.mean_radius == 0.0 or M < 2:
        return 0.0
    return _coherent_lags(lag_radius(family, b, M), M)


def qkv_asymptote(family: StepLawType, b: np.ndarray, M: int, noise: float = 0.0) -> float | None:
    """Large-``M`` form (claim C5, *quoted*: the paper's ``(1 + χ)/((1 − χ)M)``)
    ``Σ_r w_r Re[(1+z_r)/(1−z_r)]/M + σ²d/(M||b||²)`` (an approximation of
    :func:`qkv_interference_theory`; ``None`` when some ``z_r = 1``: no decay, or without correlation pairs).
    ``M ≥ 1`` an integer, ``noise ≥ 0``."""
    b = _background(b, _law(family).d)
    M = arg_int("M", M, 1)
    noise = arg_real("noise", noise, 0, 1e100)
    if not has_correlation_pairs(family):
        return None
    w, z = correlation_pairs(family, b)
    if np.any(np.abs(1 - z) < 1e-12):
        return None
    return float(np.real((1 + z) / (1 - z)) @ w) / M + noise**2 * family.d / (M * float(np.dot(b, b)))


@broadcasting("d", "M", "noise")
def qk_interference_theory(d: int, b: np.ndarray, M: int, noise: float = 0.0) -> float:
    """Far interference of QK-only (claim C5, *quoted*: ``E F = ρ_D b``; the noise term *derived here*).

    Exact ``E||F_QK||²/(ρ_D²||b||²) = 1 + σ² d/(M ||b||²)`` for ``M`` equal weights; broadcasts over ``d``, ``M``, ``noise``.
    """
    d, M, noise = arg_int("d", d, 1), arg_int("M", M, 1), arg_real("noise", noise, 0, 1e100)
    b = _background(b)
    return 1.0 + noise**2 * d / (M * float(np.dot(b, b)))


def quadratic_form(a: np.ndarray, w: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(claim C5, *derived here*) ``Σ_{j,k} a_j a_k Σ_r w_r Re z_r^{|j−k|}`` for each row of ``a`` (shape ``(T, M)``) in ``O(T·M·R)``.

    The plug-in prediction of ``||F/ρ_D||²/||b||²`` for given far weights ``a = ᾱ`` when
    the weights are independent of the steps.  Recursion ``h_k = z (h_{k−1} + a_{k−1})``
    gives ``Σ_{j<k} a_j z^{k−j} = h_k``.  Array-namespace generic: ``a`` may be a CuPy array
    (``w``, ``z`` are moved to its device).  ``a`` finite ``(T, M)``, ``w ≥ 0`` and ``z`` (``|z_r| ≤ 1``) of one length ``R``.
    """
    xp = namespace_of(a)
    w = check("w", w, 0, ndim=1, nonempty=True)
    z = check("z", z, complex_ok=True, abs_max=1 + 1e-12, ndim=1)
    if z.size != w.size:
        raise ValueError(f"w and z must have one length (a weight per ratio z_r), got {w.size} and {z.size}")
    if xp is np:
        a = check("a (far weights)", a, ndim=2)
    elif getattr(getattr(a, "dtype", None), "kind", "f") not in "iuf" or a.ndim != 2:
        raise ValueError(f"a (far weights) must be a 2-D array of real numbers, got {getattr(a, 'dtype', type(a))} "
                         f"of shape {getattr(a, 'shape', None)}")
    a = xp.asarray(a, dtype=float)
    w, z = xp.asarray(w), xp.asarray(z)
    T, M = a.shape
    h = xp.zeros((T, z.size), dtype=complex)
    cross = xp.zeros((T, z.size), dtype=complex)
    for k in range(1, M):
        h = z * (h + a[:, k - 1, None])
        cross += a[:, k, None] * h
    diag = xp.sum(a * a, axis=1)
    return diag * w.sum() + 2.0 * xp.real(cross) @ w


# ---------------------------------------------------------------------------------------
# softmax weights that select aligned routes: the tilted far output
# ---------------------------------------------------------------------------------------
def _bessel_ratio(nu: float, x: float, terms: int = 200) -> float:
    """``I_{ν+1}(x)/I_ν(x)`` by the backward recurrence ``r_n = x/(2(n+1) + x r_{n+1})``, for ``x ≪ ν``
    where ``ive`` underflows (converges like ``(x/2ν)^terms``)."""
    r = 0.0
    for n in range(terms, -1, -1):
        r = x / (2.0 * (nu + n + 1.0) + x * r)
    return r


@broadcasting("d", "lam")
def haar_tilt_floor(d: int, lam: float) -> float:
    """Noncommutative floor (claim C5) ``(I_{d/2}(λ)/I_{d/2−1}(λ))²``: the ``M → ∞`` value of ``r_QKV`` when query and far keys equal
    ``b̂`` and ``u = P_n b̂`` is stationary uniform on ``S^{d−1}`` *(derived)*.

    ``E[u e^{λu·b̂}]/E[e^{λu·b̂}] = (d/dλ) log E[e^{λu·b̂}] · b̂`` and ``E[e^{λu·b̂}] ∝ λ^{1−d/2} I_{d/2−1}(λ)``,
    whose log-derivative is ``I_{d/2}(λ)/I_{d/2−1}(λ)``.
    """
    d, lam = arg_int("d", d, 2), arg_real("lam", lam, 0, 1e8)
    if lam == 0:
        return 0.0
    num, den = ive(d / 2, lam), ive(d / 2 - 1, lam)  # below ~1e-280 (x ≪ ν) they lose digits or underflow to 0
    r = num / den if min(num, den) > 1e-280 else _bessel_ratio(d / 2 - 1, lam)
    return float(r**2)


@broadcasting("lam")
def torus_tilt_floor(b: np.ndarray, lam: float) -> float:
    """SO(2) tilt floor (claim C5) ``Σ_p w_p (I_1(λw_p)/I_0(λw_p))²``, ``w_p = ||b̂_p||²``: the ``M → ∞`` value of ``r_QKV`` for SO(2)
    planes whose accumulated angles equidistribute on the torus (query and keys ``= b̂``) *(derived)*.

    The score ``λ b̂ᵀPb̂ = λ Σ_p w_p cos φ_p`` factorises over planes, so
    ``E[R(φ_p) e^{λw_p cos φ_p}]/E[e^{λw_p cos φ_p}] = (I_1/I_0)(λw_p)·I`` and the limit output is
    ``Σ_p (I_1/I_0)(λw_p) b̂_p``.
    """
    lam = arg_real("lam", lam, 0, 1e8)
    b = _background(b)
    if b.size % 2:
        raise ValueError(f"b (the shared background) must have an even length (SO(2) planes), got {b.size}")
    w = (b[0::2] ** 2 + b[1::2] ** 2) / float(b @ b)
    k = lam * w
    return float(w @ (ive(1, k) / ive(0, k)) ** 2) if lam > 0 else 0.0


def tilt_floor(family: StepLawType, b: np.ndarray, lam: float) -> float | None:
    """(claim C5, *derived here*) The ``M → ∞`` coherent floor of ``r_QKV`` with query and far keys ``= b̂`` (softmax scale ``λ``).

    Laws whose long routes carry ``b̂`` to the uniform law on its orbit (:attr:`StepLaw.mixes_to_uniform`):
    :func:`torus_tilt_floor` for commuting planes (angle laws with a density: uniform, normal, RoPE-random),
    :func:`haar_tilt_floor` for isotropic laws (Householder, lazy Haar, Haar, Cayley: uniform on the sphere);
    ``None`` otherwise (token tables: their angle walk need not equidistribute).
    """
    b = _background(b, _law(family).d)
    lam = arg_real("lam", lam, 0, 1e8)
    if not family.mixes_to_uniform:
        return None
    if family.planes:
        return torus_tilt_floor(b, lam)
    if family.isotropic:
        return haar_tilt_floor(family.d, lam)
    return None


@broadcasting("d", "lam", "M")
def haar_tilt_energy(d: int, lam: float, M: int, nodes: int = 160) -> tuple[float, float]:
    """Finite-``M`` tilted far energy (claim C5), exact ``E||Σ_n ᾱ_n u_n||²`` and ``E[Σ_n ᾱ_n²]`` for ``M`` i.i.d. uniform ``u_n ∈ S^{d−1}`` and
    ``ᾱ_n ∝ e^{λ b̂ᵀu_n}`` *(derived; see the module docstring)*.

    This is ``r_QKV`` of ``M`` far sources under Haar steps with query and far keys ``= b̂``
    (the routes ``P_n b̂``, ``n ≥ 1``, are then i.i.d. uniform), and its plug-in part ``E[ᾱᵀᾱ]``;
    it tends to :func:`haar_tilt_floor` as ``M → ∞``; broadcasts over ``d``, ``lam``, ``M`` (a pair of arrays).  One-dimensional quadrature in ``log t`` over
    Gauss–Jacobi moments (relative accuracy ≈ 1e-8 for ``λ ≲ 20``).  ``d ≥ 2``, ``λ ∈ [0, 700]``, ``M ≥ 1`` and
    ``nodes ∈ [2, 10⁴]`` integers.
    """
    M = arg_int("M (number of far sources)", M, 1)
    d = arg_int("d", d, 2)
    lam = arg_real("lam (λ)", lam, 0, 700)
    nodes = arg_int("nodes", nodes, 2, 10**4)
    if M == 1:
        return 1.0, 1.0
    if lam == 0:
        return 1.0 / M, 1.0 / M
    x, p = jacobi_nodes(nodes, (d - 3) / 2)
    wt = np.exp(lam * x)
    scale = float(M * (p @ wt))

    def parts(y: float) -> tuple[float, float]:
        t = np.exp(y) / scale
        e = np.exp(-t * wt)
        logphi = np.log(p @ e)
        g2, g1 = p @ (wt * wt * e), p @ (wt * x * e)
        diag = M * g2 * np.exp((M - 1) * logphi)
        return t * t * diag, t * t * M * (M - 1) * g1 * g1 * np.exp((M - 2) * logphi)

    lo, hi = np.log(1e-9 * scale / wt.max()), np.log(80.0 * scale / wt.min())
    opts = dict(limit=400, epsabs=0.0, epsrel=1e-10)
    diag = integrate.quad(lambda y: parts(y)[0], lo, hi, **opts)[0]
    cross = integrate.quad(lambda y: parts(y)[1], lo, hi, **opts)[0]
    if not (np.isfinite(diag) and np.isfinite(cross)):
        raise ValueError(f"lam (λ) = {lam}, M = {M}, d = {d}: the tilted energy is not finite in float64")
    return float(diag + cross), float(diag)
