"""Hypothesis strategies for property tests of the stylized model (``stylized.strategies``).

They draw what the paper's bounds quantify over: step laws at valid parameters (:func:`laws`, the built-in
families or a user's own class), dimensions, unit vectors, logits bounded by ``λ``, routes ``P_n`` and one
query's context (``L``, the near window ``D``, ``λ``).  Hypothesis is imported here only, never by
``import stylized``.  The pytest side (fixtures, ``parametrize_with_law_checks``) is
:mod:`stylized.pytest_plugin`; the tutorial is ``docs/tutorials/property_tests.md``.

Example
-------
>>> from hypothesis import given, settings
>>> @settings(max_examples=10, deadline=None, derandomize=True)
... @given(laws(max_d=8))
... def test_gap_in_unit_interval(law):
...     assert 0.0 <= law.spectral_gap <= 1.0
>>> test_gap_in_unit_interval()
"""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st

from .laws.base import StepLaw
from .laws.registry import FAMILY_NAMES, make_family, resolve_law

__all__ = ["LAW_PARAMS", "BoundedLogits", "Route", "Context", "seeds", "dimensions", "law_params", "laws",
           "unit_vectors", "bounded_logits", "routes", "contexts"]

SearchStrategy = st.SearchStrategy

LAW_PARAMS: dict[str, Callable[[], dict[str, SearchStrategy]]] = {
    "so2-uniform": lambda: {"omega": st.floats(1e-3, math.pi)},
    "so2-normal": lambda: {"sigma": st.floats(1e-2, 3.0), "mu": st.floats(-math.pi, math.pi)},
    "rope-random": lambda: {"base": st.floats(2.0, 1e5)},
    "householder": dict,
    "lazy-haar": lambda: {"p": st.floats(1e-2, 1.0)},
    "haar": dict,
    "cayley": lambda: {"scale": st.floats(0.05, 2.0)},
    "contraction": lambda: {"beta": st.floats(0.05, 1.95)},
    "markov-tokens": lambda: {"vocab": st.integers(2, 6), "switch": st.floats(0.05, 0.95),
                              "omega": st.floats(0.1, math.pi), "table_seed": st.integers(0, 2**16)},
}
"""Strategies for each built-in law's parameters, inside their allowed ranges
(:data:`stylized.laws.family_args.FAMILY_ARG_RANGES`), kept away from the degenerate ends (``ω → 0``:
``γ → 0``, windows without end)."""


def seeds() -> SearchStrategy[int]:
    """Seeds for :func:`numpy.random.default_rng` and the laws' ``rvs``: integers in ``[0, 2³² − 1]``."""
    return st.integers(0, 2**32 - 1)


def dimensions(min_d: int = 2, max_d: int = 32, *, even: bool = False) -> SearchStrategy[int]:
    """Dimensions ``d`` in ``[min_d, max_d]`` (only even ones with ``even``: SO(2) planes need them)."""
    if not 2 <= min_d <= max_d:
        raise ValueError(f"dimensions: need 2 ≤ min_d ≤ max_d, got min_d={min_d}, max_d={max_d}")
    if not even:
        return st.integers(min_d, max_d)
    lo, hi = (min_d + 1) // 2, max_d // 2
    if lo > hi:
        raise ValueError(f"dimensions: no even d in [{min_d}, {max_d}]")
    return st.integers(lo, hi).map(lambda h: 2 * h)


def _declares_planes(factory: Callable) -> bool:
    """Whether a law factory builds SO(2) planes (then ``d`` must be even): its class, or its return type."""
    cls = factory if isinstance(factory, type) else None
    if cls is None:
        try:
            cls = typing.get_type_hints(factory).get("return")
        except Exception:  # a factory without resolvable hints: assume no planes
            cls = None
    return bool(getattr(cls, "planes", False)) if isinstance(cls, type) else False


def law_params(family: str | Callable) -> dict[str, SearchStrategy]:
    """The parameter strategies of a built-in law (:data:`LAW_PARAMS`), ``{}`` for any other."""
    return LAW_PARAMS.get(family, dict)() if isinstance(family, str) else {}


