"""Stylized single-layer attention: scores, full softmax, near/far split, far mass, outputs.

For the query at ``i`` and sources ``j ≤ i`` (route length ``n = i − j``):

* scores ``s_ij = λ · qᵀ P_{j→i} k_j`` (``|s_ij| ≤ λ`` for unit ``q``, ``k_j``),
  plus an optional bias ``b_ij = −m·(i − j)`` (ALiBi, slope ``m > 0``);
* full softmax ``α_ij = exp(s_ij + b_ij) / Σ_{j'≤i} exp(s_ij' + b_ij')``;
* near set ``{j : i − j < D}`` (``K = D`` sources), far set ``{j : i − j ≥ D}``
  (``M_L = L − D`` sources), far mass ``ρ_D = Σ_{far j} α_ij``;
* outputs: QK-only ``o_i = Σ_j α_ij v_j``; QKV ``o_i = Σ_j α_ij P_{j→i} v_j``.

Example
-------
>>> from stylized.laws.families import make_family
>>> att = StylizedAttention(make_family("haar", d=8), lam=4.0, D=4)
>>> out = att.sample(L=64, random_state=0)
>>> 0.0 < out.far_mass < 1.0
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..core._broadcast import check
from ..core.counter_rng import as_generator
from ..core.options import arg_int, arg_real, arg_reals
from ..core.step_ops import uniform_sphere
from ..laws.law_type import StepLawType
from .lse import softmax_rows
from .transport import transported_queries, transported_sum

__all__ = [
    "check_lambda",
    "check_logits",
    "softmax",
    "alibi_bias",
    "far_mass",
    "scores",
    "StylizedAttention",
    "AttentionSample",
]


def check_lambda(lam: float) -> float:
    """Validate the logit scale ``λ ≥ 0`` (finite; :func:`stylized.core._broadcast.check`)."""
    return float(check("lam (λ)", lam, 0, scalar=True))


def check_logits(logits: np.ndarray, name: str = "logits") -> np.ndarray:
    """Return ``logits`` as float64: real numbers, ``-inf`` (a masked key) allowed; ``ValueError`` naming ``name``
    on NaN, ``+inf`` or complex values, ``TypeError`` on anything not numeric (:func:`stylized.core._broadcast.check`)."""
    return check(name, logits, neg_inf=True)


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax (max subtracted); stable at logits of ±10⁴ and beyond.

    Raises ``ValueError`` for NaN or ``+inf`` logits, and for a row whose logits are all ``−inf``
    (every key masked: the softmax is undefined there, not NaN).

    Parameters
    ----------
    logits : array_like
        Real logits (``−inf`` masks a key), non-empty.
    axis : int, default -1
        The axis of the keys.

    Returns
    -------
    numpy.ndarray
        The weights ``α``, summing to 1 along ``axis``.

    Examples
    --------
    >>> softmax([0.0, 1.0, 2.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    """
    x = check_logits(logits)
    if x.size == 0:
        raise ValueError("logits must be non-empty")
    m = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(m).any():
        raise ValueError("logits: a row is entirely -inf (every key masked); softmax is undefined")
    return softmax_rows(x, axis)


def alibi_bias(n: np.ndarray, m: float) -> np.ndarray:
    """ALiBi bias ``b = −m·n`` for route lengths ``n = i − j`` (slope ``m ≥ 0``).

    Parameters
    ----------
    n : array_like
        Route lengths ``n ≥ 0``.
    m : float
        Slope ``m ≥ 0``, finite.

    Returns
    -------
    numpy.ndarray
        The bias added to each logit.

    Examples
    --------
    >>> alibi_bias([0, 1, 4], m=0.5)
    array([-0. , -0.5, -2. ])
    """
    m = arg_real("m (ALiBi slope)", m, 0)
    if not (m >= 0 and math.isfinite(m)):
        raise ValueError(f"m (ALiBi slope) must be a finite number ≥ 0, got {m!r}")
    out = -float(m) * arg_reals("n", n, 0)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"m (ALiBi slope) × n overflows float64 (m = {m})")
    return out


def far_mass(logits: np.ndarray, D: int) -> np.ndarray:
    """``ρ_D = Σ_{n ≥ D} α_n`` for logits indexed by route length ``n`` along the last axis.

    Computed as ``exp(LSE(far) − LSE(all))`` so it never overflows.  ``logits``: an array (at least 1-D) of
    real numbers or ``-inf`` (a masked key); a row whose logits are all ``-inf`` (every key masked) has no
    softmax, so its far mass is undefined and refused with a ``ValueError`` naming the mask (as :func:`softmax`
    does).  A row whose far keys alone are all masked has ``ρ_D = 0``.  ``D ≥ 0`` an integer; ``D ≥ L`` gives 0.

    Parameters
    ----------
    logits : array_like
        Logits indexed by route length ``n = 0, 1, …`` along the last axis (``−inf`` masks a key).
    D : int
        The near/far threshold: routes ``n ≥ D`` are far.

    Returns
    -------
    numpy.ndarray
        ``ρ_D`` per row (the logits' shape without the last axis).

    Examples
    --------
    The corner of the C4 bound: ``K = 4`` near logits at ``+λ``, ``M_L = 1000`` far ones at ``−λ``, ``λ = 4``,
    gives exactly ``M_L/(M_L + K e^{2λ})``:

    >>> import numpy as np
    >>> logits = np.r_[np.full(4, 4.0), np.full(1000, -4.0)]
    >>> round(float(far_mass(logits, D=4)), 4)
    0.0774
    """
    x = check_logits(logits)
    D = arg_int("D", D, 0)
    if x.ndim == 0:
        raise ValueError("logits must be an array of at least one dimension (route lengths on the last axis), "
                         "got a scalar")
    if x.size and np.isneginf(np.max(x, axis=-1)).any():
        raise ValueError("logits: a row is entirely -inf (every key masked by the -inf mask); the far mass is "
                         "undefined there")
    if D >= x.shape[-1]:
        return np.zeros(x.shape[:-1])
    return np.exp(logsumexp(x[..., D:], axis=-1) - logsumexp(x, axis=-1))


