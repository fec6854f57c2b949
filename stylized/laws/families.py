"""Step families: random orthogonal steps ``M_t`` with a known mean ``E[M]`` and gap ``γ``.

Every family is a sampler object in the style of :mod:`scipy.stats`: it knows its
dimension ``d``, its exact mean ``E[M]``, the spectral gap ``γ = 1 − ||E[M]||_op``
and the mixing window ``W(ε) = ⌈ln ε / ln(1 − γ)⌉``, and it draws steps with
:meth:`~stylized.laws.base.StepLaw.rvs` from a seed or a :class:`numpy.random.Generator`.

Draws keep the structure of the family (never ``d × d`` matrices unless the family
is dense by nature):

* SO(2) families (``so2-uniform``, ``so2-normal``, ``rope-random``, ``token``) draw
  angles ``θ`` of shape ``(n, d/2)``; plane ``b`` of ``M_t`` is ``R(θ_{t,b})``.
* ``householder`` draws unit vectors ``w`` of shape ``(n, d)``; ``M_t = I − 2 w_t w_tᵀ``.
* ``lazy-haar`` and ``haar`` draw a boolean "Haar step" mask of shape ``(n,)``; the
  Haar matrices themselves are only drawn by :meth:`~stylized.laws.base.StepLaw.dense` (the small-d
  reference).  Transport uses the exact law instead: after one Haar step a
  transported vector is uniform on ``S^{d−1}``, independent of what came before.

Example
-------
>>> fam = make_family("householder", d=16)
>>> round(fam.spectral_gap, 4)
0.125
>>> fam.mixing_window(0.01)
35.0
>>> fam.rvs(3, random_state=0).shape
(3, 16)
"""

from __future__ import annotations

from ..core.counter_rng import as_generator
from ..core.step_ops import uniform_sphere
from .base import StepLaw
from .family_args import FAMILY_ARG_RANGES, validate_family_args
from .isotropic import Haar, Householder, LazyHaar
from .registry import FAMILY_NAMES, law_names, make_family, register_law
from .so2 import RopeRandom, SO2Family, SO2Normal, SO2Uniform, TokenAngles, rope_frequencies

__all__ = ["StepLaw", "SO2Family", "SO2Uniform", "SO2Normal", "RopeRandom", "TokenAngles", "Householder",
           "LazyHaar", "Haar", "FAMILY_NAMES", "make_family", "register_law", "law_names", "validate_family_args",
           "FAMILY_ARG_RANGES", "rope_frequencies", "as_generator", "uniform_sphere"]