def _build(factory: Callable, name: str, d: int, **params) -> StepLaw:
    law = make_family(name, d, **params) if isinstance(name, str) else factory(d=d, **params)
    if not isinstance(law, StepLaw):
        raise TypeError(f"laws: {factory!r} built a {type(law).__name__}, not a StepLaw")
    return law


def laws(families: str | Callable | Iterable[str | Callable] = FAMILY_NAMES, *, min_d: int = 2, max_d: int = 16,
         params: Mapping[str, SearchStrategy] | None = None) -> SearchStrategy[StepLaw]:
    """Step laws at valid parameters: built-in families by name, and users' law classes or factories.

    Parameters
    ----------
    families : a law name (:func:`stylized.laws.registry.law_names`, ``"package.module:Factory"``), a
        :class:`~stylized.laws.base.StepLaw` subclass or a callable ``(d, **params) → StepLaw``, or a list of
        them (default: the six canonical families).  Hypothesis shrinks towards the first.
    min_d, max_d : the dimension range (SO(2) laws draw even ``d`` only).
    params : strategies for parameters, overriding :data:`LAW_PARAMS` (a user's law gets only these).

    Example
    -------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Flip(StepLaw):
    ...     d: int
    ...     def sample(self, xrng, shape, xp=np):
    ...         signs = xp.where(xrng.random(tuple(shape) + (self.d,)) < 0.5, -1.0, 1.0)
    ...         return signs[..., :, None] * xp.eye(self.d)
    >>> from hypothesis import find
    >>> find(laws([Flip], max_d=4), lambda law: law.d > 2)  # the smallest law with d > 2
    Flip(d=3)
    """
    items = (families,) if isinstance(families, str) or callable(families) else tuple(families)
    if not items:
        raise ValueError("laws: give at least one family")
    options = []
    for item in items:
        factory = resolve_law(item) if isinstance(item, str) else item
        if not callable(factory):
            raise TypeError(f"laws: {item!r} is neither a law name nor a law class or factory")
        kw = {**law_params(item), **dict(params or {})}
        build = functools.partial(_build, factory, item if isinstance(item, str) else None)
        options.append(st.builds(build, dimensions(min_d, max_d, even=_declares_planes(factory)), **kw))
    return st.one_of(options)


def _as_strategy(x) -> SearchStrategy:
    return x if isinstance(x, SearchStrategy) else st.just(x)


def unit_vectors(d: int | SearchStrategy[int]) -> SearchStrategy[np.ndarray]:
    """Unit vectors in ``R^d`` (``||q|| = 1`` to rounding); ``d`` a number or a strategy.

    Coordinates are drawn in ``[−1, 1]`` (so examples shrink towards axes), vectors of norm below ``1e-3``
    rejected, then normalised.
    """

    def draw(dd: int) -> SearchStrategy[np.ndarray]:
        coords = st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=dd, max_size=dd)
        return coords.map(np.asarray).filter(lambda v: np.linalg.norm(v) > 1e-3).map(lambda v: v / np.linalg.norm(v))

    return _as_strategy(d).flatmap(draw)


class BoundedLogits(NamedTuple):
    """Logits ``s`` with ``|s_j| ≤ λ`` for every source ``j``: ``lam, s = x`` unpacks them."""

    lam: float
    logits: np.ndarray


def bounded_logits(lam: float | SearchStrategy[float] | None = None,
                   length: int | SearchStrategy[int] | None = None) -> SearchStrategy[BoundedLogits]:
    """Logit vectors bounded by ``λ`` (C4's premise), with ``±λ`` exactly as often as interior values, so the
    bound's extremal case (near logits ``+λ``, far ``−λ``) is reached.  Defaults: ``λ ∈ [0, 20]``,
    ``length ∈ [1, 64]``."""
    lam = st.floats(0.0, 20.0) if lam is None else lam
    length = st.integers(1, 64) if length is None else length

    def draw(args) -> SearchStrategy[BoundedLogits]:
        lam_, n = float(args[0]), int(args[1])
        if not (lam_ >= 0 and math.isfinite(lam_)) or n < 1:
            raise ValueError(f"bounded_logits: need λ ≥ 0 finite and length ≥ 1, got λ={lam_}, length={n}")
        value = st.one_of(st.sampled_from((-lam_, lam_)), st.floats(-lam_, lam_))
        return st.lists(value, min_size=n, max_size=n).map(lambda s: BoundedLogits(lam_, np.asarray(s, dtype=float)))

    return st.tuples(_as_strategy(lam), _as_strategy(length)).flatmap(draw)