def scores(
    family: StepLawType, steps: np.ndarray, q: np.ndarray, keys: np.ndarray, lam: float, random_state=None
) -> np.ndarray:
    """``s_j = λ qᵀ P_{j→i} k_j`` for every source ``j`` of the query at ``i = L − 1`` (``O(L·d)``).

    Parameters
    ----------
    family : StepLaw
        The step law of ``steps``.
    steps : numpy.ndarray
        ``L`` structured draws by position (``family.rvs(L, seed)``).
    q : array of shape (d,)
        The query (unit, so that ``|s_j| ≤ λ``).
    keys : array of shape (L, d)
        The keys ``k_j`` by position.
    lam : float
        The logit scale ``λ ≥ 0``.
    random_state : int, numpy.random.Generator or None
        Used only by laws transported in law.

    Returns
    -------
    numpy.ndarray of shape (L,)
        The logits by source position; the last, ``j = i``, has route length 0.

    Examples
    --------
    >>> import numpy as np
    >>> from stylized.laws.registry import make_family
    >>> fam = make_family("householder", 8)
    >>> q = np.full(8, 8 ** -0.5)
    >>> s = scores(fam, fam.rvs(5, 0), q, np.tile(q, (5, 1)), lam=4.0)   # every key a copy of q
    >>> s.shape, round(float(s[-1]), 9)        # route length 0: s = λ qᵀq = λ
    ((5,), 4.0)
    """
    lam = check_lambda(lam)
    U = transported_queries(family, steps, q, random_state)
    return lam * np.einsum("jd,jd->j", U, np.asarray(keys, dtype=float))


@dataclass
class AttentionSample:
    """One query's attention: logits and weights indexed by source ``j`` (route ``n = i − j``)."""

    logits: np.ndarray
    weights: np.ndarray
    far_mass: float
    output_qk: np.ndarray
    output_qkv: np.ndarray


@dataclass
class StylizedAttention:
    """The stylized model for one query: unit query, unit keys, a step family and a near window.

    Parameters
    ----------
    family : StepLaw
        The law of the steps ``M_t``.
    lam : float, default 1.0
        The logit scale ``λ ≥ 0``.
    D : int, default 1
        The near window: the near set is ``i − j < D``.
    alibi_m : float, default 0.0
        ALiBi slope ``m`` (0: rotation only).
    target_aligned : bool, default True
        The key at route length 0 equals the query (a planted target); the other keys are uniform on the sphere.

    Examples
    --------
    Random keys over 4,096 sources, ``λ = 4``: the far set holds almost all the mass, far above the C4 floor
    ``M_L/(M_L + K e^{2λ}) ≈ 0.079`` (which needs every near logit at ``+λ``):

    >>> from stylized.laws.registry import make_family
    >>> att = StylizedAttention(make_family("householder", 16), lam=4.0, D=16)
    >>> s = att.sample(L=4096, random_state=0)
    >>> s.logits.shape, round(s.far_mass, 4), s.output_qkv.shape
    ((4096,), 0.9883, (16,))
    """

    family: StepLawType
    lam: float = 1.0
    D: int = 1
    alibi_m: float = 0.0
    target_aligned: bool = True

    def __post_init__(self):
        if not isinstance(self.family, StepLawType):
            raise TypeError(f"family must be a StepFamily (see make_family), got {type(self.family).__name__}")
        check_lambda(self.lam)
        self.D = arg_int("D", self.D, 0)
        arg_real("alibi_m", self.alibi_m, 0)
        alibi_bias(0, self.alibi_m)

    def sample(self, L: int, random_state=None, values: np.ndarray | None = None) -> AttentionSample:
        """Draw steps, keys and values for a context of length ``L`` and attend from ``i = L − 1``."""
        L = arg_int("L", L, 1)
        rng = as_generator(random_state)
        d = self.family.d
        q = np.ones(d) / math.sqrt(d)
        keys = uniform_sphere(rng, (L,), d)
        if self.target_aligned:
            keys[L - 1] = q
        steps = self.family.rvs(L, rng)
        s = scores(self.family, steps, q, keys, self.lam, rng)
        n = (L - 1) - np.arange(L)
        logits = s + alibi_bias(n, self.alibi_m)
        alpha = softmax(logits)
        rho = float(alpha[n >= self.D].sum())
        v = uniform_sphere(rng, (L,), d) if values is None else values
        return AttentionSample(
            logits=logits,
            weights=alpha,
            far_mass=rho,
            output_qk=alpha @ v,
            output_qkv=transported_sum(self.family, steps, alpha, v, rng),
        )