@dataclass(frozen=True)
class Route:
    """A route of ``length = n`` steps drawn from ``law`` with ``seed``: ``steps[t] = M_t`` by position
    (``t = 0 … n``; ``M_0`` is never applied) and ``P_n = M_n ⋯ M_1`` (:meth:`product`)."""

    law: StepLaw
    length: int
    seed: int

    @functools.cached_property
    def steps(self):
        return self.law.rvs(self.length + 1, self.seed)

    def dense(self) -> np.ndarray:
        """The steps as ``(n + 1, d, d)`` matrices (a law fixed only in law draws them with ``seed + 1``)."""
        return self.law.dense(self.steps, np.random.default_rng(self.seed + 1))

    def product(self) -> np.ndarray:
        """``P_n = P_{0→n} = M_n ⋯ M_1`` (the dense oracle, :mod:`stylized.engine.transport_reference`)."""
        from .engine.transport_reference import route_product

        return route_product(self.dense(), j=0, i=self.length)


def routes(law: StepLaw | SearchStrategy[StepLaw] | None = None, *, min_length: int = 1,
           max_length: int = 32) -> SearchStrategy[Route]:
    """Routes of ``n ∈ [min_length, max_length]`` steps of ``law`` (default: :func:`laws` up to ``d = 8``)."""
    if not 0 <= min_length <= max_length:
        raise ValueError(f"routes: need 0 ≤ min_length ≤ max_length, got {min_length}, {max_length}")
    return st.builds(Route, laws(max_d=8) if law is None else _as_strategy(law),
                     st.integers(min_length, max_length), seeds())


@dataclass(frozen=True)
class Context:
    """One query's context: ``L`` sources, near window ``D``, logit scale ``λ``, steps of ``law``, a seed.

    ``K = min(D, L)`` near sources and ``M_L = L − K`` far ones; :meth:`sample` draws the attention of the
    query at ``i = L − 1`` (:class:`stylized.engine.attention.StylizedAttention`, unit query and keys).
    """

    law: StepLaw
    L: int
    D: int
    lam: float
    seed: int
    alibi_m: float = 0.0

    @property
    def K(self) -> int:
        return min(self.D, self.L)

    @property
    def M_L(self) -> int:
        return self.L - self.K

    def sample(self):
        """The :class:`~stylized.engine.attention.AttentionSample` (logits, weights, ``far_mass`` ``ρ_D``, outputs)."""
        from .engine.attention import StylizedAttention

        return StylizedAttention(self.law, lam=self.lam, D=self.D, alibi_m=self.alibi_m).sample(self.L, self.seed)


def contexts(law: StepLaw | SearchStrategy[StepLaw] | None = None, *, max_L: int = 64,
             lam: float | SearchStrategy[float] | None = None,
             alibi_m: float | SearchStrategy[float] = 0.0) -> SearchStrategy[Context]:
    """Contexts of ``L ∈ [1, max_L]`` sources with ``D ∈ [1, L]`` (default law: :func:`laws` up to ``d = 8``;
    default ``λ ∈ [0, 10]``; ALiBi slope ``alibi_m``, default 0)."""
    lam = st.floats(0.0, 10.0) if lam is None else lam
    if max_L < 1:
        raise ValueError(f"contexts: max_L must be ≥ 1, got {max_L}")
    law_s = laws(max_d=8) if law is None else _as_strategy(law)

    @st.composite
    def build(draw) -> Context:
        L = draw(st.integers(1, max_L))
        return Context(draw(law_s), L, draw(st.integers(1, L)), float(draw(_as_strategy(lam))), draw(seeds()),
                       float(draw(_as_strategy(alibi_m))))

    return build()
